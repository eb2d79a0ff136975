import { constants } from 'node:fs';
import { open, opendir, realpath, type FileHandle } from 'node:fs/promises';
import { sep } from 'node:path';
import { ByteWindowReply, reserveWindow, WINDOW_CHUNK } from '../common/http/byte-reply.js';
import { InvalidInputError, NotFoundError, type FieldError } from '../common/errors/hub-errors.js';
import { invalidQuery, parseInteger } from '../common/query/list-query.js';

export const WINDOW_ORIGINS = ['start', 'end'] as const;
export const DEFAULT_WINDOW = 64 * 1024;
export const MAX_WINDOW = 16 * 1024 * 1024;
/** The most entries a directory listing shows. */
export const MAX_LISTING = 10_000;

/** Which bytes of a file to read: `limit` bytes from `offset` counted from the start, or back from the end. */
export interface ByteWindow {
  readonly origin: (typeof WINDOW_ORIGINS)[number];
  readonly offset: number;
  readonly limit: number;
}

/** The `origin`, `offset` (int64) and `limit` (int32, at most 16 MiB) query parameters; 400 naming the bad ones. */
export function parseByteWindow(origin: unknown, offset: unknown, limit: unknown): ByteWindow {
  const errors: FieldError[] = [];
  if (origin !== undefined && !WINDOW_ORIGINS.includes(origin as ByteWindow['origin'])) errors.push({ path: 'origin', message: 'must be start or end' });
  const window = {
    origin: (origin ?? 'start') as ByteWindow['origin'],
    offset: parseInteger(offset, 'offset', 0, Number.MAX_SAFE_INTEGER, errors) ?? 0,
    limit: parseInteger(limit, 'limit', 1, MAX_WINDOW, errors) ?? DEFAULT_WINDOW,
  };
  if (errors.length > 0) throw invalidQuery(errors);
  return window;
}

/** A file-system failure as the reply it deserves: what is not there is a 404, what cannot be read as asked a 400. */
function problemOf(error: unknown, what: string): unknown {
  switch ((error as NodeJS.ErrnoException).code) {
    case 'ENOENT':
      return new NotFoundError(`No ${what}`);
    case 'ENOTDIR':
    case 'ELOOP':
    case 'EISDIR':
    case 'ENAMETOOLONG':
    case 'EINVAL':
      return InvalidInputError.at('path', `${what} cannot be read: it is not a regular file or directory reached by a plain path`);
    default:
      return error;
  }
}

/** Whether an open file lies under `root` (a real path): checked on the open descriptor, so that no swap of a directory in its path can lead elsewhere. */
async function opensUnder(handle: FileHandle, root: string): Promise<boolean> {
  const opened = await realpath(`/proc/self/fd/${handle.fd}`);
  return opened === root || opened.startsWith(root + sep);
}

/**
 * Opens `path` for reading, confined to `root`: a link as its last component is not followed, a
 * FIFO or device never blocks the hub, and what the descriptor ends up on must lie under `root`.
 */
async function openConfined(path: string, root: string, what: string, directory: boolean): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | (directory ? constants.O_DIRECTORY : 0));
  } catch (error) {
    throw problemOf(error, what);
  }
  try {
    const stats = await handle.stat();
    if (!(directory ? stats.isDirectory() : stats.isFile())) throw InvalidInputError.at('path', `${what} is not a regular file or directory`);
    if (!(await opensUnder(handle, root))) throw InvalidInputError.at('path', `${what} leads out of where it may be read`);
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Whether `path` is a directory rather than a file (following nothing); undefined when there is nothing there. */
export async function isDirectory(path: string): Promise<boolean> {
  try {
    const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      return (await handle.stat()).isDirectory();
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw problemOf(error, 'file');
  }
}

/**
 * A window of a regular file under `root`, streamed from the file without reading the rest: from
 * the start, bytes [offset, offset+limit); from the end, the `limit` bytes that end `offset` bytes
 * before it. Its file stays open and its share of the hub's window budget held until the reply has
 * gone (as raw bytes, or as UTF-8 text where a character cut by the window's edge shows as U+FFFD).
 */
export async function readWindow(file: string, root: string, window: ByteWindow, what: string): Promise<ByteWindowReply> {
  const handle = await openConfined(file, root, what, false);
  let release: (() => void) | undefined;
  try {
    const { size } = await handle.stat();
    const end = window.origin === 'start' ? Math.min(size, window.offset + window.limit) : Math.max(0, size - window.offset);
    const start = window.origin === 'start' ? Math.min(size, window.offset) : Math.max(0, end - window.limit);
    if (end <= start) {
      await handle.close();
      return ByteWindowReply.text('');
    }
    release = await reserveWindow(end - start);
    // `end` is inclusive here; the stream closes the file when it ends or is destroyed.
    const source = handle.createReadStream({ start, end: end - 1, highWaterMark: WINDOW_CHUNK, autoClose: true });
    const giveBack = release;
    return new ByteWindowReply(source, () => {
      source.destroy();
      giveBack();
    });
  } catch (error) {
    release?.();
    await handle.close();
    throw error;
  }
}

/**
 * The names in a directory under `root`, directories ending in `/`, sorted, at most
 * {@link MAX_LISTING} of them (read one by one, never all at once).
 */
export async function listDirectory(path: string, root: string, what: string): Promise<string[]> {
  const handle = await openConfined(path, root, what, true);
  try {
    const names: string[] = [];
    // The open descriptor's own entry, so that the directory read is the one checked.
    for await (const entry of await opendir(`/proc/self/fd/${handle.fd}`)) {
      names.push(entry.isDirectory() ? `${entry.name}/` : entry.name);
      if (names.length >= MAX_LISTING) break;
    }
    return names.sort();
  } finally {
    await handle.close();
  }
}

import { randomBytes } from 'node:crypto';
import { chmodSync, constants, lstatSync, type Stats } from 'node:fs';
import { lstat, mkdir, open, realpath, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import { Injectable, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import { HubConfig } from '../common/config/hub-config.js';
import { makeDirectory } from '../common/data-location.js';
import { InvalidInputError, NotFoundError } from '../common/errors/hub-errors.js';
import { StartupError } from '../common/errors/startup-error.js';
import { WINDOW_CHUNK, type ByteWindowReply } from '../common/http/byte-reply.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import { parseByteWindow, readWindow } from './byte-window.js';
import { ClusterRepository } from './cluster.repository.js';
import { LOG_NAMES } from './drivers/cluster-driver.js';

/** A file named to {@link FilesCopiedOut.copyOut}: stored under `key`, or not, and why (a sentence naming its path). */
/**
 * The execution files are copied out of: its id, or its id and directory as its latest attempt
 * carries them (ClusterService.latestAttempts), which spares reading the directory again.
 */
export type CopiedExecution = string | { readonly executionId: string; readonly executionDir: string };

export type CopiedFile =
  | { readonly name: string; readonly path: string; readonly stored: true; readonly size: number; readonly key: string }
  | { readonly name: string; readonly path: string; readonly stored: false; readonly reason: string };

/** A task log as {@link FilesCopiedOut.copyLogs} stored it: whole, or its last HUB_RESULT_MAX_BYTES (`truncated`). */
export interface CopiedLog {
  readonly name: 'stdout' | 'stderr';
  readonly size: number;
  readonly key: string;
  readonly truncated: boolean;
}

/** The key copyLogs stores a log under, for `destination`: where a caller reads it back later. */
export function storedLogKey(destination: string, name: string): string {
  return `${destination}/${LOGS}/${name}`;
}

/** A key, or a key prefix, that names nothing the store may hold: a caller's bug, never a user's input. */
export class StoreKeyError extends Error {
  override readonly name = 'StoreKeyError';
}

/** Bytes a copy reads and writes at a time: what one copy in flight holds. */
const COPY_CHUNK = 1024 * 1024;
/** One component of a key: safe characters only, never `.` first (so never `.`, `..`, or a temporary name). */
const SEGMENT = /^[A-Za-z0-9_%-][A-Za-z0-9._%-]{0,254}$/;
const MAX_KEY = 1024;
/** Where artifacts and logs go under a destination, apart so that no artifact name can meet a log's. */
const FILES = 'files';
const LOGS = 'logs';

/** `key` when it is relative, of safe components separated by `/`; a {@link StoreKeyError} otherwise. */
export function checkedKey(key: string): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY || !key.split('/').every((segment) => SEGMENT.test(segment)))
    throw new StoreKeyError(`${JSON.stringify(key)} is not a key of the store of results: relative, components of A-Z a-z 0-9 . _ % - not starting with .`);
  return key;
}

/**
 * Any name (an artifact's, a node's) as one component of a key: letters, digits, `_`, `-` and `.`
 * (not first) kept, every other byte of its UTF-8 written `%XX`; distinct names stay distinct.
 * Undefined when it would be empty or longer than a file name may be.
 */
export function storeKeySegment(name: string): string | undefined {
  let segment = '';
  for (const byte of Buffer.from(name, 'utf8')) {
    const char = String.fromCharCode(byte);
    segment += /[A-Za-z0-9_-]/.test(char) || (char === '.' && segment.length > 0) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return SEGMENT.test(segment) ? segment : undefined;
}

/** A directory of an execution, as read: its real path (the directory itself, not a link put in its place) and its owner. */
interface Confined {
  readonly real: string;
  readonly owner: number;
}

/** Why a file is not copied, as the {@link CopiedFile} says it. */
class Refusal extends Error {
  override readonly name = 'Refusal';

  constructor(
    readonly reason: string,
    /** Nothing there: for a log, one never written. */
    readonly missing = false,
  ) {
    super(reason);
  }
}

/** What `lstat` says of a path: undefined when nothing is there, null when it cannot be looked at. */
async function lstatOrAbsent(path: string): Promise<Stats | null | undefined> {
  return lstat(path).catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' || error.code === 'ENOTDIR' ? undefined : null));
}

/** Whether what lstatOrAbsent found has nothing to read: nothing there, or an empty regular file. */
function holdsNothing(found: Stats | null | undefined): boolean {
  return found === undefined || (found !== null && found.isFile() && found.size === 0);
}

/** Whether an open file lies under `root` (a real path), checked on the descriptor as byte-window.ts does. */
async function opensUnder(handle: FileHandle, root: string): Promise<boolean> {
  const opened = await realpath(`/proc/self/fd/${handle.fd}`);
  return opened === root || opened.startsWith(root + sep);
}

/**
 * The cluster's "files that outlive the job" (api-map §9): named files of an execution's working
 * directory, and its task logs, copied into a store of the hub's own, `results/` under
 * HUB_SHARED_DIR (0700 directories, 0600 files, the hub's alone: every replica that shares the
 * directory serves them), each at most HUB_RESULT_MAX_BYTES; then read back in windows, whole, or
 * deleted by key prefix. Keys are made by the caller (a pipeline run's results under
 * `runs/<runId>/<node>`) and checked, so that no caller's bug reaches outside the store.
 *
 * The working directory belongs to the job's user, who is not trusted, while the hub (root, as a
 * rule) reads it: a file is read exactly as `GET .../files` reads one (no `..`, no absolute path,
 * no link followed out of the directory, checked on the opened descriptor, never a FIFO or a
 * device), and is copied only when it belongs to the directory's owner, so that a hard link to
 * another's file gives the job nothing it could not read itself.
 */
@Injectable()
export class FilesCopiedOut implements OnModuleInit {
  private readonly root: string;
  private readonly maxBytes: number;
  private readonly logger: Logger;

  constructor(
    config: HubConfig,
    private readonly cluster: ClusterRepository,
    logger: HubLogger,
  ) {
    this.root = join(config.sharedDir, 'results');
    this.maxBytes = config.resultMaxBytes;
    this.logger = logger.for('files-copied-out');
  }

  /** Makes the store, the hub's alone: writable and readable by nobody else, and no link. */
  onModuleInit(): void {
    // The shared directory first, as the driver makes it (jobs enter it): a recursive make of the store alone would give it 0700.
    makeDirectory(dirname(this.root), 'HUB_SHARED_DIR');
    makeDirectory(this.root, 'HUB_SHARED_DIR', 0o700);
    if (!lstatSync(this.root).isDirectory())
      throw new StartupError(`The store of results ${this.root} is not a directory (a link?). Remove it; the hub makes it.`);
    chmodSync(this.root, 0o700);
  }

  /**
   * Copies named files (paths relative to the execution's working directory `work/`) into the
   * store under `destination` (a relative key prefix made by the caller, e.g. `runs/<runId>/<node>`):
   * confined exactly as GET .../files reads; each at most HUB_RESULT_MAX_BYTES. A file that cannot
   * be copied, an unexpected I/O error included, is `stored: false` with the reason; the others
   * are copied all the same.
   */
  async copyOut(execution: CopiedExecution, files: readonly { name: string; path: string }[], destination: string): Promise<CopiedFile[]> {
    const prefix = checkedKey(destination);
    const { executionId, executionDir } = await this.located(execution);
    let work: Confined | Refusal | undefined;
    try {
      work = await this.confined(executionDir, 'work', 'the working directory');
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      work = error;
    }
    const copied: CopiedFile[] = [];
    for (const { name, path } of files) {
      try {
        if (work instanceof Refusal) throw new Refusal(`'${path}' is not read: ${work.reason}`);
        const segment = storeKeySegment(name);
        if (segment === undefined) throw new Refusal(`'${path}' is not copied: its name ${JSON.stringify(name)} is empty or too long to store`);
        const key = `${prefix}/${FILES}/${segment}`;
        const size = await this.copyFile(work, path, key);
        copied.push({ name, path, stored: true, size, key });
      } catch (error) {
        // The error's code alone: its message would show the hub's own paths.
        const reason =
          error instanceof Refusal ? error.reason : `'${path}' could not be copied (${(error as NodeJS.ErrnoException).code ?? 'an unexpected error'})`;
        if (!(error instanceof Refusal)) this.logger.warn({ err: error, executionId, path }, 'A file of an execution could not be copied out');
        copied.push({ name, path, stored: false, reason });
      }
    }
    return copied;
  }

  /**
   * Copies the execution's task logs (stdout, stderr) under `destination`; a log over
   * HUB_RESULT_MAX_BYTES keeps its LAST HUB_RESULT_MAX_BYTES bytes and says truncated. An empty
   * log, or one never written, is not written to the store (its key then holds nothing, which
   * readers take as empty): most tasks of a pipeline print nothing on one of them, and a stored
   * file costs a directory, a file and an fsync. So is one the job made other than a regular file
   * of the log directory's owner (on Slurm the job owns that directory), which the hub's log says.
   */
  async copyLogs(execution: CopiedExecution, destination: string): Promise<CopiedLog[]> {
    const prefix = checkedKey(destination);
    const { executionId, executionDir } = await this.located(execution);
    // Most tasks of a pipeline print nothing at all: when both logs are empty regular files (or were
    // never written), there is nothing to read, and the directory is not resolved. A link a job put
    // in the way can only make a log read as empty here, which is what a refused log is kept as.
    // Nothing can be stored under the destination's logs unless an earlier copy made their directory.
    const [storedLogs, ...looked] = await Promise.all([
      lstatOrAbsent(join(this.root, prefix, LOGS)),
      ...LOG_NAMES.map((name) => lstatOrAbsent(join(executionDir, 'logs', name))),
    ]);
    const empty = looked.every(holdsNothing);
    const storedBefore = storedLogs !== undefined;
    const copied: CopiedLog[] = [];
    let logs: Confined | undefined;
    let refused: Refusal | undefined;
    try {
      if (!empty) logs = await this.confined(executionDir, 'logs', 'the log directory');
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      refused = error;
    }
    for (const name of LOG_NAMES) {
      const key = `${prefix}/${LOGS}/${name}`;
      let source: FileHandle | undefined;
      try {
        if (refused) throw refused;
        // An empty regular file (most tasks print nothing on one of their logs) has nothing to read:
        // it is taken as empty without opening it. Anything else is opened as confined.
        if (logs && !holdsNothing(await lstatOrAbsent(join(logs.real, name))))
          source = await this.openConfined(logs, name, `log '${name}'`, 'the log directory');
      } catch (error) {
        if (!(error instanceof Refusal)) throw error;
        if (!error.missing) this.logger.warn({ executionId, log: name, reason: error.reason }, 'A log of an execution is not read: it is kept as empty');
      }
      try {
        const size = source ? (await source.stat()).size : 0;
        if (size === 0) {
          // Nothing to keep: whatever an earlier copy stored under the key goes, so that it reads as this log.
          if (storedBefore) await rm(join(this.root, key), { force: true });
          copied.push({ name, size: 0, key, truncated: false });
          continue;
        }
        const kept = Math.min(size, this.maxBytes);
        // The last `kept` bytes as the log was when looked at; what the task adds after (it has ended, as a rule) is cut.
        const stored = await this.write(key, source, size - kept, kept, 'cut');
        copied.push({ name, size: stored, key, truncated: size > kept });
      } finally {
        await source?.close();
      }
    }
    return copied;
  }

  /** A byte window of a stored file, as the cluster's task logs answer; NotFoundError when absent. */
  async readStored(key: string, window: { origin?: unknown; offset?: unknown; limit?: unknown }, what: string): Promise<ByteWindowReply> {
    const file = join(this.root, checkedKey(key));
    const range = parseByteWindow(window.origin, window.offset, window.limit);
    try {
      return await readWindow(file, await realpath(this.root), range, what);
    } catch (error) {
      // A directory of the store, or a path through a file: no stored file either.
      if (error instanceof InvalidInputError) throw new NotFoundError(`No ${what}`);
      throw error;
    }
  }

  /** The whole stored file as a stream with its size, for `?raw=true` replies (the caller sets the content type); NotFoundError when absent. */
  async openStored(key: string): Promise<{ stream: NodeJS.ReadableStream; size: number }> {
    const file = join(this.root, checkedKey(key));
    let handle: FileHandle;
    try {
      handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (error) {
      if (['ENOENT', 'ENOTDIR'].includes((error as NodeJS.ErrnoException).code ?? '')) throw new NotFoundError('No such stored file');
      throw error;
    }
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) throw new NotFoundError('No such stored file');
      // The stream closes the file when it ends or is destroyed.
      return { stream: handle.createReadStream({ highWaterMark: WINDOW_CHUNK, autoClose: true }), size: stats.size };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** Deletes everything under a key prefix (a run's results when the run is deleted or expires); nothing there is no error. */
  async remove(prefix: string): Promise<void> {
    await rm(join(this.root, checkedKey(prefix)), { recursive: true, force: true });
  }

  /** The execution and its directory: as given (read with its latest attempt), else read by its id. */
  private async located(execution: CopiedExecution): Promise<{ executionId: string; executionDir: string }> {
    if (typeof execution !== 'string') return execution;
    const dir = await this.cluster.executionDirOf(execution);
    if (dir === null) throw new NotFoundError(`Job execution ${execution} not found`);
    return { executionId: execution, executionDir: dir };
  }

  /**
   * An execution's `work/` or `logs/` as it is read: the directory itself, not a link a job put in
   * its place (on Slurm the execution's directory is the job user's: a {@link Refusal}), with its
   * owner; undefined when there is none (the execution never started).
   */
  private async confined(executionDir: string, name: 'work' | 'logs', where: string): Promise<Confined | undefined> {
    try {
      const real = await realpath(join(executionDir, name));
      if (real !== join(await realpath(executionDir), name)) throw new Refusal(`${where} was replaced by a link leading out of the execution's directory`);
      return { real, owner: (await stat(real)).uid };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  /** Copies one file of the working directory to `key`; its size, or a {@link Refusal}. */
  private async copyFile(work: Confined | undefined, path: string, key: string): Promise<number> {
    if (typeof path !== 'string' || path.includes('\0') || isAbsolute(path) || path.split('/').includes('..'))
      throw new Refusal(`'${path}' is outside the working directory: a path must be relative, without ..`);
    if (!work) throw new Refusal(`'${path}' is missing: the execution has no working directory`);
    const source = await this.openConfined(work, path, `'${path}'`, 'the working directory');
    try {
      const { size } = await source.stat();
      const tooLarge = new Refusal(`'${path}' is larger than HUB_RESULT_MAX_BYTES (${this.maxBytes} bytes): not stored`);
      if (size > this.maxBytes) throw tooLarge;
      // A file that grows past the limit while it is copied is refused as over it, not cut: a result cut short would pass for whole.
      const copied = await this.write(key, source, 0, this.maxBytes, 'refuse');
      if (copied === undefined) throw tooLarge;
      return copied;
    } finally {
      await source.close();
    }
  }

  /**
   * Opens `path` under a directory of the job's for reading, as byte-window.ts does: links are
   * followed only while they stay inside (`realpath`), the last component is opened with
   * O_NOFOLLOW and O_NONBLOCK (a FIFO never blocks), anything but a regular file is refused before
   * it is opened (a device is never opened) and again on the descriptor, which must lie under the
   * directory and belong to its owner. Throws a {@link Refusal} saying why, naming `what`.
   */
  private async openConfined(directory: Confined, path: string, what: string, where: string): Promise<FileHandle> {
    let resolved: string;
    try {
      resolved = await realpath(join(directory.real, path));
    } catch (error) {
      throw this.refusalOf(error, what, where);
    }
    const inside = relative(directory.real, resolved);
    if (inside === '' || inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
      if (inside === '') throw new Refusal(`${what} is not a regular file: it is ${where} itself`);
      throw new Refusal(`${what} is a link leading out of ${where}`);
    }
    try {
      if (!(await lstat(resolved)).isFile()) throw new Refusal(`${what} is not a regular file`);
    } catch (error) {
      throw this.refusalOf(error, what, where);
    }
    let handle: FileHandle;
    try {
      handle = await open(resolved, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
    } catch (error) {
      throw this.refusalOf(error, what, where);
    }
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) throw new Refusal(`${what} is not a regular file`);
      if (!(await opensUnder(handle, directory.real))) throw new Refusal(`${what} is a link leading out of ${where}`);
      if (stats.uid !== directory.owner) throw new Refusal(`${what} is not the job's own file (a hard link to another's?): it is not read`);
      return handle;
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** A file-system failure on the way to a file as the refusal it deserves; an unexpected one as itself. */
  private refusalOf(error: unknown, what: string, where: string): unknown {
    if (error instanceof Refusal) return error;
    switch ((error as NodeJS.ErrnoException).code) {
      case 'ENOENT':
      case 'ENOTDIR':
        return new Refusal(`${what} is missing from ${where}`, true);
      case 'ELOOP':
        // A link put in place of the file after it was resolved, or links that loop.
        return new Refusal(`${what} is a link leading out of ${where}`);
      default:
        return error;
    }
  }

  /**
   * Writes `limit` bytes of `source` from `start` (all, when it holds fewer) to `key`: to a
   * temporary name beside it, then renamed, so that a reader sees the whole file or none. A
   * source that holds more is cut there (`cut`), or nothing is stored and the answer is undefined
   * (`refuse`). Without a source, an empty file. Answers the bytes stored.
   */
  private async write(key: string, source: FileHandle | undefined, start: number, limit: number, beyond: 'cut'): Promise<number>;
  private async write(key: string, source: FileHandle, start: number, limit: number, beyond: 'refuse'): Promise<number | undefined>;
  private async write(key: string, source: FileHandle | undefined, start: number, limit: number, beyond: 'cut' | 'refuse'): Promise<number | undefined> {
    const target = join(this.root, key);
    await mkdir(dirname(target), { recursive: true, mode: 0o700 });
    const temporary = join(dirname(target), `.tmp-${randomBytes(8).toString('hex')}`);
    const out = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    let closed = false;
    let renamed = false;
    try {
      let copied = 0;
      if (source) {
        const buffer = Buffer.allocUnsafe(Math.max(1, Math.min(COPY_CHUNK, limit)));
        while (copied < limit) {
          const { bytesRead } = await source.read(buffer, 0, Math.min(buffer.length, limit - copied), start + copied);
          if (bytesRead === 0) break;
          for (let written = 0; written < bytesRead;) written += (await out.write(buffer, written, bytesRead - written)).bytesWritten;
          copied += bytesRead;
        }
        if (beyond === 'refuse' && copied === limit && (await source.read(Buffer.alloc(1), 0, 1, start + copied)).bytesRead > 0) return undefined;
      }
      await out.sync();
      await out.close();
      closed = true;
      await rename(temporary, target);
      renamed = true;
      return copied;
    } finally {
      if (!closed) await out.close();
      if (!renamed) await rm(temporary, { force: true });
    }
  }
}

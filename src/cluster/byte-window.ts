import { open } from 'node:fs/promises';
import { InvalidInputError, type FieldError } from '../common/errors/hub-errors.js';

export const WINDOW_ORIGINS = ['start', 'end'] as const;
export const DEFAULT_WINDOW = 64 * 1024;
export const MAX_WINDOW = 16 * 1024 * 1024;

/** Which bytes of a file to read: `limit` bytes from `offset` counted from the start, or back from the end. */
export interface ByteWindow {
  readonly origin: (typeof WINDOW_ORIGINS)[number];
  readonly offset: number;
  readonly limit: number;
}

function integer(raw: unknown, name: string, min: number, max: number, fallback: number, errors: FieldError[]): number {
  if (raw === undefined) return fallback;
  const value = typeof raw === 'string' && /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= min && value <= max)) errors.push({ path: name, message: `must be an integer from ${min} to ${max}` });
  return value;
}

/** The `origin`, `offset` (int64) and `limit` (int32, at most 16 MiB) query parameters; 400 naming the bad ones. */
export function parseByteWindow(origin: unknown, offset: unknown, limit: unknown): ByteWindow {
  const errors: FieldError[] = [];
  if (origin !== undefined && !WINDOW_ORIGINS.includes(origin as ByteWindow['origin'])) errors.push({ path: 'origin', message: 'must be start or end' });
  const window = {
    origin: (origin ?? 'start') as ByteWindow['origin'],
    offset: integer(offset, 'offset', 0, Number.MAX_SAFE_INTEGER, 0, errors),
    limit: integer(limit, 'limit', 1, MAX_WINDOW, DEFAULT_WINDOW, errors),
  };
  if (errors.length > 0) throw new InvalidInputError(`Invalid query parameters: ${errors.map((e) => `${e.path} ${e.message}`).join('; ')}`, errors);
  return window;
}

/**
 * Reads a window of a file without reading the rest: from the start, bytes [offset, offset+limit);
 * from the end, the `limit` bytes that end `offset` bytes before it. Decoded as UTF-8 (a character
 * cut by the window's edge shows as U+FFFD).
 */
export async function readWindow(file: string, window: ByteWindow): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    const end = window.origin === 'start' ? Math.min(size, window.offset + window.limit) : Math.max(0, size - window.offset);
    const start = window.origin === 'start' ? Math.min(size, window.offset) : Math.max(0, end - window.limit);
    const buffer = Buffer.alloc(Math.max(0, end - start));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, start);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

import { constants } from 'node:fs';
import { access, lstat, opendir, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, normalize, sep } from 'node:path';
import picomatch from 'picomatch';
import type { SeenFile } from './pipeline-triggers.repository.js';

/** Who a File trigger's owner's jobs run as: null for the hub's own user (a hub that is not root). */
export interface FileIdentity {
  readonly uid: number;
  readonly gid: number;
  readonly groups?: readonly number[];
}

/** The most files one poll takes (the rest wait for the next poll): a poll is one transaction. */
export const MAX_FILES_PER_POLL = 1000;
/** How deep a recursive poll looks below its path. */
const MAX_DEPTH = 32;

/**
 * A matcher of file names: `*` any run of characters, `?` one, matched on the whole name,
 * case-sensitively, a leading dot included (picomatch, with its other globbing switched off).
 */
export function fileNameMatcher(pattern: string): (name: string) => boolean {
  return picomatch(pattern, { dot: true, nobrace: true, noextglob: true, noglobstar: true, nonegate: true, posix: true });
}

/** Whether `identity` may do `bits` (4 read, 2 write, 1 execute) on a file of that mode and ownership; root as the hub itself. */
export function permits(mode: number, uid: number, gid: number, identity: FileIdentity, bits: number): boolean {
  if (identity.uid === 0) return true;
  if (uid === identity.uid) return ((mode >> 6) & bits) === bits;
  if (gid === identity.gid || identity.groups?.includes(gid)) return ((mode >> 3) & bits) === bits;
  return (mode & bits) === bits;
}

/** Whether `identity` (the hub's own user when null) may list the directory `path`: every directory above it searchable, it readable and searchable. */
export async function listableBy(path: string, identity: FileIdentity | null): Promise<boolean> {
  if (identity === null)
    return access(path, constants.R_OK | constants.X_OK).then(
      () => true,
      () => false,
    );
  const parts = path.split(sep).filter((part) => part !== '');
  let current: string = sep;
  try {
    for (const part of parts) {
      const info = await stat(current);
      if (!permits(info.mode, info.uid, info.gid, identity, 1)) return false;
      current = join(current, part);
    }
    const info = await stat(current);
    return info.isDirectory() && permits(info.mode, info.uid, info.gid, identity, 5);
  } catch {
    return false;
  }
}

/** Whether `candidate` (resolved) lies in one of `roots` (resolved). */
export function within(candidate: string, roots: readonly string[]): boolean {
  return roots.some((root) => candidate === root || candidate.startsWith(root.endsWith(sep) ? root : root + sep));
}

export async function realRoots(roots: readonly string[]): Promise<string[]> {
  return Promise.all(roots.map((root) => realpath(root).catch(() => root)));
}

/**
 * The directory a poll lists: `path` with its symbolic links resolved now (one may have been
 * changed since the trigger was checked), `outside` when that leads out of the roots, null when it
 * does not exist (no files).
 */
export async function resolvedWatchedPath(path: string, roots: readonly string[]): Promise<{ readonly real: string } | 'outside' | null> {
  const real = await realpath(path).catch(() => null);
  if (real === null) return null;
  return within(real, await realRoots(roots)) ? { real } : 'outside';
}

/** Why a File trigger's `path` cannot be watched, or null when it can (api-map §7). */
export async function watchedPathProblem(path: string, roots: readonly string[], identity: FileIdentity | null): Promise<string | null> {
  if (!isAbsolute(path) || normalize(path) !== path.replace(/(.)\/+$/, '$1')) return `path '${path}' must be an absolute path without . or .. parts`;
  // Symbolic links are resolved first, so that none leads out of the roots.
  const real = await realpath(path).catch(() => null);
  const resolvedRoots = await realRoots(roots);
  if (!within(real ?? normalize(path), resolvedRoots))
    return `path '${path}' is not under ${roots.map((root) => `'${root}'`).join(' or ')} (HUB_TRIGGER_FILE_ROOTS)`;
  if (real === null || !(await stat(real)).isDirectory()) return `path '${path}' is not an existing directory`;
  if (!(await listableBy(real, identity))) return `path '${path}' is not readable by the owner's job identity`;
  return null;
}

/**
 * The regular files under `path` whose names match (in subdirectories too when `recursive`, those
 * `identity` may list), by absolute path, at most MAX_FILES_PER_POLL of them in name order.
 * Symbolic links are not followed: a link would let a trigger reach files outside its path.
 */
export async function matchingFiles(path: string, pattern: string, recursive: boolean, identity: FileIdentity | null): Promise<SeenFile[]> {
  const matches = fileNameMatcher(pattern);
  const found: SeenFile[] = [];
  const walk = async (directory: string, depth: number): Promise<void> => {
    const entries: { name: string; file: boolean; directory: boolean }[] = [];
    try {
      for await (const entry of await opendir(directory)) entries.push({ name: entry.name, file: entry.isFile(), directory: entry.isDirectory() });
    } catch {
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (found.length >= MAX_FILES_PER_POLL) return;
      const full = join(directory, entry.name);
      if (entry.file && matches(entry.name)) {
        const info = await lstat(full).catch(() => null);
        if (info?.isFile()) found.push({ path: full, size: info.size, mtime: new Date(Math.floor(info.mtimeMs)) });
      } else if (entry.directory && recursive && depth < MAX_DEPTH && (await listableBy(full, identity))) await walk(full, depth + 1);
    }
  };
  if (await listableBy(path, identity)) await walk(path, 0);
  return found;
}

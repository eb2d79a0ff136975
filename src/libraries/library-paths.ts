import { constants } from 'node:fs';
import { access, realpath, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { listableBy, permits, realRoots, within, type FileIdentity } from '../pipelines/trigger-files.js';
import { DIRECTORY_ENGINES, type LibraryEngine } from './dto/library-definition.dto.js';

/**
 * Why a definition's `path` is refused, or null (api-map §5): absolute, without `.` or `..` parts,
 * and under one of the roots once its symbolic links are resolved (so that none leads out; a root
 * `/a/libs` does not hold `/a/libs-x`). A path that does not exist yet is judged as written: its data
 * may come later, and publishing checks that it can be read.
 */
export async function libraryPathProblem(path: string, roots: readonly string[]): Promise<string | null> {
  if (!isAbsolute(path) || path.includes('\0') || normalize(path) !== path.replace(/(.)\/+$/, '$1'))
    return `path '${path}' must be an absolute path without . or .. parts`;
  const real = await realpath(path).catch(() => null);
  if (!within(real ?? normalize(path), await realRoots(roots)))
    return `path '${path}' is not under ${roots.map((root) => `'${root}'`).join(' or ')} (HUB_LIBRARY_ROOTS)`;
  return null;
}

/**
 * Why the publisher's job identity (the hub's own user when null) cannot read a library's path, or
 * null: a directory it may list for the engines of member files, a file it may read (every
 * directory above it searchable) for duckdb. Resolved again now, so that a link changed since the
 * definition was written cannot lead out of the roots.
 */
export async function unreadablePathProblem(
  path: string,
  engine: LibraryEngine,
  roots: readonly string[],
  identity: FileIdentity | null,
): Promise<string | null> {
  const real = await realpath(path).catch(() => null);
  if (real === null) return `path '${path}' does not exist`;
  if (!within(real, await realRoots(roots))) return `path '${path}' leads out of HUB_LIBRARY_ROOTS`;
  const info = await stat(real);
  if (DIRECTORY_ENGINES.includes(engine)) {
    if (!info.isDirectory()) return `path '${path}' is not a directory (the ${engine} engine reads the files of a directory)`;
    return (await listableBy(real, identity)) ? null : `path '${path}' is not readable by the publisher's job identity`;
  }
  if (!info.isFile()) return `path '${path}' is not a file (the duckdb engine reads a database file)`;
  const readable =
    identity === null ? await canRead(real) : (await searchableBy(dirname(real), identity)) && permits(info.mode, info.uid, info.gid, identity, 4);
  return readable ? null : `path '${path}' is not readable by the publisher's job identity`;
}

/** Whether the hub's own user may read a file. */
function canRead(path: string): Promise<boolean> {
  return access(path, constants.R_OK).then(
    () => true,
    () => false,
  );
}

/** Whether `identity` may pass through every directory from the root to `directory` (itself included): a file there can then be opened by name. */
async function searchableBy(directory: string, identity: FileIdentity): Promise<boolean> {
  let current: string = sep;
  for (const part of ['', ...directory.split(sep).filter((name) => name !== '')]) {
    current = join(current, part);
    const info = await stat(current).catch(() => null);
    if (!info?.isDirectory() || !permits(info.mode, info.uid, info.gid, identity, 1)) return false;
  }
  return true;
}

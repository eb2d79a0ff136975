import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { lstat, open, readdir, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { LOG_NAMES } from './cluster-driver.js';
import { hubRunsAsRoot, PRIVILEGED_ENV, systemProgram } from './host-tools.js';

const run = promisify(execFile);

/** The owner of `path` itself (a link is not followed); undefined when there is nothing there. */
async function ownerOf(path: string): Promise<{ uid: number; gid: number; directory: boolean } | undefined> {
  try {
    const stats = await lstat(path);
    return { uid: stats.uid, gid: stats.gid, directory: stats.isDirectory() };
  } catch {
    return undefined;
  }
}

/**
 * Empties a directory a job's user owns as that user, so that whatever it planted there (links to
 * elsewhere, directories swapped for links while the deletion runs) can lead the deletion only
 * where that user could have deleted anyway. `find -delete` follows no link.
 */
async function emptyAs(directory: string, owner: { uid: number; gid: number }): Promise<void> {
  const setpriv = systemProgram('setpriv');
  const find = systemProgram('find');
  if (!setpriv || !find) throw new Error('setpriv and find are needed to delete a job’s files as its user');
  // From inside it (entered by the hub), so that the user need not be able to traverse the directories above.
  await run(setpriv, [`--reuid=${owner.uid}`, `--regid=${owner.gid}`, '--clear-groups', '--no-new-privs', '--', find, '.', '-mindepth', '1', '-delete'], {
    cwd: directory,
    env: PRIVILEGED_ENV,
    timeout: 600_000,
  });
}

/**
 * Deletes an execution's directory for the retention prune. What a job's user owns (its working
 * directory; on Slurm the whole execution directory) is emptied as that user; what is left is
 * the hub's own, which no job can have changed, and goes as the hub. A directory a job still
 * fills meanwhile is left in place (its `rmdir` fails). Resolves with the error when it could not
 * delete it all.
 */
export async function removeExecutionDir(executionDir: string): Promise<Error | undefined> {
  const hubUid = process.getuid?.() ?? -1;
  try {
    for (const path of [executionDir, join(executionDir, 'work')]) {
      const owner = await ownerOf(path);
      if (!owner?.directory || owner.uid === hubUid || !hubRunsAsRoot()) continue;
      await emptyAs(path, owner);
      await rmdir(path);
      if (path === executionDir) return undefined;
    }
    await rm(executionDir, { recursive: true, force: true });
    return undefined;
  } catch (error) {
    return error as Error;
  }
}

/**
 * Empties an execution's working directory, once nothing of it runs (an execution evicted for the
 * disk, see DiskReserve): as its user when it is a job user's, as the prune does; else as the hub,
 * which follows no link either (`rm` removes a link, not what it names).
 */
export async function emptyWorkDir(executionDir: string): Promise<void> {
  const work = join(executionDir, 'work');
  const owner = await ownerOf(work);
  if (!owner?.directory) return;
  if (owner.uid !== process.getuid?.() && hubRunsAsRoot()) return emptyAs(work, owner);
  for (const entry of await readdir(work)) await rm(join(work, entry), { recursive: true, force: true });
}

/**
 * Cuts each of an execution's logs (the hub's files) to its last `keepBytes`, in place: the tail
 * is copied to the front and the rest truncated, so that it takes no block more on a full disk.
 */
export async function keepLogTails(executionDir: string, keepBytes: number): Promise<void> {
  for (const name of LOG_NAMES) {
    let file;
    try {
      file = await open(join(executionDir, 'logs', name), constants.O_RDWR | constants.O_NOFOLLOW);
    } catch {
      continue;
    }
    try {
      const { size } = await file.stat();
      if (size <= keepBytes) continue;
      const tail = Buffer.alloc(keepBytes);
      const { bytesRead } = await file.read(tail, 0, keepBytes, size - keepBytes);
      await file.write(tail, 0, bytesRead, 0);
      await file.truncate(bytesRead);
    } finally {
      await file.close();
    }
  }
}

import { execFileSync } from 'node:child_process';
import { accessSync, chmodSync, constants, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statfsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { isRunning } from '../../common/database/processes.js';
import { PRIVILEGED_ENV, systemProgram } from './host-tools.js';

/**
 * What the local driver keeps no longer than its hub's process: the gates of prepared launches
 * (`gates/`, the hub's alone) and each launch's task file, its environment and command (`tasks/`,
 * traversable, each file its job's user's alone). It lives on a memory filesystem (issue 25: the
 * first of `/run` as root, the user's runtime directory, `/dev/shm` that is one, checked with
 * statfs; else, as root, a tmpfs the hub mounts for itself), so that nothing of a job's
 * environment is written to a disk, and a file made and removed per job costs microseconds: on
 * the disk of the benchmark's machine (ext4 without a journal, which at every creation reads each
 * inode deleted in the last one to six minutes) each cost up to 0.6 ms of CPU.
 */
export interface RuntimeDir {
  readonly path: string;
  readonly gates: string;
  readonly tasks: string;
  /** Whether `path` is a tmpfs the hub mounted for itself (unmounted when it is removed). */
  readonly mounted: boolean;
}

/** statfs's f_type of the memory filesystems (linux/magic.h). */
const TMPFS_MAGIC = 0x01021994;
const RAMFS_MAGIC = 0x858458f6;
/** The size of a tmpfs of the hub's own: task files are a job's environment and command (a few KiB each). */
const OWN_TMPFS_SIZE = '64m';

/** A directory's name: `hub-<pid>-<random>`, so that a later hub knows whether the hub that made it still runs. */
const NAME = /^hub-(\d+)-[A-Za-z0-9]{6}$/;

function writableDirectory(path: string | undefined): path is string {
  if (!path) return false;
  try {
    accessSync(path, constants.W_OK | constants.X_OK);
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Whether a path is on a memory filesystem (tmpfs, ramfs): what is written there never reaches a disk. */
export function onMemoryFilesystem(path: string): boolean {
  try {
    const { type } = statfsSync(path);
    return type === TMPFS_MAGIC || type === RAMFS_MAGIC;
  } catch {
    return false;
  }
}

/** Where runtime directories may go, best first: `/run` as root, `$XDG_RUNTIME_DIR`, `/dev/shm`, the temporary directory. */
export function runtimeCandidates(root: boolean): string[] {
  return [root ? '/run' : undefined, process.env.XDG_RUNTIME_DIR, '/dev/shm', tmpdir()].filter(writableDirectory);
}

/**
 * Removes what hubs that died left (their tasks' files, their gates): directories by the name's
 * pattern, this user's own (never a link), whose hub no longer runs. A task that runs read its
 * file when it started; a launch still waiting at a dead hub's gate ends without reading it.
 */
function sweep(base: string): void {
  const uid = process.getuid?.();
  for (const name of readdirSync(base)) {
    const pid = NAME.exec(name)?.[1];
    if (pid === undefined || Number(pid) === process.pid || isRunning(Number(pid))) continue;
    const path = join(base, name);
    try {
      const stats = lstatSync(path);
      if (!stats.isDirectory() || stats.uid !== uid) continue;
      // A tmpfs the dead hub mounted for itself (its base is no memory filesystem, it is).
      if (onMemoryFilesystem(path) && !onMemoryFilesystem(base)) unmount(path);
      rmSync(path, { recursive: true, force: true });
    } catch {
      // Gone already, or another hub sweeps it.
    }
  }
}

/** Mounts a tmpfs of the hub's own on `path` (as root); whether it could. */
function mountTmpfs(path: string): boolean {
  const mount = systemProgram('mount');
  if (!mount) return false;
  try {
    execFileSync(mount, ['-t', 'tmpfs', '-o', `size=${OWN_TMPFS_SIZE},mode=0711,nosuid,nodev,noexec`, 'hub-runtime', path], {
      env: PRIVILEGED_ENV,
      stdio: 'ignore',
      timeout: 10_000,
    });
    return onMemoryFilesystem(path);
  } catch {
    return false;
  }
}

function unmount(path: string): void {
  const umount = systemProgram('umount');
  if (!umount) return;
  try {
    execFileSync(umount, ['--lazy', path], { env: PRIVILEGED_ENV, stdio: 'ignore', timeout: 10_000 });
  } catch {
    // Not mounted (any more).
  }
}

/**
 * Makes this hub's runtime directory, after sweeping those of hubs that died, on the first of
 * `candidates` that is a memory filesystem; when none is, as root, in a tmpfs the hub mounts on a
 * directory of the first; else there, saying that task files may then reach the disk. Logs where.
 */
export function makeRuntimeDir(root: boolean, logger?: Logger, candidates = runtimeCandidates(root)): RuntimeDir {
  const memory = candidates.find(onMemoryFilesystem);
  const base = memory ?? candidates[0] ?? tmpdir();
  sweep(base);
  const path = mkdtempSync(join(base, `hub-${process.pid}-`));
  const mounted = !memory && root && mountTmpfs(path);
  // Traversable, for each job's user to reach its own task file; never listable.
  chmodSync(path, 0o711);
  const gates = join(path, 'gates');
  const tasks = join(path, 'tasks');
  mkdirSync(gates, { mode: 0o700 });
  mkdirSync(tasks);
  chmodSync(tasks, 0o711);
  const checked = candidates.map((candidate) => `${candidate} (${onMemoryFilesystem(candidate) ? 'memory' : statfsName(candidate)})`).join(', ');
  if (memory) logger?.info({ runtimeDir: path }, `Task files (jobs' environments and commands) are kept in memory, in ${path}`);
  else if (mounted)
    logger?.info({ runtimeDir: path }, `Task files are kept in memory, in a tmpfs of the hub's own at ${path}: none of ${checked} is a memory filesystem`);
  else
    logger?.warn(
      { runtimeDir: path },
      `Task files (jobs' environments and commands, secrets included) may reach the disk: none of ${checked} is a memory filesystem, and only root can mount one; they are in ${path}. Set XDG_RUNTIME_DIR to a directory on a tmpfs`,
    );
  return { path, gates, tasks, mounted };
}

/** The kind of filesystem a path is on, for the log (statfs's type in hexadecimal). */
function statfsName(path: string): string {
  try {
    return `filesystem type 0x${statfsSync(path).type.toString(16)}`;
  } catch {
    return 'unknown';
  }
}

/** Removes a runtime directory (a tmpfs of the hub's own is unmounted first). */
export function removeRuntimeDir(runtime: RuntimeDir): void {
  if (runtime.mounted) unmount(runtime.path);
  rmSync(runtime.path, { recursive: true, force: true });
}

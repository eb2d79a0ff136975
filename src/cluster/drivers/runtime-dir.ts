import { accessSync, chmodSync, constants, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRunning } from '../../common/database/processes.js';

/**
 * What the local driver keeps no longer than its hub's process: the gates of prepared launches
 * (`gates/`, the hub's alone) and each launch's task file, its environment and command (`tasks/`,
 * traversable, each file its job's user's alone). It lives on a memory filesystem where there is
 * one (`/run` as root, the user's runtime directory otherwise), so that nothing of a job's
 * environment is written to a disk, and a file made and removed per job costs microseconds: on
 * the disk of the benchmark's machine (ext4 without a journal, which at every creation reads each
 * inode deleted in the last one to six minutes) each cost up to 0.6 ms of CPU.
 */
export interface RuntimeDir {
  readonly path: string;
  readonly gates: string;
  readonly tasks: string;
}

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

/** Where runtime directories go: `/run` as root, `$XDG_RUNTIME_DIR` otherwise, else the temporary directory. */
function runtimeBase(root: boolean): string {
  const candidates = [root ? '/run' : undefined, process.env.XDG_RUNTIME_DIR];
  return candidates.find(writableDirectory) ?? tmpdir();
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
      if (stats.isDirectory() && stats.uid === uid) rmSync(path, { recursive: true, force: true });
    } catch {
      // Gone already, or another hub sweeps it.
    }
  }
}

/** Makes this hub's runtime directory, after sweeping those of hubs that died. */
export function makeRuntimeDir(root: boolean): RuntimeDir {
  const base = runtimeBase(root);
  sweep(base);
  const path = mkdtempSync(join(base, `hub-${process.pid}-`));
  // Traversable, for each job's user to reach its own task file; never listable.
  chmodSync(path, 0o711);
  const gates = join(path, 'gates');
  const tasks = join(path, 'tasks');
  mkdirSync(gates, { mode: 0o700 });
  mkdirSync(tasks);
  chmodSync(tasks, 0o711);
  return { path, gates, tasks };
}

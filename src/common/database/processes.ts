import { readFileSync } from 'node:fs';

/** True when a process with this id exists (also when it belongs to another user), zombies included. */
function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface ProcessInfo {
  /** One letter: R running, S sleeping, Z zombie (exited, not yet reaped by its parent), ... */
  readonly state: string;
  readonly parentPid: number;
  /** Start time in clock ticks since boot: with the pid, it tells a process from a reuse of its id. */
  readonly startTime: string;
  readonly commandLine: string;
}

/** What Linux's /proc says of a process; undefined when it is gone or /proc is not there. */
export function processInfo(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may itself hold spaces or parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    return { state: fields[0], parentPid: Number(fields[1]), startTime: fields[19], commandLine };
  } catch {
    return undefined;
  }
}

/**
 * True while a process runs. A zombie has exited: an orphan's new parent (often PID 1 in a
 * container) may take its time to reap it, and until then its id still answers signals.
 */
export function isRunning(pid: number): boolean {
  return exists(pid) && processInfo(pid)?.state !== 'Z';
}

/** Waits until a process has exited; false when it is still running after the timeout. */
export async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isRunning(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

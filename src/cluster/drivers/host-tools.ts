import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';

/** Where the privileged steps look for the programs they run: fixed directories, never a PATH. */
const SYSTEM_DIRECTORIES = ['/usr/bin', '/bin', '/usr/sbin', '/sbin'];

/** The one environment every privileged step runs with, whatever a job sets. */
export const PRIVILEGED_ENV: Readonly<Record<string, string>> = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' };

/** The absolute path of a system program, or undefined when none of the system directories has it. */
export function systemProgram(name: string): string | undefined {
  for (const directory of SYSTEM_DIRECTORIES) {
    const path = join(directory, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/** Whether the hub's process runs as root (and so can run jobs as their users). */
export function hubRunsAsRoot(): boolean {
  return process.getuid?.() === 0;
}

/** Whether a command runs to a 0 exit, with the privileged environment (a probe of what the machine allows). */
export function succeeds(program: string, args: readonly string[]): Promise<boolean> {
  return new Promise((resolve) => execFile(program, args, { env: PRIVILEGED_ENV, timeout: 5000 }, (error) => resolve(error === null)));
}

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Outcome } from './cluster-driver.js';

/** Where the wrapper of an execution writes its task's exit code, in the execution's directory. */
export const EXIT_CODE_FILE = 'exit-code';

/**
 * How an execution ended, from the exit code its wrapper wrote; undefined when there is none. The
 * file is within the task's reach, so anything but a code of 0 to 255 counts as a failure.
 */
export async function outcomeFromExitCode(executionDir: string): Promise<Exclude<Outcome, { state: 'queued' | 'running' | 'lost' }> | undefined> {
  let text: string;
  try {
    text = (await readFile(join(executionDir, EXIT_CODE_FILE), 'utf8')).trim();
  } catch {
    return undefined;
  }
  const exitCode = /^\d{1,3}$/.test(text) && Number(text) <= 255 ? Number(text) : -1;
  if (exitCode === 0) return { state: 'completed', exitCode, message: 'Exited with code 0' };
  return { state: 'failed', exitCode, message: exitCode < 0 ? 'Ended with an exit code the hub could not read' : `Exited with code ${exitCode}` };
}

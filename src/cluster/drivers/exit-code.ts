import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { Ended } from './cluster-driver.js';

/** Where the wrapper of an execution writes its task's exit code, in the execution's directory. */
export const EXIT_CODE_FILE = 'exit-code';
const MAX_BYTES = 16;

/** What the exit-code file says, and when it was written; undefined when there is none. */
async function readExitFile(executionDir: string): Promise<{ text: string; writtenAt: Date } | undefined> {
  let handle;
  try {
    // Neither a link nor a FIFO put in its place can make the hub read elsewhere or wait.
    handle = await open(join(executionDir, EXIT_CODE_FILE), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) return { text: '', writtenAt: stats.mtime };
    // Made by a monitor that was killed before its one write: no exit code.
    if (stats.size === 0) return undefined;
    const buffer = Buffer.alloc(MAX_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, MAX_BYTES, 0);
    return { text: buffer.subarray(0, bytesRead).toString('utf8').trim(), writtenAt: stats.mtime };
  } finally {
    await handle.close();
  }
}

/**
 * How an execution ended, from the exit code its wrapper wrote (and when: the hub may have been
 * down then); undefined when there is none. Anything but a code of 0 to 255 counts as a failure.
 */
export async function outcomeFromExitCode(executionDir: string): Promise<Ended | undefined> {
  const written = await readExitFile(executionDir);
  if (!written) return undefined;
  return endedWith(exitCodeOf(written.text), written.writtenAt.toISOString());
}

/** An exit code as its monitor wrote it: 0 to 255, or -1 for anything else. */
export function exitCodeOf(text: string): number {
  return /^\d{1,3}$/.test(text) && Number(text) <= 255 ? Number(text) : -1;
}

/** How an execution whose task exited with `exitCode` (-1: unreadable) at `finishedAt` ended. */
export function endedWith(exitCode: number, finishedAt: string): Ended {
  if (exitCode === 0) return { state: 'completed', exitCode, message: 'Exited with code 0', finishedAt };
  return { state: 'failed', exitCode, message: exitCode < 0 ? 'Ended with an exit code the hub could not read' : `Exited with code ${exitCode}`, finishedAt };
}

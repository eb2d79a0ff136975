import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT_CODE_FILE, outcomeFromExitCode } from './exit-code.js';

describe('outcomeFromExitCode', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'hub-exit-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const written = (text: string) => {
    writeFileSync(join(dir, EXIT_CODE_FILE), text);
    return outcomeFromExitCode(dir);
  };

  it('is undefined while there is no exit code, or an empty file (its monitor was killed before its one write)', async () => {
    await expect(outcomeFromExitCode(dir)).resolves.toBeUndefined();
    await expect(written('')).resolves.toBeUndefined();
  });

  it('reads 0 as completed and any other code as failed, naming it', async () => {
    await expect(written('0')).resolves.toEqual({ state: 'completed', exitCode: 0, message: 'Exited with code 0', finishedAt: expect.any(String) });
    await expect(written('137\n')).resolves.toEqual({ state: 'failed', exitCode: 137, message: 'Exited with code 137', finishedAt: expect.any(String) });
  });

  it('never waits on a FIFO or follows a link put in its place', async () => {
    execFileSync('mkfifo', [join(dir, EXIT_CODE_FILE)]);
    await expect(outcomeFromExitCode(dir)).resolves.toMatchObject({ state: 'failed', exitCode: -1 });
    rmSync(join(dir, EXIT_CODE_FILE));
    symlinkSync('/etc/hostname', join(dir, EXIT_CODE_FILE));
    await expect(outcomeFromExitCode(dir)).resolves.toBeUndefined();
  });

  it.each(['garbage', ' ', '-1', '256', '1.5', '9999'])(
    'reads what the task may have written over it (%j) as a failure, never as a number it is not',
    async (text) => {
      await expect(written(text)).resolves.toEqual({
        state: 'failed',
        exitCode: -1,
        message: 'Ended with an exit code the hub could not read',
        finishedAt: expect.any(String),
      });
    },
  );
});

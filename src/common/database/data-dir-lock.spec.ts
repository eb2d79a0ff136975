import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { transformFileSync } from '@swc/core';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { StartupError } from '../errors/startup-error.js';
import { DataDirLock } from './data-dir-lock.js';
import { isRunning, processInfo, waitForExit } from './processes.js';

/** Locks the specs took, given back after each so that their exit listeners do not pile up. */
const held: DataDirLock[] = [];
function acquire(dataDir: string): DataDirLock {
  const lock = DataDirLock.acquire(dataDir);
  held.push(lock);
  return lock;
}
afterEach(() => {
  for (const lock of held.splice(0)) lock.release();
});

interface LockRecord {
  pid: number;
  startTime?: string;
  host: string;
}

const children: ChildProcess[] = [];

/** Starts a child process and waits until it runs; it is killed after the test. */
async function start(command: string, args: readonly string[], stdio: 'ignore' | 'pipe' = 'ignore'): Promise<ChildProcess & { pid: number }> {
  const child = spawn(command, args, { stdio: ['pipe', stdio, 'pipe'] });
  children.push(child);
  await once(child, 'spawn');
  if (child.pid === undefined) throw new Error(`${command} did not start`);
  return child as ChildProcess & { pid: number };
}

const startSleeper = () => start('sleep', ['60']);

/** The id of a process that has run and exited (and been reaped). */
async function deadPid(): Promise<number> {
  const child = spawn('true', [], { stdio: 'ignore' });
  const exited = once(child, 'exit');
  await once(child, 'spawn');
  await exited;
  if (child.pid === undefined) throw new Error('true did not start');
  return child.pid;
}

async function waitUntil(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for a condition');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function startTimeOf(pid: number): string {
  const info = processInfo(pid);
  if (!info) throw new Error(`no process ${pid}`);
  return info.startTime;
}

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }
  }
});

describe('DataDirLock', () => {
  let dir: string;
  let lockFile: string;

  const writeLock = (record: LockRecord | string) => writeFileSync(lockFile, typeof record === 'string' ? record : JSON.stringify(record));
  const readLock = (): LockRecord => JSON.parse(readFileSync(lockFile, 'utf8')) as LockRecord;
  const refusal = (): StartupError => {
    try {
      acquire(dir);
    } catch (error) {
      expect(error).toBeInstanceOf(StartupError);
      return error as StartupError;
    }
    throw new Error('expected the lock to be refused, but it was acquired');
  };
  const expectOwnLock = () => expect(readLock()).toEqual({ pid: process.pid, startTime: startTimeOf(process.pid), host: os.hostname() });

  beforeEach(() => {
    dir = mkdtempSync(join(os.tmpdir(), 'hub-lock-'));
    lockFile = join(dir, 'hub.lock');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  describe('acquire', () => {
    it('writes hub.lock naming this process, its start time and host', () => {
      acquire(dir);
      expect(existsSync(lockFile)).toBe(true);
      expectOwnLock();
    });

    it('propagates errors other than an existing lock, such as a missing directory', () => {
      expect(() => acquire(join(dir, 'missing'))).toThrow(/ENOENT/);
    });

    it('takes over a lock naming a process that has exited', async () => {
      const pid = await deadPid();
      expect(isRunning(pid)).toBe(false);
      writeLock({ pid, host: os.hostname() });
      acquire(dir);
      expectOwnLock();
    });

    it('treats a lock naming this very process as stale', () => {
      writeLock({ pid: process.pid, startTime: startTimeOf(process.pid), host: os.hostname() });
      expect(() => acquire(dir)).not.toThrow();
      expectOwnLock();
    });

    it('refuses a lock held by a live process whose start time matches, naming its pid and the directory', async () => {
      const holder = await startSleeper();
      const record = { pid: holder.pid, startTime: startTimeOf(holder.pid), host: os.hostname() };
      writeLock(record);
      const error = refusal();
      expect(error.message).toContain(`pid ${holder.pid}`);
      expect(error.message).toContain(dir);
      expect(error.message).toContain(lockFile);
      expect(readLock()).toEqual(record);
    });

    it('refuses a lock held by a live process when the record has no start time', async () => {
      const holder = await startSleeper();
      writeLock({ pid: holder.pid, host: os.hostname() });
      expect(refusal().message).toContain(`pid ${holder.pid}`);
    });

    it('takes over a lock whose pid now names another process (a different start time)', async () => {
      const other = await startSleeper();
      const startTime = String(Number(startTimeOf(other.pid)) + 1);
      writeLock({ pid: other.pid, startTime, host: os.hostname() });
      acquire(dir);
      expectOwnLock();
    });

    it('takes over a lock from another host name whose pid is dead here (a re-created container on the same volume)', async () => {
      writeLock({ pid: await deadPid(), startTime: '1', host: 'old-container.invalid' });
      acquire(dir);
      expectOwnLock();
    });

    it('refuses a lock from another host name whose hub still runs, naming the pid and the host', async () => {
      const other = await startSleeper();
      writeLock({ pid: other.pid, startTime: startTimeOf(other.pid), host: 'elsewhere.invalid' });
      const error = refusal();
      expect(error.message).toContain(`pid ${other.pid} on elsewhere.invalid`);
      expect(error.message).toContain(dir);
    });

    it.each([
      ['not JSON', 'garbage{'],
      ['an empty file', ''],
      ['a record without a numeric pid', JSON.stringify({ pid: 'x', host: os.hostname() })],
      ['JSON null', 'null'],
    ])('takes over a corrupt lock file (%s)', (_label, content) => {
      writeLock(content);
      acquire(dir);
      expectOwnLock();
    });
  });

  describe('release', () => {
    it('removes the lock file, so that the directory can be locked again', () => {
      const lock = acquire(dir);
      lock.release();
      expect(existsSync(lockFile)).toBe(false);
      acquire(dir).release();
      expect(existsSync(lockFile)).toBe(false);
    });

    it('leaves a lock file that another process has taken over', async () => {
      const lock = acquire(dir);
      const other = await startSleeper();
      const record = { pid: other.pid, startTime: startTimeOf(other.pid), host: os.hostname() };
      writeLock(record);
      lock.release();
      expect(readLock()).toEqual(record);
    });

    it('does nothing when the lock file is already gone', () => {
      const lock = acquire(dir);
      rmSync(lockFile);
      expect(() => lock.release()).not.toThrow();
      expect(existsSync(lockFile)).toBe(false);
    });
  });

  describe('between two hub processes', () => {
    let build: string;

    /** Compiles the lock and what it imports, so that a plain node child can run the same code. */
    beforeEach(() => {
      build = mkdtempSync(join(os.tmpdir(), 'hub-lock-build-'));
      writeFileSync(join(build, 'package.json'), JSON.stringify({ type: 'module' }));
      const sources = {
        'database/data-dir-lock': './data-dir-lock.ts',
        'database/processes': './processes.ts',
        'errors/startup-error': '../errors/startup-error.ts',
      };
      for (const [target, source] of Object.entries(sources)) {
        const { code } = transformFileSync(fileURLToPath(new URL(source, import.meta.url)), {
          jsc: { target: 'es2022', parser: { syntax: 'typescript' } },
          module: { type: 'es6' },
        });
        const file = join(build, `${target}.js`);
        mkdirSync(dirname(file), { recursive: true });
        writeFileSync(file, code);
      }
    });
    afterEach(() => rmSync(build, { recursive: true, force: true }));

    /** A node process that acquires the lock, says so on stdout and holds it until killed. */
    const childHubScript = () =>
      `import { DataDirLock } from ${JSON.stringify(pathToFileURL(join(build, 'database/data-dir-lock.js')).href)};
       try {
         DataDirLock.acquire(${JSON.stringify(dir)});
         process.stdout.write('locked\\n');
         setInterval(() => {}, 60_000);
       } catch (error) {
         process.stdout.write(error.name + ': ' + error.message + '\\n');
         process.exit(3);
       }`;

    const output = async (child: ChildProcess): Promise<string> => {
      let text = '';
      child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()));
      await waitUntil(() => text.includes('\n') || child.exitCode !== null, 10_000);
      return text;
    };

    it('refuses a second acquire while another hub holds the lock, naming its pid and the directory', async () => {
      const other = await start(process.execPath, ['--input-type=module', '-e', childHubScript()], 'pipe');
      expect(await output(other)).toBe('locked\n');
      const error = refusal();
      expect(error.message).toContain(`pid ${other.pid}`);
      expect(error.message).toContain(dir);
      expect(readLock().pid).toBe(other.pid);
    });

    it('takes the lock over once the hub holding it has been killed', async () => {
      const other = await start(process.execPath, ['--input-type=module', '-e', childHubScript()], 'pipe');
      expect(await output(other)).toBe('locked\n');
      const exited = once(other, 'exit');
      other.kill('SIGKILL');
      await exited;
      acquire(dir);
      expectOwnLock();
    });

    it('lets exactly one of several hubs starting at the same instant hold the lock', async () => {
      // The lock file must never be readable half-written: a hub reading it empty took it over.
      for (let round = 0; round < 5; round += 1) {
        const contenders = await Promise.all([1, 2, 3, 4].map(() => start(process.execPath, ['--input-type=module', '-e', childHubScript()], 'pipe')));
        const said = await Promise.all(contenders.map(output));
        expect(said.filter((text) => text === 'locked\n')).toHaveLength(1);
        const winner = contenders[said.indexOf('locked\n')];
        expect(readLock().pid).toBe(winner.pid);
        for (const child of contenders) child.kill('SIGKILL');
        await Promise.all(contenders.filter((child) => child.exitCode === null && child.signalCode === null).map((child) => once(child, 'exit')));
        rmSync(lockFile, { force: true });
      }
    });

    it('makes another hub refuse to start while this one holds the lock', async () => {
      const lock = acquire(dir);
      const other = await start(process.execPath, ['--input-type=module', '-e', childHubScript()], 'pipe');
      const said = await output(other);
      expect(said).toContain('StartupError');
      expect(said).toContain(`pid ${process.pid}`);
      await waitUntil(() => other.exitCode !== null);
      expect(other.exitCode).toBe(3);
      lock.release();
      expect(existsSync(lockFile)).toBe(false);
    });
  });
});

describe('processes', () => {
  describe('isRunning', () => {
    it('is true for this process', () => {
      expect(isRunning(process.pid)).toBe(true);
    });

    it('is true for a live child', async () => {
      const child = await startSleeper();
      expect(isRunning(child.pid)).toBe(true);
    });

    it('is false for a process that has exited', async () => {
      expect(isRunning(await deadPid())).toBe(false);
    });

    it('is false for a zombie: exited but not yet reaped', async () => {
      // The shell starts a short sleep in the background, then becomes a long one, which never reaps it.
      const parent = await start('sh', ['-c', 'sleep 0.3 & echo $!; exec sleep 60'], 'pipe');
      let text = '';
      parent.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()));
      await waitUntil(() => text.includes('\n'));
      const zombie = Number(text.trim());
      await waitUntil(() => processInfo(zombie)?.state === 'Z');
      expect(() => process.kill(zombie, 0)).not.toThrow();
      expect(isRunning(zombie)).toBe(false);
      expect(await waitForExit(zombie, 1000)).toBe(true);
    });
  });

  describe('processInfo', () => {
    it('describes this process', () => {
      const info = processInfo(process.pid);
      expect(info).toEqual({ state: 'R', parentPid: process.ppid, startTime: expect.stringMatching(/^\d+$/), commandLine: expect.stringContaining('node') });
    });

    it('describes a sleeping child: state, parent, start time and command line', async () => {
      const child = await startSleeper();
      await waitUntil(() => processInfo(child.pid)?.state === 'S');
      expect(processInfo(child.pid)).toEqual({ state: 'S', parentPid: process.pid, startTime: expect.stringMatching(/^\d+$/), commandLine: 'sleep 60' });
    });

    it('gives a later-started process a later start time than this one', async () => {
      const child = await startSleeper();
      expect(Number(startTimeOf(child.pid))).toBeGreaterThanOrEqual(Number(startTimeOf(process.pid)));
    });

    it('gives the same start time on every reading', async () => {
      const child = await startSleeper();
      expect(startTimeOf(child.pid)).toBe(startTimeOf(child.pid));
    });

    it('parses a process whose command name holds spaces and parentheses', async () => {
      const name = 'a) (b c) S 1';
      const child = await start('sh', ['-c', `printf '%s' '${name}' > /proc/self/comm && read line`]);
      await waitUntil(() => readFileSync(`/proc/${child.pid}/comm`, 'utf8') === `${name}\n` && processInfo(child.pid)?.state === 'S');
      const info = processInfo(child.pid);
      expect(info).toEqual({ state: 'S', parentPid: process.pid, startTime: expect.stringMatching(/^\d+$/), commandLine: expect.stringContaining('sh -c') });
      const sleeper = await startSleeper();
      // Started one after the other: the start times are close, which a misparsed field would not be.
      expect(Math.abs(Number(info?.startTime) - Number(startTimeOf(sleeper.pid)))).toBeLessThan(1000);
    });

    it('is undefined for a process that has exited', async () => {
      expect(processInfo(await deadPid())).toBeUndefined();
    });
  });

  describe('waitForExit', () => {
    it('is true once a child has exited', async () => {
      const child = await start('sleep', ['0.2']);
      expect(await waitForExit(child.pid, 5000)).toBe(true);
      expect(isRunning(child.pid)).toBe(false);
    });

    it('is true at once for a process that has already exited', async () => {
      const pid = await deadPid();
      const started = Date.now();
      expect(await waitForExit(pid, 5000)).toBe(true);
      expect(Date.now() - started).toBeLessThan(1000);
    });

    it('is false when a live child outlasts the timeout, after about the timeout', async () => {
      const child = await startSleeper();
      const started = Date.now();
      expect(await waitForExit(child.pid, 300)).toBe(false);
      expect(Date.now() - started).toBeGreaterThanOrEqual(300);
      expect(isRunning(child.pid)).toBe(true);
    });
  });
});

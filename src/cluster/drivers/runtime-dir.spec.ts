import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statfsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import pino from 'pino';
import { makeRuntimeDir, onMemoryFilesystem, removeRuntimeDir, runtimeCandidates } from './runtime-dir.js';

const asRoot = process.getuid?.() === 0 ? describe : describe.skip;
const TMPFS_MAGIC = 0x01021994;

/** A logger whose lines are kept. */
function collectingLogger(): { logger: pino.Logger; lines: { level: number; msg: string }[] } {
  const lines: { level: number; msg: string }[] = [];
  return { logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) }), lines };
}

asRoot('the runtime directory of a hub running as root', () => {
  const made: string[] = [];
  const live = spawn('sleep', ['30']);
  afterAll(() => {
    live.kill();
    for (const path of made) rmSync(path, { recursive: true, force: true });
  });

  it('is made on a memory filesystem, with its gates the hub’s alone, after removing those of hubs that died there', () => {
    const base = runtimeCandidates(true).find(onMemoryFilesystem) as string;
    expect(base).toBeDefined();
    // A pid that no longer runs, and one that does.
    const deadPid = spawnSync('true').pid;
    const ofDeadHub = join(base, `hub-${deadPid}-aBc123`);
    const ofLiveHub = join(base, `hub-${live.pid}-dEf456`);
    for (const path of [ofDeadHub, ofLiveHub]) {
      mkdirSync(`${path}/tasks`, { recursive: true });
      made.push(path);
    }
    const { logger, lines } = collectingLogger();
    const runtime = makeRuntimeDir(true, logger);
    made.push(runtime.path);
    expect(runtime.path).toMatch(new RegExp(`^${base}/hub-${process.pid}-[A-Za-z0-9]{6}$`));
    // Task files hold jobs' environments: secrets never reach a disk.
    expect(statfsSync(runtime.path).type).toBe(TMPFS_MAGIC);
    expect(lines.map((line) => line.msg)).toEqual([`Task files (jobs' environments and commands) are kept in memory, in ${runtime.path}`]);
    const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);
    expect({ dir: mode(runtime.path), tasks: mode(runtime.tasks), gates: mode(runtime.gates) }).toEqual({ dir: '711', tasks: '711', gates: '700' });
    expect([existsSync(ofDeadHub), existsSync(ofLiveHub)]).toEqual([false, true]);
  });

  it('mounts a tmpfs of its own where no candidate is a memory filesystem, says so, and unmounts it when removed', () => {
    const onDisk = mkdtempSync(join('/var/tmp', 'hub-runtime-base-'));
    made.push(onDisk);
    expect(onMemoryFilesystem(onDisk)).toBe(false);
    const { logger, lines } = collectingLogger();
    const runtime = makeRuntimeDir(true, logger, [onDisk]);
    try {
      expect([runtime.mounted, statfsSync(runtime.path).type, statfsSync(runtime.tasks).type]).toEqual([true, TMPFS_MAGIC, TMPFS_MAGIC]);
      expect(lines[0].msg).toContain(`in a tmpfs of the hub's own at ${runtime.path}: none of ${onDisk} (filesystem type 0x`);
    } finally {
      removeRuntimeDir(runtime);
    }
    expect(existsSync(runtime.path)).toBe(false);
  });

  it('warns that task files may reach the disk when it can neither find nor mount a memory filesystem', () => {
    const onDisk = mkdtempSync(join(tmpdir(), 'hub-runtime-base-'));
    made.push(onDisk);
    const { logger, lines } = collectingLogger();
    // Not root: nothing to mount with.
    const runtime = makeRuntimeDir(false, logger, [onDisk]);
    made.push(runtime.path);
    expect(runtime.mounted).toBe(false);
    expect(lines[0]).toMatchObject({ level: 40 });
    expect(lines[0].msg).toContain('may reach the disk');
  });
});

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { afterAll, describe, expect, it } from '@jest/globals';
import { makeRuntimeDir } from './runtime-dir.js';

const asRoot = process.getuid?.() === 0 ? describe : describe.skip;

asRoot('the runtime directory of a hub running as root', () => {
  const made: string[] = [];
  const live = spawn('sleep', ['30']);
  afterAll(() => {
    live.kill();
    for (const path of made) rmSync(path, { recursive: true, force: true });
  });

  it('is made on /run with its gates the hub’s alone, after removing those of hubs that died', () => {
    // A pid that no longer runs, and one that does.
    const deadPid = spawnSync('true').pid;
    const ofDeadHub = `/run/hub-${deadPid}-aBc123`;
    const ofLiveHub = `/run/hub-${live.pid}-dEf456`;
    for (const path of [ofDeadHub, ofLiveHub]) {
      mkdirSync(`${path}/tasks`, { recursive: true });
      made.push(path);
    }
    const runtime = makeRuntimeDir(true);
    made.push(runtime.path);
    expect(runtime.path).toMatch(new RegExp(`^/run/hub-${process.pid}-[A-Za-z0-9]{6}$`));
    const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);
    expect({ dir: mode(runtime.path), tasks: mode(runtime.tasks), gates: mode(runtime.gates) }).toEqual({ dir: '711', tasks: '711', gates: '700' });
    expect([existsSync(ofDeadHub), existsSync(ofLiveHub)]).toEqual([false, true]);
  });
});

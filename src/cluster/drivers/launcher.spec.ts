import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { isRunning } from '../../common/database/processes.js';
import { systemProgram } from './host-tools.js';
import { Launcher } from './launcher.js';

describe('the launcher', () => {
  const root = mkdtempSync(join(tmpdir(), 'hub-launcher-'));
  const programs = { sh: 'sh', setsid: 'setsid', mkfifo: 'mkfifo' };
  for (const name of Object.keys(programs) as (keyof typeof programs)[]) programs[name] = systemProgram(name) as string;
  const ended: string[] = [];
  // A monitor that only waits a little: what the launcher itself says is under test.
  const launcher = new Launcher(programs, { monitor: 'sleep 0.2', taskInit: ':', tasks: root, gates: root }, { ended: (id) => ended.push(id) });
  const heard = (line: string) => (launcher as unknown as { heard(line: string): void }).heard(line);
  const launcherPid = () => (launcher as unknown as { process: { pid: number } }).process.pid;
  const request = (executionId: string) => {
    const executionDir = join(root, executionId);
    mkdirSync(join(executionDir, 'work'), { recursive: true });
    mkdirSync(join(executionDir, 'logs'));
    return { executionId, executionDir, exitFile: join(executionDir, 'exit-code'), cgroups: [], isolation: [] };
  };
  /** A launcher that has started a launch (so it runs), and its pid. */
  const runningLauncher = async (executionId: string) => {
    await launcher.spawn(request(executionId));
    launcher.forget(executionId);
    return launcherPid();
  };
  afterAll(() => {
    launcher.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('answers a launch with its monitor’s pid, even when the launch says it ended before the launcher said it spawned it', async () => {
    const started = launcher.started('quick');
    const spawned = launcher.spawn(request('quick'));
    // Two processes write to the pipe: a short task's end can come first.
    heard('ended quick');
    const { pid } = await spawned;
    await started;
    expect([Number.isInteger(pid) && pid > 0, ended]).toEqual([true, ['quick']]);
    launcher.forget('quick');
  });

  it('sends a launch to a new launcher when its request reached no one (the launcher had died, its end not yet heard)', async () => {
    const dead = await runningLauncher('first');
    process.kill(dead, 'SIGKILL');
    // Until it is a zombie, without letting the event loop hear of its end.
    while (isRunning(dead)) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
    const { pid } = await launcher.spawn(request('second'));
    launcher.forget('second');
    expect([pid > 0, launcherPid() === dead]).toEqual([true, false]);
  });

  it('sends a launch to a new launcher when its request reached the pipe of a launcher that died before reading it', async () => {
    const dead = await runningLauncher('third');
    // Stopped, the launcher reads nothing: the request sits in its pipe until it is killed.
    process.kill(dead, 'SIGSTOP');
    const spawned = launcher.spawn(request('fourth'));
    process.kill(dead, 'SIGKILL');
    const { pid } = await spawned;
    launcher.forget('fourth');
    expect([pid > 0, launcherPid() === dead]).toEqual([true, false]);
  });

  it('fails, and never sends again, a launch whose launcher said it took the request and then died', async () => {
    const dead = await runningLauncher('fifth');
    process.kill(dead, 'SIGSTOP');
    const spawned = launcher.spawn(request('sixth'));
    // As if it had read the request and died before saying what came of it.
    heard('taken sixth');
    process.kill(dead, 'SIGKILL');
    await expect(spawned).rejects.toThrow('ended before it started');
  });

  it('gives each gated launch a gate of its own, a FIFO only root may open, made with others ahead of need', async () => {
    const gates: string[] = [];
    const held: { fd: number; pid: number }[] = [];
    for (const id of ['gated-1', 'gated-2', 'gated-3']) {
      const { gate = '', pid } = await launcher.spawn({ ...request(id), gated: true });
      // The launch's own open of its gate waits for the hub's: held until the launch has ended, past its open.
      held.push({ fd: openSync(gate, 'r+'), pid });
      launcher.forget(id);
      gates.push(gate);
    }
    const made = readdirSync(root).filter((name) => statSync(join(root, name)).isFIFO());
    expect({
      distinct: new Set(gates).size,
      inRoot: gates.every((gate) => dirname(gate) === root),
      modes: gates.map((gate) => (statSync(gate).mode & 0o777).toString(8)),
      made: made.length,
    }).toEqual({ distinct: 3, inRoot: true, modes: ['600', '600', '600'], made: 16 });
    for (const { fd, pid } of held) {
      // A zombie (the launcher reaps its monitors at its next request) has ended.
      while (isRunning(pid)) await new Promise((resolve) => setTimeout(resolve, 20));
      closeSync(fd);
    }
  });

  it('fails a launch whose working directory cannot be entered', async () => {
    await expect(launcher.spawn({ ...request('gone'), executionDir: join(root, 'none') })).rejects.toThrow('could not be entered');
  });

  it('refuses a request line that holds a line break', async () => {
    await expect(launcher.spawn({ ...request('broken'), isolation: ['a\nb'] })).rejects.toThrow('line break');
  });
});

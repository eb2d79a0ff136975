import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { isRunning } from '../../../common/database/processes.js';
import { poll } from '../../../../test/support/poll.js';
import { endShells, runShell, SH } from '../../../../test/support/shell-run.js';
import { shellProgram } from '../shell-program.js';

describe('the launch’s monitor (sh/monitor.sh, under sh)', () => {
  const MONITOR = shellProgram('monitor.sh');
  const root = mkdtempSync(join(tmpdir(), 'hub-monitor-'));
  let launches = 0;
  /**
   * A monitor, as the launcher runs it, of a launch whose task is `script` (under sh), joining these
   * `cgroup.procs` files; with `members`, the file that lists the launch's processes (a task here
   * writes its own pids there, as a control group would list them).
   */
  const monitor = (script: string, cgroups: readonly string[] = [], members = '') => {
    const dir = join(root, String(++launches));
    mkdirSync(dir);
    const exitFile = join(dir, 'exit-code');
    const run = runShell([SH, '-c', MONITOR, 'hub-launcher', exitFile, cgroups.join(' '), members, 'ex-1', SH, '-c', script, 'task'], { cwd: dir });
    return { ...run, dir, exitFile };
  };
  /** Until the task has written `file` in its directory (its traps set). */
  const ready = (dir: string, file = 'ready') => poll(() => existsSync(join(dir, file)), Boolean, `the task's ${file}`);
  /** Until the process whose pid the task wrote to `background` in its directory has ended. */
  const backgroundEnded = (dir: string) => {
    const background = Number(readFileSync(join(dir, 'background'), 'utf8'));
    return poll(
      () => isRunning(background),
      (running) => !running,
      'the end of the task’s background process',
    );
  };
  afterAll(() => {
    endShells();
    rmSync(root, { recursive: true, force: true });
  });

  it('runs the launch in a session and process group of its own, without input; writes its exit code, says it ended, and exits with it', async () => {
    // pid, pgrp and session of the task, from its /proc/<pid>/stat (the fields after its command's name), and what its input is.
    const launch = monitor('read -r stat </proc/$$/stat; echo "$$ ${stat##*) }"; readlink /proc/$$/fd/0; exit 3');
    const { code, stdout } = await launch.ended;
    const [fields, input] = stdout.trim().split('\n');
    const [pid, , , pgrp, session] = fields.split(' ');
    expect({ code, said: launch.said, written: readFileSync(launch.exitFile, 'utf8'), pgrp, session, input }).toEqual({
      code: 3,
      said: ['ended ex-1 3'],
      written: '3',
      pgrp: pid,
      session: pid,
      input: '/dev/null',
    });
  });

  it('joins each of the execution’s control groups before the launch runs', async () => {
    const procs = ['memory', 'pids'].map((name) => join(root, `${name}.procs`));
    for (const file of procs) writeFileSync(file, '');
    // The task sees itself joined already (writing 0 to cgroup.procs moves the writer).
    const { code } = await monitor(`read -r joined <'${procs[1]}' && [ "$joined" = 0 ]`, procs).ended;
    expect({ code, joined: procs.map((file) => readFileSync(file, 'utf8')) }).toEqual({ code: 0, joined: ['0\n', '0\n'] });
  });

  it('ends the launch with 125, having run nothing, when it cannot join a control group', async () => {
    const joinable = join(root, 'joinable.procs');
    writeFileSync(joinable, '');
    const launch = monitor(': >ran', [joinable, join(root, 'none', 'cgroup.procs')]);
    const { code } = await launch.ended;
    expect({ code, said: launch.said, written: readFileSync(launch.exitFile, 'utf8'), ran: existsSync(join(launch.dir, 'ran')) }).toEqual({
      code: 125,
      said: ['ended ex-1 125'],
      written: '125',
      ran: false,
    });
  });

  it('passes TERM on to the launch’s group (a stop) and keeps waiting for its own end', async () => {
    // Ready once its sleep runs (a TERM before it would wait out a sleep in the foreground); slow to end at the TERM, so that its end is not the one its parent's first wait sees.
    const launch = monitor("trap 'sleep 0.3; exit 7' TERM; sleep 60 & echo $! >ready; wait");
    await ready(launch.dir);
    launch.child.kill('SIGTERM');
    // Its first wait ends at the signal (143): the code is the task's own, from its next.
    const { code, signal } = await launch.ended;
    expect({ code, signal, said: launch.said, written: readFileSync(launch.exitFile, 'utf8') }).toEqual({
      code: 7,
      signal: null,
      said: ['ended ex-1 7'],
      written: '7',
    });
  });

  it('turns USR1 into KILL for the launch’s whole group, which nothing in it can catch', async () => {
    const launch = monitor("trap '' TERM; sleep 60 & echo $! >background; : >ready; wait");
    await ready(launch.dir);
    launch.child.kill('SIGUSR1');
    const { code } = await launch.ended;
    expect({ code, said: launch.said, written: readFileSync(launch.exitFile, 'utf8') }).toEqual({ code: 137, said: ['ended ex-1 137'], written: '137' });
    await backgroundEnded(launch.dir);
  });

  it('ends what the task left running in the background with it', async () => {
    const launch = monitor('sleep 60 & echo $! >background; exit 4');
    const { code } = await launch.ended;
    expect(code).toBe(4);
    await backgroundEnded(launch.dir);
  });

  describe('with the file that lists the launch’s processes (its own PID namespace and group)', () => {
    /** A list of the launch's processes, as its group's `cgroup.procs` would be: the task adds its own. */
    const listed = () => {
      const file = join(root, `members-${++launches}`);
      writeFileSync(file, '');
      return file;
    };

    it('runs the launch without a session of its own (no setsid), and writes and says its exit code', async () => {
      const launch = monitor('read -r stat </proc/$$/stat; echo "$$ ${stat##*) }"; exit 3', [], listed());
      const { code, stdout } = await launch.ended;
      const [pid, , , pgrp, session] = stdout.trim().split(' ');
      expect({ code, said: launch.said, written: readFileSync(launch.exitFile, 'utf8') }).toEqual({ code: 3, said: ['ended ex-1 3'], written: '3' });
      expect(pgrp).not.toBe(pid);
      expect(session).not.toBe(pid);
    });

    it('passes TERM on to every process listed, one that left the process group included, and keeps waiting for its own end', async () => {
      const members = listed();
      // The task and a process of its in a session of its own, both listed; each notes the TERM it got.
      const launch = monitor(
        `trap 'echo task >>got; sleep 0.2; exit 7' TERM; echo $$ >>'${members}'; setsid sh -c "trap 'echo escaped >>got; exit 0' TERM; echo \\$\\$ >>'${members}'; : >ready; while :; do sleep 0.05; done" & wait`,
        [],
        members,
      );
      await ready(launch.dir);
      launch.child.kill('SIGTERM');
      const { code } = await launch.ended;
      expect({ code, said: launch.said, got: readFileSync(join(launch.dir, 'got'), 'utf8').trim().split('\n').sort() }).toEqual({
        code: 7,
        said: ['ended ex-1 7'],
        got: ['escaped', 'task'],
      });
    });

    it('turns USR1 into KILL for every process listed', async () => {
      const members = listed();
      const launch = monitor(`trap '' TERM; echo $$ >>'${members}'; sleep 60 & echo $! >>'${members}'; echo $! >background; : >ready; wait`, [], members);
      await ready(launch.dir);
      launch.child.kill('SIGUSR1');
      const { code } = await launch.ended;
      expect(code).toBe(137);
      await backgroundEnded(launch.dir);
    });

    it('writes nothing of its own to the launch’s output when the list cannot be read', async () => {
      const { code, stderr } = await monitor('exit 6', [], join(root, 'no-such-group', 'cgroup.procs')).ended;
      expect({ code, stderr }).toEqual({ code: 6, stderr: '' });
    });

    it('ends every process still listed when the launch ends', async () => {
      const members = listed();
      const launch = monitor(`setsid sleep 60 & echo $! >>'${members}'; echo $! >background; exit 4`, [], members);
      const { code } = await launch.ended;
      expect(code).toBe(4);
      await backgroundEnded(launch.dir);
    });
  });

  it('writes the exit code and exits with it when the hub no longer listens on descriptor 3', async () => {
    const launch = monitor(': >ready; sleep 0.2; exit 5');
    launch.child.stdio[3]?.destroy();
    await ready(launch.dir);
    const { code, signal } = await launch.ended;
    expect({ code, signal, written: readFileSync(launch.exitFile, 'utf8') }).toEqual({ code: 5, signal: null, written: '5' });
  });
});

import { once } from 'node:events';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { processInfo } from '../../../common/database/processes.js';
import { poll } from '../../../../test/support/poll.js';
import { endShells, heard, runShell, SH, type ShellRun } from '../../../../test/support/shell-run.js';
import { shellProgram } from '../shell-program.js';

/**
 * A monitor that only notes what it was given (its arguments, one a line in brackets), where it
 * runs and what it heard at its gate (descriptor 4: /dev/null without one), and writes a line to
 * each of its outputs: what the launcher itself does is under test (sh/monitor.spec.ts has the
 * monitor's).
 */
// Each note is written whole, then renamed into place: a reader that sees the file sees all of it.
const NOTING_MONITOR = [
  `printf '[%s]\\n' "$@" >"$1.args.tmp" && mv "$1.args.tmp" "$1.args"`,
  'pwd >"$1.cwd.tmp" && mv "$1.cwd.tmp" "$1.cwd"',
  'echo out; echo err >&2',
  'IFS= read -r word <&4 || :',
  'printf %s "$word" >"$1.gate.tmp" && mv "$1.gate.tmp" "$1.gate"',
].join('\n');

describe('the launcher (sh/launcher.sh, under sh)', () => {
  const LAUNCHER = shellProgram('launcher.sh');
  const root = mkdtempSync(join(tmpdir(), 'hub-launcher-sh-'));
  const tasks = join(root, 'tasks');
  let launchers = 0;
  /** A launcher, as the hub starts it, with its directory of gates (made, unless `gates` is false). */
  const launcher = (gates = true) => {
    const gatesDir = join(root, `gates-${++launchers}`);
    if (gates) mkdirSync(gatesDir, { mode: 0o700 });
    const run = runShell([SH, '-c', LAUNCHER, 'hub-launcher', NOTING_MONITOR, 'the task init', tasks, gatesDir], { input: true });
    return { ...run, gatesDir, pid: run.child.pid as number };
  };
  /** An execution's directory, with its `work/` and `logs/`. */
  const execution = (id: string) => {
    const dir = join(root, id);
    mkdirSync(join(dir, 'work'), { recursive: true });
    mkdirSync(join(dir, 'logs'));
    return dir;
  };
  /** Sends a request as the hub writes it (see Launcher.spawn). */
  const request = (
    to: ShellRun,
    id: string,
    dir: string,
    options: { cgroups?: string; members?: string; gated?: boolean; isolation?: readonly string[] } = {},
  ) => {
    const isolation = options.isolation ?? [];
    const lines = [
      id,
      dir,
      join(dir, 'exit-code'),
      options.cgroups ?? '',
      options.members ?? '',
      options.gated ? 'gated' : '',
      String(isolation.length),
      ...isolation,
    ];
    to.child.stdin?.write(`${lines.join('\n')}\n`);
  };
  /** A launch's monitor's notes: `args`, `cwd` or `gate`, once written. */
  const noted = async (dir: string, what: 'args' | 'cwd' | 'gate') => {
    const file = join(dir, `exit-code.${what}`);
    await poll(() => existsSync(file), Boolean, `the monitor's ${what}`);
    return readFileSync(file, 'utf8');
  };
  afterAll(() => {
    endShells();
    rmSync(root, { recursive: true, force: true });
  });

  it('starts a monitor in the execution’s working directory with the request’s arguments, its output appended to the logs, answers with its pid, and ends at the end of the requests', async () => {
    const run = launcher();
    const dir = execution('one');
    writeFileSync(join(dir, 'logs', 'stdout'), 'before\n');
    // Read as lines, as they are: leading spaces and backslashes too.
    const isolation = ['/usr/bin/unshare', '  spaced \\ arg ', '--'];
    request(run, 'one', dir, { cgroups: 'a/cgroup.procs b/cgroup.procs', members: 'a/cgroup.procs', isolation });
    const spawned = await heard(run.answers, 'spawned one ');
    const [args, cwd, gate] = [await noted(dir, 'args'), await noted(dir, 'cwd'), await noted(dir, 'gate')];
    run.child.stdin?.end();
    const { code } = await run.ended;
    expect({
      code,
      answers: run.answers,
      args: args.trimEnd().split('\n'),
      cwd: cwd.trim(),
      gate,
      stdout: readFileSync(join(dir, 'logs', 'stdout'), 'utf8'),
      stderr: readFileSync(join(dir, 'logs', 'stderr'), 'utf8'),
      // Created by the launcher's append, under its umask.
      stderrMode: statSync(join(dir, 'logs', 'stderr')).mode & 0o777,
    }).toEqual({
      code: 0,
      answers: ['taken one', spawned],
      args: [
        join(dir, 'exit-code'),
        'a/cgroup.procs b/cgroup.procs',
        'a/cgroup.procs',
        'one',
        ...isolation,
        SH,
        '-c',
        'the task init',
        join(tasks, 'one'),
        'one',
        '',
      ].map((arg) => `[${arg}]`),
      cwd: realpathSync(join(dir, 'work')),
      gate: '',
      stdout: 'before\nout\n',
      stderr: 'err\n',
      stderrMode: 0o600,
    });
    expect(spawned).toMatch(/^spawned one [1-9]\d* $/);
  });

  it('gives each gated launch a gate of its own, made sixteen at a time, that its monitor holds on descriptor 4 and that outlives the launcher', async () => {
    const run = launcher();
    const ids = Array.from({ length: 17 }, (_, index) => `gated-${index}`);
    const dirs = ids.map((id) => execution(id));
    ids.forEach((id, index) => request(run, id, dirs[index], { gated: true }));
    const gates: string[] = [];
    for (const id of ids) gates.push((await heard(run.answers, `spawned ${id} `)).split(' ')[3]);
    const fifos = readdirSync(run.gatesDir).map((name) => statSync(join(run.gatesDir, name)));
    // Its monitors wait at their gates: the launcher is gone before they hear a word.
    run.child.stdin?.end();
    const [code] = (await once(run.child, 'exit')) as [number];
    const held = gates.map((gate) => openSync(gate, 'r+'));
    for (const fd of held) writeSync(fd, 'go\n');
    const words = await Promise.all(dirs.map((dir) => noted(dir, 'gate')));
    for (const fd of held) closeSync(fd);
    expect({
      code,
      gates,
      made: fifos.length,
      fifos: fifos.every((fifo) => fifo.isFIFO() && (fifo.mode & 0o777) === 0o600),
      words: new Set(words),
      lastArgument: (await noted(dirs[0], 'args')).split('\n').at(-2),
    }).toEqual({
      code: 0,
      gates: ids.map((_, index) => join(run.gatesDir, `${run.pid}-${index}`)),
      made: 32,
      fifos: true,
      words: new Set(['go']),
      lastArgument: '[gated]',
    });
  });

  it('fails a gated launch when no gate can be made, and makes the next under names never tried', async () => {
    const run = launcher(false);
    request(run, 'no-gates', execution('no-gates'), { gated: true });
    await heard(run.answers, 'failed no-gates');
    // A launch without a gate goes on meanwhile.
    request(run, 'ungated', execution('ungated'));
    await heard(run.answers, 'spawned ungated ');
    mkdirSync(run.gatesDir, { mode: 0o700 });
    request(run, 'gates-again', execution('gates-again'), { gated: true });
    const spawned = await heard(run.answers, 'spawned gates-again ');
    expect({ answers: run.answers.filter((line) => !line.startsWith('spawned ungated ')), gate: spawned.split(' ')[3] }).toEqual({
      answers: ['taken no-gates', 'failed no-gates', 'taken ungated', 'taken gates-again', spawned],
      gate: join(run.gatesDir, `${run.pid}-16`),
    });
    const fd = openSync(spawned.split(' ')[3], 'r+');
    writeSync(fd, 'no\n');
    await noted(join(root, 'gates-again'), 'gate');
    closeSync(fd);
  });

  it('fails a launch whose working directory cannot be entered, and serves the next request', async () => {
    const run = launcher();
    request(run, 'nowhere', join(root, 'none'));
    request(run, 'somewhere', execution('somewhere'));
    const spawned = await heard(run.answers, 'spawned somewhere ');
    expect(run.answers).toEqual(['taken nowhere', 'failed nowhere', 'taken somewhere', spawned]);
  });

  it('reaps the monitors that ended at its next request', async () => {
    const run = launcher();
    request(run, 'first', execution('first'));
    const first = Number((await heard(run.answers, 'spawned first ')).split(' ')[2]);
    // Ended, and not reaped yet: a zombie of the launcher's.
    await poll(
      () => processInfo(first),
      (info) => info?.state === 'Z' && info.parentPid === run.pid,
      'the first monitor’s end',
    );
    request(run, 'second', execution('second'));
    await heard(run.answers, 'spawned second ');
    expect(processInfo(first)).toBeUndefined();
  });
});

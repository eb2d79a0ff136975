import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { poll } from '../../../../test/support/poll.js';
import { endShells, runShell, SH } from '../../../../test/support/shell-run.js';
import { commandLine, environmentFile } from '../environment-file.js';
import { shellProgram } from '../shell-program.js';

describe('the task’s init (sh/task-init.sh, under sh)', () => {
  const TASK_INIT = shellProgram('task-init.sh');
  const root = mkdtempSync(join(tmpdir(), 'hub-task-init-'));
  let launches = 0;
  /**
   * The init of a launch whose task is `script` under sh, with these environment and arguments,
   * written to its file as the hub writes it; run as the launcher runs it (gated or not).
   */
  const init = (script: string, options: { env?: Record<string, string>; args?: readonly string[]; gated?: boolean; taskFile?: string } = {}) => {
    const dir = join(root, String(++launches));
    mkdirSync(dir);
    const taskFile = options.taskFile ?? join(dir, 'task');
    if (!options.taskFile)
      writeFileSync(taskFile, environmentFile(options.env ?? {}) + commandLine(SH, ['-c', script, 'task', ...(options.args ?? [])]), { mode: 0o400 });
    const run = runShell([SH, '-c', TASK_INIT, taskFile, 'ex-1', options.gated ? 'gated' : ''], { cwd: dir });
    return { ...run, dir, ran: () => existsSync(join(dir, 'ran')) };
  };
  afterAll(() => {
    endShells();
    rmSync(root, { recursive: true, force: true });
  });

  it('says the task starts, then runs it with its environment and arguments exactly as written, its umask 077, and exits with its code', async () => {
    const tricky = `it's "$(touch pwned)" \`touch pwned\` $HOME; \\ *\nline two`;
    // Its own PATH and IFS are the job's to set: nothing of the init after the file is read depends on them.
    const env = { TRICKY: tricky, PATH: '/nowhere', IFS: '/' };
    const args = ['a b', "c'd", '*', '', '$(touch pwned)'];
    // Whether the task holds descriptors 3 (the hub's) and 4 (the gate): it must hold neither.
    const script = 'printf "%s\\n" "$TRICKY" "$@" >out; umask >>out; for fd in 3 4; do [ ! -e "/proc/$$/fd/$fd" ] || echo "holds $fd" >>out; done; exit 6';
    const launch = init(script, { env, args });
    const { code } = await launch.ended;
    expect({ code, said: launch.said, out: readFileSync(join(launch.dir, 'out'), 'utf8'), pwned: existsSync(join(launch.dir, 'pwned')) }).toEqual({
      code: 6,
      said: ['started ex-1'],
      out: [tricky, ...args, '0077', ''].join('\n'),
      pwned: false,
    });
  });

  it('runs a prepared launch’s task at the hub’s go, heard at its gate', async () => {
    const launch = init(': >ran', { gated: true });
    launch.fd4.write('go\n');
    const { code } = await launch.ended;
    expect({ code, said: launch.said, ran: launch.ran() }).toEqual({ code: 0, said: ['started ex-1'], ran: true });
  });

  it.each([
    ['another word', 'no\n'],
    ['a word that only starts with go', 'gone\n'],
    ['a go cut short (no line end)', 'go'],
    ['the end of the gate (the hub died)', ''],
  ])('ends a prepared launch with 125, having said nothing and run nothing, at %s', async (_, word) => {
    const launch = init(': >ran', { gated: true });
    launch.fd4.end(word);
    const { code } = await launch.ended;
    expect({ code, said: launch.said, ran: launch.ran() }).toEqual({ code: 125, said: [], ran: false });
  });

  it('says the task starts before it reads anything of the job’s: a task file it cannot read fails the launch after that', async () => {
    const launch = init(': >ran', { taskFile: join(root, 'none') });
    const { code } = await launch.ended;
    expect({ failed: code !== 0, said: launch.said, ran: launch.ran() }).toEqual({ failed: true, said: ['started ex-1'], ran: false });
  });

  it('lives through a TERM to the launch’s group (a stop), which reaches the task, and exits with the task’s own code', async () => {
    // Ready once its sleep runs (a TERM before it would wait out a sleep in the foreground); slow to end at the TERM, so that its end is not the one its parent's first wait sees.
    const launch = init("trap 'sleep 0.3; exit 9' TERM; sleep 60 & echo $! >ready; wait");
    await poll(() => existsSync(join(launch.dir, 'ready')), Boolean, 'the task’s trap');
    process.kill(-(launch.child.pid as number), 'SIGTERM');
    const { code, signal } = await launch.ended;
    expect({ code, signal }).toEqual({ code: 9, signal: null });
  });
});

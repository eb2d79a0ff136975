import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { endShells, runShell, SH } from '../../../../test/support/shell-run.js';
import { environmentFile } from '../environment-file.js';
import { shellProgram } from '../shell-program.js';

describe('the Slurm batch script (sh/slurm-job.sh, run by its #! line)', () => {
  const root = mkdtempSync(join(tmpdir(), 'hub-slurm-job-'));
  // Written as the driver writes it, and run as Slurm runs it: the file itself, with nothing of the hub's environment (--export=NONE).
  const script = join(root, 'job.sh');
  writeFileSync(script, shellProgram('slurm-job.sh'), { mode: 0o755 });
  let jobs = 0;
  const job = (env: Record<string, string>, task: string, args: readonly string[], exitFile?: string) => {
    const dir = join(root, String(++jobs));
    mkdirSync(dir);
    const envFile = join(dir, 'environment');
    writeFileSync(envFile, environmentFile(env), { mode: 0o600 });
    const written = exitFile ?? join(dir, 'exit-code');
    return { ...runShell([script, envFile, written, SH, '-c', task, 'task', ...args], { cwd: dir, env: {} }), dir, exitFile: written };
  };
  afterAll(() => {
    endShells();
    rmSync(root, { recursive: true, force: true });
  });

  it('runs the task with its environment and arguments exactly as written, and writes its exit code whole, whatever PATH the job sets', async () => {
    const tricky = `it's "$(touch pwned)" \`touch pwned\` $HOME; \\ *\nline two`;
    const args = ['a b', "c'd", '*', '', '$(touch pwned)'];
    const run = job({ TRICKY: tricky, PATH: '/nowhere' }, 'printf "%s\\n" "$TRICKY" "$@"; exit 6', args);
    const { code, stdout } = await run.ended;
    expect({
      code,
      stdout,
      written: readFileSync(run.exitFile, 'utf8'),
      left: existsSync(`${run.exitFile}.tmp`),
      pwned: existsSync(join(run.dir, 'pwned')),
    }).toEqual({
      code: 6,
      stdout: [tricky, ...args, ''].join('\n'),
      written: '6',
      left: false,
      pwned: false,
    });
  });

  it('exits with the task’s code when its exit code cannot be written', async () => {
    const run = job({}, 'exit 4', [], join(root, 'none', 'exit-code'));
    const { code } = await run.ended;
    expect({ code, written: existsSync(run.exitFile) }).toEqual({ code: 4, written: false });
  });
});

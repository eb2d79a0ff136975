import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { freePort, startHubProcess, type RunningHub } from './hub-process.js';

const run = promisify(execFile);

/** The repository this suite runs in: what a newcomer clones. */
const REPOSITORY = resolve('.');

/**
 * A newcomer's first minutes, as root (as in most containers): clone into a directory only root
 * can enter, then the README's two commands with no settings but a free port.
 */
const asRoot = process.getuid?.() === 0 ? describe : describe.skip;

/** What the newcomer's shell has: no hub setting, no TEST_DATABASE_URL. */
function newcomerEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, LANG: 'C.UTF-8', ...extra };
}

/** `npm start` in the clone, resolved once /health/ready answers 200. */
function npmStart(checkout: string, port: number): Promise<RunningHub> {
  return startHubProcess('npm', ['start'], { port, cwd: checkout, env: newcomerEnvironment({ PORT: String(port) }), detached: true, timeoutMs: 90_000 });
}

/** Stops npm and the hub under it (their process group), as Ctrl-C would. */
async function stop(hub: RunningHub): Promise<void> {
  if (hub.process.exitCode !== null || hub.process.signalCode !== null) return;
  process.kill(-hub.process.pid!, 'SIGINT');
  const timer = setTimeout(() => process.kill(-hub.process.pid!, 'SIGKILL'), 30_000);
  await once(hub.process, 'close');
  clearTimeout(timer);
}

function modesUnder(directories: string[]): number[] {
  return directories.map((directory) => statSync(directory).mode);
}

/** The docs whose examples continue the README's walk-through, in the order they build on each other. */
const CONTINUED_IN = ['identity', 'access-control', 'credentials', 'execution-profiles', 'cluster', 'pipelines'];

/** The first `sh` block of a file after `heading`. */
function shellBlock(file: string, heading: string): string {
  const text = readFileSync(join(REPOSITORY, file), 'utf8');
  const block = /```sh\n([\s\S]*?)```/.exec(text.slice(text.indexOf(heading)))?.[1];
  if (!block) throw new Error(`${file} has no shell example after "${heading}"`);
  return block;
}

/**
 * The README's curl walk-through and the examples of docs/ that continue it, word for word but for
 * the address and the password, any HTTP error failing it.
 */
function walkThrough(password: string, url: string): string {
  const blocks = [
    shellBlock('README.md', '## A walk-through with curl'),
    ...CONTINUED_IN.map((doc) => shellBlock(`docs/${doc}.md`, "Continuing the [README's walk-through]")),
  ];
  const body = blocks.join('\n').replaceAll('http://localhost:9090', url).replaceAll('<the password>', password);
  return `set -euo pipefail\ncurl() { command curl --fail-with-body "$@"; }\n${body}`;
}

asRoot("a newcomer's first start, as root, from a directory only root can enter", () => {
  const home = mkdtempSync(join(tmpdir(), 'hub-newcomer-'));
  const checkout = join(home, 'hub');
  let port: number;
  let hub: RunningHub | undefined;
  let password = '';
  let stateDir = '';
  let modesBefore: number[];

  beforeAll(async () => {
    expect(statSync(home).mode & 0o777).toBe(0o700);
    await run('git', ['clone', '--quiet', REPOSITORY, checkout]);
    // From the clone's own package-lock; the cache of this machine's installs spares the network.
    await run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: checkout, env: newcomerEnvironment(), maxBuffer: 64 * 1024 * 1024 });
    await run('npm', ['run', 'build'], { cwd: checkout, env: newcomerEnvironment(), maxBuffer: 64 * 1024 * 1024 });
    modesBefore = modesUnder([home, checkout, join(checkout, 'node_modules')]);
    port = await freePort();
    hub = await npmStart(checkout, port);
  }, 600_000);

  afterAll(async () => {
    if (hub) await stop(hub);
    rmSync(home, { recursive: true, force: true });
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  }, 60_000);

  it('says in one line where its data lives: the secrets in the checkout, the rest where its unprivileged users reach it', () => {
    const data = hub!.lines.filter((line) => String(line.msg).startsWith('Data: '));
    expect(data).toHaveLength(1);
    const { dataDir, database, sharedDir } = data[0] as { dataDir: string; database: string; sharedDir: string };
    expect(dataDir).toBe(join(checkout, '.data'));
    stateDir = /^(\/var\/lib\/hub\/hub-[0-9a-f]{12})\/postgres /.exec(database)?.[1] ?? '';
    expect(stateDir).not.toBe('');
    expect(sharedDir).toBe(join(stateDir, 'work'));
    expect(statSync(join(stateDir, 'postgres')).uid).not.toBe(0);
  });

  it('changes no permission of the directories it did not make', () => {
    expect(modesUnder([home, checkout, join(checkout, 'node_modules')])).toEqual(modesBefore);
  });

  it("logs the administrator's generated password once, which logs in", async () => {
    const announced = hub!.lines.filter((line) => String(line.msg).includes('generated password'));
    expect(announced).toHaveLength(1);
    password = /generated password (\S+)/.exec(String(announced[0].msg))?.[1] ?? '';
    const login = await fetch(`${hub!.url}/api/v2/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password }),
    });
    expect(login.status).toBe(200);
  });

  it("runs the README's walk-through and the docs' examples that continue it; its job completes on the local driver as an unprivileged user in its working directory", async () => {
    const { stdout } = await run('bash', ['-c', walkThrough(password, hub!.url)], { env: newcomerEnvironment(), maxBuffer: 16 * 1024 * 1024 });
    const execution = /"id":"([0-9a-f-]{36})"[^]*?"status":"completed"/.exec(stdout);
    expect(execution).not.toBeNull();
    expect(stdout.match(/hello from [0-9a-f-]{36}/g)).toHaveLength(2); // The README's job, and cluster.md's.
    expect(stdout).toContain('"data":{"user":"etl","password":"s3cret"}'); // credentials.md's resolve, as ada: only a resolve shows data.
    const token = (
      (await (
        await fetch(`${hub!.url}/api/v2/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'admin', password }),
        })
      ).json()) as { token: string }
    ).token;
    const jobs = (await (await fetch(`${hub!.url}/api/v2/cluster/jobs`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      data: { id: string; status: string }[];
    };
    expect(jobs.data.length).toBeGreaterThan(0);
    const workDir = join(stateDir, 'work', 'executions', execution![1], 'work');
    expect(existsSync(workDir)).toBe(true);
    expect(statSync(workDir).uid).not.toBe(0);
  });

  it('refuses a second hub on the same data, then restarts with the data kept', async () => {
    const second = await npmStart(checkout, await freePort()).then(
      async (started) => {
        await stop(started);
        return 'started';
      },
      (error: Error) => error.message,
    );
    expect(second).toContain(`is using the data directory ${join(checkout, '.data')}`);
    await stop(hub!);
    hub = await npmStart(checkout, port);
    expect(hub.lines.some((line) => String(line.msg).includes('password'))).toBe(false);
    expect(hub.lines.filter((line) => String(line.msg).startsWith('Data: ')).map((line) => line.sharedDir)).toEqual([join(stateDir, 'work')]);
    const login = await fetch(`${hub.url}/api/v2/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password }),
    });
    const { token } = (await login.json()) as { token: string };
    const namespaces = await fetch(`${hub.url}/api/v2/namespaces?filter[name][EQ]=analytics`, { headers: { authorization: `Bearer ${token}` } });
    expect(((await namespaces.json()) as { totalCount: number }).totalCount).toBe(1);
  }, 180_000);

  it('passes its tests from the same checkout on their embedded PostgreSQL (a spec file of them, for time)', async () => {
    const { stdout, stderr } = await run('npm', ['test', '--', 'src/common/config/hub-config.spec.ts'], {
      cwd: checkout,
      env: newcomerEnvironment(),
      maxBuffer: 16 * 1024 * 1024,
    });
    expect(`${stdout}${stderr}`).toMatch(/Tests:\s+\d+ passed, \d+ total/);
  }, 300_000);
});

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { freePort, killProcessesUnder } from '../bench/processes.js';
import { loadHubConfig } from '../src/common/config/hub-config.js';
import { EmbeddedPostgres } from '../src/common/database/embedded-postgres.js';

export const ADMIN_USER = 'admin';
export const ADMIN_PASSWORD = 'fuzz-admin-password';
/** The harness signs tokens of its own with the hub's key (expired ones, say), so it sets the key. */
export const JWT_SECRET = randomBytes(32).toString('hex');

/**
 * Settings the fuzz run needs: it fails logins on purpose, far more often than the per-name and
 * per-address limits allow (api-map §1), and must keep logging in; so the limits go to their
 * maximum and a locked name is locked for a second. (A setting a hub does not know is ignored.)
 */
const FUZZ_SETTINGS = {
  HUB_LOGIN_FAILURE_LIMIT: '1000',
  HUB_LOGIN_LOCKOUT: '1',
  HUB_LOGIN_MAX_FAILURES_PER_ADDRESS: '1000000',
};

export interface HubProcess {
  readonly url: string;
  readonly databaseUrl: string;
  /** Log lines at level error or above (pino: 50+), parsed. */
  readonly errors: Record<string, unknown>[];
  readonly alive: () => boolean;
  stop(): Promise<void>;
}

async function query(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A PostgreSQL server: the one at `serverUrl`, or an embedded one in a temporary directory. */
async function databaseServer(serverUrl: string | undefined): Promise<{ url: string; stop: () => Promise<void> }> {
  if (serverUrl) return { url: serverUrl, stop: () => Promise.resolve() };
  const directory = mkdtempSync(join(tmpdir(), 'hub-fuzz-pg-'));
  // Enterable by the server's user (the run may be root's), so that its files stay here rather than under the state directory.
  chmodSync(directory, 0o711);
  const embedded = await EmbeddedPostgres.start({
    dataDir: directory,
    stateRoot: loadHubConfig(process.env).stateDir,
    logger: pino({ level: 'warn' }),
    settings: { fsync: 'off', synchronous_commit: 'off' },
  });
  return {
    url: embedded.urlFor('postgres'),
    stop: async () => {
      await embedded.stop();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/**
 * Starts the built hub (`dist/hub.js`) as a process on a fresh database of its own and a
 * temporary data directory, and resolves once it is ready.
 */
export async function startHub(serverUrl: string | undefined): Promise<HubProcess> {
  const server = await databaseServer(serverUrl);
  const database = `hub_fuzz_${randomBytes(6).toString('hex')}`;
  await query(server.url, `CREATE DATABASE ${database}`);
  const databaseUrl = new URL(server.url);
  databaseUrl.pathname = `/${database}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-fuzz-'));
  // Enterable by jobs' users (the run may be root's), so that executions' directories stay in it.
  chmodSync(dataDir, 0o711);
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [resolve('dist/hub.js')], {
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl.toString(),
      HUB_DATA_DIR: dataDir,
      HUB_ADMIN_USER: ADMIN_USER,
      HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
      HUB_JWT_SECRET: JWT_SECRET,
      HUB_LOG_LEVEL: 'warn',
      ...FUZZ_SETTINGS,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const errors: Record<string, unknown>[] = [];
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
    for (const line of chunk.toString().split('\n')) {
      try {
        const entry = JSON.parse(line) as Record<string, unknown>;
        if (Number(entry.level) >= 50) errors.push(entry);
      } catch {
        // Not a log line.
      }
    }
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const alive = () => child.exitCode === null && child.signalCode === null;
  const stop = async () => {
    if (alive()) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await once(child, 'close');
      clearTimeout(timer);
    }
    // Sessions and services outlive their hub by design (another hub follows them): none will here.
    killProcessesUnder([dataDir]);
    await query(server.url, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    rmSync(dataDir, { recursive: true, force: true });
    await server.stop();
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (!alive()) break;
    try {
      if ((await fetch(`${url}/health/ready`)).status === 200) return { url, databaseUrl: databaseUrl.toString(), errors, alive, stop };
    } catch {
      // Not listening yet.
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  await stop();
  throw new Error(`The hub did not become ready:\n${output}`);
}

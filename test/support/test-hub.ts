import { appendFileSync, chmodSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { killProcessesUnder } from '../../bench/processes.js';
import { ReplyContract, type ContractDocument } from '../../fuzz/reply-contract.js';
import { AppModule } from '../../src/app.module.js';
import { loadHubConfig } from '../../src/common/config/hub-config.js';
import { createHubApp } from '../../src/common/http/hub-app.js';
import { createRootLogger } from '../../src/common/logging/hub-logger.js';
import { checkListStatements } from '../../src/common/query/list-statements.js';
import { forwardedFromSession } from '../../src/sessions/session-proxy.js';
import { createDatabaseFromTemplate, databaseUrl, dropDatabase, SERVER_URL_VARIABLE, TEMPLATE_VARIABLE } from './test-database.js';

/**
 * A temporary directory the users jobs run as may enter (mode 0711): a hub running as root refuses
 * a shared directory they cannot reach, and puts its executions elsewhere when its data directory
 * is one.
 */
export function enterableTempDir(prefix: string): string {
  const directory = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(directory, 0o711);
  return directory;
}

export const ADMIN_USER = 'admin';
export const ADMIN_PASSWORD = 'test-admin-password';
export const JWT_SECRET = 'a-test-secret-of-at-least-thirty-two-characters';

export type InjectOptions = Exclude<Parameters<NestFastifyApplication['inject']>[0], string | undefined>;
export type InjectResponse = Awaited<ReturnType<NestFastifyApplication['inject']>>;

export interface TestHub {
  readonly app: NestFastifyApplication;
  /** A token of the bootstrap administrator. */
  readonly adminToken: string;
  readonly databaseUrl: string;
  inject(options: InjectOptions): Promise<InjectResponse>;
  login(username: string, password: string): Promise<string>;
  /** Stops the hub as a crash would leave things (its database and directories stay) and starts another on them. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

export function basic(userName: string, password: string): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${userName}:${password}`).toString('base64')}` };
}

/** The payload of a JWT, unverified. */
export function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** The `path` of each entry of a problem reply's `errors`. */
export function problemPaths(response: InjectResponse): string[] {
  return (response.json<{ errors: { path: string }[] }>().errors ?? []).map((error) => error.path);
}

/**
 * Every reply a spec sees is checked against the hub's own OpenAPI document (fuzz/reply-contract.ts):
 * a reply the document does not describe fails the spec that asked for it, naming the operation and
 * what is wrong. `HUB_TEST_REPLY_CHECK=off` turns the check off (to time it), `=report` records
 * violations without failing; `HUB_TEST_REPLY_LOG=<file>` appends one JSON line per reply checked.
 */
const REPLY_CHECK = process.env.HUB_TEST_REPLY_CHECK ?? 'on';
const REPLY_LOG = process.env.HUB_TEST_REPLY_LOG;

/** The document, read once a run (see runDocument), and the validators compiled from it as replies come. */
let contract: Promise<ReplyContract> | undefined;

/**
 * The hub's document, built by the first hub of the run that needs it and kept in a file named
 * after the run's template database, so that the other test files read it rather than each hub
 * building it again (the code under test is the same for the whole run).
 */
async function runDocument(app: NestFastifyApplication): Promise<ContractDocument> {
  const file = join(tmpdir(), `hub-openapi-${process.env[TEMPLATE_VARIABLE] ?? 'run'}.json`);
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as ContractDocument;
  } catch {
    const reply = await app.inject({ method: 'GET', url: '/api/openapi.json' });
    const partial = `${file}.${process.pid}`;
    writeFileSync(partial, reply.body);
    renameSync(partial, file);
    return reply.json<ContractDocument>();
  }
}

/**
 * Every list request a spec sends whose statement's text is kept (src/common/query/list-statements.ts)
 * builds its statement too, and fails if the kept text is not what it makes: a shape that missed
 * something would give one request another's statement.
 */
checkListStatements(true);

/** The request each raw response `inject` hands back answered: the route that took it (`undefined`: none did), and whether it was forwarded. */
const requests = new WeakMap<object, FastifyRequest>();

function recordRoutes(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (request, reply, done) => {
    requests.set(reply.raw, request);
    done();
  });
}

async function checkedReply(app: NestFastifyApplication, options: InjectOptions, response: InjectResponse): Promise<InjectResponse> {
  const started = performance.now();
  contract ??= runDocument(app).then((document) => new ReplyContract(document));
  const request = requests.get(response.raw.res);
  const check = (await contract).check({
    method: options.method ?? 'GET',
    route: request?.routeOptions.url,
    forwarded: request !== undefined && forwardedFromSession(request),
    status: response.statusCode,
    headers: response.headers,
    body: response.rawPayload,
  });
  if (!check.checked) return response;
  if (REPLY_LOG)
    appendFileSync(
      REPLY_LOG,
      `${JSON.stringify({ operation: check.operation, status: response.statusCode, violations: check.violations, ms: performance.now() - started })}\n`,
    );
  if (check.violations.length > 0 && REPLY_CHECK === 'on')
    throw new Error(
      `The reply does not match the OpenAPI document: ${check.operation} answered ${response.statusCode}:\n  - ${check.violations.join('\n  - ')}`,
    );
  return response;
}

/** The data directories of the hubs on each database the harness made (its URL): where their jobs run. */
const dataDirsOf = new Map<string, Set<string>>();

export interface TestHubOptions {
  /** Settings to override. */
  readonly env?: Record<string, string>;
  /** Collects every log line (parsed), logging at `info` unless HUB_LOG_LEVEL is overridden. */
  readonly logs?: Record<string, unknown>[];
  /** Another hub's database, to run replicas on one database; the first hub drops it when it closes. */
  readonly databaseUrl?: string;
}

/**
 * A hub on its own fresh database (copied from the run's migrated template), through the real
 * Fastify pipeline with real authentication.
 */
export async function startTestHub({ env = {}, logs, databaseUrl: shared }: TestHubOptions = {}): Promise<TestHub> {
  const serverUrl = process.env[SERVER_URL_VARIABLE];
  const template = process.env[TEMPLATE_VARIABLE];
  if (!serverUrl || !template) throw new Error('The test database is not set up: run the suite with npm test');
  const database = shared ? undefined : await createDatabaseFromTemplate(serverUrl, template);
  const dataDir = enterableTempDir('hub-test-');
  const url = shared ?? databaseUrl(serverUrl, database as string);
  const dirs = dataDirsOf.get(url) ?? new Set<string>();
  dataDirsOf.set(url, dirs.add(dataDir));
  // The hub that made the database ends the test's hubs' jobs with it; the others' files go when they close.
  const cleanUp = async () => {
    if (database) {
      killProcessesUnder(dirs);
      dataDirsOf.delete(url);
      await dropDatabase(serverUrl, database);
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    } else rmSync(dataDir, { recursive: true, force: true });
  };
  let app: NestFastifyApplication;
  const start = async () => {
    const config = loadHubConfig({
      DATABASE_URL: url,
      HUB_DATA_DIR: dataDir,
      HUB_ADMIN_USER: ADMIN_USER,
      HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
      HUB_JWT_SECRET: JWT_SECRET,
      HUB_DB_POOL_SIZE: '4',
      HUB_LOG_LEVEL: logs ? 'info' : (process.env.HUB_TEST_LOG_LEVEL ?? 'silent'),
      ...env,
    });
    const destination = logs && { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) };
    const logger = createRootLogger(config.logLevel, destination);
    return createHubApp(AppModule.register(config, logger), logger, REPLY_CHECK === 'off' ? undefined : recordRoutes);
  };
  try {
    app = await start();
  } catch (error) {
    await cleanUp();
    throw error;
  }
  const inject = async (options: InjectOptions) => {
    const response = await app.inject(options);
    return REPLY_CHECK === 'off' ? response : checkedReply(app, options, response);
  };
  const login = async (username: string, password: string) => {
    const response = await inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username, password } });
    if (response.statusCode !== 200) throw new Error(`Login as ${username} failed: ${response.body}`);
    return response.json<{ token: string }>().token;
  };
  const adminToken = await login(ADMIN_USER, ADMIN_PASSWORD);
  return {
    get app() {
      return app;
    },
    adminToken,
    databaseUrl: url,
    inject,
    login,
    async restart() {
      await app.close();
      app = await start();
    },
    async close() {
      await app.close();
      await cleanUp();
    },
  };
}

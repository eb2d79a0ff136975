// The library worker (api-map §5, §9), shipped with the hub and run as a cluster `service` job (task
// `worker`) as the publisher's job identity: `<shipped node> <placed worker entry>`. It serves one
// library's members, metadata, records and distinct values to the hub over HTTP, JSON in and out,
// and answers nothing to a request without the execution's secret in X-Hub-Service-Secret: other
// jobs on the node can reach the port, only the hub knows the secret. Environment:
//   HUB_WORKER_HOST     listen address (127.0.0.1 on the local driver)
//   HUB_WORKER_PORT     listen port; 0 or unset: any free port, printed (and written to HUB_WORKER_ENDPOINT_FILE if set)
//   HUB_WORKER_SECRET   the execution's secret
//   HUB_LIBRARY_ENGINE  csv | parquet | json | duckdb | sas7bdat | postgres
//   HUB_LIBRARY_PATH    the library's directory, or its database file (duckdb); none for postgres
//   HUB_LIBRARY_OPTIONS the definition's options as JSON (never a credential: postgres gets its connection by POST /connection)
// Nothing here imports the hub's Nest code: the worker is small, and job users run it from the
// shipped copy under HUB_SHARED_DIR.
import { createHash, timingSafeEqual } from 'node:crypto';
import { realpathSync, renameSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openLockedDuckDB } from './duckdb.js';
import { ENGINES, type Engine, Library, NotAMemberError } from './library.js';
import { ConnectionRefusedError, PostgresLibrary } from './postgres.js';
import { QueryCancelledError, Queries } from './queries.js';
import { distinctValues, records, Reply, validateFilter } from './requests.js';

/** The largest request body read: a request is a query, never data. */
const MAX_BODY = 1024 * 1024;
/** Connections to the one DuckDB instance: queries at once. */
const CONNECTIONS = 4;
/** The default time a distinct-values request may take. */
const DEFAULT_DISTINCT_TIMEOUT_MS = 60_000;

function fail(message: string): never {
  console.error(`library worker: ${message}`);
  process.exit(2);
}

const secret = process.env.HUB_WORKER_SECRET ?? '';
const host = process.env.HUB_WORKER_HOST || '127.0.0.1';
const port = Number(process.env.HUB_WORKER_PORT || 0);
const engine = process.env.HUB_LIBRARY_ENGINE as Engine;
if (secret === '') fail('HUB_WORKER_SECRET must be set');
if (!Number.isInteger(port) || port < 0 || port > 65535) fail('HUB_WORKER_PORT must be a port number');
if (!ENGINES.includes(engine)) fail(`HUB_LIBRARY_ENGINE must be one of ${ENGINES.join(', ')}`);
let options: Record<string, unknown> = {};
try {
  options = JSON.parse(process.env.HUB_LIBRARY_OPTIONS || '{}') as Record<string, unknown>;
} catch {
  fail('HUB_LIBRARY_OPTIONS must be JSON');
}
/** The library's path, links resolved: DuckDB's allowed directory and the members' confinement compare real paths. */
function libraryPath(): string {
  if (engine === 'postgres') return '';
  const given = process.env.HUB_LIBRARY_PATH || fail('HUB_LIBRARY_PATH must be set');
  try {
    return realpathSync(given);
  } catch (error) {
    return fail(`HUB_LIBRARY_PATH ${given} cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}
const path = libraryPath();

const instance = await openLockedDuckDB(engine, path);
const queries = await Queries.open(instance, CONNECTIONS);
const library = engine === 'postgres' ? new PostgresLibrary(options, await instance.connect()) : new Library(engine, path, await instance.connect());
const startTime = new Date().toISOString();
let requestsServed = 0;
/** Queries under way that a request id names, so that POST /cancel/<id> can abort them. */
const running = new Map<string, AbortController>();

const digest = (value: string) => createHash('sha256').update(value).digest();
const secretDigest = digest(secret);

const JSON_TYPE = 'application/json';

/** The reply `body` as JSON: encoded once (its length is that of the bytes written, not a second pass over the text). */
function send(response: ServerResponse, status: number, body: unknown): void {
  const bytes = Buffer.from(JSON.stringify(body));
  response.writeHead(status, ['content-type', JSON_TYPE, 'content-length', String(bytes.length)]);
  response.end(bytes);
}

/**
 * The request's JSON object body ({} when empty). Read from its 'data' events rather than an async
 * iterator, which costs a promise per chunk and per request; a body is one chunk nearly always.
 */
function readBody(request: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const tooLarge = () => {
      request.off('data', take);
      request.off('end', done);
      // The rest is not read: the request is destroyed, as leaving an async iterator's loop did.
      request.destroy();
      reject(new Reply(413, 'The request body is too large'));
    };
    const take = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) return tooLarge();
      chunks.push(chunk);
    };
    const done = () => {
      if (size === 0) return resolve({});
      let body: unknown;
      try {
        body = JSON.parse((chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).toString('utf8'));
      } catch {
        return reject(new Reply(400, 'The request body is not JSON'));
      }
      if (typeof body !== 'object' || body === null || Array.isArray(body)) return reject(new Reply(400, 'The request body must be a JSON object'));
      resolve(body as Record<string, unknown>);
    };
    request.on('data', take);
    request.once('end', done);
    // Kept after the end too: a late error is then a no-op, never an unheard 'error' event.
    request.on('error', reject);
  });
}

/** A URL path segment decoded; a malformed escape is the request's fault. */
function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new Reply(400, 'Bad path');
  }
}

function datasetName(body: Record<string, unknown>): string {
  if (typeof body.name !== 'string' || body.name === '') throw new Reply(400, 'name must be a dataset name');
  return body.name;
}

/** Routes one authenticated request; the value is the 200 body. */
async function route(request: IncomingMessage, pathname: string, signal: AbortSignal): Promise<unknown> {
  const method = request.method ?? 'GET';
  const run = (sql: string, params: readonly unknown[]) => queries.rows(sql, params, signal);
  if (method === 'GET' && pathname === '/health') return { state: 'ready', startTime, requestsServed };
  if (method === 'POST' && pathname.startsWith('/cancel/')) {
    const controller = running.get(decodePart(pathname.slice('/cancel/'.length)));
    controller?.abort();
    return { cancelled: controller !== undefined };
  }
  if (method === 'POST' && pathname === '/connection') {
    if (!(library instanceof PostgresLibrary)) throw new Reply(400, `A ${engine} library takes no connection`);
    await library.connect(await readBody(request));
    return { ok: true };
  }
  if (library instanceof PostgresLibrary && !library.connected) throw new Reply(503, 'The worker has no connection yet');
  if (method === 'GET' && pathname === '/members') return await library.listMembers();
  if (method === 'GET' && pathname.startsWith('/datasets/')) {
    const dataset = await library.dataset(decodePart(pathname.slice('/datasets/'.length)));
    return dataset.metadata;
  }
  if (method !== 'POST') throw new Reply(404, 'No such endpoint');
  const body = await readBody(request);
  switch (pathname) {
    case '/records':
      return await records(await library.dataset(datasetName(body)), body, run);
    case '/validate-filter':
      return validateFilter(await library.dataset(datasetName(body)), body.filter);
    case '/distinct-values': {
      const dataset = await library.dataset(datasetName(body));
      const timeoutMs = body.timeoutMs ?? DEFAULT_DISTINCT_TIMEOUT_MS;
      if (typeof timeoutMs !== 'number' || !Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) throw new Reply(400, 'timeoutMs must be a positive integer');
      const timeout = AbortSignal.timeout(timeoutMs);
      const both = AbortSignal.any([signal, timeout]);
      try {
        return await distinctValues(dataset, body, (sql, params) => queries.rows(sql, params, both));
      } catch (error) {
        if (error instanceof QueryCancelledError && timeout.aborted && !signal.aborted)
          throw new Reply(504, `Distinct values took longer than ${timeoutMs} ms`);
        throw error;
      }
    }
    default:
      throw new Reply(404, 'No such endpoint');
  }
}

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const given = request.headers['x-hub-service-secret'];
  if (typeof given !== 'string' || !timingSafeEqual(digest(given), secretDigest)) return send(response, 403, { msg: 'Forbidden' });
  requestsServed++;
  // A request ends its query when the hub closes it (an async operation cancelled, a client gone) or names it in /cancel.
  const controller = new AbortController();
  const requestId = request.headers['x-hub-request-id'];
  if (typeof requestId === 'string' && requestId !== '') running.set(requestId, controller);
  response.on('close', () => {
    if (!response.writableFinished) controller.abort();
    if (typeof requestId === 'string' && running.get(requestId) === controller) running.delete(requestId);
  });
  let pathname: string;
  try {
    pathname = new URL(request.url ?? '/', 'http://worker').pathname;
  } catch {
    return send(response, 400, { msg: 'Bad path' });
  }
  try {
    send(response, 200, await route(request, pathname, controller.signal));
  } catch (error) {
    if (response.destroyed) return;
    if (error instanceof Reply) return send(response, error.status, { msg: error.message, ...error.extra });
    if (error instanceof NotAMemberError) return send(response, 404, { msg: error.message });
    if (error instanceof ConnectionRefusedError) return send(response, 400, { msg: error.message });
    if (error instanceof QueryCancelledError) return send(response, 409, { msg: error.message });
    // Filters and bodies are checked before any SQL runs, and every value is a typed parameter: what DuckDB refuses now is the worker's fault.
    const message = (error as Error).message ?? String(error);
    console.error(`library worker: ${request.method} ${pathname}: ${message}`);
    send(response, 500, { msg: 'The worker failed to answer' });
  }
}

const server = createServer((request, response) => void handle(request, response));

server.listen(port, host, () => {
  const address = server.address() as AddressInfo;
  const endpoint = `${host}:${address.port}`;
  if (process.env.HUB_WORKER_ENDPOINT_FILE) {
    // Whole or not at all: whoever reads the file never sees half an address.
    const file = process.env.HUB_WORKER_ENDPOINT_FILE;
    writeFileSync(`${file}.tmp`, endpoint);
    renameSync(`${file}.tmp`, file);
  }
  console.log(`library worker listening on ${endpoint}`);
});
/** How long a stopping worker lets the requests under way finish. */
const STOP_GRACE_MS = 5000;
// Stopping: no new request (close also ends the hub's idle kept-alive connections), requests under
// way given a moment, not the length of a long query, then the process ends.
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), STOP_GRACE_MS).unref();
  });
}

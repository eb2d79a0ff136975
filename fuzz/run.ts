import { randomInt } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import fc from 'fast-check';
import { BODY_LIMIT_BYTES } from '../src/common/http/fastify-setup.js';
import { ADMIN_PASSWORD, ADMIN_USER, JWT_SECRET, startHub, type HubProcess } from './hub-process.js';
import { MUTATIONS, type Credentials, type Mutation } from './mutations.js';
import { checkReply, contractFindings, StateSnapshot, type Finding } from './oracles.js';
import { ReplyContract } from './reply-contract.js';
import {
  collectionOf,
  Draw,
  operationsOf,
  Pools,
  send,
  UNSENDABLE,
  validRequest,
  type HubRequest,
  type HubResponse,
  type OpenApiDocument,
  type Operation,
} from './requests.js';

/** The bytes of a request's body as sent. */
function bodySize(request: HubRequest): number {
  return request.raw?.length ?? (request.body === undefined ? 0 : Buffer.byteLength(JSON.stringify(request.body)));
}

/**
 * The hub fuzzing itself: reads its own OpenAPI document, and for every operation sends valid
 * requests and every kind of hostile mutation of them (see MUTATIONS), checking each reply
 * against the oracles (see oracles.ts), then that the hub is alive at the end.
 *
 *   node dist/fuzz/run.js [--seconds 120] [--seed N] [--report fuzz-report.json]
 *
 * Every operation gets a valid request and every mutation that applies to it first; the rest of
 * the time goes to random ones. The seed (printed) makes a run repeatable. PostgreSQL: the server
 * of TEST_DATABASE_URL (a database is made there and dropped), or an embedded one.
 */

interface Failure extends Finding {
  readonly operation: string;
  readonly mutation: string;
  readonly status: number;
  readonly request: string;
  count: number;
}

interface Step {
  readonly operation: Operation;
  readonly mutation?: Mutation;
  /** The first pass's field mutations: at which field of the body (all in turn). */
  readonly place?: number;
}

const { values: options } = parseArgs({
  options: { seconds: { type: 'string', default: '120' }, seed: { type: 'string' }, report: { type: 'string', default: 'fuzz-report.json' } },
});
const seconds = Number(options.seconds);
const seed = options.seed === undefined ? randomInt(2 ** 31) : Number(options.seed);
if (!Number.isFinite(seconds) || seconds <= 0 || !Number.isInteger(seed)) throw new Error('usage: run.js [--seconds N] [--seed INTEGER] [--report FILE]');

function summary(request: HubRequest): string {
  const query = request.query.map(([name, value]) => `${name}=${value}`).join('&');
  const body = request.raw ? `<${request.raw.length} raw bytes>` : request.body === undefined ? '' : JSON.stringify(request.body);
  const authorization = String(request.headers.authorization ?? '<none>').slice(0, 40);
  return `${request.method} ${request.path.slice(0, 200)}${query ? `?${query.slice(0, 200)}` : ''} [content-type ${JSON.stringify(request.headers['content-type'] ?? null)}; authorization ${authorization}${request.note ? `; ${request.note}` : ''}] ${body.slice(0, 300)}`;
}

function json(response: HubResponse): unknown {
  try {
    return JSON.parse(response.body.toString());
  } catch {
    return undefined;
  }
}

async function login(hub: HubProcess): Promise<string> {
  const response = await fetch(`${hub.url}/api/v2/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: ADMIN_USER, password: ADMIN_PASSWORD }),
  });
  if (response.status !== 200) throw new Error(`The fuzzer cannot log in: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { token: string }).token;
}

/** Where the ids and names of a successful reply belong: the collection for a list or an item, else the route itself. */
function learnedUnder(template: string): string {
  return template.endsWith('}') ? template.slice(0, template.lastIndexOf('/')) : template.includes('{') ? collectionOf(template) : template;
}

async function fuzz(hub: HubProcess, draw: Draw, deadline: number): Promise<{ failures: Failure[]; requests: number; statuses: Map<string, number> }> {
  const document = (await (await fetch(`${hub.url}/api/openapi.json`)).json()) as OpenApiDocument;
  const operations = operationsOf(document);
  const contract = new ReplyContract(document);
  let token = await login(hub);
  const credentials = (): Credentials => ({ token, jwtSecret: JWT_SECRET, userName: ADMIN_USER });
  const pools = new Pools();
  const snapshot = await StateSnapshot.connect(hub.databaseUrl);
  const failures = new Map<string, Failure>();
  const statuses = new Map<string, number>();
  let requests = 0;
  const fail = (operation: Operation, mutation: Mutation | undefined, status: number, request: HubRequest, finding: Finding) => {
    const kind = mutation?.kind ?? 'valid';
    const key = `${finding.oracle}|${operation.id}|${kind}|${status}`;
    const known = failures.get(key);
    if (known) known.count += 1;
    else failures.set(key, { ...finding, operation: operation.id, mutation: kind, status, request: summary(request), count: 1 });
  };

  // What exists before the run (the administrator, built-in roles and bindings) is read, never written.
  for (const operation of operations.filter((item) => item.method === 'GET' && !item.path.includes('{'))) {
    const response = await send(hub.url, validRequest(operation, document, pools, draw, { authorization: `Bearer ${token}` }, { plain: true }));
    if (response.status === 200) pools.learn(learnedUnder(operation.path), json(response), true);
  }

  // Every operation with a valid request and each mutation that applies, in a random order; then random steps.
  // Field mutations go to every field of a body with all its optional properties: null and wrong types in every field.
  const fieldsOf = (operation: Operation, mutation: Mutation) => mutation.fields?.(validRequest(operation, document, pools, draw, {}, { full: true })) ?? 0;
  const firstPass: Step[] = operations.flatMap((operation) => [
    { operation },
    ...MUTATIONS.flatMap((mutation) =>
      mutation.fields ? Array.from({ length: fieldsOf(operation, mutation) }, (_, place) => ({ operation, mutation, place })) : [{ operation, mutation }],
    ),
  ]);
  for (let index = firstPass.length - 1; index > 0; index -= 1) {
    const other = draw.value(fc.nat({ max: index }));
    [firstPass[index], firstPass[other]] = [firstPass[other], firstPass[index]];
  }
  try {
    await run();
  } finally {
    await snapshot.close();
  }
  if (requests < firstPass.length)
    console.log(`The first pass (every operation, every mutation: ${firstPass.length} requests) did not finish: give it more --seconds`);
  return { failures: [...failures.values()], requests, statuses };

  async function run(): Promise<void> {
    let before = await snapshot.take();
    for (let step = 0; Date.now() < deadline && hub.alive(); step += 1) {
      const { operation, mutation, place }: Step =
        step < firstPass.length ? firstPass[step] : { operation: draw.pick(operations), mutation: draw.chance(0.3) ? undefined : draw.pick(MUTATIONS) };
      const valid = validRequest(operation, document, pools, draw, { authorization: `Bearer ${token}` }, { full: place !== undefined });
      const request = !mutation ? valid : place !== undefined ? mutation.applyAt?.(valid, place, draw) : mutation.apply(valid, operation, draw, credentials());
      if (!request) continue;
      let response: HubResponse;
      try {
        response = await send(hub.url, request);
      } catch (error) {
        if (UNSENDABLE.has((error as NodeJS.ErrnoException).code ?? '')) continue;
        // A server may close the connection on a body over its limit (RFC 9110 §15.5.14), and the
        // client may meet that close while still writing, before it reads the 413.
        if ((error as NodeJS.ErrnoException).code === 'EPIPE' && bodySize(request) > BODY_LIMIT_BYTES) continue;
        fail(operation, mutation, 0, request, { oracle: 'every request gets a reply', detail: (error as Error).message });
        continue;
      } finally {
        requests += 1;
      }
      const statusKey = mutation ? `${mutation.kind} ${response.status}` : `valid ${response.status} ${operation.id}`;
      statuses.set(statusKey, (statuses.get(statusKey) ?? 0) + 1);
      for (const finding of [...checkReply(operation, response, mutation?.unauthenticated === true), ...contractFindings(contract, request, response)])
        fail(operation, mutation, response.status, request, finding);
      const after = await snapshot.take();
      const changed = StateSnapshot.changed(before, after);
      if (response.status >= 400 && changed.length > 0)
        fail(operation, mutation, response.status, request, { oracle: 'a refused request changes nothing', detail: `changed ${changed.join(', ')}` });
      before = after;
      if (response.status >= 200 && response.status < 300) pools.learn(learnedUnder(operation.path), json(response));
      // A valid request the hub no longer takes our token for: a fuzzed write revoked it; log in again.
      if (!mutation && response.status === 401 && !operation.public) token = await login(hub);
    }
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const draw = new Draw(seed);
  console.log(`Fuzzing the hub for ${seconds} s with seed ${seed} (repeat with --seed ${seed})`);
  const hub = await startHub(process.env.TEST_DATABASE_URL);
  let outcome: Awaited<ReturnType<typeof fuzz>>;
  const endFindings: Finding[] = [];
  try {
    outcome = await fuzz(hub, draw, started + seconds * 1000);
    const ready = await fetch(`${hub.url}/health/ready`).catch(() => undefined);
    if (!hub.alive() || ready?.status !== 200) endFindings.push({ oracle: 'the hub is alive at the end', detail: `readiness ${ready?.status ?? 'no reply'}` });
    else await login(hub).catch((error: Error) => endFindings.push({ oracle: 'the hub is alive at the end', detail: error.message }));
  } finally {
    await hub.stop();
  }
  const { failures, requests, statuses } = outcome;
  const report = { seed, seconds, requests, failures, endFindings, statuses: Object.fromEntries([...statuses].sort()), hubErrors: hub.errors.slice(0, 50) };
  writeFileSync(options.report, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`${requests} requests in ${Math.round((Date.now() - started) / 1000)} s; report in ${options.report}`);
  for (const failure of failures)
    console.log(
      `FAIL ${failure.oracle} (${failure.count}x): ${failure.operation} [${failure.mutation}] → ${failure.status}: ${failure.detail}\n     ${failure.request}`,
    );
  for (const finding of endFindings) console.log(`FAIL ${finding.oracle}: ${finding.detail}`);
  const failed = failures.length + endFindings.length;
  console.log(`${failed === 0 ? 'fuzz: no oracle failed' : `fuzz: ${failed} distinct failures`} (seed ${seed})`);
  process.exitCode = failed === 0 ? 0 : 1;
}

await main();

// Benchmark of object matching against patterns a backtracking engine takes exponential time on
// (`npm run bench:matching`, after a build): issue 13 found that a glob role `/ClusterJobs/+(+(a))b`
// (picomatch) stalled the hub 13 s on one request and a 1,000-character object hung it.
// - in-process: each pattern compiled as a role's permission would be, then matched against
//   1,000-character objects built to make a backtracking engine explode (target: every evaluation
//   under 1 ms, the worst of REPEATS included); extglob patterns are refused at compile time;
// - through the hub: a user bound to a role of those patterns asks POST /rbac/evaluate about the
//   1,000-character objects and GET /cluster/jobs/<non-id>, while /health/live is polled (target:
//   every answer under a few ms, the probe never held up).
// Uses BENCH_DATABASE_URL (default: this machine's PostgreSQL), where it recreates hub_bench_matching.
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileObjectMatcher, type ObjectMatcherKind } from '../src/rbac/object-matcher.js';
import { startNode, stop, type Started } from './processes.js';
import { ADMIN_PASSWORD, dropDatabase, freshDatabase, HUB, login, writeResults } from './support.js';

const DATABASE = 'hub_bench_matching';
const REPEATS = Number(process.env.BENCH_REPEATS ?? 2000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200);
const LONG = 1000;

/** Patterns and the objects that defeat a backtracking engine on them (each `LONG` characters or so). */
const CASES: readonly { kind: ObjectMatcherKind; pattern: string; object: string }[] = [
  { kind: 'glob', pattern: '/ClusterJobs/*a*a*a*a*a*a*a*a*a*a*b', object: `/ClusterJobs/${'a'.repeat(LONG - 13)}` },
  { kind: 'glob', pattern: '/**/a/**/a/**/a/**/a/**/b', object: `/${'a/'.repeat((LONG - 2) / 2)}c` },
  { kind: 'glob', pattern: '/ClusterJobs/{a,a}{a,a}{a,a}{a,a}{a,a}*b', object: `/ClusterJobs/${'a'.repeat(LONG - 13)}` },
  { kind: 'glob', pattern: '/**', object: `/ClusterJobs/${'a'.repeat(LONG - 13)}` },
  { kind: 'regex', pattern: '/ClusterJobs/(a+)+b', object: `/ClusterJobs/${'a'.repeat(LONG - 13)}` },
  { kind: 'regex', pattern: '/ClusterJobs/(a|a)*b', object: `/ClusterJobs/${'a'.repeat(LONG - 13)}` },
  { kind: 'regex', pattern: '.*.*.*.*.*.*.*.*.*.*x', object: `/${'a'.repeat(LONG - 1)}` },
  { kind: 'regex', pattern: '(/[a-z]+)*/b', object: `${'/aaaa'.repeat(LONG / 5)}` },
];
const EXTGLOBS = ['/ClusterJobs/+(+(a))b', '/ClusterJobs/*(a|aa)b', '/ClusterJobs/@(a|b)*', '/ClusterJobs/!(a)'];

interface Timing {
  readonly kind: ObjectMatcherKind;
  readonly pattern: string;
  readonly objectLength: number;
  readonly matched: boolean;
  /** The first evaluation after compiling (RE2's automaton is built lazily, as it runs). */
  readonly firstMicros: number;
  readonly medianMicros: number;
  readonly p99Micros: number;
  readonly maxMicros: number;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

function inProcess(): { timings: Timing[]; refused: { pattern: string; message: string }[] } {
  const timings = CASES.map(({ kind, pattern, object }): Timing => {
    const matcher = compileObjectMatcher(kind, pattern);
    const samples: number[] = [];
    const first = performance.now();
    let matched = matcher.matches(object);
    const firstMs = performance.now() - first;
    for (let i = 0; i < REPEATS; i += 1) {
      const began = performance.now();
      matched = matcher.matches(object);
      samples.push(performance.now() - began);
    }
    samples.sort((a, b) => a - b);
    const micros = (ms: number) => Math.round(ms * 1000 * 10) / 10;
    return {
      kind,
      pattern,
      objectLength: object.length,
      matched,
      firstMicros: micros(firstMs),
      medianMicros: micros(percentile(samples, 0.5)),
      p99Micros: micros(percentile(samples, 0.99)),
      maxMicros: micros(samples[samples.length - 1]),
    };
  });
  const refused = EXTGLOBS.map((pattern) => {
    try {
      compileObjectMatcher('glob', pattern);
      return { pattern, message: 'ACCEPTED (should be refused)' };
    } catch (error) {
      return { pattern, message: (error as Error).message };
    }
  });
  return { timings, refused };
}

async function call(hub: Started, method: string, path: string, token: string, body?: unknown): Promise<Response> {
  return fetch(`${hub.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** Latencies (ms) of `REQUESTS` requests one after another, and of /health/live probes polled meanwhile. */
async function timed(hub: Started, request: () => Promise<Response>, expected: number): Promise<{ p50Ms: number; maxMs: number; liveMaxMs: number }> {
  const latencies: number[] = [];
  const probes: number[] = [];
  let running = true;
  const probe = (async () => {
    while (running) {
      const began = performance.now();
      await fetch(`${hub.url}/health/live`);
      probes.push(performance.now() - began);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  for (let i = 0; i < REQUESTS; i += 1) {
    const began = performance.now();
    const response = await request();
    await response.arrayBuffer();
    latencies.push(performance.now() - began);
    if (response.status !== expected) throw new Error(`expected ${expected}, got ${response.status}`);
  }
  running = false;
  await probe;
  latencies.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 100) / 100;
  return { p50Ms: round(percentile(latencies, 0.5)), maxMs: round(latencies[latencies.length - 1]), liveMaxMs: round(Math.max(...probes)) };
}

async function throughTheHub(): Promise<Record<string, { p50Ms: number; maxMs: number; liveMaxMs: number }>> {
  const env = {
    DATABASE_URL: await freshDatabase(DATABASE),
    HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
    HUB_DATA_DIR: mkdtempSync(join(tmpdir(), 'hub-bench-')),
    HUB_LOG_LEVEL: 'warn',
  };
  const hub = await startNode(HUB, env, '/health/ready');
  try {
    const admin = await login(hub);
    const permissions = CASES.map(({ kind, pattern }) => ({ object: pattern, objectMatcher: kind, actions: ['Read'], effect: 'Allow' }));
    const role = (await (await call(hub, 'POST', '/api/v2/rbac/roles', admin, { name: 'Backtracking', permissions })).json()) as { id: string };
    const user = (await (await call(hub, 'POST', '/api/v2/auth/users', admin, { userName: 'matcher', password: ADMIN_PASSWORD })).json()) as { _id: string };
    await call(hub, 'POST', '/api/v2/rbac/rolebindings', admin, { role: role.id, principal: user._id, namespace: '*' });
    const response = await fetch(`${hub.url}/api/v2/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'matcher', password: ADMIN_PASSWORD }),
    });
    const token = ((await response.json()) as { token: string }).token;
    const questions = CASES.map(({ object }) => ({ object, action: 'Read' }));
    return {
      [`POST /rbac/evaluate, ${questions.length} objects of ~${LONG} characters against ${CASES.length} patterns`]: await timed(
        hub,
        () => call(hub, 'POST', '/api/v2/rbac/evaluate', token, questions),
        200,
      ),
      'GET /cluster/jobs/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac (not an id: 404 before any matching)': await timed(
        hub,
        () => call(hub, 'GET', `/api/v2/cluster/jobs/${'a'.repeat(31)}c`, token),
        404,
      ),
    };
  } finally {
    await stop(hub);
    rmSync(env.HUB_DATA_DIR, { recursive: true, force: true });
    await dropDatabase(DATABASE);
  }
}

async function main(): Promise<void> {
  const local = inProcess();
  console.log(`\nIn-process matching, a first evaluation then ${REPEATS} more per pattern (target: each under 1000 µs)\n`);
  console.log('| matcher | pattern | object length | matches | first µs | median µs | p99 µs | max µs |\n|---|---|---|---|---|---|---|---|');
  for (const t of local.timings)
    console.log(`| ${t.kind} | \`${t.pattern}\` | ${t.objectLength} | ${t.matched} | ${t.firstMicros} | ${t.medianMicros} | ${t.p99Micros} | ${t.maxMicros} |`);
  console.log('\nExtglob, refused at role creation:');
  for (const r of local.refused) console.log(`- \`${r.pattern}\`: ${r.message}`);
  const hub = await throughTheHub();
  console.log(`\nThrough the hub, ${REQUESTS} requests one after another, /health/live polled meanwhile, ${cpus().length} CPUs\n`);
  console.log('| request | p50 ms | max ms | slowest /health/live ms |\n|---|---|---|---|');
  for (const [name, figures] of Object.entries(hub)) console.log(`| ${name} | ${figures.p50Ms} | ${figures.maxMs} | ${figures.liveMaxMs} |`);
  const worst = (figure: 'p99Micros' | 'maxMicros') => Math.max(...local.timings.map((t) => t[figure]));
  console.log(`\nin-process evaluation, worst p99: ${worst('p99Micros')} µs, worst single one: ${worst('maxMicros')} µs (target < 1000 µs)`);
  writeResults('matching', { date: new Date().toISOString(), machine: { cpus: cpus().length, node: process.version }, inProcess: local, hub });
}

await main();

// What every benchmark needs: scratch databases on BENCH_DATABASE_URL, HTTP load with autocannon,
// logging in, a client of the hub's API, medians and percentiles, a data directory's disk at rest,
// and writing results to bench/results/.
import { Agent, request as httpRequest } from 'node:http';
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import type { Started } from './processes.js';

const HERE = dirname(fileURLToPath(import.meta.url));
export const ROOT = join(HERE, '..', '..');
export const HUB = join(ROOT, 'dist', 'hub.js');
export const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const ADMIN_PASSWORD = 'bench-admin-password';
/** A file made in the data directory costs about 30 µs of CPU on this machine's disk at rest; up to 600 right after many were removed. */
const DISK_SETTLED_MICROS = 100;
const DISK_SETTLE_MAX_S = 600;

export const round = (value: number, places = 1) => Math.round(value * 10 ** places) / 10 ** places;
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Wall-clock milliseconds with sub-millisecond precision, comparable with the hub's ISO times (one host). */
export const nowMs = () => performance.timeOrigin + performance.now();

export interface Load {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  /** Requests answered over the run. */
  readonly requests: number;
}

export function databaseUrl(database: string): string {
  const url = new URL(SERVER_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function sql(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** Drops and creates a scratch database; returns its URL. */
export async function freshDatabase(database: string): Promise<string> {
  await sql(SERVER_URL, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await sql(SERVER_URL, `CREATE DATABASE ${database}`);
  return databaseUrl(database);
}

export async function dropDatabase(database: string): Promise<void> {
  await sql(SERVER_URL, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
}

export async function load(url: string, headers: Record<string, string>, seconds: number, connections: number): Promise<Load> {
  const result = await autocannon({ url, connections, duration: seconds, headers });
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    requests: result.requests.total,
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.floor(sorted.length / 2)]);
}

/** The value below which `fraction` of the sorted values fall. */
export function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))];
}

/** The `fraction` percentile of unsorted values, rounded to a tenth. */
export const percentileOf = (values: number[], fraction: number) =>
  round(
    percentile(
      [...values].sort((a, b) => a - b),
      fraction,
    ),
  );

export interface Timings {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly meanMs: number;
}

/** Runs `operation` `warmUp` times, then `count` times one after another, timing each. */
export async function timeRepeated(operation: () => Promise<unknown>, count: number, warmUp = 200): Promise<Timings> {
  for (let i = 0; i < warmUp; i += 1) await operation();
  const times: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const began = performance.now();
    await operation();
    times.push(performance.now() - began);
  }
  times.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 1000) / 1000;
  return { p50Ms: round(percentile(times, 0.5)), p99Ms: round(percentile(times, 0.99)), meanMs: round(times.reduce((a, b) => a + b, 0) / times.length) };
}

export function medianLoad(runs: readonly Load[]): Load {
  const middle = (pick: (run: Load) => number) => median(runs.map(pick));
  return {
    requestsPerSecond: middle((r) => r.requestsPerSecond),
    p50Ms: middle((r) => r.p50Ms),
    p99Ms: middle((r) => r.p99Ms),
    non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0),
    requests: runs.reduce((sum, r) => sum + r.requests, 0),
  };
}

export async function login(hub: Started): Promise<string> {
  const response = await fetch(`${hub.url}/api/v2/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
  });
  if (response.status !== 200) throw new Error(`login failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { token: string }).token;
}

export function loadRow(name: string, figures: Load): string {
  return `| ${name} | ${figures.requestsPerSecond} | ${figures.p50Ms} | ${figures.p99Ms} | ${figures.non2xx} |`;
}

/** Writes a run's figures to bench/results/<name>-<date>.json. */
export function writeResults(name: string, results: { readonly date: string; readonly [figure: string]: unknown }): void {
  const out = join(ROOT, 'bench', 'results');
  mkdirSync(out, { recursive: true });
  const file = join(out, `${name}-${results.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nwritten to ${file} (${readdirSync(out).length} result files)`);
}

export interface Job {
  id: string;
}
export interface Execution {
  id: string;
  status: string;
  taskStates: { main: { startedAt?: string; finishedAt?: string } };
}

/**
 * The hub's API as the benchmark's clients call it, through `node:http` on kept-alive connections
 * (`fetch` cost the client 1.1 to 1.4 ms of CPU per request here, on the two CPUs the hub and
 * PostgreSQL share); counts 5xx replies.
 */
export function clientOf(hub: Started, token: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  let serverErrors = 0;
  const api = <T>(method: string, path: string, body?: unknown): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const request = httpRequest(
        `${hub.url}/api/v2/${path}`,
        {
          method,
          agent,
          headers: {
            authorization: `Bearer ${token}`,
            ...(payload !== undefined && { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
          },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const status = response.statusCode ?? 0;
            const text = Buffer.concat(chunks).toString('utf8');
            if (status >= 500) serverErrors += 1;
            if (status < 200 || status >= 300) reject(new Error(`${method} ${path}: ${status} ${text}`));
            else resolve(JSON.parse(text) as T);
          });
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end(payload);
    });
  let profileId = '';
  const client = {
    api,
    serverErrors: () => serverErrors,
    /** The Standard execution profile's id, once `init` read it. */
    profileId: () => profileId,
    async init() {
      profileId = (await api<{ data: { _id: string }[] }>('GET', 'execution-profiles/execprofiles?filter[name][EQ]=Standard')).data[0]._id;
    },
    submit: (name: string, command: string, args: string[] = [], priority?: number) =>
      api<Job>('POST', 'cluster/jobs', { name, namespace: 'default', executionProfileId: profileId, priority, task: { command, args } }),
    executionOf: async (jobId: string) => (await api<{ data: { id: string }[] }>('GET', `cluster/executions?filter[jobId][EQ]=${jobId}`)).data[0].id,
    execution: (id: string) => api<Execution>('GET', `cluster/executions/${id}`),
    until: async (id: string, done: (execution: Execution) => boolean, everyMs = 2): Promise<Execution> => {
      for (;;) {
        const execution = await client.execution(id);
        if (done(execution)) return execution;
        await sleep(everyMs);
      }
    },
    unfinished: async () => (await api<{ total: number }>('GET', 'cluster/jobs?filter[status][IN]=pending,running&page[limit]=1')).total,
    /** When the hub recorded the last end of an execution (its `modifiedTime`), in epoch milliseconds. */
    lastRecordedEnd: async () =>
      Date.parse(
        (await api<{ data: { modifiedTime: string }[] }>('GET', 'cluster/executions?filter[status][IN]=completed,failed,lost&sort=-modifiedTime&page[limit]=1'))
          .data[0].modifiedTime,
      ),
    completed: async () => (await api<{ total: number }>('GET', 'cluster/executions?filter[status][EQ]=completed&page[limit]=1')).total,
  };
  return client;
}
export type Client = ReturnType<typeof clientOf>;

/**
 * Microseconds of CPU one file or directory made in `dir` costs, over the layout of a thousand
 * executions (a directory, two below it, three files; kept: removing them would slow the next
 * files made). Fewer would all land in one block group, which says nothing of the others.
 */
function microsPerFileMade(dir: string): number {
  const probe = mkdtempSync(join(dir, 'disk-probe-'));
  const before = process.cpuUsage();
  for (let index = 0; index < 1000; index += 1) {
    const execution = join(probe, String(index));
    for (const made of [execution, join(execution, 'work'), join(execution, 'logs')]) mkdirSync(made);
    for (const file of ['logs/stdout', 'logs/stderr', 'exit-code']) writeFileSync(join(execution, file), '');
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 6000;
}

/**
 * Waits (up to DISK_SETTLE_MAX_S) until making a file in the data directory costs what it does on
 * a disk at rest. On ext4 without a journal, as on the benchmark's machine, every file made skips
 * each inode deleted in the last one to six minutes, reading it: right after a run that removed
 * its directories (tens of thousands of files), or a test run, each of a job's files cost up to
 * 0.6 ms of CPU instead of 0.03, and the 500 jobs a third more. Resolves with the seconds waited
 * and the last cost measured.
 */
export async function settledDisk(dir: string): Promise<{ waitedSeconds: number; microsPerFile: number }> {
  const began = nowMs();
  let micros = microsPerFileMade(dir);
  while (micros > DISK_SETTLED_MICROS && nowMs() - began < DISK_SETTLE_MAX_S * 1000) {
    await sleep(15_000);
    micros = microsPerFileMade(dir);
  }
  return { waitedSeconds: Math.round((nowMs() - began) / 1000), microsPerFile: Math.round(micros) };
}

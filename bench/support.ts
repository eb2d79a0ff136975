// What every benchmark needs: scratch databases on BENCH_DATABASE_URL, HTTP load with autocannon,
// logging in, medians, and writing results to bench/results/.
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import type { Started } from './processes.js';

const HERE = dirname(fileURLToPath(import.meta.url));
export const ROOT = join(HERE, '..', '..');
export const HUB = join(ROOT, 'dist', 'src', 'main.js');
export const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const ADMIN_PASSWORD = 'bench-admin-password';

export interface Load {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
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
  return { requestsPerSecond: Math.round(result.requests.average), p50Ms: result.latency.p50, p99Ms: result.latency.p99, non2xx: result.non2xx };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.floor(sorted.length / 2)]);
}

/** The value below which `fraction` of the sorted values fall. */
export function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))];
}

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

// Benchmarks of the foundation (`npm run bench`, after a build): the namespaces list on PostgreSQL
// next to a bare Fastify + pg handler running the same SQL, cold starts and idle memory. Prints a
// table and writes the figures to bench/results/. Uses BENCH_DATABASE_URL (default: this machine's
// PostgreSQL), where it recreates the database hub_bench.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { rssMiB, startNode, stop, type Started } from './processes.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const HUB = join(ROOT, 'dist', 'src', 'main.js');
const BARE = join(HERE, 'bare-server.js');
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DATABASE = 'hub_bench';
const ADMIN_PASSWORD = 'bench-admin-password';
const ROWS = 10_000;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = 10;
/** Rounds per server, alternating hub and bare, so that drift in the machine's load hits both alike. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const LIST_QUERY = `filter[name][CO]=data&sort=-_created&page[limit]=50`;

interface Load {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
}

function databaseUrl(database: string): string {
  const url = new URL(SERVER_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

async function sql(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/**
 * Ten name families spread pseudo-randomly (a plain i % 10 would line up with the statistics'
 * histogram and mislead the planner), so that `CO data` matches about a tenth of the rows.
 */
const SEED = `
  INSERT INTO namespaces (name, description, is_default, version, created, modified)
  SELECT format('team-%s-%s', lpad(i::text, 5, '0'), (ARRAY['data','web','ml','ops','finance','hr','sales','infra','qa','research'])[1 + abs(hashint4(i)) % 10]),
         'Namespace number ' || i, false, 1, now() - make_interval(secs => i), now() - make_interval(secs => i)
  FROM generate_series(1, ${ROWS}) AS i`;

async function load(url: string, headers: Record<string, string>, seconds: number): Promise<Load> {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: seconds, headers });
  return { requestsPerSecond: Math.round(result.requests.average), p50Ms: result.latency.p50, p99Ms: result.latency.p99, non2xx: result.non2xx };
}

function medianLoad(runs: readonly Load[]): Load {
  const middle = (pick: (run: Load) => number) => median(runs.map(pick));
  return {
    requestsPerSecond: middle((r) => r.requestsPerSecond),
    p50Ms: middle((r) => r.p50Ms),
    p99Ms: middle((r) => r.p99Ms),
    non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0),
  };
}

async function login(hub: Started): Promise<string> {
  const response = await fetch(`${hub.url}/api/v2/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
  });
  if (response.status !== 200) throw new Error(`login failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { token: string }).token;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.floor(sorted.length / 2)]);
}

/** Embedded PostgreSQL on a data directory: first start (initdb), then restarts on it. */
async function embeddedStarts(): Promise<{ firstMs: number; restartMs: number; hubRssMiB: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-bench-'));
  const env = { HUB_DATA_DIR: dataDir, HUB_ADMIN_PASSWORD: ADMIN_PASSWORD, HUB_LOG_LEVEL: 'warn' };
  try {
    const first = await startNode(HUB, env, '/health/ready');
    await stop(first);
    const restarts: number[] = [];
    let rss = 0;
    for (let run = 0; run < 3; run += 1) {
      const hub = await startNode(HUB, env, '/health/ready');
      restarts.push(hub.startMs);
      await new Promise((resolve) => setTimeout(resolve, 2000));
      rss = rssMiB(hub.process.pid ?? 0);
      await stop(hub);
    }
    return { firstMs: Math.round(first.startMs), restartMs: median(restarts), hubRssMiB: rss };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  await sql(SERVER_URL, `DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
  await sql(SERVER_URL, `CREATE DATABASE ${DATABASE}`);
  const env = {
    DATABASE_URL: databaseUrl(DATABASE),
    HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
    HUB_DATA_DIR: mkdtempSync(join(tmpdir(), 'hub-bench-')),
    HUB_LOG_LEVEL: 'info',
  };

  const migrating = await startNode(HUB, env, '/health/ready');
  await stop(migrating);
  await sql(env.DATABASE_URL, SEED);
  await sql(env.DATABASE_URL, 'VACUUM ANALYZE namespaces'); // As autovacuum would, soon after a bulk load.

  const externalStarts: number[] = [];
  for (let run = 0; run < 3; run += 1) {
    const started = await startNode(HUB, env, '/health/ready');
    externalStarts.push(started.startMs);
    await stop(started);
  }

  const hub = await startNode(HUB, env, '/health/ready');
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const idleRss = rssMiB(hub.process.pid ?? 0);
  const token = await login(hub);
  const check = await fetch(`${hub.url}/api/v2/namespaces?${LIST_QUERY}`, { headers: { authorization: `Bearer ${token}` } });
  const { totalCount } = (await check.json()) as { totalCount: number };
  const bare = await startNode(BARE, { DATABASE_URL: env.DATABASE_URL }, '/health');
  const targets = {
    hub: { url: `${hub.url}/api/v2/namespaces?${LIST_QUERY}`, headers: { authorization: `Bearer ${token}` } },
    bare: { url: `${bare.url}/namespaces?${LIST_QUERY}`, headers: {} },
  };
  for (const target of Object.values(targets)) await load(target.url, target.headers, 10); // Warm-up: JIT, pools, caches.
  const rounds: { hub: Load; bare: Load }[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const hubRun = await load(targets.hub.url, targets.hub.headers, DURATION_S);
    const bareRun = await load(targets.bare.url, targets.bare.headers, DURATION_S);
    rounds.push({ hub: hubRun, bare: bareRun });
  }
  const hubLoad = medianLoad(rounds.map((r) => r.hub));
  const bareLoad = medianLoad(rounds.map((r) => r.bare));
  const loadedRss = rssMiB(hub.process.pid ?? 0);
  await stop(hub);
  await stop(bare);

  const embedded = await embeddedStarts();
  rmSync(env.HUB_DATA_DIR, { recursive: true, force: true });

  const results = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version },
    list: {
      request: `GET /api/v2/namespaces?${LIST_QUERY}`,
      rows: ROWS,
      matching: totalCount,
      connections: CONNECTIONS,
      seconds: DURATION_S,
      rounds,
      hub: hubLoad,
      bare: bareLoad,
      throughputRatio: Math.round((hubLoad.requestsPerSecond / bareLoad.requestsPerSecond) * 100) / 100,
      p99Ratio: Math.round((hubLoad.p99Ms / bareLoad.p99Ms) * 100) / 100,
    },
    coldStartMs: { externalPostgres: median(externalStarts), embeddedFirstStart: embedded.firstMs, embeddedExistingDataDir: embedded.restartMs },
    rssMiB: { hubIdleExternal: idleRss, hubAfterLoad: loadedRss, hubIdleEmbedded: embedded.hubRssMiB },
  };

  const row = (name: string, figures: Load) => `| ${name} | ${figures.requestsPerSecond} | ${figures.p50Ms} | ${figures.p99Ms} | ${figures.non2xx} |`;
  console.log(
    `\nNamespaces list, ${ROWS} rows (${totalCount} match), ${CONNECTIONS} connections, ${DURATION_S} s per run, ${ROUNDS} alternating rounds, ${cpus().length} CPUs\n`,
  );
  console.log('| server | req/s | p50 ms | p99 ms | non-2xx |\n|---|---|---|---|---|');
  rounds.forEach((round, index) => {
    console.log(row(`hub, round ${index + 1}`, round.hub));
    console.log(row(`bare, round ${index + 1}`, round.bare));
  });
  console.log(row('**hub (JWT, full pipeline), median**', hubLoad));
  console.log(row('**bare Fastify + pg, same SQL, median**', bareLoad));
  console.log(`\nhub/bare throughput ${results.list.throughputRatio} (target >= 0.5); hub/bare p99 ${results.list.p99Ratio} (target <= 1.5)`);
  console.log(
    `cold start: external PostgreSQL ${results.coldStartMs.externalPostgres} ms; embedded, existing data dir ${embedded.restartMs} ms (first start with initdb ${embedded.firstMs} ms)`,
  );
  console.log(
    `hub RSS: idle ${idleRss} MiB (external), ${embedded.hubRssMiB} MiB (embedded, hub process only), after load ${loadedRss} MiB (target idle <= 200)`,
  );

  const out = join(ROOT, 'bench', 'results');
  mkdirSync(out, { recursive: true });
  const file = join(out, `foundation-${results.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nwritten to ${file} (${readdirSync(out).length} result files)`);
  await sql(SERVER_URL, `DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
}

await main();

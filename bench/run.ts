// Benchmarks of the foundation (`npm run bench`, after a build): the namespaces list on PostgreSQL
// next to a bare Fastify + pg handler running the same SQL, cold starts and idle memory. Prints a
// table and writes the figures to bench/results/. Uses BENCH_DATABASE_URL (default: this machine's
// PostgreSQL), where it makes the database hub_bench_<pid> (its own, as several checkouts may share
// the server) and drops it at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rssMiB, startNode, stop } from './processes.js';
import { ADMIN_PASSWORD, dropDatabase, freshDatabase, HUB, load, loadRow, login, median, medianLoad, sql, writeResults, type Load } from './support.js';

const BARE = join(dirname(fileURLToPath(import.meta.url)), 'bare-server.js');
const DATABASE = `hub_bench_${process.pid}`;
const ROWS = 10_000;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = 10;
/** Rounds per server, alternating hub and bare (an A/B in one run), so that drift in the machine's load hits both alike. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** BENCH_LIST_ONLY=1: the list's side-by-side alone, without the cold starts (to repeat it on a shared machine). */
const LIST_ONLY = process.env.BENCH_LIST_ONLY === '1';
const LIST_QUERY = `filter[name][CO]=data&sort=-_created&page[limit]=50`;
/** The hub against the bare handler, measured side by side (docs/api-conventions.md). */
const TARGET_THROUGHPUT_RATIO = 0.85;
const TARGET_P99_RATIO = 1.2;

/**
 * Ten name families spread pseudo-randomly (a plain i % 10 would line up with the statistics'
 * histogram and mislead the planner), so that `CO data` matches about a tenth of the rows.
 */
const SEED = `
  INSERT INTO namespaces (name, description, is_default, version, created, modified)
  SELECT format('team-%s-%s', lpad(i::text, 5, '0'), (ARRAY['data','web','ml','ops','finance','hr','sales','infra','qa','research'])[1 + abs(hashint4(i)) % 10]),
         'Namespace number ' || i, false, 1, now() - make_interval(secs => i), now() - make_interval(secs => i)
  FROM generate_series(1, ${ROWS}) AS i`;

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
  const env = {
    DATABASE_URL: await freshDatabase(DATABASE),
    HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
    HUB_DATA_DIR: mkdtempSync(join(tmpdir(), 'hub-bench-')),
    HUB_LOG_LEVEL: 'info',
  };

  const migrating = await startNode(HUB, env, '/health/ready');
  await stop(migrating);
  await sql(env.DATABASE_URL, SEED);
  await sql(env.DATABASE_URL, 'VACUUM ANALYZE namespaces'); // As autovacuum would, soon after a bulk load.

  const externalStarts: number[] = [];
  for (let run = 0; run < (LIST_ONLY ? 0 : 3); run += 1) {
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
  for (const target of Object.values(targets)) await load(target.url, target.headers, 10, CONNECTIONS); // Warm-up: JIT, pools, caches.
  const rounds: { hub: Load; bare: Load }[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const hubRun = await load(targets.hub.url, targets.hub.headers, DURATION_S, CONNECTIONS);
    const bareRun = await load(targets.bare.url, targets.bare.headers, DURATION_S, CONNECTIONS);
    rounds.push({ hub: hubRun, bare: bareRun });
  }
  const hubLoad = medianLoad(rounds.map((r) => r.hub));
  const bareLoad = medianLoad(rounds.map((r) => r.bare));
  const loadedRss = rssMiB(hub.process.pid ?? 0);
  await stop(hub);
  await stop(bare);

  const embedded = LIST_ONLY ? { firstMs: NaN, restartMs: NaN, hubRssMiB: NaN } : await embeddedStarts();
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

  console.log(
    `\nNamespaces list, ${ROWS} rows (${totalCount} match), ${CONNECTIONS} connections, ${DURATION_S} s per run, ${ROUNDS} alternating rounds, ${cpus().length} CPUs\n`,
  );
  console.log('| server | req/s | p50 ms | p99 ms | non-2xx |\n|---|---|---|---|---|');
  rounds.forEach((round, index) => {
    console.log(loadRow(`hub, round ${index + 1}`, round.hub));
    console.log(loadRow(`bare, round ${index + 1}`, round.bare));
  });
  console.log(loadRow('**hub (JWT, full pipeline), median**', hubLoad));
  console.log(loadRow('**bare Fastify + pg, same SQL, median**', bareLoad));
  console.log(
    `\nhub/bare throughput ${results.list.throughputRatio} (target >= ${TARGET_THROUGHPUT_RATIO}); hub/bare p99 ${results.list.p99Ratio} (target <= ${TARGET_P99_RATIO})`,
  );
  console.log(
    `cold start: external PostgreSQL ${results.coldStartMs.externalPostgres} ms; embedded, existing data dir ${embedded.restartMs} ms (first start with initdb ${embedded.firstMs} ms)`,
  );
  console.log(
    `hub RSS: idle ${idleRss} MiB (external), ${embedded.hubRssMiB} MiB (embedded, hub process only), after load ${loadedRss} MiB (target idle <= 200)`,
  );

  writeResults('foundation', results);
  await dropDatabase(DATABASE);
}

await main();

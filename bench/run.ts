// Benchmarks of the foundation (`npm run bench`, after a build): the namespaces list on PostgreSQL
// next to a bare Fastify + pg handler running the same SQL, cold starts and idle memory. Prints a
// table and writes the figures to bench/results/. Uses BENCH_DATABASE_URL (default: this machine's
// PostgreSQL), where it makes the database hub_bench_<pid> (its own, as several checkouts may share
// the server) and drops it at the end.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GcWindow } from './gc-probe.js';
import { cpuMsOf, rssMiB, startNode, stop, type Started } from './processes.js';
import { ADMIN_PASSWORD, dropDatabase, freshDatabase, HUB, load, loadRow, login, median, medianLoad, round, sql, writeResults, type Load } from './support.js';

const BARE = join(dirname(fileURLToPath(import.meta.url)), 'bare-server.js');
const GC_PROBE = join(dirname(fileURLToPath(import.meta.url)), 'gc-probe.js');
/** BENCH_HUB: the hub's bundle to measure (default: this checkout's dist/hub.js). */
const HUB_BUNDLE = process.env.BENCH_HUB ?? HUB;
/**
 * BENCH_BASELINE_HUB: another build's bundle (a copy of main's dist/hub.js), run beside the hub on
 * the same database and measured in the same alternation, so that a change is compared with its
 * baseline under the same load.
 */
const BASELINE_HUB = process.env.BENCH_BASELINE_HUB;
/**
 * BENCH_GC=1: each hub runs with bench/gc-probe.ts loaded, and each of its rounds reports the
 * garbage collector's pauses and the bytes allocated and promoted per 1,000 requests.
 */
const GC_PROBE_OUT = process.env.BENCH_GC === '1' ? join(mkdtempSync(join(tmpdir(), 'hub-bench-gc-')), 'windows.jsonl') : undefined;
const STATEMENT_PROBE = join(dirname(fileURLToPath(import.meta.url)), 'statement-probe.js');
/**
 * BENCH_STATEMENTS=1: every server, the bare handler too, runs with bench/statement-probe.ts
 * loaded, and each round also reports its list statements' times and its waits for a pooled
 * connection (how the p99 was traced to a statement, docs/api-conventions.md).
 */
const STATEMENT_PROBE_OUT = process.env.BENCH_STATEMENTS === '1' ? join(mkdtempSync(join(tmpdir(), 'hub-bench-statements-')), 'windows.jsonl') : undefined;
/**
 * BENCH_CPU_PROF=<dir>: every server, the bare handler too, runs with `--cpu-prof` and writes its
 * profile into <dir> when it stops (how docs/api-conventions.md's per-request costs were found).
 */
const CPU_PROF_ARGS = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
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

const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;

interface Target {
  readonly name: string;
  readonly server: Started;
  readonly url: string;
  readonly headers: Record<string, string>;
}

/** What the statement probe says of a round (bench/statement-probe.ts). */
interface StatementWindow {
  readonly statements: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly connectionWaits: number;
  readonly waitP99Ms: number;
}

/** A round's load with what it cost the server: CPU per request (/proc/<pid>/stat) and, with the GC probe, the collector's work. */
interface Measured extends Load {
  readonly cpuMsPerRequest: number;
  readonly statements?: StatementWindow;
  readonly gc?: {
    readonly pauseMsPer1k: number;
    readonly maxPauseMs: number;
    readonly allocatedMBPer1k: number;
    readonly promotedMBPer1k: number;
    readonly window: GcWindow;
  };
}

/** The windows a probe wrote so far to `file`, one JSON line each. */
const windowsIn = <W>(file: string | undefined): W[] =>
  file && existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as W)
    : [];
const gcWindows = () => windowsIn<GcWindow>(GC_PROBE_OUT);
const statementWindows = () => windowsIn<StatementWindow>(STATEMENT_PROBE_OUT);

async function measure(target: Target, probed: boolean): Promise<Measured> {
  const pid = target.server.process.pid ?? 0;
  const gc = probed && GC_PROBE_OUT !== undefined;
  // One SIGUSR2 opens (then closes) the window of every probe the server has loaded.
  const windowed = gc || STATEMENT_PROBE_OUT !== undefined;
  if (windowed) target.server.process.kill('SIGUSR2');
  const cpuBefore = cpuMsOf(pid);
  const run = await load(target.url, target.headers, DURATION_S, CONNECTIONS);
  const cpuMsPerRequest = round((cpuMsOf(pid) - cpuBefore) / run.requests, 3);
  if (!windowed) return { ...run, cpuMsPerRequest };
  const [gcWritten, statementsWritten] = [gcWindows().length, statementWindows().length];
  target.server.process.kill('SIGUSR2');
  while ((gc && gcWindows().length === gcWritten) || (STATEMENT_PROBE_OUT && statementWindows().length === statementsWritten))
    await new Promise((resolve) => setTimeout(resolve, 20));
  const statements = STATEMENT_PROBE_OUT ? statementWindows().at(-1) : undefined;
  if (statements)
    console.log(
      `${target.name}: statements p50 ${statements.p50Ms} / p90 ${statements.p90Ms} / p99 ${statements.p99Ms} ms; connection waits p99 ${statements.waitP99Ms} ms`,
    );
  if (!gc) return { ...run, cpuMsPerRequest, statements };
  const window = gcWindows().at(-1)!;
  const per1k = (value: number) => round((value * 1000) / run.requests, 2);
  return {
    ...run,
    cpuMsPerRequest,
    statements,
    gc: {
      pauseMsPer1k: per1k(window.pauseMs),
      maxPauseMs: round(Math.max(0, ...Object.values(window.pauses).map((kind) => kind.maxMs)), 2),
      allocatedMBPer1k: per1k(window.allocatedBytes / 1e6),
      promotedMBPer1k: per1k(window.promotedBytes / 1e6),
      window,
    },
  };
}

const measuredRow = (name: string, m: Measured) =>
  `${loadRow(name, m)} ${m.cpuMsPerRequest} | ${m.gc ? `${m.gc.pauseMsPer1k} (max ${m.gc.maxPauseMs}) | ${m.gc.allocatedMBPer1k} | ${m.gc.promotedMBPer1k}` : ' | | '} |`;

/** Embedded PostgreSQL on a data directory: first start (initdb), then restarts on it. */
async function embeddedStarts(): Promise<{ firstMs: number; restartMs: number; hubRssMiB: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-bench-'));
  const env = { HUB_DATA_DIR: dataDir, HUB_ADMIN_PASSWORD: ADMIN_PASSWORD, HUB_LOG_LEVEL: 'warn' };
  try {
    const first = await startNode(HUB_BUNDLE, env, '/health/ready');
    await stop(first);
    const restarts: number[] = [];
    let rss = 0;
    for (let run = 0; run < 3; run += 1) {
      const hub = await startNode(HUB_BUNDLE, env, '/health/ready');
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

  const migrating = await startNode(HUB_BUNDLE, env, '/health/ready');
  await stop(migrating);
  await sql(env.DATABASE_URL, SEED);
  await sql(env.DATABASE_URL, 'VACUUM ANALYZE namespaces'); // As autovacuum would, soon after a bulk load.

  const externalStarts: number[] = [];
  for (let run = 0; run < (LIST_ONLY ? 0 : 3); run += 1) {
    const started = await startNode(HUB_BUNDLE, env, '/health/ready');
    externalStarts.push(started.startMs);
    await stop(started);
  }

  const statementArgs = [...CPU_PROF_ARGS, ...(STATEMENT_PROBE_OUT ? [`--import=${STATEMENT_PROBE}`] : [])];
  const probes = { ...(GC_PROBE_OUT && { GC_PROBE_OUT }), ...(STATEMENT_PROBE_OUT && { STATEMENT_PROBE_OUT }) };
  const hubArgs = [...(GC_PROBE_OUT ? [`--import=${GC_PROBE}`] : []), ...statementArgs];
  const hub = await startNode(HUB_BUNDLE, { ...env, ...probes }, '/health/ready', hubArgs);
  const baseline = BASELINE_HUB ? await startNode(BASELINE_HUB, { ...env, ...probes }, '/health/ready', hubArgs) : undefined;
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const idleRss = rssMiB(hub.process.pid ?? 0);
  const token = await login(hub);
  const check = await fetch(`${hub.url}/api/v2/namespaces?${LIST_QUERY}`, { headers: { authorization: `Bearer ${token}` } });
  const { totalCount } = (await check.json()) as { totalCount: number };
  const bare = await startNode(BARE, { DATABASE_URL: env.DATABASE_URL, ...probes }, '/health', statementArgs);
  const auth = { authorization: `Bearer ${token}` };
  const targets: Target[] = [
    { name: 'hub', server: hub, url: `${hub.url}/api/v2/namespaces?${LIST_QUERY}`, headers: auth },
    ...(baseline ? [{ name: 'baseline', server: baseline, url: `${baseline.url}/api/v2/namespaces?${LIST_QUERY}`, headers: auth }] : []),
    { name: 'bare', server: bare, url: `${bare.url}/namespaces?${LIST_QUERY}`, headers: {} },
  ];
  for (const target of targets) await load(target.url, target.headers, 10, CONNECTIONS); // Warm-up: JIT, pools, caches.
  const rounds: Record<string, Measured>[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const measured: Record<string, Measured> = {};
    for (const target of targets) measured[target.name] = await measure(target, target.name !== 'bare');
    rounds.push(measured);
  }
  const medianOf = (name: string) => medianLoad(rounds.map((r) => r[name]));
  const hubLoad = medianOf('hub');
  const bareLoad = medianOf('bare');
  const loadedRss = rssMiB(hub.process.pid ?? 0);
  await stop(hub);
  if (baseline) await stop(baseline);
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
      ...(baseline && { baselineHub: BASELINE_HUB, baseline: medianOf('baseline') }),
      throughputRatio: ratio(hubLoad.requestsPerSecond, bareLoad.requestsPerSecond),
      p99Ratio: ratio(hubLoad.p99Ms, bareLoad.p99Ms),
    },
    coldStartMs: { externalPostgres: median(externalStarts), embeddedFirstStart: embedded.firstMs, embeddedExistingDataDir: embedded.restartMs },
    rssMiB: { hubIdleExternal: idleRss, hubAfterLoad: loadedRss, hubIdleEmbedded: embedded.hubRssMiB },
  };

  console.log(
    `\nNamespaces list, ${ROWS} rows (${totalCount} match), ${CONNECTIONS} connections, ${DURATION_S} s per run, ${ROUNDS} alternating rounds, ${cpus().length} CPUs\n`,
  );
  console.log(
    '| server | req/s | p50 ms | p99 ms | non-2xx | CPU ms/request | GC pause ms/1k | allocated MB/1k | promoted MB/1k |\n|---|---|---|---|---|---|---|---|---|',
  );
  rounds.forEach((measured, index) => {
    for (const target of targets) console.log(measuredRow(`${target.name}, round ${index + 1}`, measured[target.name]));
  });
  console.log(loadRow('**hub (JWT, full pipeline), median**', hubLoad));
  if (baseline) console.log(loadRow(`**baseline hub (${BASELINE_HUB}), median**`, medianOf('baseline')));
  console.log(loadRow('**bare Fastify + pg, same SQL, median**', bareLoad));
  console.log(
    `\nhub/bare throughput ${results.list.throughputRatio} (target >= ${TARGET_THROUGHPUT_RATIO}); hub/bare p99 ${results.list.p99Ratio} (target <= ${TARGET_P99_RATIO})`,
  );
  if (baseline) {
    const base = medianOf('baseline');
    console.log(
      `baseline/bare throughput ${ratio(base.requestsPerSecond, bareLoad.requestsPerSecond)}; baseline/bare p99 ${ratio(base.p99Ms, bareLoad.p99Ms)}`,
    );
  }
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

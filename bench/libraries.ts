// Published libraries (issue 30), measured from the client in one run (`npm run bench:libraries`),
// the hub as it runs (as root: workers as the publisher's job uid), on the local driver, against
// PostgreSQL, beside DuckDB itself in this process:
// - records: getRecords of 1,000 filtered rows (a filter on a number and a string, orderby an id)
//   from a BENCH_LIBRARY_ROWS (10,000,000) row Parquet file, warm, through the hub (two workers),
//   against the same SELECT in DuckDB directly with its rows converted to JavaScript values; the two
//   alternate round by round (BENCH_LIBRARY_ROUNDS, 15), medians and their ratio (target ≤ 1.25);
// - distinct values of a 10,000,000-row column (1,000 distinct values) through the hub, against
//   DuckDB's SELECT DISTINCT … ORDER BY directly, alternated alike;
//   the worker asked directly (with its secret), the worker through a bare relay (bench/bare-relay.ts:
//   what any relay through a second process costs here) and getPublishedLibrary (the hub's own cost
//   of a request that reaches no worker) alternate with them, to tell the hub's part;
//   CPU per records request beside the times (the hub's and the workers' from /proc, DuckDB's here),
//   figures the load moves far less;
// - records throughput: 20 concurrent clients for 10 s (BENCH_LIBRARY_THROUGHPUT_SECONDS) asking that page, two workers.
// Prints the figures with the load average beside each; writes bench/results/libraries-<date>.json.
// BENCH_HUB names another built hub to measure (another worktree's dist/hub.js: a baseline, its own
// worker with it), BENCH_HUB_NODE_ARGS node options for it (`--cpu-prof --cpu-prof-dir=/tmp/p`), and
// BENCH_RELAY_NODE_ARGS for the bare relay: `--import <dist/bench/relay-phases.js>` in both splits
// each page, inside the hub and inside the relay, into before, during and after the worker's part.
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import pg from 'pg';
import { cpuMs, startNode, stop } from './processes.js';
import { ADMIN_PASSWORD, dropDatabase, freshDatabase, HUB, login, percentileOf, round, sleep, writeResults } from './support.js';

const DATABASE = 'hub_bench_libraries';
const BARE_RELAY = join(dirname(fileURLToPath(import.meta.url)), 'bare-relay.js');
const ROWS = Number(process.env.BENCH_LIBRARY_ROWS ?? 10_000_000);
const ROUNDS = Number(process.env.BENCH_LIBRARY_ROUNDS ?? 15);
const CLIENTS = 20;
const THROUGHPUT_SECONDS = Number(process.env.BENCH_LIBRARY_THROUGHPUT_SECONDS ?? 10);
/** The page: rows whose score is at least 900 and whose label starts with name-1 (like), the first 1,000 by id. */
const FILTER = "score >= 900 and label like 'name-1%'";
/** The same queries in DuckDB directly (the paths are this run's own temporary files). */
const directRecords = (file: string) =>
  `SELECT id, score, label, day FROM read_parquet('${file}') WHERE score >= 900 AND label LIKE 'name-1%' ORDER BY id LIMIT 1000`;
const directDistinct = (file: string) => `SELECT DISTINCT code FROM read_parquet('${file}') ORDER BY code`;

/** Node options given as one string (`--cpu-prof --cpu-prof-dir=/tmp/p`). */
const nodeArgs = (given: string | undefined) => (given ?? '').split(' ').filter((arg) => arg !== '');

/** The median, unrounded (support's median rounds to whole milliseconds). */
function mid(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** The pid of the process holding `secret` in its environment (a worker, found in /proc), or undefined. */
function pidWithSecret(secret: string): number | undefined {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`HUB_WORKER_SECRET=${secret}`)) return Number(pid);
    } catch {
      // Gone, or not ours to read.
    }
  }
  return undefined;
}

/** CPU milliseconds this process has used (every thread: DuckDB's included). */
function ownCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const load = () => round(loadavg()[0], 2);

function call(url: string, method: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: string; ms: number }> {
  const began = performance.now();
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method, headers, agent }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString(), ms: performance.now() - began }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

async function main(): Promise<void> {
  const databaseUrl = await freshDatabase(DATABASE);
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-bench-libraries-'));
  chmodSync(dataDir, 0o711);
  const root = join(dataDir, 'libraries');
  const library = join(root, 'events');
  mkdirSync(library, { recursive: true, mode: 0o755 });
  chmodSync(root, 0o755);
  chmodSync(library, 0o755);
  const events = join(library, 'events.parquet');
  const codes = join(library, 'codes.parquet');
  const duck = await (await DuckDBInstance.create(':memory:')).connect();
  let began = performance.now();
  await duck.run(
    `COPY (SELECT range AS id, (range * 7919 % 1000)::DOUBLE AS score, 'name-' || (range * 104729 % 5000) AS label, DATE '2020-01-01' + (range % 365)::INTEGER AS day
       FROM range(${ROWS})) TO '${events}' (FORMAT parquet)`,
  );
  await duck.run(`COPY (SELECT (range * 7919 % 1000)::INTEGER AS code FROM range(${ROWS})) TO '${codes}' (FORMAT parquet)`);
  chmodSync(events, 0o644);
  chmodSync(codes, 0o644);
  console.log(`${ROWS} rows written in ${round((performance.now() - began) / 1000)} s`);
  const hub = await startNode(
    process.env.BENCH_HUB ?? HUB,
    {
      DATABASE_URL: databaseUrl,
      HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
      HUB_DATA_DIR: dataDir,
      HUB_LOG_LEVEL: 'warn',
      HUB_LIBRARY_ROOTS: root,
      HUB_MAX_RUNNING_JOBS_PER_USER: '0',
      HUB_LOCAL_SLOTS: '8',
    },
    '/health/ready',
    nodeArgs(process.env.BENCH_HUB_NODE_ARGS),
  );
  let unpublish: () => Promise<void> = () => Promise.resolve();
  let stopRelay: () => Promise<void> = () => Promise.resolve();
  try {
    const auth = { authorization: `Bearer ${await login(hub)}` };
    const json = { ...auth, 'content-type': 'application/json' };
    const profiles = JSON.parse((await call(`${hub.url}/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard`, 'GET', auth)).body) as {
      data: { _id: string }[];
    };
    const definition = JSON.parse(
      (
        await call(
          `${hub.url}/api/v2/libraries/definitions`,
          'POST',
          json,
          JSON.stringify({ name: 'events', namespace: 'default', engine: 'parquet', path: library }),
        )
      ).body,
    ) as { _id: string };
    const published = await call(
      `${hub.url}/api/v2/libraries/published`,
      'POST',
      json,
      JSON.stringify({ libraryDefinitionId: definition._id, executionProfileId: profiles.data[0]._id, workers: 2 }),
    );
    if (published.status !== 201) throw new Error(`publishing failed: ${published.body}`);
    const id = (JSON.parse(published.body) as { id: string }).id;
    // Unpublished before the hub stops: its workers are processes of their own, which outlive it.
    unpublish = () => call(`${hub.url}/api/v2/libraries/published/${id}`, 'DELETE', auth).then(() => undefined);
    began = performance.now();
    for (;;) {
      const status = JSON.parse((await call(`${hub.url}/api/v2/libraries/published/${id}/status`, 'GET', auth)).body) as {
        workers: Record<string, { state: string }>;
      };
      if (Object.values(status.workers).every((worker) => worker.state === 'ready')) break;
      await sleep(20);
    }
    const readyMs = performance.now() - began;
    const recordsUrl = `${hub.url}/api/v2/libraries/published/${id}/datasets/events/records?limit=1000&orderby=id&filter=${encodeURIComponent(FILTER)}`;
    const distinctUrl = `${hub.url}/api/v2/libraries/published/${id}/datasets/codes/distinct-values?maxValues=1000`;
    const direct = await duck.prepare(directRecords(events));
    const distinct = await duck.prepare(directDistinct(codes));
    const viaHub = async (url: string) => {
      const reply = await call(url, 'GET', auth);
      if (reply.status !== 200) throw new Error(`${url}: ${reply.status} ${reply.body}`);
      return reply;
    };
    // The answers agree before anything is timed.
    const hubRows = (JSON.parse((await viaHub(recordsUrl)).body) as { values: unknown[][] }).values;
    const directRows = (await direct.runAndReadAll()).getRowsJS();
    if (hubRows.length !== 1000 || directRows.length !== 1000 || Number(hubRows[999][0]) !== Number(directRows[999][0]))
      throw new Error(`the hub and DuckDB disagree: ${hubRows.length} rows, ${directRows.length} rows`);
    // The worker itself, asked as the hub asks it (its endpoint and secret from the database): what the hub adds is the rest.
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    const workers = (
      await db.query<{ host: string; port: number; secret: string }>(
        'SELECT host, port, secret FROM library_workers WHERE published_library_id = $1 ORDER BY worker_index',
        [id],
      )
    ).rows;
    const [worker] = workers;
    // CPU per records request, which the load changes far less than its time: the hub's, both workers' (one answers), DuckDB's here.
    const workerPids = workers.map((row) => pidWithSecret(row.secret)).filter((pid): pid is number => pid !== undefined);
    const workersCpuMs = () => workerPids.reduce((sum, pid) => sum + cpuMs(pid), 0);
    await db.end();
    const workerBody = JSON.stringify({ name: 'events', filter: FILTER, orderby: ['id'], limit: 1000, offset: 0 });
    const getUrl = `${hub.url}/api/v2/libraries/published/${id}`;
    const viaWorker = () =>
      call(`http://${worker.host}:${worker.port}/records`, 'POST', { 'x-hub-service-secret': worker.secret, 'content-type': 'application/json' }, workerBody);
    const relay = await startNode(
      BARE_RELAY,
      { WORKER_HOST: worker.host, WORKER_PORT: String(worker.port), WORKER_SECRET: worker.secret },
      '/health',
      nodeArgs(process.env.BENCH_RELAY_NODE_ARGS),
    );
    stopRelay = () => stop(relay);
    const viaBareRelay = async () => {
      const reply = await call(`${relay.url}/records`, 'POST', { 'content-type': 'application/json' }, workerBody);
      if (reply.status !== 200) throw new Error(`the bare relay: ${reply.status} ${reply.body}`);
      return reply;
    };
    const distinctCount = (JSON.parse((await viaHub(distinctUrl)).body) as { code: unknown[] }).code.length;
    const loads: number[] = [load()];
    const times = {
      get: [] as number[],
      hub: [] as number[],
      worker: [] as number[],
      bareRelay: [] as number[],
      direct: [] as number[],
      hubDistinct: [] as number[],
      directDistinct: [] as number[],
    };
    const cpu = { hub: 0, workers: 0, direct: 0 };
    for (let i = 0; i < ROUNDS + 2; i += 1) {
      const warm = i < 2;
      const [hubBefore, workersBefore] = [cpuMs(hub.process.pid as number), workersCpuMs()];
      const a = (await viaHub(recordsUrl)).ms;
      const [hubAfter, workersAfter, directBefore] = [cpuMs(hub.process.pid as number), workersCpuMs(), ownCpuMs()];
      let t = performance.now();
      (await direct.runAndReadAll()).getRowsJS();
      const b = performance.now() - t;
      const directAfter = ownCpuMs();
      if (!warm) {
        cpu.hub += hubAfter - hubBefore;
        cpu.workers += workersAfter - workersBefore;
        cpu.direct += directAfter - directBefore;
      }
      const w = (await viaWorker()).ms;
      // Untimed: the bare relay's worker first sleeps through a DuckDB query, as the hub's worker
      // does before each page. Asked right after the worker directly, it found that worker just
      // awake, and measured the floor of any relay lower than the hub could ever reach.
      (await direct.runAndReadAll()).getRowsJS();
      const r = (await viaBareRelay()).ms;
      const g = (await viaHub(getUrl)).ms;
      const c = (await viaHub(distinctUrl)).ms;
      t = performance.now();
      (await distinct.runAndReadAll()).getRowsJS();
      const d = performance.now() - t;
      if (warm) continue;
      times.hub.push(a);
      times.worker.push(w);
      times.bareRelay.push(r);
      times.get.push(g);
      times.direct.push(b);
      times.hubDistinct.push(c);
      times.directDistinct.push(d);
    }
    loads.push(load());
    // Throughput: CLIENTS loops for THROUGHPUT_SECONDS.
    const latencies: number[] = [];
    let failures = 0;
    const until = performance.now() + THROUGHPUT_SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (performance.now() < until) {
          const reply = await call(recordsUrl, 'GET', auth);
          if (reply.status === 200) latencies.push(reply.ms);
          else failures += 1;
        }
      }),
    );
    loads.push(load());
    const results = {
      date: new Date().toISOString(),
      rows: ROWS,
      rounds: ROUNDS,
      workersReadyMs: round(readyMs),
      getPublishedLibraryMedianMs: round(mid(times.get), 2),
      records: {
        hubMedianMs: round(mid(times.hub), 2),
        workerDirectlyMedianMs: round(mid(times.worker), 2),
        bareRelayMedianMs: round(mid(times.bareRelay), 2),
        directMedianMs: round(mid(times.direct), 2),
        ratio: round(mid(times.hub) / mid(times.direct), 3),
        bareRelayRatio: round(mid(times.bareRelay) / mid(times.direct), 3),
        // Means over the rounds (the kernel counts in 10 ms ticks): CPU of the hub and of the workers per request, of DuckDB here per SELECT.
        cpuMsPerRequest: {
          hub: round(cpu.hub / ROUNDS, 2),
          workers: workerPids.length === workers.length ? round(cpu.workers / ROUNDS, 2) : null,
          direct: round(cpu.direct / ROUNDS, 2),
        },
      },
      distinct: {
        values: distinctCount,
        hubMedianMs: round(mid(times.hubDistinct), 2),
        directMedianMs: round(mid(times.directDistinct), 2),
        ratio: round(mid(times.hubDistinct) / mid(times.directDistinct), 3),
      },
      throughput: {
        clients: CLIENTS,
        workers: 2,
        requestsPerSecond: round(latencies.length / THROUGHPUT_SECONDS, 1),
        p50Ms: round(percentileOf(latencies, 0.5), 1),
        p99Ms: round(percentileOf(latencies, 0.99), 1),
        failures,
      },
      loadAverage: { beforeTiming: loads[0], afterAlternatedRounds: loads[1], afterThroughput: loads[2] },
    };
    console.log(JSON.stringify(results, null, 2));
    writeResults('libraries', results);
  } finally {
    await stopRelay().catch(() => undefined);
    await unpublish().catch(() => undefined);
    await stop(hub);
    await dropDatabase(DATABASE).catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();

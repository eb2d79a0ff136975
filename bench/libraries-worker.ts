// The library worker against DuckDB itself (`npm run bench:libraries-worker`): a 10-million-row Parquet file
// made by DuckDB (`range(10000000)`), then, warm, in alternating rounds:
//   records   POST /records of a 1,000-row page filtered on a number and a string, ordered by id,
//             through the placed worker over HTTP (JSON parsed by the client), against the same
//             SELECT run in this process's DuckDB with its rows converted to JavaScript values;
//   distinct  POST /distinct-values of the dataset, against the same DISTINCT queries in DuckDB;
//   then      records throughput of 2 workers under 20 concurrent clients (requests/s, median latency).
// Prints medians, the ratios and the load average beside them (the target for records is ≤ 1.25×).
// BENCH_ROUNDS (default 31: on a shared machine 15 rounds gave medians from 0.91 to 1.48) sets the rounds, BENCH_ROWS (default 10,000,000) the rows.
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { ShippedPrograms } from '../src/cluster/shipped-programs.js';
import type { HubConfig } from '../src/common/config/hub-config.js';
import { startLibraryWorker } from '../src/libraries/worker-process.js';
import { writeResults } from './support.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 10_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 31);
const FILTER = "amount > 50 and user = 'user7'";
const MAX_VALUES = 1000;
const CLIENTS = 20;
const THROUGHPUT_SECONDS = Number(process.env.BENCH_THROUGHPUT_SECONDS ?? 10);

const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** POST `body` to the worker on a kept-alive connection (as the hub's forwarder does); the parsed JSON reply. */
function post(agent: Agent, url: URL, secret: string, body: unknown): Promise<unknown> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const call = request(
      url,
      { method: 'POST', agent, headers: { 'x-hub-service-secret': secret, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (response.statusCode !== 200) reject(new Error(`${response.statusCode}: ${text}`));
          else resolve(JSON.parse(text));
        });
      },
    );
    call.on('error', reject);
    call.end(payload);
  });
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'hub-bench-libraries-'));
  chmodSync(root, 0o755);
  const library = join(root, 'data');
  const file = join(library, 'events.parquet');
  const instance = await DuckDBInstance.create(':memory:');
  const direct = await instance.connect();
  mkdirSync(library, { mode: 0o755 });
  let began = performance.now();
  await direct.run(
    `COPY (SELECT i AS id, 'user' || (i % 1000) AS "user", (i % 10000) / 100.0 AS amount, DATE '2020-01-01' + (i % 3650)::INTEGER AS day, i % 2 = 0 AS flag
       FROM range(${ROWS}) t(i)) TO '${file}' (FORMAT parquet)`,
  );
  console.log(`made ${ROWS} rows of Parquet in ${((performance.now() - began) / 1000).toFixed(1)} s (load ${load()})`);

  const program = await new ShippedPrograms({ sharedDir: join(root, 'shared') } as HubConfig).libraryWorker();
  const worker = await startLibraryWorker(program, { HUB_LIBRARY_ENGINE: 'parquet', HUB_LIBRARY_PATH: library });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const secret = 'worker-secret';
  const records = new URL('/records', worker.url);
  const distinct = new URL('/distinct-values', worker.url);
  // The same SELECT the worker runs, as one would write it: prepared once, as the worker prepares its own.
  const statement = await direct.prepare(`SELECT * FROM read_parquet('${file}') WHERE amount > 50 AND "user" = 'user7' ORDER BY id LIMIT 1000`);
  const fieldNames = ['id', 'user', 'amount', 'day', 'flag'];

  // The page's size as DuckDB answers it (1,000 on 10 million rows): the worker must answer as many.
  let expected = -1;
  const viaWorker = async () => {
    const reply = (await post(agent, records, secret, { name: 'events', filter: FILTER, orderby: ['id'], limit: 1000 })) as { values: unknown[] };
    if (reply.values.length !== expected) throw new Error(`the worker answered ${reply.values.length} rows, DuckDB ${expected}`);
  };
  const viaDuckDB = async () => {
    const rows = (await statement.runAndReadAll()).getRowsJS();
    expected = rows.length;
  };
  const distinctViaWorker = () => post(agent, distinct, secret, { name: 'events', maxValues: MAX_VALUES });
  const distinctViaDuckDB = async () => {
    for (const field of fieldNames) {
      (await direct.runAndReadAll(`SELECT DISTINCT "${field}" FROM read_parquet('${file}') ORDER BY 1 NULLS LAST LIMIT ${MAX_VALUES}`)).getRowsJS();
    }
  };

  // Warm: the worker reads the file's metadata once (its first request), both have the file in the page cache.
  await viaDuckDB();
  began = performance.now();
  await viaWorker();
  console.log(`first request (metadata read, counted and cached) ${(performance.now() - began).toFixed(0)} ms`);
  for (let i = 0; i < 3; i++) {
    await viaWorker();
    await viaDuckDB();
  }

  const time = async (operation: () => Promise<unknown>) => {
    const start = performance.now();
    await operation();
    return performance.now() - start;
  };
  const figures = { worker: [] as number[], duckdb: [] as number[], distinctWorker: [] as number[], distinctDuckdb: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating, and which goes first alternates too, so that neither always runs on a cooler machine.
    if (round % 2 === 0) {
      figures.worker.push(await time(viaWorker));
      figures.duckdb.push(await time(viaDuckDB));
    } else {
      figures.duckdb.push(await time(viaDuckDB));
      figures.worker.push(await time(viaWorker));
    }
  }
  const distinctRounds = Math.max(3, Math.floor(ROUNDS / 3));
  for (let round = 0; round < distinctRounds; round++) {
    figures.distinctWorker.push(await time(distinctViaWorker));
    figures.distinctDuckdb.push(await time(distinctViaDuckDB));
  }
  // Throughput: 2 workers, 20 clients each sending the records request again as soon as answered, spread over the workers in turn.
  const second = await startLibraryWorker(program, { HUB_LIBRARY_ENGINE: 'parquet', HUB_LIBRARY_PATH: library });
  const targets = [worker, second].map((started) => ({ url: new URL('/records', started.url), agent: new Agent({ keepAlive: true, maxSockets: CLIENTS }) }));
  await post(targets[1].agent, targets[1].url, secret, { name: 'events', filter: FILTER, orderby: ['id'], limit: 1000 });
  const latencies: number[] = [];
  let next = 0;
  const until = performance.now() + THROUGHPUT_SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < until) {
        const target = targets[next++ % targets.length];
        latencies.push(await time(() => post(target.agent, target.url, secret, { name: 'events', filter: FILTER, orderby: ['id'], limit: 1000 })));
      }
    }),
  );
  second.stop();
  for (const target of targets) target.agent.destroy();
  const results = {
    date: new Date().toISOString(),
    rows: ROWS,
    rounds: ROUNDS,
    filter: FILTER,
    recordsWorkerMs: +median(figures.worker).toFixed(1),
    recordsDuckdbMs: +median(figures.duckdb).toFixed(1),
    recordsRatio: +(median(figures.worker) / median(figures.duckdb)).toFixed(3),
    distinctWorkerMs: +median(figures.distinctWorker).toFixed(1),
    distinctDuckdbMs: +median(figures.distinctDuckdb).toFixed(1),
    distinctRatio: +(median(figures.distinctWorker) / median(figures.distinctDuckdb)).toFixed(3),
    throughputRequestsPerSecond: +(latencies.length / THROUGHPUT_SECONDS).toFixed(1),
    throughputP50Ms: +median(latencies).toFixed(1),
    loadAverage: load(),
  };
  console.log(`\n| | worker ms | DuckDB ms | ratio | load |\n|---|---|---|---|---|`);
  console.log(
    `| records: 1,000 filtered rows of ${ROWS} | ${results.recordsWorkerMs} | ${results.recordsDuckdbMs} | ${results.recordsRatio} | ${results.loadAverage} |`,
  );
  console.log(
    `| distinct values (${fieldNames.length} fields, ≤ ${MAX_VALUES} each) | ${results.distinctWorkerMs} | ${results.distinctDuckdbMs} | ${results.distinctRatio} | ${results.loadAverage} |`,
  );
  console.log(
    `| records throughput, 2 workers, ${CLIENTS} clients, ${THROUGHPUT_SECONDS} s | ${results.throughputRequestsPerSecond} requests/s, p50 ${results.throughputP50Ms} ms | | | ${load()} |`,
  );
  writeResults('libraries-worker', results);
  agent.destroy();
  worker.stop();
  statement.destroySync();
  direct.closeSync();
  instance.closeSync();
  rmSync(root, { recursive: true, force: true });
}

await main();

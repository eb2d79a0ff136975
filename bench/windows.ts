// The memory of concurrent large byte windows (`npm run bench:windows`): a job writes 16 MiB of
// random bytes (invalid UTF-8: as JSON each byte becomes the 3-byte U+FFFD), then 150 clients at
// once read that whole log as one window, first as raw bytes, then as JSON; the hub's RSS is
// sampled every 10 ms. Prints the hub's RSS before, its peak in each round and the bound that
// docs/security.md states. Uses BENCH_DATABASE_URL (default: this machine's PostgreSQL), where it
// recreates hub_bench_windows.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { rssMiB, startNode, stop } from './processes.js';
import { ADMIN_PASSWORD, dropDatabase, freshDatabase, HUB, login, writeResults } from './support.js';

const DATABASE = 'hub_bench_windows';
const WINDOW = 16 * 1024 * 1024;
const READERS = Number(process.env.BENCH_READERS ?? 150);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `READERS` concurrent reads of the window, each body read to its end and dropped; the hub's peak RSS meanwhile. */
async function round(url: string, headers: Record<string, string>, pid: number): Promise<{ peakMiB: number; seconds: number; bytesEach: number }> {
  let peak = rssMiB(pid);
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, rssMiB(pid));
      await sleep(10);
    }
  })();
  const began = performance.now();
  const sizes = await Promise.all(
    Array.from({ length: READERS }, async () => {
      const response = await fetch(url, { headers });
      if (response.status !== 200) throw new Error(`window: ${response.status} ${await response.text()}`);
      let bytes = 0;
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) bytes += chunk.byteLength;
      return bytes;
    }),
  );
  const seconds = (performance.now() - began) / 1000;
  sampling = false;
  await sampler;
  if (new Set(sizes).size !== 1) throw new Error(`readers got different sizes: ${[...new Set(sizes)].join(', ')}`);
  return { peakMiB: peak, seconds: Math.round(seconds * 10) / 10, bytesEach: sizes[0] };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-bench-'));
  chmodSync(dataDir, 0o755);
  const hub = await startNode(
    HUB,
    { DATABASE_URL: await freshDatabase(DATABASE), HUB_ADMIN_PASSWORD: ADMIN_PASSWORD, HUB_DATA_DIR: dataDir, HUB_LOG_LEVEL: 'warn' },
    '/health/ready',
  );
  const pid = hub.process.pid as number;
  const headers = { authorization: `Bearer ${await login(hub)}`, 'content-type': 'application/json' };
  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${hub.url}/api/v2/${path}`, { method, headers, ...(body !== undefined && { body: JSON.stringify(body) }) });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  const profile = (await api<{ data: { _id: string }[] }>('GET', 'execution-profiles/execprofiles?filter[name][EQ]=Standard')).data[0]._id;
  const job = await api<{ id: string }>('POST', 'cluster/jobs', {
    name: 'random-log',
    namespace: 'default',
    executionProfileId: profile,
    task: { command: 'head', args: ['-c', String(WINDOW), '/dev/urandom'] },
  });
  let execution: { id: string; status: string };
  for (;;) {
    execution = (await api<{ data: { id: string; status: string }[] }>('GET', `cluster/executions?filter[jobId][EQ]=${job.id}`)).data[0];
    if (execution?.status === 'completed') break;
    if (execution?.status === 'failed') throw new Error('the job writing the log failed');
    await sleep(50);
  }
  const url = `${hub.url}/api/v2/cluster/executions/${execution.id}/tasks/main/logs/stdout?limit=${WINDOW}`;
  await sleep(1000);
  const before = rssMiB(pid);
  const raw = await round(url, { ...headers, accept: 'application/octet-stream' }, pid);
  await sleep(2000);
  const between = rssMiB(pid);
  const json = await round(url, { ...headers, accept: 'application/json' }, pid);
  await sleep(2000);
  const after = rssMiB(pid);
  await stop(hub);
  rmSync(dataDir, { recursive: true, force: true });
  await dropDatabase(DATABASE);

  const results = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version, loadAverage: loadavg().map((value) => Math.round(value * 100) / 100) },
    readers: READERS,
    windowBytes: WINDOW,
    rssBeforeMiB: before,
    raw: { ...raw, growthMiB: Math.round(raw.peakMiB - before) },
    rssBetweenMiB: between,
    json: { ...json, growthMiB: Math.round(json.peakMiB - between) },
    rssAfterMiB: after,
  };
  writeResults('windows', results);
  console.log(
    `windows (${cpus().length} CPUs, load ${results.machine.loadAverage[0]}): ${READERS} concurrent 16 MiB windows of random bytes; hub RSS ${before} MiB before;` +
      ` raw: peak ${raw.peakMiB} MiB (+${results.raw.growthMiB}), ${raw.seconds} s; JSON (${json.bytesEach} bytes each): peak ${json.peakMiB} MiB (+${results.json.growthMiB}), ${json.seconds} s; after ${after} MiB`,
  );
}

await main();

// Benchmarks of the cluster on the local driver (`npm run bench:cluster`, after a build), on PostgreSQL:
// - submit → process started, over 200 jobs submitted one after another (the hub's own
//   submitTime and startedAt), p50/p99;
// - 500 short jobs (`true`) through a 2-CPU node, submitted at once, until all are dead, against
//   the same 500 commands in a shell loop: the ratio;
// - reading a 1 MiB window at the end of a 1 GiB log through the hub: time, and the hub's
//   resident memory before and after, against the same window of a 1 MiB log.
// - with BENCH_SLURM=1 (a cluster from scripts/slurm-up.sh running), the slurm driver: submit →
//   running and submit → completed for 50 trivial jobs submitted at once.
// Uses BENCH_DATABASE_URL (default: this machine's PostgreSQL), where it recreates hub_bench_cluster.
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { rssMiB, startNode, stop } from './processes.js';
import { ADMIN_PASSWORD, dropDatabase, freshDatabase, HUB, login, percentile, writeResults } from './support.js';

const DATABASE = 'hub_bench_cluster';
const LATENCY_JOBS = 200;
const THROUGHPUT_JOBS = 500;
const WINDOW = 1024 * 1024;
const READS = 20;

const round = (value: number) => Math.round(value * 1000) / 1000;

interface Job {
  id: string;
  status: string;
  submitTime: string;
}

const SLURM_JOBS = 50;

/** 50 trivial jobs at once through the slurm driver: when each started and ended, from its submission. */
async function slurmFigures(): Promise<{
  jobs: number;
  toRunning: { p50Ms: number; maxMs: number };
  toCompleted: { p50Ms: number; maxMs: number };
  allDoneSeconds: number;
}> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-bench-'));
  const hub = await startNode(
    HUB,
    {
      DATABASE_URL: await freshDatabase(`${DATABASE}_slurm`),
      HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
      HUB_DATA_DIR: dataDir,
      HUB_CLUSTER_DRIVER: 'slurm',
      HUB_LOG_LEVEL: 'warn',
    },
    '/health/ready',
  );
  const headers = { authorization: `Bearer ${await login(hub)}`, 'content-type': 'application/json' };
  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> =>
    (await (await fetch(`${hub.url}/api/v2/${path}`, { method, headers, ...(body !== undefined && { body: JSON.stringify(body) }) })).json()) as T;
  const profiles = await api<{ data: { _id: string }[] }>('GET', 'execution-profiles/execprofiles?filter[name][EQ]=Standard');
  const began = performance.now();
  const jobs = await Promise.all(
    Array.from({ length: SLURM_JOBS }, (_, i) =>
      api<Job>('POST', 'cluster/jobs', { name: `slurm-${i}`, namespace: 'default', executionProfileId: profiles.data[0]._id, task: { command: 'true' } }),
    ),
  );
  while ((await api<{ total: number }>('GET', 'cluster/jobs?filter[status][IN]=pending,running&page[limit]=1')).total > 0)
    await new Promise((resolve) => setTimeout(resolve, 100));
  const allDoneSeconds = round((performance.now() - began) / 1000);
  const toRunning: number[] = [];
  const toCompleted: number[] = [];
  for (const job of jobs) {
    const list = await api<{ data: { id: string; modifiedTime: string; status: string }[] }>('GET', `cluster/executions?filter[jobId][EQ]=${job.id}`);
    const execution = await api<{ taskStates: { main: { startedAt?: string; finishedAt?: string } } }>('GET', `cluster/executions/${list.data[0].id}`);
    const submitted = Date.parse(job.submitTime);
    toRunning.push(Date.parse(execution.taskStates.main.startedAt ?? '') - submitted);
    toCompleted.push(Date.parse(execution.taskStates.main.finishedAt ?? '') - submitted);
  }
  await stop(hub);
  rmSync(dataDir, { recursive: true, force: true });
  await dropDatabase(`${DATABASE}_slurm`);
  const figures = (values: number[]) => {
    values.sort((a, b) => a - b);
    return { p50Ms: percentile(values, 0.5), maxMs: values.at(-1) as number };
  };
  return { jobs: SLURM_JOBS, toRunning: figures(toRunning), toCompleted: figures(toCompleted), allDoneSeconds };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-bench-'));
  const env = {
    DATABASE_URL: await freshDatabase(DATABASE),
    HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
    HUB_DATA_DIR: dataDir,
    HUB_LOCAL_SLOTS: '2',
    HUB_LOG_LEVEL: 'warn',
  };
  const hub = await startNode(HUB, env, '/health/ready');
  const headers = { authorization: `Bearer ${await login(hub)}`, 'content-type': 'application/json' };
  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${hub.url}/api/v2/${path}`, { method, headers, ...(body !== undefined && { body: JSON.stringify(body) }) });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  const profiles = await api<{ data: { _id: string }[] }>('GET', 'execution-profiles/execprofiles?filter[name][EQ]=Standard');
  const submit = (name: string, command: string, args: string[] = []) =>
    api<Job>('POST', 'cluster/jobs', { name, namespace: 'default', executionProfileId: profiles.data[0]._id, task: { command, args } });
  const executionOf = async (jobId: string) =>
    (await api<{ data: { id: string; status: string }[] }>('GET', `cluster/executions?filter[jobId][EQ]=${jobId}`)).data[0];
  const waitFor = async (check: () => Promise<boolean>) => {
    while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 5));
  };

  // Submit → started, one job at a time.
  const latencies: number[] = [];
  for (let i = 0; i < LATENCY_JOBS; i += 1) {
    const job = await submit(`latency-${i}`, 'true');
    let startedAt: string | undefined;
    await waitFor(async () => {
      const execution = await executionOf(job.id);
      startedAt = (await api<{ taskStates: { main: { startedAt?: string } } }>('GET', `cluster/executions/${execution.id}`)).taskStates.main.startedAt;
      return startedAt !== undefined;
    });
    latencies.push(Date.parse(startedAt as string) - Date.parse(job.submitTime));
  }
  latencies.sort((a, b) => a - b);

  // 500 short jobs at once through 2 slots, against a shell loop.
  const began = performance.now();
  const jobs = await Promise.all(Array.from({ length: THROUGHPUT_JOBS }, (_, i) => submit(`short-${i}`, 'true')));
  await waitFor(async () => (await api<{ total: number }>('GET', 'cluster/jobs?filter[status][IN]=pending,running&page[limit]=1')).total === 0);
  const hubSeconds = (performance.now() - began) / 1000;
  const loopBegan = performance.now();
  execFileSync('/bin/sh', ['-c', `for i in $(seq ${THROUGHPUT_JOBS}); do /bin/true; done`]);
  const loopSeconds = (performance.now() - loopBegan) / 1000;

  // A 1 MiB window at the end of a 1 GiB log, and of a 1 MiB one.
  const big = await submit('big-log', 'true');
  const small = await submit('small-log', 'true');
  await waitFor(async () => (await executionOf(small.id)).status === 'completed' && (await executionOf(big.id)).status === 'completed');
  const bigExecution = await executionOf(big.id);
  const smallExecution = await executionOf(small.id);
  const logOf = (executionId: string) => join(dataDir, 'work', 'executions', executionId, 'logs', 'stdout');
  // 1 GiB (sparse, but for its last MiB, which holds text as a real log would).
  truncateSync(logOf(bigExecution.id), 1024 * 1024 * 1024 - WINDOW);
  appendFileSync(logOf(bigExecution.id), Buffer.alloc(WINDOW, 'x'));
  writeFileSync(logOf(smallExecution.id), Buffer.alloc(WINDOW, 'x'));
  const readWindow = async (executionId: string) => {
    const times: number[] = [];
    for (let i = 0; i < READS; i += 1) {
      const start = performance.now();
      const { msg } = await api<{ msg: string }>('GET', `cluster/executions/${executionId}/tasks/main/logs/stdout?origin=end&limit=${WINDOW}`);
      times.push(performance.now() - start);
      if (msg.length !== WINDOW) throw new Error(`read ${msg.length} bytes, not ${WINDOW}`);
    }
    times.sort((a, b) => a - b);
    return { p50Ms: round(percentile(times, 0.5)), maxMs: round(times.at(-1) as number) };
  };
  const pid = hub.process.pid as number;
  const rssBefore = rssMiB(pid);
  const smallRead = await readWindow(smallExecution.id);
  const rssAfterSmall = rssMiB(pid);
  const bigRead = await readWindow(bigExecution.id);
  const rssAfterBig = rssMiB(pid);
  await stop(hub);
  rmSync(dataDir, { recursive: true, force: true });

  const results = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version },
    submitToStarted: { jobs: LATENCY_JOBS, p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99), maxMs: latencies.at(-1) },
    shortJobs: { jobs: jobs.length, hubSeconds: round(hubSeconds), shellLoopSeconds: round(loopSeconds), ratio: round(hubSeconds / loopSeconds) },
    logWindow: {
      windowBytes: WINDOW,
      reads: READS,
      oneMiBLog: smallRead,
      oneGiBLog: bigRead,
      rssMiB: { before: rssBefore, afterSmall: rssAfterSmall, afterBig: rssAfterBig },
    },
  };
  console.log(`\nCluster, local driver, 2 slots, ${cpus().length} CPUs`);
  console.log(
    `Submit → started over ${LATENCY_JOBS} jobs: p50 ${results.submitToStarted.p50Ms} ms, p99 ${results.submitToStarted.p99Ms} ms (target p50 <= 50)`,
  );
  console.log(
    `${THROUGHPUT_JOBS} short jobs: ${results.shortJobs.hubSeconds} s through the hub, ${results.shortJobs.shellLoopSeconds} s in a shell loop: ratio ${results.shortJobs.ratio}`,
  );
  console.log(
    `1 MiB at the end of a log, ${READS} reads: 1 MiB log p50 ${smallRead.p50Ms} ms; 1 GiB log p50 ${bigRead.p50Ms} ms, max ${bigRead.maxMs} ms (target <= 50); hub RSS ${rssBefore} → ${rssAfterSmall} → ${rssAfterBig} MiB`,
  );
  if (process.env.BENCH_SLURM === '1') {
    const slurm = await slurmFigures();
    Object.assign(results, { slurm });
    console.log(
      `Slurm, ${slurm.jobs} trivial jobs at once: submit → running p50 ${slurm.toRunning.p50Ms} ms (max ${slurm.toRunning.maxMs}), submit → completed p50 ${slurm.toCompleted.p50Ms} ms (max ${slurm.toCompleted.maxMs}); all done in ${slurm.allDoneSeconds} s`,
    );
  }
  writeResults('cluster', results);
  await dropDatabase(DATABASE);
}

await main();

// The job path, measured from the client in one run (`npm run bench:cluster`), on the local driver
// with 2 slots and the hub as it runs (as root: tasks as hub-jobs), against PostgreSQL:
// - submit → process started: jobs `true` one after another (each once the previous completed),
//   from sending the POST to the execution's taskStates.main.startedAt; the POST's own reply; and
//   sending the POST → `completed` seen by polling;
// - 500 short jobs (`true`) by 10 concurrent submitters, from the first POST to the time the hub
//   recorded the last of them ended (its modifiedTime, read once all are done), beside the mean of
//   two runs (before and after) of the same 500 processes spawned directly from Node two at a time,
//   after a burst of 100 alike that warms the hub's burst path (timed apart); their CPU per job, the
//   machine's and by whom (the hub, its launches, PostgreSQL's backends serving it: from each
//   process's counters, which other work on the machine leaves out);
// - submissions while both slots are busy: 10 concurrent clients fill a queue of 10,000 jobs
//   (accepted per second, 5xx); then with them pending, a submission's reply (against the empty
//   hub's) and the next task's start after a slot is freed (from the freeing task's end, once the
//   next in line has been prepared, as the head of such a queue is);
// - the queue then runs: the hub's RSS after 500 and after 5,000 of its jobs;
// - every execution started once (one Started event each) and none lost (the database's word).
// Waits first until files made in its data directory cost what they do on a disk at rest (see
// settledDisk). Prints one line of figures. BENCH_SLURM=1 (a cluster from scripts/slurm-up.sh
// running) adds the slurm driver's figures on a second line. Uses BENCH_DATABASE_URL (default:
// this machine's PostgreSQL), where it recreates hub_bench_cluster.
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { backendsCpuMs, cpuBetween, cpuMsOf, descendantsCpuMs, rssMiB, spawnDirectly, startNode, stop, timedWithCpu } from './processes.js';
import {
  ADMIN_PASSWORD,
  clientOf,
  dropDatabase,
  freshDatabase,
  HUB,
  login,
  nowMs,
  percentile,
  percentileOf as p,
  round,
  settledDisk,
  sleep,
  writeResults,
  type Client,
  type Job,
} from './support.js';

const DATABASE = 'hub_bench_cluster';
const SLOTS = 2;
const LATENCY_JOBS = Number(process.env.BENCH_LATENCY_JOBS ?? 100);
const SHORT_JOBS = 500;
const SUBMITTERS = 10;
const QUEUE = Number(process.env.BENCH_QUEUE ?? 10_000);
const MEMORY_JOBS = Number(process.env.BENCH_MEMORY_JOBS ?? 5_000);
const REFILLS = 7;

/** `count` runs of `submit` by `clients` concurrent submitters; the replies' times, and the seconds from the first to the last reply. */
async function submitConcurrently(
  count: number,
  clients: number,
  submit: (index: number) => Promise<unknown>,
): Promise<{ seconds: number; replies: number[] }> {
  let next = 0;
  const replies: number[] = [];
  const began = nowMs();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < count) {
        const index = next++;
        const sent = nowMs();
        await submit(index);
        replies.push(nowMs() - sent);
      }
    }),
  );
  return { seconds: (nowMs() - began) / 1000, replies };
}

/** Whether an execution's launch is prepared: its task's init waits at its gate (its command line names the execution, and `gated`). */
function waitsAtGate(executionId: string): boolean {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (args.includes(executionId) && args.includes('gated')) return true;
    } catch {
      // Gone meanwhile.
    }
  }
  return false;
}

/** A job that holds its slot until `open` drops a file in its working directory. */
async function gate(c: Client, dataDir: string, name: string, priority?: number) {
  const job = await c.submit(name, 'sh', ['-c', 'until [ -e go ]; do sleep 0.01; done'], priority);
  const id = await c.executionOf(job.id);
  return {
    id,
    prepared: async () => {
      while (!waitsAtGate(id)) await sleep(5);
    },
    running: () => c.until(id, (execution) => execution.status === 'running', 5),
    open: () => writeFileSync(join(dataDir, 'work', 'executions', id, 'work', 'go'), ''),
    ended: () => c.until(id, (execution) => execution.status === 'completed', 5),
  };
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
      api<Job & { submitTime: string }>('POST', 'cluster/jobs', {
        name: `slurm-${i}`,
        namespace: 'default',
        executionProfileId: profiles.data[0]._id,
        task: { command: 'true' },
      }),
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
  chmodSync(dataDir, 0o755);
  const disk = await settledDisk(dataDir);
  const databaseUrl = await freshDatabase(DATABASE);
  const hub = await startNode(
    HUB,
    {
      DATABASE_URL: databaseUrl,
      HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
      HUB_DATA_DIR: dataDir,
      HUB_LOCAL_SLOTS: String(SLOTS),
      HUB_LOG_LEVEL: 'warn',
      // The queue of 10,000 is one user's: the per-user limit raised, its count still made at each submission.
      HUB_MAX_ACTIVE_JOBS_PER_USER: '100000',
      // Every slot is this one user's: no cap on one user's running jobs (HUB_MAX_RUNNING_JOBS_PER_USER, docs/cluster.md).
      HUB_MAX_RUNNING_JOBS_PER_USER: '0',
    },
    '/health/ready',
  );
  const c = clientOf(hub, await login(hub));
  await c.init();
  const pid = hub.process.pid as number;

  // 1. Submit → process started, one job at a time on an idle hub (after a few to warm up).
  const toStarted: number[] = [];
  const toReply: number[] = [];
  const toCompleted: number[] = [];
  for (let i = -10; i < LATENCY_JOBS; i += 1) {
    const sent = nowMs();
    const job = await c.submit(`latency-${i}`, 'true');
    const replied = nowMs();
    const id = await c.executionOf(job.id);
    const done = await c.until(id, (execution) => execution.status === 'completed' || execution.status === 'failed');
    const seen = nowMs();
    if (done.status !== 'completed') throw new Error(`latency job ${job.id} ${done.status}`);
    if (i < 0) continue;
    toReply.push(replied - sent);
    toStarted.push(Date.parse(done.taskStates.main.startedAt as string) - sent);
    toCompleted.push(seen - sent);
  }

  // 2. 500 short jobs by 10 concurrent submitters, against spawning them directly through as many slots.
  // The direct spawn before and after the hub's run, their mean the baseline: the same 500 spawns
  // varied from 0.64 to 1.32 s between runs on this machine.
  // The hub's burst path (prepared launches, full nodes) warmed first by one of a fifth the size,
  // timed apart, as the jobs one after another warmed theirs: the first burst after a start ran
  // 0.3 to 0.5 s slower on this machine.
  const burstOf = async (jobs: number, prefix: string) => {
    const began = nowMs();
    const burst = await submitConcurrently(jobs, SUBMITTERS, (index) => c.submit(`${prefix}-${index}`, 'true'));
    // Until the last is recorded ended, as the hub recorded it: polled gently, for a client that
    // polls every few milliseconds costs the two CPUs under test as much as a fifth of the run.
    while ((await c.unfinished()) > 0) await sleep(50);
    return { seconds: ((await c.lastRecordedEnd()) - began) / 1000, submitted: burst.seconds };
  };
  const warmUp = await burstOf(SHORT_JOBS / 5, 'warm-up');
  const directBefore = await timedWithCpu(SHORT_JOBS, () => spawnDirectly(SHORT_JOBS, SLOTS, 'true'));
  let burstSubmitted = 0;
  // The same run's CPU by whom, from each process's own counters: what other work on the machine
  // leaves out (the machine's figure counts it all).
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const splitBefore = { hub: cpuMsOf(pid), jobs: descendantsCpuMs(pid), postgres: await backendsCpuMs(db, DATABASE) };
  const short = await timedWithCpu(SHORT_JOBS, async () => {
    const burst = await burstOf(SHORT_JOBS, 'short');
    burstSubmitted = burst.submitted;
    return burst.seconds;
  });
  const postgresAfter = await backendsCpuMs(db, DATABASE);
  const split = {
    hubMs: round((cpuMsOf(pid) - splitBefore.hub) / SHORT_JOBS, 2),
    launchesMs: round((descendantsCpuMs(pid) - splitBefore.jobs) / SHORT_JOBS, 2),
    postgresMs: postgresAfter.size > 0 ? round(cpuBetween(splitBefore.postgres, postgresAfter) / SHORT_JOBS, 2) : undefined,
  };
  const directAfter = await timedWithCpu(SHORT_JOBS, () => spawnDirectly(SHORT_JOBS, SLOTS, 'true'));
  const shortSeconds = short.seconds;
  const directSeconds = (directBefore.seconds + directAfter.seconds) / 2;
  const directCpuMsPerJob =
    directBefore.cpuMsPerJob !== undefined && directAfter.cpuMsPerJob !== undefined ? (directBefore.cpuMsPerJob + directAfter.cpuMsPerJob) / 2 : undefined;

  // 3. Both slots busy: 10 clients fill the queue; with it full, a submission's reply and a freed slot's refill.
  let holder = await gate(c, dataDir, 'holder-a', 100);
  const other = await gate(c, dataDir, 'holder-b', 100);
  await holder.running();
  await other.running();
  const fill = await submitConcurrently(QUEUE, SUBMITTERS, (index) => c.submit(`queued-${index}`, 'true'));
  const fullReplies: number[] = [];
  for (let i = 0; i < 100; i += 1) {
    const sent = nowMs();
    await c.submit(`full-${i}`, 'true');
    fullReplies.push(nowMs() - sent);
  }
  const refills: number[] = [];
  for (let i = 0; i < REFILLS; i += 1) {
    // The next in line (best priority) holds its slot in turn, so that the queue stays as it is. It
    // is freed once the next has been in line long enough to be prepared, as the head of a queue of
    // 10,000 has.
    const next = await gate(c, dataDir, `next-${i}`, 100);
    await next.prepared();
    holder.open();
    const freed = await holder.ended();
    const started = await next.running();
    refills.push(Date.parse(started.taskStates.main.startedAt as string) - Date.parse(freed.taskStates.main.finishedAt as string));
    holder = next;
  }

  // 4. The queue runs: RSS after 500 and after 5,000 of its jobs.
  holder.open();
  other.open();
  const ranBefore = await c.completed();
  const rssAt = async (jobs: number) => {
    while ((await c.completed()) - ranBefore < jobs) await sleep(200);
    return rssMiB(pid);
  };
  // The queue holds QUEUE jobs: a shrunk run (BENCH_QUEUE) looks at as many as it has.
  const firstJobs = Math.min(500, MEMORY_JOBS, QUEUE);
  const lastJobs = Math.min(MEMORY_JOBS, QUEUE);
  const rss500 = await rssAt(firstJobs);
  const rss5000 = await rssAt(lastJobs);

  // Once each, none lost: the database's record of the whole run.
  const [{ twice, never }] = (
    await db.query<{ twice: number; never: number }>(
      `SELECT count(*) FILTER (WHERE starts > 1)::int AS twice, count(*) FILTER (WHERE status IN ('completed', 'failed', 'lost') AND starts = 0)::int AS never
       FROM (SELECT status, jsonb_array_length(jsonb_path_query_array(task_state, '$.events[*] ? (@.type == "Started")')) AS starts FROM job_executions) AS e`,
    )
  ).rows;
  const failed = (await db.query<{ count: number }>(`SELECT count(*)::int AS count FROM job_executions WHERE status IN ('failed', 'lost')`)).rows[0].count;
  await db.end();
  await stop(hub);
  rmSync(dataDir, { recursive: true, force: true });
  await dropDatabase(DATABASE);

  const emptyReplyP50 = p(toReply, 0.5);
  const results = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version, loadAverage: loadavg().map((value) => round(value, 2)), disk },
    submitToStarted: {
      jobs: LATENCY_JOBS,
      p50Ms: p(toStarted, 0.5),
      p99Ms: p(toStarted, 0.99),
      maxMs: round(Math.max(...toStarted)),
      replyP50Ms: emptyReplyP50,
      completedSeenP50Ms: p(toCompleted, 0.5),
    },
    shortJobs: {
      jobs: SHORT_JOBS,
      hubSeconds: round(shortSeconds, 2),
      directSeconds: round(directSeconds, 2),
      directRunsSeconds: [round(directBefore.seconds, 2), round(directAfter.seconds, 2)],
      // The whole machine's CPU per job (the hub, PostgreSQL, the jobs and the client; Linux only).
      cpuMsPerJob: short.cpuMsPerJob === undefined ? undefined : round(short.cpuMsPerJob, 2),
      directCpuMsPerJob: directCpuMsPerJob === undefined ? undefined : round(directCpuMsPerJob, 2),
      // Per job, from each process's counters: the hub's own process; its launcher and every launch
      // below it (the jobs' processes included); PostgreSQL's backends serving the hub.
      cpuSplit: split,
      ratio: round(shortSeconds / directSeconds, 2),
      acceptedPerSecond: Math.round(SHORT_JOBS / burstSubmitted),
      warmUp: { jobs: SHORT_JOBS / 5, seconds: round(warmUp.seconds, 2) },
    },
    submissionsWhileBusy: { jobs: QUEUE, perSecond: Math.round(QUEUE / fill.seconds), replyP50Ms: p(fill.replies, 0.5) },
    fullQueue: {
      pending: QUEUE,
      replyP50Ms: p(fullReplies, 0.5),
      emptyReplyP50Ms: emptyReplyP50,
      ratio: round(p(fullReplies, 0.5) / emptyReplyP50, 2),
      refillMs: refills,
    },
    memory: { rssAfter500MiB: rss500, rssAfter5000MiB: rss5000, growthMiB: round(rss5000 - rss500) },
    exactlyOnce: { startedTwice: twice, endedNeverStarted: never, failedOrLost: failed, serverErrors: c.serverErrors() },
  };
  if (process.env.BENCH_SLURM === '1') Object.assign(results, { slurm: await slurmFigures() });
  writeResults('cluster', results);
  console.log(
    `cluster job path (${cpus().length} CPUs, load ${results.machine.loadAverage[0]}, a file made in ${disk.microsPerFile} µs after ${disk.waitedSeconds} s): submit→started p50 ${results.submitToStarted.p50Ms} ms p99 ${results.submitToStarted.p99Ms} ms` +
      ` (reply p50 ${emptyReplyP50} ms, completed seen p50 ${results.submitToStarted.completedSeenP50Ms} ms) | ${SHORT_JOBS} jobs ${results.shortJobs.hubSeconds} s vs direct ${results.shortJobs.directSeconds} s (${results.shortJobs.directRunsSeconds.join(', ')}) = ${results.shortJobs.ratio}× (CPU per job ${results.shortJobs.cpuMsPerJob ?? '?'} ms vs ${results.shortJobs.directCpuMsPerJob ?? '?'} ms: the hub ${split.hubMs}, launches ${split.launchesMs}, PostgreSQL ${split.postgresMs ?? '?'}; accepted ${results.shortJobs.acceptedPerSecond}/s; warm-up of ${results.shortJobs.warmUp.jobs}: ${results.shortJobs.warmUp.seconds} s)` +
      ` | ${SUBMITTERS} clients, slots busy: ${results.submissionsWhileBusy.perSecond}/s | ${QUEUE} pending: reply p50 ${results.fullQueue.replyP50Ms} ms (${results.fullQueue.ratio}× empty), freed slot → next started p50 ${p(refills, 0.5)} ms max ${round(Math.max(...refills))} ms` +
      ` | RSS after ${firstJobs} ${rss500} MiB, after ${lastJobs} ${rss5000} MiB (${results.memory.growthMiB >= 0 ? '+' : ''}${results.memory.growthMiB}) | started twice ${twice}, never ${never}, failed/lost ${failed}, 5xx ${c.serverErrors()}`,
  );
  const slurm = (results as { slurm?: Awaited<ReturnType<typeof slurmFigures>> }).slurm;
  if (slurm)
    console.log(
      `cluster slurm driver, ${slurm.jobs} trivial jobs at once: submit → running p50 ${slurm.toRunning.p50Ms} ms (max ${slurm.toRunning.maxMs}), submit → completed p50 ${slurm.toCompleted.p50Ms} ms (max ${slurm.toCompleted.maxMs}); all done in ${slurm.allDoneSeconds} s`,
    );
}

await main();

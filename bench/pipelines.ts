// The pipeline engine (issue 27), measured from the client in one run (`npm run bench:pipelines`),
// on the local driver with 2 slots and the hub as it runs (as root: tasks as hub-jobs), against
// PostgreSQL, as bench/cluster.ts measures the job path:
// - submit → first node's process started: one-node runs (`true`) one after another (each once
//   the previous ended), from sending POST /pipelines/runs to the node's startedAt (its process's
//   own start, from the cluster's taskStates); beside it, alternating with them, plain jobs `true`
//   through POST /cluster/jobs, to their execution's taskStates.main.startedAt, so that the
//   engine's overhead over a plain job shows;
// - a linear pipeline of 20 `true` nodes, 3 runs: the overhead per node, (submit sent → the run's
//   finishedAt, minus 20 `true` spawned directly from Node one after another) / 20, the median of
//   the runs, its direct spawns the mean of two runs before and after the pipelines (as
//   bench/cluster.ts takes its baseline); and the gaps from a node's finishedAt to the next one's
//   startedAt;
// - a fan-out/fan-in of 200 `true` (start → 200 → join) under the default active-job quota (100:
//   half the nodes wait for room in it) with one user through both slots, BENCH_PIPELINE_FANOUT_RUNS
//   (3) runs: submit sent → the run's finishedAt, against the same 202 processes spawned directly
//   from Node two at a time (the mean of a run before and one after it); the figure is the median
//   run's ratio, as the linear figure is the median of its runs (one fan-out of the same build
//   moves by a quarter either way on a two-CPU machine), every run's ratio printed beside it;
//   whether each run succeeded, every node started exactly once and none failed; the CPU it cost
//   (the hub's, PostgreSQL's and the whole machine's).
// Waits first until files made in its data directory cost what they do on a disk at rest (see
// settledDisk). Prints one line of figures. Smaller runs: BENCH_PIPELINE_RUNS (one-node runs and
// plain jobs, 20), BENCH_PIPELINE_LINEAR (its nodes, 20), BENCH_PIPELINE_LINEAR_RUNS (3),
// BENCH_PIPELINE_FANOUT (200), BENCH_PIPELINE_FANOUT_RUNS (3). BENCH_HUB names another built hub
// to measure (a baseline's dist/hub.js, or dist/src/main.js, the unbundled tree, whose profiles
// name files). Uses BENCH_DATABASE_URL (default: this machine's PostgreSQL), where it recreates
// hub_bench_pipelines.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { backendsCpuMs, cpuBetween, cpuMsOf, spawnDirectly, startNode, stop, timedWithCpu } from './processes.js';
import {
  ADMIN_PASSWORD,
  clientOf,
  dropDatabase,
  freshDatabase,
  HUB,
  login,
  nowMs,
  percentileOf as p,
  round,
  settledDisk,
  sleep,
  writeResults,
  type Client,
} from './support.js';

const DATABASE = 'hub_bench_pipelines';
const SLOTS = 2;
const LATENCY_RUNS = Number(process.env.BENCH_PIPELINE_RUNS ?? 20);
/** One-node runs and plain jobs before the measured ones, not counted: the first after a start pay for cold paths. */
const WARM_UPS = 3;
const LINEAR_NODES = Number(process.env.BENCH_PIPELINE_LINEAR ?? 20);
const LINEAR_RUNS = Number(process.env.BENCH_PIPELINE_LINEAR_RUNS ?? 3);
const FANOUT = Number(process.env.BENCH_PIPELINE_FANOUT ?? 200);
const FANOUT_RUNS = Number(process.env.BENCH_PIPELINE_FANOUT_RUNS ?? 3);
const TRANSACTIONS = process.env.BENCH_PIPELINE_TRANSACTIONS === '1';
const ENDED = new Set(['Succeeded', 'Failed', 'Cancelled']);

interface NodeStatus {
  state: string;
  startedAt?: string;
  finishedAt?: string;
  exitCode?: number;
  events: { time: string; type: string; details: Record<string, string> }[];
}
interface RunStatus {
  state: string;
  startedAt?: string;
  finishedAt?: string;
  nodeStatus: Record<string, NodeStatus>;
}

/** A node running `true`, followed on success by `next`. */
const trueNode = (name: string, next: string[] = []) => ({
  name,
  ...(next.length > 0 && { connections: { onSuccess: next } }),
  task: { type: 'rawexec', command: 'true' },
});

/**
 * Creates a run of `nodes` and waits until it ends: its status polled every `everyMs` (a one-node
 * run's is small), or, with `gently`, the list of runs not ended every 50 ms, for the status of a
 * run of hundreds of nodes costs the two CPUs under test what a client that polls it often would;
 * its status read once at the end. When the POST was sent (epoch ms), its reply's time, the status.
 */
async function runPipeline(
  c: Client,
  nodes: ReturnType<typeof trueNode>[],
  { everyMs = 2, gently = false } = {},
): Promise<{ id: string; sent: number; replyMs: number; status: RunStatus }> {
  const sent = nowMs();
  const { id } = await c.api<{ id: string }>('POST', 'pipelines/runs', { spec: { nodes }, executionProfileId: c.profileId() });
  const replyMs = nowMs() - sent;
  for (;;) {
    if (gently) {
      const active = await c.api<{ data: { id: string }[] }>('GET', 'pipelines/runs?filter[state][IN]=Queued,Executing');
      if (!active.data.some((run) => run.id === id)) break;
      await sleep(50);
    } else {
      const status = await c.api<RunStatus>('GET', `pipelines/runs/${id}/status`);
      if (ENDED.has(status.state)) return { id, sent, replyMs, status };
      await sleep(everyMs);
    }
  }
  return { id, sent, replyMs, status: await c.api<RunStatus>('GET', `pipelines/runs/${id}/status`) };
}

const at = (time: string | undefined, what: string): number => {
  if (time === undefined) throw new Error(`no ${what}`);
  return Date.parse(time);
};

/** When the engine decided to submit a node's job: its first `Queued` event (made in the pass that decided it, before its commit). */
const queuedAt = (node: NodeStatus): number => at(node.events.find((e) => e.type === 'Queued')?.time, 'Queued event');

/**
 * With BENCH_PIPELINE_TRANSACTIONS=1, the database's committed and rolled-back transactions so far
 * (each statement outside a transaction is one): what a fan-out node costs in round trips, a
 * figure the load does not change. Backends report them when idle for a while, so this waits 11 s
 * first (the idle hub's own ticks add a few); undefined otherwise.
 */
async function transactionsOf(db: pg.Client, database: string): Promise<number | undefined> {
  if (!TRANSACTIONS) return undefined;
  await new Promise((resolve) => setTimeout(resolve, 11_000));
  const { rows } = await db.query<{ n: string }>('SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1', [database]);
  return Number(rows[0].n);
}

const sorted = (values: number[]) => [...values].sort((a, b) => a - b);

async function main(): Promise<void> {
  const loadAtStart = loadavg().map((value) => round(value, 2));
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-bench-'));
  chmodSync(dataDir, 0o755);
  const disk = await settledDisk(dataDir);
  const databaseUrl = await freshDatabase(DATABASE);
  const hub = await startNode(
    process.env.BENCH_HUB ?? HUB,
    {
      DATABASE_URL: databaseUrl,
      HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
      HUB_DATA_DIR: dataDir,
      HUB_LOCAL_SLOTS: String(SLOTS),
      HUB_LOG_LEVEL: 'warn',
      // HUB_MAX_ACTIVE_JOBS_PER_USER left at its default (100): the fan-out's nodes wait for room in it, as docs/pipelines.md says they do.
      // Every slot is this one user's: no cap on one user's running jobs (HUB_MAX_RUNNING_JOBS_PER_USER, docs/cluster.md).
      HUB_MAX_RUNNING_JOBS_PER_USER: '0',
    },
    '/health/ready',
    // To profile the hub: BENCH_HUB_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof'.
    (process.env.BENCH_HUB_NODE_ARGS ?? '').split(' ').filter(Boolean),
  );
  const c = clientOf(hub, await login(hub));
  await c.init();
  const pid = hub.process.pid as number;

  // 1. Submit → first node's process started: one-node runs, alternating with plain jobs, one at a time on an idle hub.
  const runToStarted: number[] = [];
  const runReply: number[] = [];
  const runEnded: number[] = [];
  const runToQueued: number[] = [];
  const queuedToStarted: number[] = [];
  const jobToStarted: number[] = [];
  const jobReply: number[] = [];
  for (let i = -WARM_UPS; i < LATENCY_RUNS; i += 1) {
    const run = await runPipeline(c, [trueNode('only')]);
    if (run.status.state !== 'Succeeded') throw new Error(`one-node run ${run.id} ${run.status.state}`);
    const sent = nowMs();
    const job = await c.submit(`latency-${i}`, 'true');
    const replied = nowMs();
    const done = await c.until(await c.executionOf(job.id), (execution) => execution.status === 'completed' || execution.status === 'failed');
    if (done.status !== 'completed') throw new Error(`latency job ${job.id} ${done.status}`);
    if (i < 0) continue;
    runToStarted.push(at(run.status.nodeStatus.only.startedAt, 'startedAt') - run.sent);
    runReply.push(run.replyMs);
    runToQueued.push(queuedAt(run.status.nodeStatus.only) - run.sent);
    queuedToStarted.push(at(run.status.nodeStatus.only.startedAt, 'startedAt') - queuedAt(run.status.nodeStatus.only));
    runEnded.push(at(run.status.finishedAt, 'finishedAt') - at(run.status.nodeStatus.only.finishedAt, 'node finishedAt'));
    jobToStarted.push(at(done.taskStates.main.startedAt, 'startedAt') - sent);
    jobReply.push(replied - sent);
  }

  // 2. A linear pipeline, its direct spawns one after another before and after its runs.
  const linear = Array.from({ length: LINEAR_NODES }, (_, i) => trueNode(`n${i}`, i + 1 < LINEAR_NODES ? [`n${i + 1}`] : []));
  const directLinearBefore = await spawnDirectly(LINEAR_NODES, 1, 'true');
  const linearTotals: number[] = [];
  const linearPerNode: number[] = [];
  const gaps: number[] = [];
  const gapDecide: number[] = [];
  const gapLaunch: number[] = [];
  const nodeOwn: number[] = [];
  const linearRuns: { id: string; sent: number; status: RunStatus }[] = [];
  for (let r = 0; r < LINEAR_RUNS; r += 1) {
    const run = await runPipeline(c, linear, { gently: true });
    if (run.status.state !== 'Succeeded') throw new Error(`linear run ${run.id} ${run.status.state}`);
    linearRuns.push(run);
    linearTotals.push(at(run.status.finishedAt, 'finishedAt') - run.sent);
    for (let i = 0; i < LINEAR_NODES; i += 1) {
      const node = run.status.nodeStatus[`n${i}`];
      nodeOwn.push(at(node.finishedAt, 'finishedAt') - at(node.startedAt, 'startedAt'));
      if (i + 1 === LINEAR_NODES) continue;
      const next = run.status.nodeStatus[`n${i + 1}`];
      gaps.push(at(next.startedAt, 'startedAt') - at(node.finishedAt, 'finishedAt'));
      gapDecide.push(queuedAt(next) - at(node.finishedAt, 'finishedAt'));
      gapLaunch.push(at(next.startedAt, 'startedAt') - queuedAt(next));
    }
  }
  const directLinearAfter = await spawnDirectly(LINEAR_NODES, 1, 'true');
  // How many of the linear runs' nodes had their jobs submitted ahead, held on their predecessor's (docs/cluster.md "Dependent jobs"), and of those how many were prepared while it ran.
  const linearDb = new pg.Client({ connectionString: databaseUrl });
  await linearDb.connect();
  const [heldJobs] = (
    await linearDb.query<{ held: number; prepared: number }>(
      `SELECT count(*) FILTER (WHERE e.held_by IS NOT NULL)::int AS held,
              count(*) FILTER (WHERE e.held_by IS NOT NULL AND e.task_state->'events' @> '[{"type": "Queued"}]')::int AS prepared
       FROM job_executions e JOIN cluster_jobs j ON j.id = e.job_id WHERE j.properties->>'pipelineRunId' = ANY($1)`,
      [linearRuns.map((run) => run.id)],
    )
  ).rows;
  await linearDb.end();
  const directLinearMs = ((directLinearBefore + directLinearAfter) / 2) * 1000;
  for (const total of linearTotals) linearPerNode.push((total - directLinearMs) / LINEAR_NODES);
  const firstStarted = linearRuns.map(({ sent, status }) => at(status.nodeStatus.n0.startedAt, 'startedAt') - sent);
  const lastToRunEnd = linearRuns.map(
    ({ status }) => at(status.finishedAt, 'finishedAt') - at(status.nodeStatus[`n${LINEAR_NODES - 1}`].finishedAt, 'finishedAt'),
  );

  // 3. Fan-out/fan-in, FANOUT_RUNS times, each against the same processes spawned directly two at a time, before and after it.
  const fanned = Array.from({ length: FANOUT }, (_, i) => `f${i}`);
  const fan = [trueNode('start', fanned), ...fanned.map((name) => trueNode(name, ['join'])), trueNode('join')];
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const fanOutOnce = async () => {
    const directBefore = await timedWithCpu(fan.length, () => spawnDirectly(fan.length, SLOTS, 'true'));
    const transactionsBefore = await transactionsOf(db, DATABASE);
    const backendsBefore = await backendsCpuMs(db, DATABASE);
    const hubCpuBefore = cpuMsOf(pid);
    let fanRun: Awaited<ReturnType<typeof runPipeline>> | undefined;
    const timed = await timedWithCpu(fan.length, async () => {
      fanRun = await runPipeline(c, fan, { gently: true });
      return (at(fanRun.status.finishedAt, 'finishedAt') - fanRun.sent) / 1000;
    });
    const hubCpuMsPerNode = (cpuMsOf(pid) - hubCpuBefore) / fan.length;
    const backendsAfter = await backendsCpuMs(db, DATABASE);
    const postgresCpuMsPerNode = backendsAfter.size > 0 ? cpuBetween(backendsBefore, backendsAfter) / fan.length : undefined;
    const transactionsPerNode = TRANSACTIONS ? (((await transactionsOf(db, DATABASE)) as number) - (transactionsBefore as number)) / fan.length : undefined;
    const directAfter = await timedWithCpu(fan.length, () => spawnDirectly(fan.length, SLOTS, 'true'));
    const status = (fanRun as NonNullable<typeof fanRun>).status;
    const nodes = Object.entries(status.nodeStatus);
    const directSeconds = (directBefore.seconds + directAfter.seconds) / 2;
    const directCpu =
      directBefore.cpuMsPerJob !== undefined && directAfter.cpuMsPerJob !== undefined ? (directBefore.cpuMsPerJob + directAfter.cpuMsPerJob) / 2 : undefined;
    const startEnd = at(status.nodeStatus.start.finishedAt, 'finishedAt');
    const firstFanned = Math.min(...fanned.map((name) => at(status.nodeStatus[name].startedAt, 'startedAt')));
    const firstFannedDecided = Math.min(...fanned.map((name) => queuedAt(status.nodeStatus[name])));
    const lastFanned = Math.max(...fanned.map((name) => at(status.nodeStatus[name].finishedAt, 'finishedAt')));
    const joinStarted = at(status.nodeStatus.join.startedAt, 'startedAt');
    return {
      hubSeconds: round(timed.seconds, 2),
      directSeconds: round(directSeconds, 2),
      directRunsSeconds: [round(directBefore.seconds, 2), round(directAfter.seconds, 2)],
      ratio: round(timed.seconds / directSeconds, 2),
      // The whole machine's CPU per node (the hub, PostgreSQL, the jobs and the client; Linux only), and the hub's own.
      cpuMsPerNode: timed.cpuMsPerJob === undefined ? undefined : round(timed.cpuMsPerJob, 2),
      directCpuMsPerNode: directCpu === undefined ? undefined : round(directCpu, 2),
      hubCpuMsPerNode: round(hubCpuMsPerNode, 2),
      postgresCpuMsPerNode: postgresCpuMsPerNode === undefined ? undefined : round(postgresCpuMsPerNode, 2),
      transactionsPerNode: transactionsPerNode === undefined ? undefined : round(transactionsPerNode, 1),
      state: status.state,
      startedOnce: nodes.filter(([, node]) => node.events.filter((e) => e.type === 'Started').length === 1).length,
      failedNodes: nodes.filter(([, node]) => node.state === 'Failed').length,
      waitedForQuota: nodes.filter(([, node]) => node.events.some((e) => e.type === 'Queued' && e.details.message !== undefined)).length,
      startEndToFirstFannedStartedMs: round(firstFanned - startEnd),
      // Of which: the start's end → the engine's decision to run the 200 (their first Queued event).
      startEndToFannedDecidedMs: round(firstFannedDecided - startEnd),
      lastFannedEndToJoinStartedMs: round(joinStarted - lastFanned),
      // From the first fanned node's start to the last one's end: the share of that time in which both slots, one, or none ran a task.
      slotsBusyShare: slotsBusy(
        fanned.map((name) => [at(status.nodeStatus[name].startedAt, 'startedAt'), at(status.nodeStatus[name].finishedAt, 'finishedAt')]),
      ),
      joinEndToRunEndMs: round(at(status.finishedAt, 'finishedAt') - at(status.nodeStatus.join.finishedAt, 'finishedAt')),
    };
  };
  const fanRuns: Awaited<ReturnType<typeof fanOutOnce>>[] = [];
  for (let i = 0; i < FANOUT_RUNS; i += 1) fanRuns.push(await fanOutOnce());
  // The figure is the median run's (a single fan-out of the same build moves by a quarter either way here), every run's ratio beside it.
  const medianFan = [...fanRuns].sort((a, b) => a.ratio - b.ratio)[Math.floor(fanRuns.length / 2)];

  // Once each: the database's record of every execution of the whole run.
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

  const results = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version, loadAverageAtStart: loadAtStart, disk },
    submitToStarted: {
      runs: LATENCY_RUNS,
      pipeline: { p50Ms: p(runToStarted, 0.5), p99Ms: p(runToStarted, 0.99), maxMs: round(Math.max(...runToStarted)), replyP50Ms: p(runReply, 0.5) },
      job: { p50Ms: p(jobToStarted, 0.5), p99Ms: p(jobToStarted, 0.99), maxMs: round(Math.max(...jobToStarted)), replyP50Ms: p(jobReply, 0.5) },
      overheadP50Ms: round(p(runToStarted, 0.5) - p(jobToStarted, 0.5)),
      // From the node's process's end to the run's finishedAt, as the engine recorded them.
      nodeEndToRunEndP50Ms: p(runEnded, 0.5),
      // Where the time goes: submit sent → the engine's decision (the node's Queued event) → its process started.
      toQueuedP50Ms: p(runToQueued, 0.5),
      queuedToStartedP50Ms: p(queuedToStarted, 0.5),
    },
    linear: {
      nodes: LINEAR_NODES,
      runs: LINEAR_RUNS,
      totalsMs: linearTotals.map((value) => round(value)),
      directMs: round(directLinearMs),
      directRunsMs: [round(directLinearBefore * 1000), round(directLinearAfter * 1000)],
      perNodeOverheadMs: linearPerNode.map((value) => round(value, 2)),
      perNodeOverheadMedianMs: round(sorted(linearPerNode)[Math.floor(linearPerNode.length / 2)], 2),
      gapP50Ms: p(gaps, 0.5),
      gapsMs: sorted(gaps),
      heldNodes: heldJobs.held,
      heldPrepared: heldJobs.prepared,
      gapMaxMs: round(Math.max(...gaps)),
      // A gap split: a node's end → the engine's decision to submit the next (its Queued event) → the next's process started.
      gapDecideP50Ms: p(gapDecide, 0.5),
      gapLaunchP50Ms: p(gapLaunch, 0.5),
      nodeOwnP50Ms: p(nodeOwn, 0.5),
      submitToFirstStartedMs: firstStarted.map((value) => round(value)),
      lastEndToRunEndMs: lastToRunEnd.map((value) => round(value)),
    },
    fanOut: {
      nodes: fan.length,
      runs: FANOUT_RUNS,
      direct: 'Node spawning two at a time, as bench/cluster.ts does',
      ratios: fanRuns.map((run) => run.ratio),
      // The run whose ratio is the median, each of its figures.
      ...medianFan,
      everyRunSucceeded: fanRuns.every((run) => run.state === 'Succeeded' && run.startedOnce === fan.length && run.failedNodes === 0),
    },
    exactlyOnce: { startedTwice: twice, endedNeverStarted: never, failedOrLost: failed, serverErrors: c.serverErrors() },
  };
  writeResults('pipelines', results);
  const { submitToStarted: s, linear: l, fanOut: f } = results;
  console.log(
    `pipelines (${cpus().length} CPUs, load ${loadAtStart[0]} at start, a file made in ${disk.microsPerFile} µs after ${disk.waitedSeconds} s): submit→first node started p50 ${s.pipeline.p50Ms} ms p99 ${s.pipeline.p99Ms} ms` +
      ` (reply p50 ${s.pipeline.replyP50Ms} ms, decided p50 ${s.toQueuedP50Ms} ms, decided → started p50 ${s.queuedToStartedP50Ms} ms; node end → run end p50 ${s.nodeEndToRunEndP50Ms} ms) vs plain job p50 ${s.job.p50Ms} ms p99 ${s.job.p99Ms} ms (+${s.overheadP50Ms} ms)` +
      ` | ${LINEAR_NODES}-node linear ×${LINEAR_RUNS}: ${l.totalsMs.join(', ')} ms vs direct ${l.directMs} ms (${l.directRunsMs.join(', ')}) → overhead per node median ${l.perNodeOverheadMedianMs} ms (${l.perNodeOverheadMs.join(', ')}), gap p50 ${l.gapP50Ms} ms max ${l.gapMaxMs} ms, ${l.heldNodes} of ${(LINEAR_NODES - 1) * LINEAR_RUNS} submitted ahead (${l.heldPrepared} prepared) (end → next decided p50 ${l.gapDecideP50Ms} ms, decided → started p50 ${l.gapLaunchP50Ms} ms), a node's own p50 ${l.nodeOwnP50Ms} ms` +
      ` | fan-out ${FANOUT} ×${FANOUT_RUNS}: ratios ${f.ratios.join(', ')}, median run ${f.hubSeconds} s vs direct ${f.directSeconds} s (${f.directRunsSeconds.join(', ')}; Node, 2 at a time) = ${f.ratio}× (CPU per node ${f.cpuMsPerNode ?? '?'} ms, the hub's ${f.hubCpuMsPerNode} ms, PostgreSQL's ${f.postgresCpuMsPerNode ?? '?'} ms${f.transactionsPerNode === undefined ? '' : ` in ${f.transactionsPerNode} transactions`}, vs ${f.directCpuMsPerNode ?? '?'} ms; ${f.waitedForQuota} waited for quota; start's end → first of the ${FANOUT} started ${f.startEndToFirstFannedStartedMs} ms (decided ${f.startEndToFannedDecidedMs} ms), last's end → join started ${f.lastFannedEndToJoinStartedMs} ms; both slots running a task ${f.slotsBusyShare.both}% of that time, one ${f.slotsBusyShare.one}%, none ${f.slotsBusyShare.none}%)` +
      ` ${f.everyRunSucceeded ? 'each run Succeeded, every node started once, none failed' : `a run did not succeed, or a node started other than once or failed (median run: ${f.state}, started once ${f.startedOnce}/${f.nodes}, failed ${f.failedNodes})`} | started twice ${twice}, never ${never}, failed/lost ${failed}, 5xx ${c.serverErrors()}`,
  );
}

/** How much of the span of `[start, end]` intervals (ms) has two, one or none of them under way, in per cent. */
function slotsBusy(intervals: readonly (readonly [number, number])[]): { both: number; one: number; none: number } {
  const edges = intervals.flatMap(([start, end]) => [[start, 1] as const, [end, -1] as const]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const spent = [0, 0, 0];
  let running = 0;
  for (let i = 0; i < edges.length - 1; i += 1) {
    running += edges[i][1];
    spent[Math.min(running, 2)] += edges[i + 1][0] - edges[i][0];
  }
  const span = edges[edges.length - 1][0] - edges[0][0] || 1;
  return { both: round((spent[2] / span) * 100), one: round((spent[1] / span) * 100), none: round((spent[0] / span) * 100) };
}

await main();

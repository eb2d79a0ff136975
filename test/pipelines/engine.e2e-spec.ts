import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { HubConfig } from '../../src/common/config/hub-config.js';
import { PipelineEngine } from '../../src/pipelines/pipeline-engine.js';
import { PipelineRunsRepository } from '../../src/pipelines/pipeline-runs.repository.js';
import { RunRetention } from '../../src/pipelines/run-retention.js';
import { poll } from '../support/poll.js';
import { freezeClock } from '../support/test-clock.js';
import { RUNS, runEnded, runStatus, standardProfileId, startRun } from '../support/pipeline-runs.js';
import { bearer, startTestHub, type TestHub } from '../support/test-hub.js';

function node(name: string, script: string, onSuccess: string[] = []): Record<string, unknown> {
  return { name, connections: { onSuccess }, task: { type: 'rawexec', command: 'sh', args: ['-c', script] } };
}

/** A fan-out of `width` nodes between a start and a join. */
function fanOut(width: number, script = 'true'): Record<string, unknown>[] {
  const middle = Array.from({ length: width }, (_, index) => `n${index}`);
  return [node('start', 'true', middle), ...middle.map((name) => node(name, script, ['join'])), node('join', 'true')];
}

/**
 * The engine under concurrency, restarts and the owner's quota (api-map §7, §9): several hubs on
 * one database never start a node twice, a hub that restarts mid-run goes on with it, and nodes
 * over the owner's quota wait for room rather than fail.
 */
describe('the pipeline engine across hubs, restarts and quotas', () => {
  let hub: TestHub;
  let profileId: string;

  const runOn = (on: TestHub, nodes: Record<string, unknown>[]) => startRun(on, nodes, profileId);
  /** Each node's jobs and executions, as the cluster recorded them. */
  const jobsOf = async (id: string) =>
    hub.app
      .get(DataSource)
      .query<{ key: string; executions: number }[]>(
        `SELECT j.workload_key AS key, (SELECT count(*)::int FROM job_executions e WHERE e.job_id = j.id) AS executions FROM cluster_jobs j WHERE j.workload_key LIKE $1`,
        [`pipeline-run:${id}:%`],
      );

  beforeAll(async () => {
    hub = await startTestHub({ env: { HUB_MAX_ACTIVE_JOBS_PER_USER: '4' } });
    profileId = await standardProfileId(hub);
  });
  afterAll(() => hub?.close());

  it('keeps a node over its owner’s quota Waiting, says why, and runs it once the owner has room', async () => {
    const id = await runOn(hub, fanOut(10, 'sleep 0.2'));
    const status = await runEnded(hub, id);
    expect(status.state).toBe('Succeeded');
    const waited = Object.values(status.nodeStatus).filter((each) =>
      each.events.some((event) => event.type === 'Queued' && event.details.message?.includes('quota')),
    );
    expect(waited.length).toBeGreaterThan(0);
    for (const each of Object.values(status.nodeStatus)) {
      expect(each.state).toBe('Succeeded');
      expect(each.events.filter((event) => event.type === 'Started')).toHaveLength(1);
    }
    expect((await jobsOf(id)).every((job) => job.executions === 1)).toBe(true);
  }, 60_000);

  it('gives the room its own nodes’ ends make to a run holding nodes back, in the passes that record them, without looking for the owner’s runs', async () => {
    const lookups = jest.spyOn(hub.app.get(PipelineRunsRepository), 'runsOverQuota');
    try {
      const id = await runOn(hub, fanOut(12, 'sleep 0.2'));
      const status = await runEnded(hub, id);
      expect(status.state).toBe('Succeeded');
      const waited = Object.values(status.nodeStatus).filter((each) =>
        each.events.some((event) => event.type === 'Queued' && event.details.message?.includes('quota')),
      );
      expect(waited.length).toBeGreaterThanOrEqual(8);
      for (const each of Object.values(status.nodeStatus)) expect(each.events.filter((event) => event.type === 'Started')).toHaveLength(1);
      // One lookup an end while nodes were held back, before (8 or more); now at most the few once none is.
      expect(lookups.mock.calls.length).toBeLessThanOrEqual(3);
    } finally {
      lookups.mockRestore();
    }
  }, 60_000);

  it('flags a node’s stored logs with its run’s next write, a statement of their own only after the last', async () => {
    const engine = hub.app.get<PipelineEngine, { logFlagsAfterMs: number }>(PipelineEngine);
    const flags = jest.spyOn(hub.app.get(PipelineRunsRepository), 'setLogsStored');
    // The wait for a pass to flag, lengthened: whatever the load, a copy that ends while the run goes on
    // is flagged by its next pass, and those that end after its last, together, by one statement.
    const wait = engine.logFlagsAfterMs;
    engine.logFlagsAfterMs = 3_000;
    try {
      const chain = ['a', 'b', 'c', 'd'].map((name, index, names) => node(name, 'sleep 0.2', index + 1 < names.length ? [names[index + 1]] : []));
      const id = await runOn(hub, chain);
      expect((await runEnded(hub, id)).state).toBe('Succeeded');
      const db = hub.app.get(DataSource);
      await poll(
        async () =>
          (await db.query<{ count: number }[]>(`SELECT count(*)::int AS count FROM pipeline_run_nodes WHERE run_id = $1 AND logs_stored`, [id]))[0].count,
        (count) => count === 4,
        'every node’s logs flagged stored',
        20_000,
      );
      // Each node's but the last's by the pass that recorded the next one's start or end (before: one statement a node).
      expect(flags.mock.calls.filter(([runId]) => runId === id).length).toBeLessThanOrEqual(1);
    } finally {
      engine.logFlagsAfterMs = wait;
      flags.mockRestore();
    }
  }, 60_000);

  it('takes a run’s nodes with its lock only when no writer of the run came in between the lock’s snapshot and the lock', async () => {
    const id = await runOn(hub, [node('a', 'true')]);
    expect((await runEnded(hub, id)).state).toBe('Succeeded');
    const db = hub.app.get(DataSource);
    const runs = hub.app.get(PipelineRunsRepository);
    // Nobody else writing: the nodes come with the lock, as a read of them gives them.
    const alone = await db.transaction((manager) => runs.lock(manager, id, { spec: false, nodes: true }));
    expect(alone?.nodes?.map(({ name, state, exitCode }) => ({ name, state, exitCode }))).toEqual([{ name: 'a', state: 'Succeeded', exitCode: 0 }]);
    // A writer holding the lock while the lock's statement takes its snapshot, then changing a node: the nodes are left to a read.
    const writer = db.createQueryRunner();
    await writer.connect();
    try {
      await writer.startTransaction();
      await runs.lock(writer.manager, id, { spec: false });
      const waiting = db.transaction((manager) => runs.lock(manager, id, { spec: false, nodes: true }));
      await poll(
        async () =>
          (
            await db.query<{ count: number }[]>(
              `SELECT count(*)::int AS count FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%pipeline_run_nodes%'`,
            )
          )[0].count,
        (count) => count === 1,
        'the second lock to wait for the first',
      );
      await writer.query(`UPDATE pipeline_run_nodes SET exit_code = 7 WHERE run_id = $1`, [id]);
      await writer.commitTransaction();
      const after = await waiting;
      expect(after?.revision).toBe((alone?.revision ?? 0) + 2);
      expect(after?.nodes).toBeUndefined();
    } finally {
      await writer.release();
    }
  }, 60_000);

  it('runs a node another hub held back for the quota once the owner has room, after that hub has stopped', async () => {
    // The owner's quota (4) filled with jobs of their own, through this hub.
    const fillers: string[] = [];
    for (let index = 0; index < 4; index += 1) {
      const job = await hub.inject({
        method: 'POST',
        url: '/api/v2/cluster/jobs',
        headers: bearer(hub.adminToken),
        payload: { name: `filler-${index}`, namespace: 'default', executionProfileId: profileId, task: { command: 'sleep', args: ['30'] } },
      });
      expect(job.statusCode).toBe(201);
      fillers.push(job.json<{ id: string }>().id);
    }
    // The other hub takes the run, finds the quota full and holds its node back; then it stops.
    const other = await startTestHub({ databaseUrl: hub.databaseUrl, env: { HUB_MAX_ACTIVE_JOBS_PER_USER: '4' } });
    let id: string;
    try {
      id = await runOn(other, [node('held', 'true')]);
      await poll(
        () => runStatus(other, id),
        (status) => status.nodeStatus.held.events.some((event) => event.type === 'Queued' && event.details.message?.includes('quota')),
        'the node to be held back for the quota',
      );
    } finally {
      await other.close();
    }
    // This hub heard of the owner through the other's notice: the ends of their jobs send it to the run.
    for (const filler of fillers) {
      const stopped = await hub.inject({ method: 'POST', url: `/api/v2/cluster/jobs/${filler}/stop`, headers: bearer(hub.adminToken) });
      expect(stopped.statusCode).toBe(200);
    }
    const status = await runEnded(hub, id);
    expect(status.state).toBe('Succeeded');
    expect(status.nodeStatus.held.events.filter((event) => event.type === 'Started')).toHaveLength(1);
  }, 60_000);

  it('advances, at its next sweep, a run whose node’s end no hub acted on', async () => {
    const deaf = await startTestHub();
    try {
      const engine = deaf.app.get(PipelineEngine);
      // This hub's engine hears no announcement from now on: as if the end's notice were lost.
      (engine as unknown as { unsubscribe?: () => void }).unsubscribe?.();
      const id = await startRun(deaf, [node('only', 'true')], await standardProfileId(deaf));
      const db = deaf.app.get(DataSource);
      await poll(
        async () =>
          (await db.query<{ status: string }[]>(`SELECT j.status FROM cluster_jobs j WHERE j.workload_key = $1`, [`pipeline-run:${id}:only`]))[0]?.status,
        (status) => status === 'dead',
        'the node’s job to end',
      );
      expect((await runStatus(deaf, id)).state).not.toBe('Succeeded');
      // A sweep now finds nothing: the end is not yet SWEEP_INTERVAL_MS old.
      await engine.sweepUnheard();
      expect((await runStatus(deaf, id)).state).not.toBe('Succeeded');
      const clock = freezeClock(deaf, new Date(Date.now() + 60_000));
      await engine.sweepUnheard();
      const status = await runEnded(deaf, id);
      expect(status.state).toBe('Succeeded');
      expect(status.nodeStatus.only.state).toBe('Succeeded');
      // And it looks again SWEEP_INTERVAL_MS later, on the hub's clock.
      const sweeps = jest.spyOn(engine, 'sweepUnheard');
      await clock.tick(30_000);
      expect(sweeps).toHaveBeenCalledTimes(1);
    } finally {
      jest.restoreAllMocks();
      await deaf.close();
    }
  }, 60_000);

  it('never starts a node twice when two hubs on one database advance the same runs', async () => {
    const other = await startTestHub({ databaseUrl: hub.databaseUrl, env: { HUB_MAX_ACTIVE_JOBS_PER_USER: '4' } });
    try {
      const ids = [await runOn(hub, fanOut(6)), await runOn(other, fanOut(6)), await runOn(other, fanOut(6))];
      for (const id of ids) {
        const status = await runEnded(hub, id);
        expect(status.state).toBe('Succeeded');
        expect(Object.keys(status.nodeStatus)).toHaveLength(8);
        for (const each of Object.values(status.nodeStatus)) expect(each.events.filter((event) => event.type === 'Started')).toHaveLength(1);
        const jobs = await jobsOf(id);
        expect(jobs).toHaveLength(8);
        expect(jobs.every((job) => job.executions === 1)).toBe(true);
      }
    } finally {
      await other.close();
    }
  }, 90_000);

  it('prunes a run that ended more than HUB_RUN_RETENTION_DAYS ago, with its logs and results, and keeps the others', async () => {
    const old = await runOn(hub, [{ ...node('kept', 'echo x > out.txt'), outputs: { artifacts: { out: { path: 'out.txt' } } } }]);
    await runEnded(hub, old);
    const running = await runOn(hub, [node('long', 'sleep 20')]);
    await poll(
      () => hub.inject({ method: 'GET', url: `${RUNS}/${old}/nodes/kept/logs/stdout`, headers: bearer(hub.adminToken) }),
      (response) => response.statusCode === 200,
      'the logs',
    );
    const retention = hub.app.get(RunRetention);
    expect(await retention.prune(Date.now() + 29 * 24 * 3600_000)).toBe(0);
    // This one and the runs of the specs before it, all ended.
    expect(await retention.prune(Date.now() + 31 * 24 * 3600_000)).toBeGreaterThanOrEqual(1);
    const gone = await hub.inject({ method: 'GET', url: `${RUNS}/${old}`, headers: bearer(hub.adminToken) });
    expect(gone.statusCode).toBe(404);
    expect(existsSync(join(hub.app.get(HubConfig).sharedDir, 'results', 'runs', old))).toBe(false);
    expect((await hub.inject({ method: 'GET', url: `${RUNS}/${running}`, headers: bearer(hub.adminToken) })).statusCode).toBe(200);
    await hub.inject({ method: 'POST', url: `${RUNS}/${running}/cancel`, headers: bearer(hub.adminToken) });
  }, 60_000);

  it('goes on with a run after its hub restarts mid-run: nothing left Running, no node started twice', async () => {
    const id = await runOn(hub, [node('first', 'sleep 1', ['second']), node('second', 'true', ['third']), node('third', 'true')]);
    await poll(
      () => runStatus(hub, id),
      (status) => status.nodeStatus.first.state === 'Running',
      'the first node to run',
    );
    await hub.restart();
    const status = await runEnded(hub, id);
    expect(status.state).toBe('Succeeded');
    for (const each of Object.values(status.nodeStatus)) expect(each.events.filter((event) => event.type === 'Started')).toHaveLength(1);
    expect((await jobsOf(id)).map((job) => job.executions)).toEqual([1, 1, 1]);
  }, 60_000);
});

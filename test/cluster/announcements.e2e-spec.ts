import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { ExecutionAnnouncements } from '../../src/cluster/execution-announcements.js';
import { poll } from '../support/poll.js';
import { startTestHub, type TestHub } from '../support/test-hub.js';
import { Heard, workloadsOn } from '../support/workloads.js';

/**
 * What the cluster announces to the engines built on it (api-map §9, "Execution changes are
 * announced"): each start and end of an execution, its placement failing and becoming possible
 * again, after the change commits, in this hub and through the change feed in every other one,
 * once each; `reconnected` when the feed comes back after being lost. And workload keys: one job
 * per key, however many times or hubs submit it.
 */
describe('execution changes announced, and workload keys', () => {
  let hub: TestHub;
  let heard: Heard;
  let w: Awaited<ReturnType<typeof workloadsOn>>;

  beforeAll(async () => {
    hub = await startTestHub();
    heard = new Heard(hub.app.get(ExecutionAnnouncements));
    w = await workloadsOn(hub);
  });
  afterAll(() => hub?.close());

  it('announces a start, then an end completed with exit code 0 and the workload key', async () => {
    const key = `run-1/a/${randomUUID()}`;
    const job = await w.run('echo hello', { key });
    const changes = await heard.untilKind(job.id, 'ended');
    expect(changes.map((change) => change.kind)).toEqual(['started', 'ended']);
    const [execution] = await w.cluster.executionsOfJob(job.id);
    expect(changes[0]).toEqual({
      kind: 'started',
      jobId: job.id,
      executionId: execution.id,
      ownerId: w.adminId,
      workloadKey: key,
      startedAt: execution.taskStates.node.startedAt,
    });
    expect(changes[1]).toMatchObject({
      kind: 'ended',
      jobId: job.id,
      executionId: execution.id,
      ownerId: w.adminId,
      workloadKey: key,
      status: 'completed',
      exitCode: 0,
      finishedAt: execution.taskStates.node.finishedAt,
      eventType: 'Terminated',
    });
  });

  it('announces an exit of 3 as failed with exit code 3, without a key when the job has none', async () => {
    const job = await w.run('exit 3');
    const changes = await heard.untilKind(job.id, 'ended');
    expect(changes.at(-1)).toMatchObject({ kind: 'ended', status: 'failed', exitCode: 3, eventType: 'Terminated' });
    expect(changes.every((change) => !('workloadKey' in change))).toBe(true);
  });

  it('announces the end of a stopped workload with the stop’s event, once the stop resolves with the job dead', async () => {
    const job = await w.run('sleep 60', { key: randomUUID() });
    await heard.untilKind(job.id, 'started');
    await w.cluster.stopWorkload(job.id, 'Cancelled by the pipeline');
    expect((await w.job(job.id)).status).toBe('dead');
    const changes = await heard.untilKind(job.id, 'ended');
    expect(changes.at(-1)).toMatchObject({ kind: 'ended', status: 'failed', exitCode: null, eventType: 'Killed', message: 'Cancelled by the pipeline' });
  });

  it('announces an end past the profile’s maxRunSeconds as LimitExceeded', async () => {
    const profile = await w.profile('OneSecond', { properties: { maxRunSeconds: 1 } });
    const job = await w.run('sleep 30', { profile });
    const changes = await heard.untilKind(job.id, 'ended');
    expect(changes.map((change) => change.kind)).toEqual(['started', 'ended']);
    expect(changes[1]).toMatchObject({ status: 'failed', eventType: 'LimitExceeded' });
    expect(changes[1].message).toContain('maxRunSeconds');
  });

  it('announces a placement that fails (a constraint no node meets), once, and the stop that ends it', async () => {
    const profile = await w.profile('Gpu', { constraints: [{ attribute: 'node.label', operator: '=', value: 'gpu' }] });
    const job = await w.run('true', { profile });
    const [failed] = await heard.untilKind(job.id, 'placementFailed');
    expect(failed).toMatchObject({ kind: 'placementFailed', jobId: job.id, ownerId: w.adminId, eventType: 'PlacementFailed' });
    expect(failed.message).toContain("No node meets the execution profile's constraints");
    // Each second's round looks again: the same failure is not announced again.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(heard.of(job.id)).toHaveLength(1);
    await w.cluster.stopWorkload(job.id, 'No GPU today');
    expect((await heard.untilKind(job.id, 'ended')).at(-1)).toMatchObject({ status: 'failed', eventType: 'Killed', message: 'No GPU today' });
  });

  it('announces a pending execution placeable again when a node can take it, then its start', async () => {
    const nodeId = await w.nodeId();
    await w.drain(nodeId, true);
    let jobId = '';
    try {
      jobId = (await w.run('true')).id;
      const [failed] = await heard.untilKind(jobId, 'placementFailed');
      expect(failed.message).toContain('No node takes work now');
    } finally {
      await w.drain(nodeId, false);
    }
    const changes = await heard.untilKind(jobId, 'ended');
    expect(changes.map((change) => change.kind)).toEqual(['placementFailed', 'placeable', 'started', 'ended']);
  });

  it('delivers a change to every hub on the database once: its own directly, the others’ through the feed', async () => {
    const other = await startTestHub({ databaseUrl: hub.databaseUrl });
    try {
      const heardThere = new Heard(other.app.get(ExecutionAnnouncements));
      const there = await workloadsOn(other);
      const jobs = [await w.run('exit 0', { key: randomUUID() }), await there.run('exit 4', { key: randomUUID() })];
      for (const job of jobs) {
        for (const listener of [heard, heardThere]) await listener.untilKind(job.id, 'ended');
        // Late duplicates would come within moments.
        await new Promise((resolve) => setTimeout(resolve, 300));
        const here = heard.of(job.id);
        expect(here.map((change) => change.kind)).toEqual(['started', 'ended']);
        expect(heardThere.of(job.id)).toEqual(here);
      }
      heardThere.unsubscribe();
    } finally {
      await other.close();
    }
  }, 60_000);

  it('tells its listeners the feed reconnected after its connection was killed', async () => {
    const before = heard.changes.filter((change) => change === 'reconnected').length;
    const db = new pg.Client({ connectionString: hub.databaseUrl });
    await db.connect();
    try {
      const { rowCount } = await db.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'hub-change-feed' AND datname = current_database()`,
      );
      expect(rowCount).toBe(1);
    } finally {
      await db.end();
    }
    await poll(
      () => heard.changes.filter((change) => change === 'reconnected').length,
      (count) => count === before + 1,
      'reconnected',
    );
    // And the feed carries announcements again (another hub's would come through it).
    const job = await w.run('true');
    expect((await heard.untilKind(job.id, 'ended')).map((change) => change.kind)).toEqual(['started', 'ended']);
  });

  describe('workload keys', () => {
    it('answers the job a key names rather than running another', async () => {
      const key = `pipeline/${randomUUID()}/node`;
      const first = await w.run('true', { key });
      const again = await w.run('true', { key });
      expect(again.id).toBe(first.id);
      expect(await w.cluster.executionsOfJob(first.id)).toHaveLength(1);
      expect((await w.cluster.jobByKey(key))?.id).toBe(first.id);
      expect(await w.cluster.jobByKey(`no-such-${key}`)).toBeNull();
    });

    it('runs one job for concurrent submissions under one key, across hubs, without an error', async () => {
      const other = await startTestHub({ databaseUrl: hub.databaseUrl });
      try {
        const there = await workloadsOn(other);
        const key = `race/${randomUUID()}`;
        const jobs = await Promise.all(Array.from({ length: 8 }, (_, index) => (index % 2 === 0 ? w : there).run('true', { key })));
        expect(new Set(jobs.map((job) => job.id)).size).toBe(1);
        expect(await w.cluster.executionsOfJob(jobs[0].id)).toHaveLength(1);
      } finally {
        await other.close();
      }
    }, 60_000);

    it('answers a key’s job at once while that job’s row is being changed, taking no lock on its owner’s count first', async () => {
      // An end being recorded holds its job's row, then takes the owner's count of active jobs. A
      // resubmission of the key took that count first and then waited on the row: a deadlock.
      const key = `ending/${randomUUID()}`;
      const job = await w.run('true', { key });
      await heard.untilKind(job.id, 'ended');
      const db = new pg.Client({ connectionString: hub.databaseUrl });
      await db.connect();
      try {
        await db.query('BEGIN');
        await db.query('UPDATE cluster_jobs SET modified = now() WHERE id = $1', [job.id]);
        const waited = Symbol('waited');
        let timer: NodeJS.Timeout | undefined;
        const again = await Promise.race([
          w.run('true', { key }),
          new Promise<typeof waited>((resolve) => (timer = setTimeout(() => resolve(waited), 5000))),
        ]).finally(() => clearTimeout(timer));
        expect(again).toMatchObject({ id: job.id });
        await db.query("SET LOCAL lock_timeout = '2s'");
        await db.query('UPDATE cluster_active_jobs SET active = active WHERE owner_id = $1', [w.adminId]);
      } finally {
        await db.query('ROLLBACK');
        await db.end();
      }
    });

    it('refuses a key longer than 512 characters', async () => {
      await expect(w.run('true', { key: 'k'.repeat(513) })).rejects.toMatchObject({ status: 400 });
    });
  });
});

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { ClusterScheduler } from '../../src/cluster/cluster-scheduler.js';
import { ExecutionAnnouncements } from '../../src/cluster/execution-announcements.js';
import { ConflictError, InvalidInputError } from '../../src/common/errors/hub-errors.js';
import { poll } from '../support/poll.js';
import { startTestHub, type TestHub } from '../support/test-hub.js';
import { Heard, workloadsOn } from '../support/workloads.js';

/** What the database holds of a job's one execution, as dependent jobs read it. */
interface ExecutionRow {
  status: string;
  heldBy: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  events: { type: string; message: string }[];
}

/**
 * Dependent jobs (docs/cluster.md "Dependent jobs"): a job run with `dependsOn` stays pending, out
 * of the line and off every CPU, until the job it depends on succeeds, and then starts; it is ended,
 * never run, when that job fails, and so are the jobs held on it in turn; two hubs on one
 * database end it once; the upkeep's sweep ends one whose dependency failed while no hub heard.
 */
describe('dependent jobs', () => {
  let hub: TestHub;
  let heard: Heard;
  let w: Awaited<ReturnType<typeof workloadsOn>>;

  const executionOf = async (on: TestHub, jobId: string): Promise<ExecutionRow> => {
    const [row] = await on.app.get(DataSource).query<ExecutionRow[]>(
      `SELECT status, held_by AS "heldBy", task_state->>'startedAt' AS "startedAt", task_state->>'finishedAt' AS "finishedAt", task_state->'events' AS events
       FROM job_executions WHERE job_id = $1`,
      [jobId],
    );
    return row;
  };

  beforeAll(async () => {
    // Every slot this one user's (no cap on their running jobs): a held job must leave the second free.
    hub = await startTestHub({ env: { HUB_MAX_RUNNING_JOBS_PER_USER: '0' } });
    heard = new Heard(hub.app.get(ExecutionAnnouncements));
    w = await workloadsOn(hub);
  });
  afterAll(() => hub?.close());

  it('holds a job, pending and off the CPUs, until its dependency succeeds, then starts it after that one ended', async () => {
    // Long enough that, on a loaded machine too, the held job is seen prepared before its dependency ends.
    const first = await w.run('sleep 3');
    const then = await w.run('true', { dependsOn: first.id });
    expect(then).toMatchObject({ status: 'pending', properties: { dependsOn: first.id } });
    await heard.untilKind(first.id, 'started');
    // Another job starts meanwhile on the second slot: the held one takes none.
    const beside = await w.run('true');
    await heard.untilKind(beside.id, 'ended');
    expect((await w.job(then.id)).status).toBe('pending');
    const held = await executionOf(hub, then.id);
    expect(held).toMatchObject({ status: 'pending', heldBy: first.id, startedAt: null });
    expect(held.events.map((event) => event.type)).toContain('Held');
    // Prepared on the node its dependency runs on, to take its CPU.
    await poll(
      () => executionOf(hub, then.id),
      (row) => row.events.some((event) => event.type === 'Queued' && event.message.includes('its launch prepared')),
      'the held launch to be prepared',
    );
    const changes = await heard.untilKind(then.id, 'ended');
    expect(changes.at(-1)).toMatchObject({ status: 'completed', exitCode: 0 });
    const dependency = await executionOf(hub, first.id);
    const dependent = await executionOf(hub, then.id);
    expect(Date.parse(dependent.startedAt as string)).toBeGreaterThanOrEqual(Date.parse(dependency.finishedAt as string));
    expect((await w.job(then.id)).status).toBe('dead');
  }, 30_000);

  it('ends, never run, a job whose dependency fails, and the jobs held on it in turn', async () => {
    const first = await w.run('sleep 0.3; exit 3');
    const second = await w.run('touch should-not-run', { dependsOn: first.id });
    const third = await w.run('true', { dependsOn: second.id });
    for (const job of [second, third]) {
      const changes = await heard.untilKind(job.id, 'ended');
      expect(changes.map((change) => change.kind)).toEqual(['ended']);
      expect(changes[0]).toMatchObject({ status: 'failed', eventType: 'DependencyFailed' });
      const execution = await executionOf(hub, job.id);
      expect(execution).toMatchObject({ status: 'failed', startedAt: null });
      expect(execution.events.filter((event) => event.type === 'DependencyFailed')).toHaveLength(1);
      expect((await w.job(job.id)).status).toBe('dead');
    }
    expect((await executionOf(hub, second.id)).events.at(-1)?.message).toContain(`job ${first.id} ended failed (exit code 3)`);
  }, 30_000);

  it('refuses a dependency on no job of the owner’s (400) or on one that ended without success (409); one that succeeded holds nothing', async () => {
    await expect(w.run('true', { dependsOn: '6f1c4b1e-0000-4000-8000-000000000000' })).rejects.toBeInstanceOf(InvalidInputError);
    const failed = await w.run('exit 1');
    await heard.untilKind(failed.id, 'ended');
    await expect(w.run('true', { dependsOn: failed.id })).rejects.toBeInstanceOf(ConflictError);
    const succeeded = await w.run('true');
    await heard.untilKind(succeeded.id, 'ended');
    const after = await w.run('true', { dependsOn: succeeded.id });
    expect((await executionOf(hub, after.id)).heldBy).toBeNull();
    expect((await heard.untilKind(after.id, 'ended')).at(-1)).toMatchObject({ status: 'completed' });
  }, 30_000);

  it('stops a held job like any other: dead, never run, its dependency going on', async () => {
    const first = await w.run('sleep 0.5');
    const then = await w.run('true', { dependsOn: first.id });
    await w.cluster.stopWorkload(then.id, 'Not wanted');
    expect((await w.job(then.id)).status).toBe('dead');
    expect((await executionOf(hub, then.id)).startedAt).toBeNull();
    expect((await heard.untilKind(first.id, 'ended')).at(-1)).toMatchObject({ status: 'completed' });
    expect(heard.of(then.id).map((change) => change.kind)).toEqual(['ended']);
  }, 30_000);

  it('with two hubs on one database: a job held through one on a job run through the other starts once, or is ended once', async () => {
    const other = await startTestHub({ databaseUrl: hub.databaseUrl });
    try {
      const there = await workloadsOn(other);
      const heardThere = new Heard(other.app.get(ExecutionAnnouncements));
      const ok = await w.run('sleep 0.3');
      const afterOk = await there.run('true', { dependsOn: ok.id });
      const bad = await there.run('sleep 0.3; exit 1');
      const afterBad = await w.run('true', { dependsOn: bad.id });
      expect((await heardThere.untilKind(afterOk.id, 'ended')).at(-1)).toMatchObject({ status: 'completed' });
      expect((await heard.untilKind(afterBad.id, 'ended')).at(-1)).toMatchObject({ status: 'failed', eventType: 'DependencyFailed' });
      const started = await executionOf(hub, afterOk.id);
      expect(started.events.filter((event) => event.type === 'Started')).toHaveLength(1);
      // Both hubs heard the failure and looked for what was held on it: one ended it.
      const ended = await executionOf(hub, afterBad.id);
      expect(ended.events.filter((event) => event.type === 'DependencyFailed')).toHaveLength(1);
      expect(ended.startedAt).toBeNull();
    } finally {
      await other.close();
    }
  }, 60_000);

  it('ends, at the upkeep, a job whose dependency failed while no hub listened (a hub killed between the two)', async () => {
    const other = await startTestHub({ databaseUrl: hub.databaseUrl });
    try {
      const first = await w.run('sleep 30');
      const then = await w.run('true', { dependsOn: first.id });
      await heard.untilKind(first.id, 'started');
      // Both hubs deaf to ends: the failure below is heard by none, as when the hub that recorded it died at once.
      for (const on of [hub, other]) on.app.get<unknown, { dependents: { close(): void } }>(ClusterScheduler).dependents.close();
      await w.cluster.stopWorkload(first.id, 'Failing the dependency');
      expect((await executionOf(hub, then.id)).status).toBe('pending');
      // The upkeep, on the other hub, driven by hand: the sweep runs with every fifth tick.
      const scheduler = other.app.get(ClusterScheduler);
      for (let tick = 0; tick < 5; tick += 1) await scheduler.tickOnSchedule();
      const swept = await poll(
        () => executionOf(hub, then.id),
        (row) => row.status === 'failed',
        'the held job to be ended by the sweep',
      );
      expect(swept.events.at(-1)).toMatchObject({ type: 'DependencyFailed' });
      expect(swept.startedAt).toBeNull();
    } finally {
      await other.close();
    }
  }, 60_000);
});

import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ExecutionAnnouncements } from '../../src/cluster/execution-announcements.js';
import { ConflictError, TooManyRequestsError } from '../../src/common/errors/hub-errors.js';
import { startTestHub, type TestHub } from '../support/test-hub.js';
import { Heard, workloadsOn } from '../support/workloads.js';

/**
 * Attempts (api-map §9): an ended job runs again as a new execution of the same job, which the
 * executions query lists beside the first and whose changes are announced under the job's id;
 * asking again for an attempt it has adds nothing; only an ended job is retried, and an attempt
 * counts against its owner's quota as a new job does.
 */
describe('attempts of a job', () => {
  let hub: TestHub;
  let heard: Heard;
  let w: Awaited<ReturnType<typeof workloadsOn>>;
  /** Where tasks (which run as their owner's own user) may leave a mark. */
  let openDir: string;

  beforeAll(async () => {
    openDir = mkdtempSync(join(tmpdir(), 'hub-attempts-'));
    chmodSync(openDir, 0o777);
    hub = await startTestHub();
    heard = new Heard(hub.app.get(ExecutionAnnouncements));
    w = await workloadsOn(hub);
  });
  afterAll(async () => {
    await hub?.close();
    rmSync(openDir, { recursive: true, force: true });
  });

  it('runs a second attempt of an ended job, announced under the same job, and adds nothing when asked for it again', async () => {
    const key = `attempts/${randomUUID()}`;
    // Fails the first time, succeeds the second.
    const mark = join(openDir, `ran-${randomUUID()}`);
    const job = await w.run(`if [ -e ${mark} ]; then exit 0; fi; touch ${mark}; exit 1`, { key });
    const first = await heard.untilKind(job.id, 'ended');
    expect(first.at(-1)).toMatchObject({ status: 'failed' });

    const retried = await w.cluster.retry(job.id, 2);
    expect(retried).toMatchObject({ id: job.id, status: 'pending' });
    const changes = await heard.untilKind(job.id, 'ended', 2);
    expect(changes.map((change) => change.kind)).toEqual(['started', 'ended', 'started', 'ended']);
    expect(changes.every((change) => change.jobId === job.id && change.workloadKey === key)).toBe(true);
    expect(changes[3]).toMatchObject({ status: 'completed', exitCode: 0 });
    const executions = await w.cluster.executionsOfJob(job.id);
    expect(executions).toHaveLength(2);
    expect(changes[2].executionId).toBe(executions[1].id);
    expect(changes[2].executionId).not.toBe(changes[0].executionId);
    expect(executions[1].taskStates.node.events[0]).toMatchObject({ type: 'Received', details: { attempt: '2' } });
    expect((await w.job(job.id)).status).toBe('dead');

    // Asked again (after a crash): the attempt is there, nothing is added.
    expect(await w.cluster.retry(job.id, 2)).toMatchObject({ id: job.id, status: 'dead' });
    expect(await w.cluster.executionsOfJob(job.id)).toHaveLength(2);
    // One that would skip an attempt is refused.
    await expect(w.cluster.retry(job.id, 4)).rejects.toBeInstanceOf(ConflictError);
  });

  it('refuses to retry a job that has not ended (409)', async () => {
    const job = await w.run('sleep 60');
    await heard.untilKind(job.id, 'started');
    const refused = await w.cluster.retry(job.id, 2).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ConflictError);
    expect((refused as ConflictError).status).toBe(409);
    expect(await w.cluster.executionsOfJob(job.id)).toHaveLength(1);
    await w.cluster.stopWorkload(job.id, 'Done with it');
  });

  it('counts an attempt against its owner’s active jobs, as a new job (429)', async () => {
    const limited = await startTestHub({ env: { HUB_MAX_ACTIVE_JOBS_PER_USER: '1' } });
    try {
      const there = await workloadsOn(limited);
      const heardThere = new Heard(limited.app.get(ExecutionAnnouncements));
      const key = `quota/${randomUUID()}`;
      const ended = await there.run('exit 1', { key });
      await heardThere.untilKind(ended.id, 'ended');
      const running = await there.run('sleep 60');
      await expect(there.run('true')).rejects.toBeInstanceOf(TooManyRequestsError);
      await expect(there.cluster.retry(ended.id, 2)).rejects.toBeInstanceOf(TooManyRequestsError);
      expect(await there.cluster.executionsOfJob(ended.id)).toHaveLength(1);
      expect((await there.job(ended.id)).status).toBe('dead');
      // A key already submitted answers its job whatever the quota says now.
      expect((await there.run('exit 1', { key })).id).toBe(ended.id);
      await there.cluster.stopWorkload(running.id, 'Room for the attempt');
      expect(await there.cluster.retry(ended.id, 2)).toMatchObject({ id: ended.id, status: 'pending' });
      await heardThere.untilKind(ended.id, 'ended', 2);
    } finally {
      await limited.close();
    }
  }, 60_000);
});

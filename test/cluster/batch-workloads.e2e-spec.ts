import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Workload } from '../../src/cluster/cluster.service.js';
import { ExecutionAnnouncements } from '../../src/cluster/execution-announcements.js';
import { InvalidInputError, TooManyRequestsError } from '../../src/common/errors/hub-errors.js';
import { NamespacesService, type NamespaceRef } from '../../src/namespaces/namespaces.service.js';
import { startTestHub, type TestHub } from '../support/test-hub.js';
import { Heard, workloadsOn } from '../support/workloads.js';

/**
 * A batch of one owner's workloads (ClusterService.runMany, what the pipeline engine submits a
 * pass's nodes with): each runs as `run` would run it, in order; the owner's quota takes as many
 * as fit, the first ones, and refuses the rest (429); a key that names a job already answers that
 * job; a workload's own problem refuses it alone.
 */
describe('a batch of workloads', () => {
  let hub: TestHub;
  let heard: Heard;
  let w: Awaited<ReturnType<typeof workloadsOn>>;
  let namespace: NamespaceRef;

  const workload = (script: string, key?: string, envVars: { name: string; value: string }[] = []): Workload => ({
    name: 'batched',
    type: 'batch',
    namespace,
    profile: w.standard,
    owner: { id: w.adminId, name: 'admin' },
    task: { name: 'node', command: 'sh', args: ['-c', script], envVars },
    ...(key !== undefined && { key }),
  });

  beforeAll(async () => {
    hub = await startTestHub({ env: { HUB_MAX_ACTIVE_JOBS_PER_USER: '3', HUB_MAX_RUNNING_JOBS_PER_USER: '0' } });
    heard = new Heard(hub.app.get(ExecutionAnnouncements));
    w = await workloadsOn(hub);
    namespace = (await hub.app.get(NamespacesService).find({ name: 'default' })) as NamespaceRef;
  });
  afterAll(() => hub?.close());

  it('runs as many as the quota has room for, in order, answers a used key’s job, and refuses a bad workload alone', async () => {
    const key = `batch/${randomUUID()}`;
    const first = await w.run('true', { key });
    await heard.untilKind(first.id, 'ended');
    const running = await w.run('sleep 30');
    // Room for 2 more (quota 3, one running): the existing key takes none, the bad one is refused on its own.
    const results = await w.cluster.runMany([
      workload('true', key),
      workload('sleep 0.2', `batch/${randomUUID()}`),
      workload('true', '', []),
      workload('sleep 0.2'),
      workload('true'),
      workload('true'),
    ]);
    expect(results[0]).toEqual({ jobId: first.id, existing: true });
    expect(results[1]).toMatchObject({ existing: false });
    expect('refused' in results[2] && results[2].refused).toBeInstanceOf(InvalidInputError);
    expect('jobId' in results[3]).toBe(true);
    for (const refused of results.slice(4)) expect('refused' in refused && refused.refused).toBeInstanceOf(TooManyRequestsError);
    for (const ran of [results[1], results[3]]) {
      const jobId = (ran as { jobId: string }).jobId;
      expect((await heard.untilKind(jobId, 'ended')).at(-1)).toMatchObject({ status: 'completed' });
    }
    // Room again: the owner's count went down as they ended.
    const again = await w.cluster.runMany([workload('true'), workload('true')]);
    expect(again.every((result) => 'jobId' in result)).toBe(true);
    await w.cluster.stopWorkload(running.id, 'Done');
  }, 30_000);
});

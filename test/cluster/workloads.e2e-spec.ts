import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ClusterService } from '../../src/cluster/cluster.service.js';
import { ExecutionProfilesService } from '../../src/execution-profiles/execution-profiles.service.js';
import { NamespacesService, type NamespaceRef } from '../../src/namespaces/namespaces.service.js';
import { bearer, startTestHub, type TestHub } from '../support/test-hub.js';

/**
 * The cluster as other areas use it (pipelines, sessions and library workers will): a workload
 * they have authorised runs as a job of its type, and they watch its executions and read its logs.
 */
describe('workloads other areas run on the cluster', () => {
  let hub: TestHub;
  let cluster: ClusterService;
  let namespace: NamespaceRef;

  beforeAll(async () => {
    hub = await startTestHub();
    cluster = hub.app.get(ClusterService);
    namespace = (await hub.app.get(NamespacesService).find({ name: 'default' })) as NamespaceRef;
  });
  afterAll(() => hub?.close());

  it('runs a service workload with its own task name, which its owner then sees, until it ends', async () => {
    const standard = await hub.inject({
      method: 'GET',
      url: '/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard',
      headers: bearer(hub.adminToken),
    });
    const profile = await hub.app.get(ExecutionProfilesService).find(standard.json<{ data: { _id: string }[] }>().data[0]._id);
    const adminId = (await hub.inject({ method: 'GET', url: '/api/v2/auth/me', headers: bearer(hub.adminToken) })).json<{ _id: string }>()._id;
    const job = await cluster.run({
      name: 'worker',
      type: 'service',
      namespace,
      profile: profile as NonNullable<typeof profile>,
      owner: { id: adminId, name: 'admin' },
      task: { name: 'session', command: 'sh', args: ['-c', 'echo serving $HUB_TASK_NAME'], envVars: [] },
      properties: { purpose: 'test' },
    });
    expect(job).toMatchObject({ type: 'service', status: 'pending', properties: { purpose: 'test', namespace: 'default', owner: 'admin' } });
    const deadline = Date.now() + 10_000;
    let executions = await cluster.executionsOfJob(job.id);
    while (executions[0].status !== 'completed' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      executions = await cluster.executionsOfJob(job.id);
    }
    expect(executions).toHaveLength(1);
    expect(executions[0]).toMatchObject({ jobId: job.id, status: 'completed', taskStates: { session: { status: 'dead', failed: false } } });
    const log = await hub.inject({
      method: 'GET',
      url: `/api/v2/cluster/executions/${executions[0].id}/tasks/session/logs/stdout`,
      headers: bearer(hub.adminToken),
    });
    expect(log.json()).toEqual({ msg: 'serving session\n' });
    const listed = await hub.inject({ method: 'GET', url: '/api/v2/cluster/jobs?filter[type][EQ]=service', headers: bearer(hub.adminToken) });
    expect(listed.json()).toMatchObject({ total: 1, data: [{ id: job.id, status: 'dead', taskSummary: { completed: 1 } }] });
  });

  it('answers 404 for the executions of a job that does not exist', async () => {
    await expect(cluster.executionsOfJob('6f1c4b1e-0000-4000-8000-000000000000')).rejects.toThrow('not found');
  });
});

import { ClusterService, type Workload } from '../../src/cluster/cluster.service.js';
import type { ExecutionAnnouncements, ExecutionChange } from '../../src/cluster/execution-announcements.js';
import type { ExecutionProfileDto } from '../../src/execution-profiles/dto/execution-profile.dto.js';
import { ExecutionProfilesService } from '../../src/execution-profiles/execution-profiles.service.js';
import { NamespacesService, type NamespaceRef } from '../../src/namespaces/namespaces.service.js';
import { poll } from './poll.js';
import { bearer, type TestHub } from './test-hub.js';

/** What one hub's listener heard, in order. */
export class Heard {
  readonly changes: (ExecutionChange | 'reconnected')[] = [];
  readonly unsubscribe: () => void;

  constructor(announcements: ExecutionAnnouncements) {
    this.unsubscribe = announcements.subscribe((change) => this.changes.push(change));
  }

  /** The changes of one job, in the order heard. */
  of(jobId: string): ExecutionChange[] {
    return this.changes.filter((change): change is ExecutionChange => change !== 'reconnected' && change.jobId === jobId);
  }

  /** Waits until `done` holds of the changes of `jobId`, which it answers. */
  until(jobId: string, done: (changes: ExecutionChange[]) => boolean, what: string, timeoutMs = 15_000): Promise<ExecutionChange[]> {
    return poll(() => this.of(jobId), done, what, timeoutMs);
  }

  /** Waits until the job's changes include one of `kind`; answers them all. */
  untilKind(jobId: string, kind: ExecutionChange['kind'], count = 1, timeoutMs = 15_000): Promise<ExecutionChange[]> {
    return this.until(jobId, (changes) => changes.filter((change) => change.kind === kind).length >= count, `${count} ${kind} of job ${jobId}`, timeoutMs);
  }
}

/** Workloads run on a test hub as other areas run them (ClusterService.run), by its administrator. */
export async function workloadsOn(hub: TestHub) {
  const cluster = hub.app.get(ClusterService);
  const namespace = (await hub.app.get(NamespacesService).find({ name: 'default' })) as NamespaceRef;
  const headers = { ...bearer(hub.adminToken), 'content-type': 'application/json' };
  const adminId = (await hub.inject({ method: 'GET', url: '/api/v2/auth/me', headers })).json<{ _id: string }>()._id;
  const profiles = hub.app.get(ExecutionProfilesService);
  const profileNamed = async (name: string): Promise<ExecutionProfileDto> => {
    const listed = await hub.inject({ method: 'GET', url: `/api/v2/execution-profiles/execprofiles?filter[name][EQ]=${name}`, headers });
    return (await profiles.find(listed.json<{ data: { _id: string }[] }>().data[0]._id)) as ExecutionProfileDto;
  };
  const standard = await profileNamed('Standard');
  return {
    cluster,
    adminId,
    standard,
    /** A profile made for the spec. */
    async profile(name: string, body: Record<string, unknown>): Promise<ExecutionProfileDto> {
      const created = await hub.inject({ method: 'POST', url: '/api/v2/execution-profiles/execprofiles', headers, payload: JSON.stringify({ name, ...body }) });
      if (created.statusCode !== 201) throw new Error(`Creating profile ${name} failed: ${created.body}`);
      return (await profiles.find(created.json<{ _id: string }>()._id)) as ExecutionProfileDto;
    },
    /** Runs `script` with sh as a batch workload of the administrator. */
    run(script: string, options: { key?: string; profile?: ExecutionProfileDto; name?: string; dependsOn?: string } = {}) {
      const workload: Workload = {
        name: options.name ?? 'node',
        type: 'batch',
        namespace,
        profile: options.profile ?? standard,
        owner: { id: adminId, name: 'admin' },
        task: { name: 'node', command: 'sh', args: ['-c', script], envVars: [] },
        ...(options.key !== undefined && { key: options.key }),
        ...(options.dependsOn !== undefined && { dependsOn: options.dependsOn }),
      };
      return cluster.run(workload);
    },
    /** The job as GET /cluster/jobs/{id} answers it. */
    async job(id: string): Promise<{ id: string; status: string }> {
      return (await hub.inject({ method: 'GET', url: `/api/v2/cluster/jobs/${id}`, headers })).json<{ id: string; status: string }>();
    },
    /** The node's id (the local driver's one node). */
    async nodeId(): Promise<string> {
      return (await hub.inject({ method: 'GET', url: '/api/v2/cluster/nodes', headers })).json<{ data: { id: string }[] }>().data[0].id;
    },
    async drain(nodeId: string, enable: boolean): Promise<void> {
      const response = await hub.inject({ method: 'POST', url: `/api/v2/cluster/nodes/${nodeId}/drain`, headers, payload: JSON.stringify({ enable }) });
      if (response.statusCode !== 200) throw new Error(`Drain failed: ${response.body}`);
    },
  };
}

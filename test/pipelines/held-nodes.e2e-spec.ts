import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { ClusterService } from '../../src/cluster/cluster.service.js';
import type { ExecutionProfileDto } from '../../src/execution-profiles/dto/execution-profile.dto.js';
import { ExecutionProfilesService } from '../../src/execution-profiles/execution-profiles.service.js';
import { poll } from '../support/poll.js';
import { RUNS, runEnded, runStatus, standardProfileId, startRun } from '../support/pipeline-runs.js';
import { bearer, startTestHub, type TestHub } from '../support/test-hub.js';

/** A node's job as the cluster recorded it: whether it was held (submitted ahead), how many executions, whether one started, how it ended. */
interface NodeJob {
  node: string;
  held: boolean;
  status: string;
  executions: number;
  started: boolean;
  lastEvent: string;
}

function node(name: string, script: string, connections: Record<string, string[]> = {}): Record<string, unknown> {
  return { name, connections, task: { type: 'rawexec', command: 'sh', args: ['-c', script] } };
}

/** `count` nodes running `script` one after another (n0 → n1 → …). */
function chain(count: number, script = 'true'): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, index) => node(`n${index}`, script, index + 1 < count ? { onSuccess: [`n${index + 1}`] } : {}));
}

/**
 * Nodes submitted ahead (PipelineEngine.holdAhead): a node that runs exactly when its predecessor
 * succeeds has its job submitted while that one runs, held on it (the cluster's dependent jobs),
 * and started by the cluster the moment it succeeds; the run's semantics are those without it: a
 * failure skips what follows (its held jobs ended, never run), an error handler runs instead, a
 * cancel ends held jobs with the rest, and two hubs on one database start each node once.
 */
describe('pipeline nodes submitted ahead, held on their predecessor', () => {
  let hub: TestHub;
  let profileId: string;

  const runOn = (on: TestHub, nodes: Record<string, unknown>[]) => startRun(on, nodes, profileId);
  const jobsOf = async (id: string): Promise<Map<string, NodeJob>> => {
    const rows = await hub.app.get(DataSource).query<NodeJob[]>(
      `SELECT j.properties->>'pipelineNode' AS node, j.status, bool_or(e.held_by IS NOT NULL) AS held, count(e.id)::int AS executions,
              bool_or(e.task_state->>'startedAt' IS NOT NULL) AS started, max(e.task_state->'events'->-1->>'type') AS "lastEvent"
       FROM cluster_jobs j JOIN job_executions e ON e.job_id = j.id WHERE j.properties->>'pipelineRunId' = $1 GROUP BY 1, 2`,
      [id],
    );
    return new Map(rows.map((row) => [row.node, row]));
  };

  beforeAll(async () => {
    hub = await startTestHub({ env: { HUB_MAX_RUNNING_JOBS_PER_USER: '0' } });
    profileId = await standardProfileId(hub);
  });
  afterAll(() => hub?.close());

  it('runs a linear pipeline in order, its later nodes submitted ahead, each started once after its predecessor ended', async () => {
    const id = await runOn(hub, chain(6, 'sleep 0.1'));
    const status = await runEnded(hub, id);
    expect(status.state).toBe('Succeeded');
    for (let index = 0; index < 6; index += 1) {
      const each = status.nodeStatus[`n${index}`];
      expect(each.state).toBe('Succeeded');
      expect(each.events.filter((event) => event.type === 'Started')).toHaveLength(1);
      // Its events in order, though its job may have started before the engine decided it.
      const times = each.events.map((event) => Date.parse(event.time));
      expect(times).toEqual([...times].sort((a, b) => a - b));
      if (index > 0) expect(Date.parse(each.startedAt as string)).toBeGreaterThanOrEqual(Date.parse(status.nodeStatus[`n${index - 1}`].finishedAt as string));
    }
    const jobs = await jobsOf(id);
    expect([...jobs.values()].every((job) => job.executions === 1 && job.status === 'dead')).toBe(true);
    expect(jobs.get('n0')?.held).toBe(false);
    expect([1, 2, 3, 4, 5].filter((index) => jobs.get(`n${index}`)?.held).length).toBeGreaterThanOrEqual(4);
  }, 60_000);

  it('reads a node’s job that existed before the node was decided (its end announced while no node was linked to it) as it is', async () => {
    // A timeout on the first node: nothing is submitted ahead of it, so the second's job is this test's.
    const id = await runOn(hub, [{ ...node('first', 'sleep 1', { onSuccess: ['second'] }), meta: { timeoutSeconds: 60 } }, node('second', 'true')]);
    const [run] = await hub.app
      .get(DataSource)
      .query<{ ownerId: string; ownerName: string; namespaceId: string }[]>(
        `SELECT owner_id AS "ownerId", owner_name AS "ownerName", namespace_id AS "namespaceId" FROM pipeline_runs WHERE id = $1`,
        [id],
      );
    const profile = await hub.app.get(ExecutionProfilesService).find(profileId);
    // What a hub that asked for the second node and died before recording it leaves: its job, under the node's key, run to its end.
    const job = await hub.app.get(ClusterService).run({
      name: 'second',
      type: 'batch',
      namespace: { id: run.namespaceId, name: 'default' },
      profile: profile as ExecutionProfileDto,
      owner: { id: run.ownerId, name: run.ownerName },
      task: { name: 'second', command: 'true', args: [], envVars: [] },
      key: `pipeline-run:${id}:second`,
    });
    await poll(
      async () => (await hub.app.get(DataSource).query<{ status: string }[]>(`SELECT status FROM cluster_jobs WHERE id = $1`, [job.id]))[0].status,
      (status) => status === 'dead',
      'the second node’s job to end',
    );
    const status = await runEnded(hub, id);
    expect(status.state).toBe('Succeeded');
    expect(status.nodeStatus.second.state).toBe('Succeeded');
    const linked = await hub.app
      .get(DataSource)
      .query<{ jobId: string }[]>(`SELECT job_id AS "jobId" FROM pipeline_run_nodes WHERE run_id = $1 AND name = 'second'`, [id]);
    expect(linked[0].jobId).toBe(job.id);
  }, 60_000);

  it('skips what follows a failure, its held jobs ended without running, and fails the run', async () => {
    const id = await runOn(hub, [
      node('first', 'sleep 0.5; exit 2', { onSuccess: ['second'] }),
      node('second', 'true', { onSuccess: ['n1'] }),
      node('n1', 'true', { onSuccess: ['n2'] }),
      node('n2', 'true'),
    ]);
    const status = await runEnded(hub, id);
    expect(status.state).toBe('Failed');
    expect(status.nodeStatus.first.state).toBe('Failed');
    for (const name of ['second', 'n1', 'n2']) {
      expect(status.nodeStatus[name].state).toBe('Skipped');
      expect(status.nodeStatus[name].events.map((event) => event.type)).toEqual(['Skipped']);
    }
    // Ended by the cluster (the first failed) and stopped by the engine (it skipped them), whichever comes first: after the run's end is recorded.
    const jobs = await poll(
      () => jobsOf(id),
      (found) => [...found.values()].every((job) => job.status === 'dead'),
      'every job of the run to be dead',
    );
    const held = [...jobs.values()].filter((job) => job.held);
    expect(held.length).toBeGreaterThanOrEqual(1);
    for (const job of held) expect(job).toMatchObject({ started: false, executions: 1 });
  }, 60_000);

  it('runs the error handler rather than the node held on success, and the run succeeds', async () => {
    const id = await runOn(hub, [
      node('first', 'sleep 0.5; exit 1', { onSuccess: ['next'], onError: ['handler'] }),
      node('next', 'true'),
      node('handler', 'true'),
    ]);
    const status = await runEnded(hub, id);
    expect(status.state).toBe('Succeeded');
    expect(status.nodeStatus.next.state).toBe('Skipped');
    expect(status.nodeStatus.handler.state).toBe('Succeeded');
    const jobs = await jobsOf(id);
    expect(jobs.get('next')).toMatchObject({ held: true, started: false, lastEvent: 'DependencyFailed' });
  }, 60_000);

  it('ends held jobs with the run when it is cancelled', async () => {
    const id = await runOn(hub, chain(3, 'sleep 30'));
    await poll(
      () => jobsOf(id),
      (jobs) => jobs.get('n0')?.started === true && jobs.get('n1')?.held === true && jobs.get('n2')?.held === true,
      'the first node to run and the others to be held',
    );
    const cancelled = await hub.inject({ method: 'POST', url: `${RUNS}/${id}/cancel`, headers: bearer(hub.adminToken) });
    expect(cancelled.statusCode).toBe(200);
    const status = await runStatus(hub, id);
    expect(status.state).toBe('Cancelled');
    for (const name of ['n0', 'n1', 'n2']) expect(status.nodeStatus[name].state).toBe('Cancelled');
    const jobs = await jobsOf(id);
    for (const name of ['n0', 'n1', 'n2']) expect(jobs.get(name)?.status).toBe('dead');
    expect(jobs.get('n1')?.started).toBe(false);
    expect(jobs.get('n2')?.started).toBe(false);
  }, 60_000);

  it('starts each node of linear runs once when two hubs on one database advance them', async () => {
    const other = await startTestHub({ databaseUrl: hub.databaseUrl, env: { HUB_MAX_RUNNING_JOBS_PER_USER: '0' } });
    try {
      const ids = [await runOn(hub, chain(5)), await runOn(other, chain(5)), await runOn(other, chain(5, 'sleep 0.05'))];
      for (const id of ids) {
        const status = await runEnded(hub, id);
        expect(status.state).toBe('Succeeded');
        for (const each of Object.values(status.nodeStatus)) expect(each.events.filter((event) => event.type === 'Started')).toHaveLength(1);
        const jobs = await jobsOf(id);
        expect(jobs.size).toBe(5);
        expect([...jobs.values()].every((job) => job.executions === 1)).toBe(true);
      }
    } finally {
      await other.close();
    }
  }, 90_000);
});

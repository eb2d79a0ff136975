import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import type { NamespaceScope } from '../common/http/access-scope.js';
import { fetchListPage, whereInScopeOrOwned, type ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { NodeConstraint } from '../execution-profiles/node-constraints.js';
import type { DriverNode } from './drivers/cluster-driver.js';
import { ClusterJob, type JobType, type TaskSpec } from './entities/cluster-job.entity.js';
import { ClusterNode } from './entities/cluster-node.entity.js';
import { JobExecution, type ExecutionStatus, type TaskEvent, type TaskState } from './entities/job-execution.entity.js';
import type { JobListRow } from './cluster.mappers.js';
import { EXECUTION_LIST_QUERY, JOB_LIST_QUERY } from './list-queries.js';

/** An execution as lists and single reads show it, with its node's name and its job's namespace and owner. */
export interface ExecutionRow {
  readonly id: string;
  readonly jobId: string;
  readonly status: ExecutionStatus;
  readonly creationTime: Date;
  readonly modifiedTime: Date;
  readonly nodeId: string | null;
  readonly nodeName: string | null;
  readonly namespaceId: string;
  readonly ownerId: string | null;
}

/** A pending execution with what placing and starting it needs. */
export interface PendingExecution {
  readonly id: string;
  readonly jobId: string;
  readonly executionProfileId: string;
  /** Its profile's constraints only: the rest of its task (which may be large) is read when it starts. */
  readonly constraints: readonly NodeConstraint[];
  readonly reservedCpu: number;
  readonly reservedMemory: number;
  readonly executionDir: string;
  /** The last event of its task, to note a new one only when it says something else. */
  readonly lastEvent: TaskEvent | null;
}

/** A started execution, for the driver to report on. */
export interface StartedExecution {
  readonly id: string;
  readonly jobId: string;
  readonly status: 'pending' | 'running';
  readonly driverRef: string;
  readonly executionDir: string;
}

export interface TaskSummary {
  queued: number;
  completed: number;
  failed: number;
  running: number;
  starting: number;
  lost: number;
}

export interface NewJob {
  readonly name: string;
  readonly type: JobType;
  readonly priority: number;
  readonly namespaceId: string;
  readonly executionProfileId: string;
  readonly ownerId: string;
  readonly task: TaskSpec;
  readonly properties: Record<string, string>;
}

/** What job list items show (toJobListItem): the task and properties, which may be large, are left unread. */
const JOB_LIST_COLUMNS: readonly (keyof JobListRow)[] = ['id', 'name', 'status', 'type', 'priority', 'submitTime', 'namespaceId', 'ownerId'];

/** Executions as lists show them; each carries its job's namespace and owner, which access narrows by. */
const EXECUTIONS_SQL = `
  SELECT e.id, e.job_id AS "jobId", e.status, e.created AS "creationTime", e.modified AS "modifiedTime", e.node_id AS "nodeId",
         n.name AS "nodeName", e.namespace_id AS "namespaceId", e.owner_id AS "ownerId"
  FROM job_executions e LEFT JOIN cluster_nodes n ON n.id = e.node_id`;

/** A job's status from its executions': dead once all have ended (when the last one did), running while one runs. */
const JOB_STATUS_SQL = `
  UPDATE cluster_jobs j SET
    status = s.status,
    finished_time = CASE WHEN s.status = 'dead' THEN coalesce(s.finished, now()) ELSE NULL END,
    modified = now()
  FROM (
    SELECT CASE WHEN bool_and(status IN ('completed', 'failed', 'lost')) THEN 'dead'
                WHEN bool_or(status = 'running') THEN 'running' ELSE 'pending' END AS status,
           max((task_state->>'finishedAt')::timestamptz) AS finished
    FROM job_executions WHERE job_id = $1
  ) s
  WHERE j.id = $1 AND j.status IS DISTINCT FROM s.status`;

export function taskEvent(type: string, message: string, details: Record<string, string> = {}): TaskEvent {
  return { type, time: new Date().toISOString(), displayMessage: message, details, message };
}

@Injectable()
export class ClusterRepository {
  constructor(private readonly dataSource: DataSource) {}

  // Nodes

  /**
   * Records the nodes a driver reports: new ones are added, known ones updated (a drain is
   * kept), and those it no longer reports are `down`.
   */
  async syncNodes(nodes: readonly DriverNode[]): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      for (const node of nodes) {
        await manager.query(
          `INSERT INTO cluster_nodes (name, hostname, address, type, is_worker, is_server, status, labels, os, attributes, cpu, memory)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
           ON CONFLICT (name) DO UPDATE SET hostname = excluded.hostname, address = excluded.address, type = excluded.type,
             is_worker = excluded.is_worker, is_server = excluded.is_server, status = excluded.status, labels = excluded.labels,
             os = excluded.os, attributes = excluded.attributes, cpu = excluded.cpu, memory = excluded.memory, modified = now()
           WHERE (cluster_nodes.hostname, cluster_nodes.address, cluster_nodes.type, cluster_nodes.is_worker, cluster_nodes.is_server,
                  cluster_nodes.status, cluster_nodes.labels, cluster_nodes.os, cluster_nodes.attributes, cluster_nodes.cpu, cluster_nodes.memory)
             IS DISTINCT FROM (excluded.hostname, excluded.address, excluded.type, excluded.is_worker, excluded.is_server,
                  excluded.status, excluded.labels, excluded.os, excluded.attributes, excluded.cpu, excluded.memory)`,
          [
            node.name,
            node.hostname,
            node.address,
            node.type,
            node.isWorker,
            node.isServer,
            node.status,
            node.labels,
            node.os,
            node.attributes,
            node.cpu,
            node.memory,
          ],
        );
      }
      await manager.query(`UPDATE cluster_nodes SET status = 'down', modified = now() WHERE status <> 'down' AND NOT (name = ANY($1))`, [
        nodes.map((node) => node.name),
      ]);
    });
  }

  listNodes(query: ListQuery): Promise<ListPage<ClusterNode>> {
    return fetchListPage(this.dataSource.getRepository(ClusterNode).createQueryBuilder('node'), query);
  }

  findNode(id: string): Promise<ClusterNode | null> {
    return this.dataSource.getRepository(ClusterNode).findOneBy({ id });
  }

  /** Nodes that may take new work: ready, not draining, workers. */
  schedulableNodes(): Promise<ClusterNode[]> {
    return this.dataSource.getRepository(ClusterNode).findBy({ status: 'ready', draining: false, isWorker: true });
  }

  /** The nodes with these names. */
  nodesNamed(names: readonly string[]): Promise<ClusterNode[]> {
    return this.dataSource.getRepository(ClusterNode).createQueryBuilder('node').where('node.name = ANY(:names)', { names }).getMany();
  }

  async setDraining(id: string, draining: boolean): Promise<ClusterNode | null> {
    await this.dataSource.query('UPDATE cluster_nodes SET draining = $2, modified = now() WHERE id = $1 AND draining <> $2', [id, draining]);
    return this.findNode(id);
  }

  async distinctLabels(): Promise<string[]> {
    const rows: { label: string }[] = await this.dataSource.query('SELECT DISTINCT unnest(labels) AS label FROM cluster_nodes ORDER BY 1');
    return rows.map((row) => row.label);
  }

  async distinctOperatingSystems(): Promise<string[]> {
    const rows: { os: string }[] = await this.dataSource.query('SELECT DISTINCT os FROM cluster_nodes ORDER BY 1');
    return rows.map((row) => row.os);
  }

  // Jobs

  /** A job and its first execution, pending, in one transaction. */
  async insertJob(job: NewJob, execution: { reservedCpu: number; reservedMemory: number; executionDirOf: (id: string) => string }): Promise<ClusterJob> {
    return this.dataSource.transaction(async (manager) => {
      const saved = await manager.save(manager.create(ClusterJob, { ...job, status: 'pending', submitTime: new Date(), finishedTime: null }));
      const taskState: TaskState = {
        status: 'pending',
        failed: false,
        restarts: 0,
        lastRestart: null,
        startedAt: null,
        finishedAt: null,
        events: [taskEvent('Received', 'Task received by the hub')],
      };
      const created = await manager.save(
        manager.create(JobExecution, { jobId: saved.id, status: 'pending', taskName: job.task.name, taskState, ...execution, executionDir: '', nodeId: null }),
      );
      await manager.update(JobExecution, { id: created.id }, { executionDir: execution.executionDirOf(created.id) });
      return saved;
    });
  }

  /** A page of jobs with what list items show (not their task): see JOB_LIST_COLUMNS. */
  listJobs(query: ListQuery, scope: NamespaceScope, callerId: string): Promise<ListPage<JobListRow>> {
    const jobs = this.dataSource.getRepository(ClusterJob).createQueryBuilder('job');
    return fetchListPage(whereInScopeOrOwned(jobs, 'job.namespace_id', scope, 'job.owner_id', callerId), query, {
      counts: JOB_LIST_QUERY.counts,
      scope: { namespaces: scope, ownerId: callerId },
      columns: JOB_LIST_COLUMNS,
    });
  }

  /** Per job, how many of its executions are in each state. */
  async summaries(jobIds: readonly string[]): Promise<Map<string, TaskSummary>> {
    const summaries = new Map<string, TaskSummary>(jobIds.map((id) => [id, { queued: 0, completed: 0, failed: 0, running: 0, starting: 0, lost: 0 }]));
    if (jobIds.length === 0) return summaries;
    const rows: { jobId: string; status: ExecutionStatus; count: string }[] = await this.dataSource.query(
      'SELECT job_id AS "jobId", status, count(*) AS count FROM job_executions WHERE job_id = ANY($1) GROUP BY job_id, status',
      [jobIds],
    );
    const field: Record<ExecutionStatus, keyof TaskSummary> = { pending: 'queued', running: 'running', completed: 'completed', failed: 'failed', lost: 'lost' };
    for (const row of rows) (summaries.get(row.jobId) as TaskSummary)[field[row.status]] += Number(row.count);
    return summaries;
  }

  /** What a job runs, read when one of its executions starts. */
  async taskOf(jobId: string): Promise<TaskSpec> {
    const rows: { task: TaskSpec }[] = await this.dataSource.query('SELECT task FROM cluster_jobs WHERE id = $1', [jobId]);
    if (rows.length === 0) throw new Error(`Job ${jobId} is gone`);
    return rows[0].task;
  }

  findJob(id: string): Promise<ClusterJob | null> {
    return this.dataSource.getRepository(ClusterJob).findOneBy({ id });
  }

  /** Jobs dead since before `before`, with their executions' directories, for the retention prune. */
  async deadBefore(before: Date, limit: number): Promise<{ id: string; executionDirs: string[] }[]> {
    return this.dataSource.query(
      `SELECT j.id, coalesce(array_agg(e.execution_dir) FILTER (WHERE e.id IS NOT NULL), '{}') AS "executionDirs"
       FROM cluster_jobs j LEFT JOIN job_executions e ON e.job_id = j.id
       WHERE j.status = 'dead' AND j.finished_time < $1 GROUP BY j.id LIMIT $2`,
      [before, limit],
    );
  }

  async deleteJobs(ids: readonly string[]): Promise<void> {
    await this.dataSource.query(`DELETE FROM cluster_jobs WHERE id = ANY($1) AND status = 'dead'`, [ids]);
  }

  async countJobsIn(namespaceId: string, manager: EntityManager): Promise<number> {
    const [{ count }]: { count: string }[] = await manager.query('SELECT count(*) AS count FROM cluster_jobs WHERE namespace_id = $1', [namespaceId]);
    return Number(count);
  }

  async countJobsUsing(executionProfileId: string, manager: EntityManager): Promise<number> {
    const [{ count }]: { count: string }[] = await manager.query('SELECT count(*) AS count FROM cluster_jobs WHERE execution_profile_id = $1', [
      executionProfileId,
    ]);
    return Number(count);
  }

  // Executions

  listExecutions(query: ListQuery, scope: NamespaceScope, callerId: string): Promise<ListPage<ExecutionRow>> {
    const executions = this.dataSource.createQueryBuilder().from<ExecutionRow>(`(${EXECUTIONS_SQL})`, 'execution');
    return fetchListPage(whereInScopeOrOwned(executions, 'execution."namespaceId"', scope, 'execution."ownerId"', callerId), query, {
      counts: EXECUTION_LIST_QUERY.counts,
      scope: { namespaces: scope, ownerId: callerId },
    });
  }

  findExecution(id: string): Promise<JobExecution | null> {
    return this.dataSource.getRepository(JobExecution).findOne({ where: { id }, relations: { node: true, job: true } });
  }

  executionsOf(jobId: string): Promise<JobExecution[]> {
    return this.dataSource.getRepository(JobExecution).find({ where: { jobId }, relations: { node: true }, order: { created: 'ASC', id: 'ASC' } });
  }

  /** Where a job lives and whose it is, for the access guard. */
  async jobLocation(id: string): Promise<{ namespaceId: string; namespaceName: string; ownerId: string | null } | null> {
    const rows: { namespaceId: string; namespaceName: string; ownerId: string | null }[] = await this.dataSource.query(
      'SELECT j.namespace_id AS "namespaceId", n.name AS "namespaceName", j.owner_id AS "ownerId" FROM cluster_jobs j JOIN namespaces n ON n.id = j.namespace_id WHERE j.id = $1',
      [id],
    );
    return rows[0] ?? null;
  }

  async executionJobId(id: string): Promise<string | null> {
    const rows: { jobId: string }[] = await this.dataSource.query('SELECT job_id AS "jobId" FROM job_executions WHERE id = $1', [id]);
    return rows[0]?.jobId ?? null;
  }

  /**
   * Executions waiting for a node, best priority first, then oldest; those no node could run at
   * the last look come after the others, so that a batch of them never keeps runnable work waiting.
   */
  pending(limit: number): Promise<PendingExecution[]> {
    return this.dataSource.query(
      `SELECT e.id, e.job_id AS "jobId", j.execution_profile_id AS "executionProfileId", j.task->'constraints' AS constraints, e.reserved_cpu AS "reservedCpu",
              e.reserved_memory AS "reservedMemory", e.execution_dir AS "executionDir", e.task_state->'events'->-1 AS "lastEvent"
       FROM job_executions e JOIN cluster_jobs j ON j.id = e.job_id
       WHERE e.status = 'pending' AND e.node_id IS NULL
       ORDER BY coalesce(e.task_state->'events'->-1->>'type' = 'PlacementFailed', false), j.priority DESC, e.created, e.id LIMIT $1`,
      [limit],
    );
  }

  /** CPUs taken on each node by its executions that are running or claimed. */
  async usedCpu(): Promise<Map<string, number>> {
    const rows: { nodeId: string; used: string }[] = await this.dataSource.query(
      `SELECT node_id AS "nodeId", sum(reserved_cpu) AS used FROM job_executions WHERE node_id IS NOT NULL AND status IN ('pending', 'running') GROUP BY node_id`,
    );
    return new Map(rows.map((row) => [row.nodeId, Number(row.used)]));
  }

  /** Claims a pending execution for a node, so that no other hub starts it; false when another did. */
  async claim(executionId: string, nodeId: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(
      `UPDATE job_executions SET node_id = $2, modified = now() WHERE id = $1 AND status = 'pending' AND node_id IS NULL RETURNING id`,
      [executionId, nodeId],
    );
    return rows.length > 0;
  }

  /** Gives back the claims a node made but never started (its hub stopped in between). */
  async releaseClaims(nodeIds: readonly string[]): Promise<void> {
    await this.dataSource.query(`UPDATE job_executions SET node_id = NULL WHERE status = 'pending' AND driver_ref IS NULL AND node_id = ANY($1)`, [nodeIds]);
  }

  /** The executions started (or submitted to a queueing cluster) on these nodes that have not ended. */
  started(nodeIds: readonly string[]): Promise<StartedExecution[]> {
    return this.dataSource.query(
      `SELECT id, job_id AS "jobId", status, driver_ref AS "driverRef", execution_dir AS "executionDir" FROM job_executions
       WHERE status IN ('pending', 'running') AND driver_ref IS NOT NULL AND node_id = ANY($1)`,
      [nodeIds],
    );
  }

  /** The executions of a job that have not ended. */
  unfinishedOf(jobId: string): Promise<{ id: string; status: ExecutionStatus; driverRef: string | null; executionDir: string }[]> {
    return this.dataSource.query(
      `SELECT id, status, driver_ref AS "driverRef", execution_dir AS "executionDir" FROM job_executions WHERE job_id = $1 AND status IN ('pending', 'running')`,
      [jobId],
    );
  }

  /**
   * Changes an execution's status and task state under its row lock, then its job's status;
   * `change` returns false to leave it as it is (it has moved on meanwhile).
   */
  async updateExecution(id: string, change: (execution: JobExecution) => boolean): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      const execution = await manager.getRepository(JobExecution).createQueryBuilder('e').setLock('pessimistic_write').where('e.id = :id', { id }).getOne();
      if (!execution || !change(execution)) return;
      await manager.save(JobExecution, execution);
      await manager.query(JOB_STATUS_SQL, [execution.jobId]);
    });
  }
}

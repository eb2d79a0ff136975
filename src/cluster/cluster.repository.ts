import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type pg from 'pg';
import { DataSource, type EntityManager } from 'typeorm';
import { KeptPlans } from '../common/database/kept-plans.js';
import { runNamed, type NamedStatement } from '../common/database/named-statements.js';
import { TooManyRequestsError } from '../common/errors/hub-errors.js';
import type { ItemDenials, NamespaceScope } from '../common/http/access-scope.js';
import type { ClusterSnapshot } from '../common/metrics/cluster-metrics.js';
import { fetchListPage, isoTime, whereNotHidden, type ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { NodeConstraint } from '../execution-profiles/node-constraints.js';
import type { DriverNode } from './drivers/cluster-driver.js';
import { ClusterJob, type JobType, type TaskSpec } from './entities/cluster-job.entity.js';
import { ClusterNode } from './entities/cluster-node.entity.js';
import { JobExecution, pendingTaskState, taskEvent, type ExecutionStatus, type TaskEvent, type TaskState } from './entities/job-execution.entity.js';
import type { JobListRow } from './cluster.mappers.js';
import { EXECUTION_LIST_QUERY, JOB_LIST_QUERY } from './list-queries.js';
import { HOLDINGS_STATEMENT, lineStatement, LOCK_OWNERS_STATEMENT, OWNER_ACTIVE, PENDING_COLUMNS, type Holding, type LineOrder } from './fair-share.js';
import { ENDED_WELL_IN_E, heldToPrepareStatement, NOT_HELD, released, releasedStatement } from './dependent-jobs.js';

/** An execution as lists show it (EXECUTION_LIST_COLUMNS), with its node's name; times as toISOString writes them. */
export interface ExecutionRow {
  readonly id: string;
  readonly jobId: string;
  readonly status: ExecutionStatus;
  readonly creationTime: string;
  readonly modifiedTime: string;
  readonly nodeId: string | null;
  readonly nodeName: string | null;
}

/** A pending execution with what placing it needs. */
export interface PendingExecution {
  readonly id: string;
  readonly jobId: string;
  /** Its profile's constraints only: the rest of its task (which may be large) is read when it is claimed. */
  readonly constraints: readonly NodeConstraint[];
  readonly reservedCpu: number;
  readonly reservedMemory: number;
  readonly executionDir: string;
  /** The last event of its task, to note a new one only when it says something else. */
  readonly lastEvent: TaskEvent | null;
  /** Its place in line, after whether placement failed: higher priority first, then the older. */
  readonly priority: number;
  readonly created: Date;
  /** Its owner (null once deleted) and its job's type, for fair share (see fair-share.ts). */
  readonly ownerId: string | null;
  readonly type: JobType;
  /** Its job's, for what is announced of it (execution-announcements.ts). */
  readonly workloadKey: string | null;
}

/** A held execution this hub may prepare, on the node its dependency was claimed for (dependent-jobs.ts). */
export interface HeldExecution extends PendingExecution {
  readonly heldBy: string;
  readonly afterNodeId: string;
}

/** What a placement round reads of held executions (dependent-jobs.ts): how many to prepare at most, and which of this hub's prepared ones to look at. */
export interface HeldRead {
  readonly prepare: number;
  readonly launches: readonly string[];
}

/** What a placement round read of held executions: those this hub may prepare, and those of its prepared ones whose dependency succeeded. */
export interface HeldFound {
  readonly toPrepare: HeldExecution[];
  readonly released: ReadonlySet<string>;
}

/** An execution this hub has claimed for a node, with what starting it needs. */
export interface ClaimedExecution {
  readonly id: string;
  readonly jobId: string;
  readonly nodeId: string;
  readonly task: TaskSpec;
  readonly taskState: TaskState;
  readonly reservedCpu: number;
  readonly reservedMemory: number;
  readonly executionDir: string;
  /** When it was submitted, for the start latency and its place in line. */
  readonly created: Date;
  readonly priority: number;
  /** Claimed to have its launch prepared ahead of a slot, rather than to start now. */
  readonly prepared: boolean;
  readonly ownerId: string | null;
  readonly type: JobType;
  readonly workloadKey: string | null;
  /** The job it is held on, if any (dependent-jobs.ts): claimed only to be prepared until that job succeeded. */
  readonly heldBy: string | null;
}

/** A schedulable node of a placement round, with the CPUs its unfinished executions take. */
export interface NodeRoom extends Pick<ClusterNode, 'id' | 'name' | 'os' | 'labels' | 'attributes' | 'cpu'> {
  readonly used: number;
}

/**
 * What one placement round decided: executions to claim for a node (to start now, or `prepared`
 * to wait for a slot, with an event that says so; this hub's prepared ones given a slot are
 * claimed again, not prepared), and events to note on those that wait.
 */
export interface Placement {
  readonly claims: readonly { readonly id: string; readonly nodeId: string; readonly prepared: boolean; readonly event?: TaskEvent }[];
  readonly notes: readonly { readonly id: string; readonly event: TaskEvent }[];
  /** Announced at the round's commit (see ExecutionAnnouncements). */
  readonly notices?: readonly string[];
}

/** A started execution this hub follows, for the driver to report on. */
export interface StartedExecution {
  readonly id: string;
  readonly jobId: string;
  readonly status: 'pending' | 'running';
  readonly nodeId: string | null;
  readonly driverRef: string;
  readonly executionDir: string;
  readonly taskState: TaskState;
  /** For what is announced of it (execution-announcements.ts). */
  readonly ownerId: string | null;
  readonly workloadKey: string | null;
}

/** An execution's state after a transition, written whole. */
export interface ExecutionChange {
  readonly status: ExecutionStatus;
  readonly nodeId: string | null;
  readonly driverRef: string | null;
  readonly exitCode: number | null;
  readonly taskState: TaskState;
  /** Announce it, in its own statement (see ExecutionAnnouncements): sent only if it is written, delivered at its commit. */
  readonly notices?: readonly string[];
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
  /** See Workload.key. */
  readonly workloadKey: string | null;
}

/** What job list items show (toJobListItem) and no more: every column read costs time in the hub, and the task and properties may be large. */
const JOB_LIST_COLUMNS: readonly (keyof JobListRow & keyof ClusterJob)[] = ['id', 'name', 'status', 'type', 'priority'];

/**
 * The rest of what they show: the time as the reply writes it, and their executions' statuses for
 * the task summaries, read with each job (job_executions_job_status_idx, index-only) rather than
 * in one more statement after the page; as text, which the hub splits at less cost than an array.
 */
const JOB_LIST_EXTRA = {
  submitTime: isoTime('job.submit_time'),
  executionStatuses: `(SELECT string_agg(e.status, ' ') FROM job_executions e WHERE e.job_id = job.id)`,
};

/** Executions as lists filter and sort them; each carries its job's namespace and owner, which access narrows by. */
const EXECUTIONS_SQL = `
  SELECT e.id, e.job_id AS "jobId", e.status, e.created AS "creationTime", e.modified AS "modifiedTime", e.node_id AS "nodeId",
         n.name AS "nodeName", e.namespace_id AS "namespaceId", e.owner_id AS "ownerId"
  FROM job_executions e LEFT JOIN cluster_nodes n ON n.id = e.node_id`;

/** What execution list items show (toExecutionListItem), times as the reply writes them. */
const EXECUTION_LIST_COLUMNS: readonly (keyof ExecutionRow)[] = ['id', 'jobId', 'status', 'nodeId', 'nodeName'];
const EXECUTION_LIST_EXTRA = { creationTime: isoTime('execution."creationTime"'), modifiedTime: isoTime('execution."modifiedTime"') };

/**
 * A job and its first execution (see ClusterRepository.insertJob): every submission runs it. A key
 * ($19) that names a job already inserts nothing and leaves the owner's count alone, read as
 * committed without waiting: an end being recorded holds its job's row and then takes that count,
 * so a resubmission that took the count first and then waited on the row (the unique index's check
 * of an updated key) deadlocked with it.
 */
const INSERT_JOB: NamedStatement = {
  name: 'cluster-insert-job',
  text: `WITH k AS (
         SELECT EXISTS (SELECT 1 FROM cluster_jobs WHERE workload_key = $19) AS taken
       ), a AS (
         INSERT INTO cluster_active_jobs AS a (owner_id, active) SELECT $7, 1 FROM k WHERE NOT k.taken
         ON CONFLICT (owner_id) DO UPDATE SET active = a.active + 1 WHERE $18::integer <= 0 OR a.active < $18
         RETURNING a.active
       ), j AS (
         INSERT INTO cluster_jobs (id, name, status, type, priority, namespace_id, execution_profile_id, owner_id, task, properties, submit_time, finished_time, created, modified, workload_key)
         SELECT $1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, NULL, $10, $10, $19 FROM a RETURNING id
       ), e AS (
         INSERT INTO job_executions (id, job_id, status, task_name, task_state, reserved_cpu, reserved_memory, execution_dir, priority, created, modified, held_by)
         SELECT $11, j.id, 'pending', $12, $13, $14, $15, $16, $4, $10, $10, $20::uuid FROM j RETURNING id
       ), n AS (SELECT pg_notify('hub_changes', $17) FROM e)
       SELECT (SELECT count(*) FROM n)::int AS inserted, k.taken FROM k`,
};

/**
 * Jobs of one owner ($2) and their first executions, pending, in one statement (see
 * ClusterRepository.insertJobs): those whose workload key names no job yet, in order, as many as
 * the owner's count of active jobs has room for ($3; 0: no limit), counted under its row lock;
 * announced at its commit ($4) when any was inserted. Answers each job's id, and whether it was
 * inserted, refused for the quota, or already named by its key.
 */
const INSERT_JOBS: NamedStatement = {
  name: 'cluster-insert-jobs',
  text: `WITH input AS (
         SELECT r.*, k.id AS existing FROM jsonb_to_recordset($1::jsonb) AS r(ord int, job_id uuid, execution_id uuid, name text, type text, priority int,
                  namespace_id uuid, execution_profile_id uuid, task jsonb, properties jsonb, workload_key text, task_name text, task_state jsonb,
                  reserved_cpu int, reserved_memory int, execution_dir text)
         LEFT JOIN cluster_jobs k ON k.workload_key = r.workload_key
       ), fresh AS (
         SELECT i.*, row_number() OVER (ORDER BY i.ord) AS n FROM input i WHERE i.existing IS NULL
       ), a AS (
         UPDATE cluster_active_jobs c SET active = c.active + g.granted
         FROM (SELECT CASE WHEN $3::integer <= 0 THEN f.n ELSE least(f.n, greatest($3 - x.active, 0)) END AS granted
               FROM (SELECT active FROM cluster_active_jobs WHERE owner_id = $2 FOR UPDATE) AS x, (SELECT count(*)::int AS n FROM fresh) AS f) AS g
         WHERE c.owner_id = $2
         RETURNING g.granted
       ), j AS (
         INSERT INTO cluster_jobs (id, name, status, type, priority, namespace_id, execution_profile_id, owner_id, task, properties, submit_time, finished_time, created, modified, workload_key)
         SELECT f.job_id, f.name, 'pending', f.type, f.priority, f.namespace_id, f.execution_profile_id, $2, f.task, f.properties, $5, NULL, $5, $5, f.workload_key
         FROM fresh f, a WHERE f.n <= a.granted RETURNING id
       ), e AS (
         INSERT INTO job_executions (id, job_id, status, task_name, task_state, reserved_cpu, reserved_memory, execution_dir, priority, created, modified)
         SELECT f.execution_id, j.id, 'pending', f.task_name, f.task_state, f.reserved_cpu, f.reserved_memory, f.execution_dir, f.priority, $5, $5
         FROM fresh f JOIN j ON j.id = f.job_id RETURNING id
       ), n AS (
         SELECT pg_notify('hub_changes', $4) WHERE EXISTS (SELECT 1 FROM e)
       )
       SELECT i.ord, coalesce(i.existing, i.job_id) AS "jobId",
              CASE WHEN i.existing IS NOT NULL THEN 'existing' WHEN i.job_id IN (SELECT id FROM j) THEN 'inserted' ELSE 'overQuota' END AS outcome,
              (SELECT count(*) FROM a)::int AS counted, (SELECT count(*) FROM n)::int AS announced
       FROM input i ORDER BY i.ord`,
};

/** What became of one job of a batch (ClusterRepository.insertJobs). */
export interface BatchInserted {
  readonly jobId: string;
  readonly outcome: 'inserted' | 'existing' | 'overQuota';
}

/**
 * One execution's transition and its job's status, in one statement (so one short transaction):
 * the execution is written only if it is still as its writer saw it (`$7`, and this hub's when `$8`
 * is given); the job is dead once all its executions have ended (when the last one did), running
 * while one runs; a job that ends leaves its owner's count of active jobs. Answers whether it was
 * written.
 */
const TRANSITION_STEPS = `
  e AS (
    UPDATE job_executions SET status = $2, node_id = $3, driver_ref = $4, exit_code = $5, task_state = $6, prepared = false, modified = now()
    WHERE id = $1 AND status = $7 AND ($8::integer IS NULL OR hub = $8)
    RETURNING id, job_id, status, task_state, exit_code
  ), s AS (
    SELECT x.job_id,
           CASE WHEN bool_and(CASE WHEN x.id = e.id THEN e.status ELSE x.status END IN ('completed', 'failed', 'lost')) THEN 'dead'
                WHEN bool_or(CASE WHEN x.id = e.id THEN e.status ELSE x.status END = 'running') THEN 'running' ELSE 'pending' END AS status,
           max((CASE WHEN x.id = e.id THEN e.task_state ELSE x.task_state END->>'finishedAt')::timestamptz) AS finished
    FROM job_executions x JOIN e ON x.job_id = e.job_id GROUP BY x.job_id
  ), j AS (
    UPDATE cluster_jobs j SET status = s.status, finished_time = CASE WHEN s.status = 'dead' THEN coalesce(s.finished, now()) ELSE NULL END, modified = now()
    FROM s WHERE j.id = s.job_id AND j.status IS DISTINCT FROM s.status
    RETURNING j.owner_id, j.status
  ), a AS (
    UPDATE cluster_active_jobs a SET active = greatest(a.active - 1, 0) FROM j WHERE j.status = 'dead' AND a.owner_id = j.owner_id
    RETURNING a.owner_id
  )`;

/** The notices of the changes a transition records (`$n`, text[], ExecutionChange.notices), sent only if it is written. */
function announcing(n: number): string {
  return `n AS (SELECT pg_notify('hub_changes', notice) FROM e CROSS JOIN unnest($${n}::text[]) AS notice)`;
}

/** The parameters of TRANSITION_STEPS, in order. */
function transitionValues(id: string, expected: ExecutionStatus, hub: number | null, change: ExecutionChange): unknown[] {
  return [id, change.status, change.nodeId, change.driverRef, change.exitCode, change.taskState, expected, hub];
}

const TRANSITION: NamedStatement = {
  name: 'cluster-transition',
  text: `WITH ${TRANSITION_STEPS}, ${announcing(9)} SELECT (SELECT count(*) FROM e)::int AS written, (SELECT count(*) FROM n)::int AS announced`,
};

/**
 * A transition of an execution this hub follows to its end ($7 running, or pending when its start
 * is written with its end; $8 the hub), which hands its CPUs to one the hub prepared ($9) in the
 * same statement, if its owner may take them ($10 the cap setting; see fair-share.ts) and it is
 * held on nothing, or on a job that succeeded, or on the one that ends, which ends well (its end
 * is not in this statement's snapshot; dependent-jobs.ts): see
 * ClusterRepository.endAndHandOver.
 */
const END_AND_HAND_OVER: NamedStatement = {
  name: 'cluster-end-and-hand-over',
  text: `WITH ${TRANSITION_STEPS}, ${announcing(11)}, h AS (
    UPDATE job_executions SET prepared = false, modified = now()
    WHERE id = $9 AND hub = $8 AND status = 'pending' AND prepared AND EXISTS (SELECT 1 FROM e)
      AND (${released('job_executions.held_by')} OR job_executions.held_by IN (${ENDED_WELL_IN_E}))
      AND cluster_may_take_slot($9, $1, $10::integer)
    RETURNING id
  )
  SELECT (SELECT count(*) FROM e)::int AS written, (SELECT count(*) FROM h)::int AS handed, (SELECT count(*) FROM n)::int AS announced`,
};

/** See ClusterRepository.handOver: on the path of every refill. */
const HAND_OVER: NamedStatement = {
  name: 'cluster-hand-over',
  text: `UPDATE job_executions SET prepared = false, modified = now()
         WHERE id = $3 AND hub = $1 AND status = 'pending' AND prepared AND ${released('job_executions.held_by')}
           AND EXISTS (SELECT 1 FROM job_executions f WHERE f.id = $2 AND f.hub = $1 AND f.status IN ('pending', 'running') AND NOT f.prepared)
           AND cluster_may_take_slot($3, $2, $4::integer)`,
};

/** Serialises placement on one node across hubs (by its id, hashed), so that hubs sharing it never fill more than its CPUs. */
const NODE_LOCK_CLASS = 0x4855_4e44;
/** The class of the advisory lock each live hub holds on its number for as long as it runs. */
export const HUB_LOCK_CLASS = 0x4855_4231;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A value written into a statement's text: only ever a UUID. */
function uuid(value: string): string {
  if (!UUID.test(value)) throw new Error(`Not a UUID: ${JSON.stringify(value)}`);
  return value;
}

/** A value written into a statement's text: only ever an integer. */
function integer(value: number): number {
  if (!Number.isSafeInteger(value)) throw new Error(`Not an integer: ${value}`);
  return value;
}

/** The refusal of a job (or an attempt) past its owner's count of active jobs. */
export function overQuota(maxActive: number): TooManyRequestsError {
  return new TooManyRequestsError(
    `You have ${maxActive} active jobs (pending or running), the most one user may have (HUB_MAX_ACTIVE_JOBS_PER_USER = ${maxActive}); submit more once some have ended`,
  );
}

/** The unique index of workload keys (migration WorkloadKeys): a submission that runs into it names a job that exists. */
export const WORKLOAD_KEY_INDEX = 'cluster_jobs_workload_key_key';

/** A job's latest execution, for latestAttempts. */
export interface LatestAttemptRow {
  readonly jobId: string;
  readonly executionId: string;
  readonly status: ExecutionStatus;
  readonly exitCode: number | null;
  readonly taskState: TaskState;
  readonly attempts: number;
  readonly executionDir: string;
}

/**
 * The select of latestAttempts over the job ids in parameter `jobIds` (e.g. `$2`), for a workload
 * engine that reads its jobs' attempts in a statement of its own (a pipeline pass's lock).
 */
export function latestAttemptsSelect(jobIds: string): string {
  return `SELECT DISTINCT ON (e.job_id) e.job_id AS "jobId", e.id AS "executionId", e.status, e.exit_code AS "exitCode", e.task_state AS "taskState",
              e.execution_dir AS "executionDir", count(*) OVER (PARTITION BY e.job_id)::int AS attempts
       FROM job_executions e WHERE e.job_id = ANY(${jobIds}::uuid[]) ORDER BY e.job_id, e.created DESC, e.id DESC`;
}

/** Where the scheduler and its helpers have always taken it from. */
export { taskEvent };

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

  /** The nodes, but those a Deny hides from the caller's single reads. */
  listNodes(query: ListQuery, denials: ItemDenials | undefined): Promise<ListPage<ClusterNode>> {
    return fetchListPage(whereNotHidden(this.dataSource.getRepository(ClusterNode).createQueryBuilder('node'), 'node.id', denials), query);
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

  /**
   * A job and its first execution, pending, in one statement; `notice` is announced at its commit
   * (hubs wake to place it). Refused (429) when its owner already has `maxActive` jobs pending or
   * running (0: no limit): the owner's count of active jobs is taken under its row lock in the
   * same statement, so concurrent submissions cannot pass it together, and costs the same however
   * many jobs wait. Undefined, with nothing inserted, when the job's workload key names a job already.
   */
  async insertJob(
    job: NewJob,
    execution: {
      reservedCpu: number;
      reservedMemory: number;
      executionDirOf: (id: string) => string;
      events?: readonly TaskEvent[];
      /** The job it is held on (dependent-jobs.ts). */
      heldBy?: string;
    },
    maxActive: number,
    notice: string,
  ): Promise<ClusterJob | undefined> {
    const jobId = randomUUID();
    const executionId = randomUUID();
    const submitTime = new Date();
    const taskState = pendingTaskState([taskEvent('Received', 'Task received by the hub'), ...(execution.events ?? [])]);
    const [{ inserted, taken }] = (
      await runNamed<{ inserted: number; taken: boolean }>(this.dataSource, INSERT_JOB, [
        jobId,
        job.name,
        job.type,
        job.priority,
        job.namespaceId,
        job.executionProfileId,
        job.ownerId,
        job.task,
        job.properties,
        submitTime,
        executionId,
        job.task.name,
        taskState,
        execution.reservedCpu,
        execution.reservedMemory,
        execution.executionDirOf(executionId),
        notice,
        maxActive,
        job.workloadKey,
        execution.heldBy ?? null,
      ])
    ).rows;
    if (taken) return undefined;
    if (inserted === 0) throw overQuota(maxActive);
    return Object.assign(new ClusterJob(), { ...job, id: jobId, status: 'pending', submitTime, finishedTime: null, created: submitTime, modified: submitTime });
  }

  /**
   * Jobs of one owner and their first executions, pending, in one statement whatever their number
   * (see INSERT_JOBS), which counts under the owner's row lock: an owner without a count yet (their
   * first submission) has it made, and the statement runs again. Each job's outcome in order: inserted, refused for the owner's quota (as
   * many as do not fit, the last ones), or not inserted as its workload key names a job already
   * (that job's id). A job whose key another submission inserts meanwhile fails the whole batch
   * (a unique violation), which the caller then submits one by one.
   */
  async insertJobs(
    ownerId: string,
    jobs: readonly NewJob[],
    execution: { reservedCpu: number; reservedMemory: number; executionDirOf: (id: string) => string; events?: readonly TaskEvent[] },
    maxActive: number,
    notice: string,
  ): Promise<BatchInserted[]> {
    const submitTime = new Date();
    const rows = jobs.map((job, ord) => {
      if (job.ownerId !== ownerId) throw new Error('A batch of jobs is one owner’s');
      const executionId = randomUUID();
      return {
        ord,
        job_id: randomUUID(),
        execution_id: executionId,
        name: job.name,
        type: job.type,
        priority: job.priority,
        namespace_id: job.namespaceId,
        execution_profile_id: job.executionProfileId,
        task: job.task,
        properties: job.properties,
        workload_key: job.workloadKey,
        task_name: job.task.name,
        task_state: pendingTaskState([taskEvent('Received', 'Task received by the hub'), ...(execution.events ?? [])]),
        reserved_cpu: execution.reservedCpu,
        reserved_memory: execution.reservedMemory,
        execution_dir: execution.executionDirOf(executionId),
      };
    });
    const values = [JSON.stringify(rows), ownerId, maxActive, notice, submitTime];
    let result = await runNamed<{ jobId: string; outcome: BatchInserted['outcome']; counted: number }>(this.dataSource, INSERT_JOBS, values);
    if (result.rows[0]?.counted === 0) {
      await this.dataSource.query(`INSERT INTO cluster_active_jobs (owner_id, active) VALUES ($1, 0) ON CONFLICT (owner_id) DO NOTHING`, [ownerId]);
      result = await runNamed(this.dataSource, INSERT_JOBS, values);
    }
    return result.rows.map(({ jobId, outcome }) => ({ jobId, outcome }));
  }

  /** A page of jobs with what list items show (not their task): see JOB_LIST_COLUMNS and JOB_LIST_EXTRA. */
  listJobs(query: ListQuery, scope: NamespaceScope, callerId: string): Promise<ListPage<JobListRow>> {
    return fetchListPage<ClusterJob, JobListRow>(this.dataSource.getRepository(ClusterJob).createQueryBuilder('job'), query, {
      counts: JOB_LIST_QUERY.counts,
      scope: { namespaces: scope, columns: { namespace: 'job.namespace_id', item: 'job.id' }, owner: { id: callerId, column: 'job.owner_id' } },
      columns: JOB_LIST_COLUMNS,
      extra: JOB_LIST_EXTRA,
    });
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

  findJobByKey(workloadKey: string): Promise<ClusterJob | null> {
    return this.dataSource.getRepository(ClusterJob).findOneBy({ workloadKey });
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
    return fetchListPage(this.dataSource.createQueryBuilder().from<ExecutionRow>(`(${EXECUTIONS_SQL})`, 'execution'), query, {
      counts: EXECUTION_LIST_QUERY.counts,
      scope: {
        namespaces: scope,
        columns: { namespace: 'execution."namespaceId"', item: 'execution."jobId"' },
        owner: { id: callerId, column: 'execution."ownerId"' },
      },
      columns: EXECUTION_LIST_COLUMNS,
      extra: EXECUTION_LIST_EXTRA,
    });
  }

  findExecution(id: string): Promise<JobExecution | null> {
    return this.dataSource.getRepository(JobExecution).findOne({ where: { id }, relations: { node: true, job: true } });
  }

  executionsOf(jobId: string): Promise<JobExecution[]> {
    return this.dataSource.getRepository(JobExecution).find({ where: { jobId }, relations: { node: true }, order: { created: 'ASC', id: 'ASC' } });
  }

  /** The latest execution (attempt) of each of `jobIds`, with how many it has: what an engine watching its workloads reads. */
  latestAttempts(jobIds: readonly string[], manager: EntityManager = this.dataSource.manager): Promise<LatestAttemptRow[]> {
    if (jobIds.length === 0) return Promise.resolve([]);
    return manager.query(latestAttemptsSelect('$1'), [jobIds]);
  }

  /** An execution's directory alone: what copying files out of it needs (findExecution loads the execution with its node and job). */
  async executionDirOf(executionId: string): Promise<string | null> {
    const rows: { dir: string }[] = await this.dataSource.query('SELECT execution_dir AS dir FROM job_executions WHERE id = $1', [executionId]);
    return rows[0]?.dir ?? null;
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
   * One placement round on `nodeIds`, in one transaction: with `exclusive`, the nodes' locks are
   * taken (hubs sharing a node place on it one at a time, so that together they never fill more
   * than its CPUs); with `line.lockOwners`, the locks of the owners it may start work of (see
   * fair-share.ts), before anything is counted; the CPUs its unfinished executions take are read,
   * with `line.fair` the slots each owner holds; the first `limit` executions in line (see
   * lineStatement) that no other hub is placing are locked, and `decide` says which to claim for
   * which node and what to note on the others. Claims are this hub's, and only of active owners'
   * executions.
   */
  async placeRound(
    hub: number,
    nodeIds: readonly string[],
    exclusive: boolean,
    limit: number,
    line: LineOrder,
    held: HeldRead,
    decide: (pending: PendingExecution[], nodes: NodeRoom[], holdings: Holding[], locked: Set<string> | undefined, held: HeldFound) => Placement,
  ): Promise<ClaimedExecution[]> {
    // Two round trips on one connection, the values written into the text (each checked, or quoted
    // by the driver) so that several statements go at once: every job takes this path. The reads'
    // texts repeat round after round (the hub's nodes, the line's limit; the owners to lock go as a
    // parameter), and are kept planned.
    const ids = (values: readonly string[]) => `ARRAY[${values.map((value) => `'${uuid(value)}'`).join(',')}]::uuid[]`;
    const runner = this.dataSource.createQueryRunner();
    const client = (await runner.connect()) as pg.PoolClient;
    const plans = new KeptPlans(client);
    const batch = async (statements: string[]): Promise<pg.QueryResult[]> => {
      const prelude = plans.prelude();
      const results = (await client.query([...prelude, ...statements].join(';\n'))) as unknown as pg.QueryResult | pg.QueryResult[];
      return (Array.isArray(results) ? results : [results]).slice(prelude.length);
    };
    try {
      const read = await batch([
        'BEGIN',
        // Taken before what follows reads (each statement reads what was committed when it began).
        ...(exclusive
          ? [
              plans.execute(
                `SELECT pg_advisory_xact_lock(${NODE_LOCK_CLASS}, hashtext(n::text)) FROM (SELECT unnest(${ids([...nodeIds].sort())}) AS n ORDER BY 1) AS nodes`,
              ),
            ]
          : []),
        ...(line.lockOwners ? [plans.execute(LOCK_OWNERS_STATEMENT, [ids(line.lockOwners)])] : []),
        // Before what is read from the end of the results.
        ...(held.prepare > 0 ? [plans.execute(heldToPrepareStatement(PENDING_COLUMNS, OWNER_ACTIVE, integer(held.prepare), integer(hub), ids(nodeIds)))] : []),
        // Its ids are this round's own: planned as it comes.
        ...(held.launches.length > 0 ? [releasedStatement(ids(held.launches))] : []),
        plans.execute(`SELECT n.id, n.name, n.os, n.labels, n.attributes, n.cpu,
                coalesce((SELECT sum(e.reserved_cpu) FROM job_executions e WHERE e.node_id = n.id AND e.status IN ('pending', 'running') AND NOT e.prepared), 0)::int AS used
         FROM cluster_nodes n WHERE n.id = ANY(${ids(nodeIds)}) AND n.status = 'ready' AND NOT n.draining AND n.is_worker ORDER BY n.name`),
        ...(line.fair ? [plans.execute(HOLDINGS_STATEMENT)] : []),
        plans.execute(lineStatement(integer(limit), line.fair)),
      ]);
      const locked = line.lockOwners ? new Set((read[exclusive ? 2 : 1].rows as { ownerId: string }[]).map((row) => row.ownerId)) : undefined;
      const holdings = line.fair ? (read.at(-2)?.rows as Holding[]) : [];
      const nodes = read.at(line.fair ? -3 : -2)?.rows as NodeRoom[];
      const pending = read.at(-1)?.rows as PendingExecution[];
      // Just before the nodes: the held ones to prepare, then those released.
      const nodesAt = read.length - (line.fair ? 3 : 2);
      const releasedAt = held.launches.length > 0 ? nodesAt - 1 : nodesAt;
      const found: HeldFound = {
        toPrepare: held.prepare > 0 ? (read[releasedAt - 1].rows as HeldExecution[]) : [],
        released: new Set(held.launches.length > 0 ? (read[releasedAt].rows as { id: string }[]).map((row) => row.id) : []),
      };
      const { claims, notes, notices } = decide(pending, nodes, holdings, locked, found);
      const events = `ARRAY[${notes.map((note) => `${client.escapeLiteral(JSON.stringify(note.event))}::jsonb`).join(',')}]::jsonb[]`;
      const written = await batch([
        ...(notes.length > 0
          ? [
              `UPDATE job_executions e SET task_state = jsonb_set(e.task_state, '{events}', (e.task_state->'events') || jsonb_build_array(n.event)), modified = now()
               FROM unnest(${ids(notes.map((note) => note.id))}, ${events}) AS n(id, event) WHERE e.id = n.id AND e.status = 'pending' AND e.node_id IS NULL`,
            ]
          : []),
        // Before the claims, whose rows are read back as the last but one result.
        ...(notices && notices.length > 0
          ? [`SELECT pg_notify('hub_changes', n) FROM unnest(ARRAY[${notices.map((notice) => client.escapeLiteral(notice)).join(',')}]::text[]) AS n`]
          : []),
        // Kept planned, its claims as parameters: one text for every round of this hub.
        ...(claims.length > 0
          ? [
              plans.execute(
                `UPDATE job_executions e SET node_id = c.node_id, hub = ${integer(hub)}, prepared = c.prepared, modified = now(),
                        task_state = CASE WHEN c.event IS NULL THEN e.task_state ELSE jsonb_set(e.task_state, '{events}', (e.task_state->'events') || jsonb_build_array(c.event)) END
                 FROM unnest($1::uuid[], $2::uuid[], $3::boolean[], $4::jsonb[]) AS c(id, node_id, prepared, event), cluster_jobs j
                 WHERE e.id = c.id AND j.id = e.job_id AND e.status = 'pending' AND (e.node_id IS NULL OR (e.hub = ${integer(hub)} AND e.prepared))
                   AND ${OWNER_ACTIVE} AND (c.prepared OR ${NOT_HELD})
                 RETURNING e.id, e.job_id AS "jobId", e.node_id AS "nodeId", j.task, e.task_state AS "taskState", e.reserved_cpu AS "reservedCpu",
                           e.reserved_memory AS "reservedMemory", e.execution_dir AS "executionDir", e.created, e.priority, e.prepared,
                           e.owner_id AS "ownerId", j.type, j.workload_key AS "workloadKey", e.held_by AS "heldBy"`,
                [
                  ids(claims.map((claim) => claim.id)),
                  ids(claims.map((claim) => claim.nodeId)),
                  `ARRAY[${claims.map((claim) => String(claim.prepared)).join(',')}]::boolean[]`,
                  `ARRAY[${claims.map((claim) => (claim.event ? `${client.escapeLiteral(JSON.stringify(claim.event))}::jsonb` : 'NULL')).join(',')}]::jsonb[]`,
                ],
              ),
            ]
          : []),
        'COMMIT',
      ]);
      return claims.length > 0 ? (written.at(-2)?.rows as ClaimedExecution[]) : [];
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      await plans.resync().catch(() => undefined);
      throw error;
    } finally {
      await runner.release();
    }
  }

  /** Unfinished executions per status and node, and the CPUs free on each schedulable node, for the metrics. */
  async snapshot(): Promise<ClusterSnapshot> {
    const executions: { status: 'pending' | 'running'; node: string; count: number }[] = await this.dataSource.query(
      `SELECT e.status, coalesce(n.name, '') AS node, count(*)::int AS count
       FROM job_executions e LEFT JOIN cluster_nodes n ON n.id = e.node_id WHERE e.status IN ('pending', 'running') GROUP BY 1, 2`,
    );
    const freeSlots: { node: string; free: number }[] = await this.dataSource.query(
      `SELECT n.name AS node, greatest(0, n.cpu - coalesce((SELECT sum(e.reserved_cpu) FROM job_executions e WHERE e.node_id = n.id AND e.status IN ('pending', 'running') AND NOT e.prepared), 0))::int AS free
       FROM cluster_nodes n WHERE n.status = 'ready' AND NOT n.draining AND n.is_worker`,
    );
    return { executions, freeSlots };
  }

  /** A number for a starting hub, never one a live hub holds. */
  async nextHubNumber(): Promise<number> {
    const [{ hub }]: { hub: number }[] = await this.dataSource.query(`SELECT nextval('cluster_hub_numbers')::int AS hub`);
    return hub;
  }

  /**
   * Takes over what hubs no longer alive (none holds their number's lock) left on these nodes:
   * their claims never started go back in line, what they started is followed by `hub` from now
   * on. Executions on nodes no live hub shares stay as they are until one that shares them starts.
   * Answers how many started executions it took over.
   */
  async adopt(hub: number, nodeIds: readonly string[]): Promise<number> {
    const live = `(SELECT l.objid::bigint::integer FROM pg_locks l JOIN pg_database d ON d.oid = l.database
                   WHERE l.locktype = 'advisory' AND l.classid = ${HUB_LOCK_CLASS} AND l.objsubid = 2 AND l.granted AND d.datname = current_database())`;
    return this.dataSource.transaction(async (manager) => {
      await manager.query(
        `UPDATE job_executions SET node_id = NULL, hub = NULL, prepared = false, modified = now()
         WHERE status = 'pending' AND driver_ref IS NULL AND node_id = ANY($1) AND hub IS DISTINCT FROM $2 AND (hub IS NULL OR hub NOT IN ${live})`,
        [nodeIds, hub],
      );
      const [, adopted]: [unknown, number] = await manager.query(
        `UPDATE job_executions SET hub = $2 WHERE status IN ('pending', 'running') AND driver_ref IS NOT NULL AND node_id = ANY($1)
           AND hub IS DISTINCT FROM $2 AND (hub IS NULL OR hub NOT IN ${live})`,
        [nodeIds, hub],
      );
      return adopted;
    });
  }

  /**
   * Gives the CPUs of an execution this hub started, which still holds them as the database has it
   * (running, or its start not yet recorded), to one it prepared, which then takes them in
   * placement: the node is never seen emptier than it is. False, and nothing changed, when either
   * has moved on (the first was stopped, its CPUs perhaps given to another; the second stopped),
   * or when the second's owner may not take them (inactive, at the cap `cap`, or behind a user
   * holding fewer slots: see fair-share.ts); placement then decides.
   */
  async handOver(hub: number, fromId: string, toId: string, cap: number | null): Promise<boolean> {
    return ((await runNamed(this.dataSource, HAND_OVER, [hub, fromId, toId, cap])).rowCount ?? 0) > 0;
  }

  /** Puts back in line executions this hub prepared and let go of (those still pending). */
  async requeue(hub: number, ids: readonly string[]): Promise<void> {
    await this.dataSource.query(
      `UPDATE job_executions SET node_id = NULL, hub = NULL, prepared = false, modified = now()
       WHERE id = ANY($2) AND hub = $1 AND status = 'pending' AND prepared`,
      [hub, ids],
    );
  }

  /** The executions this hub started (or submitted to a queueing cluster) that have not ended. */
  started(hub: number): Promise<StartedExecution[]> {
    return this.dataSource.query(
      `SELECT id, job_id AS "jobId", status, node_id AS "nodeId", driver_ref AS "driverRef", execution_dir AS "executionDir", task_state AS "taskState",
              owner_id AS "ownerId", (SELECT j.workload_key FROM cluster_jobs j WHERE j.id = job_id) AS "workloadKey"
       FROM job_executions WHERE hub = $1 AND status IN ('pending', 'running') AND driver_ref IS NOT NULL`,
      [hub],
    );
  }

  /** The running executions on these nodes whose directories are below `dirPrefix`, with their profile's maxDiskMiB (see DiskReserve). */
  runningIn(nodeIds: readonly string[], dirPrefix: string): Promise<{ id: string; executionDir: string; maxDiskMiB: number | null }[]> {
    return this.dataSource.query(
      `SELECT e.id, e.execution_dir AS "executionDir", (j.task->'limits'->>'maxDiskMiB')::bigint::float8 AS "maxDiskMiB"
       FROM job_executions e JOIN cluster_jobs j ON j.id = e.job_id
       WHERE e.status = 'running' AND e.node_id = ANY($1) AND starts_with(e.execution_dir, $2)`,
      [nodeIds, dirPrefix],
    );
  }

  /**
   * Ended executions whose directories are below `dirPrefix`, the longest ended first (by their
   * last change, which is their end), after `after` in that order (see DiskReserve).
   */
  endedIn(
    dirPrefix: string,
    after: { modified: string; id: string } | undefined,
    limit: number,
  ): Promise<{ id: string; executionDir: string; modified: string }[]> {
    // Times as text, to the microsecond: the next batch starts exactly after the last of this one.
    return this.dataSource.query(
      `SELECT id, execution_dir AS "executionDir", modified::text AS modified FROM job_executions
       WHERE status IN ('completed', 'failed', 'lost') AND starts_with(execution_dir, $1) AND ($2::timestamptz IS NULL OR (modified, id) > ($2, $3::uuid))
       ORDER BY modified, id LIMIT $4`,
      [dirPrefix, after?.modified ?? null, after?.id ?? null, limit],
    );
  }

  /**
   * The jobs with executions not started yet (pending, never launched) whose owner was deactivated
   * (their name given) or deleted (null), from job_executions_owner_line_idx.
   */
  revokedPending(): Promise<{ jobId: string; userName: string | null }[]> {
    return this.dataSource.query(
      `SELECT DISTINCT e.job_id AS "jobId", u.user_name AS "userName" FROM job_executions e LEFT JOIN users u ON u.id = e.owner_id
       WHERE e.status = 'pending' AND e.driver_ref IS NULL AND (e.owner_id IS NULL OR e.owner_id IN (SELECT i.id FROM users i WHERE NOT i.active))`,
    );
  }

  /** The executions of a job that have not ended. */
  unfinishedOf(jobId: string): Promise<{ id: string; status: ExecutionStatus; driverRef: string | null; executionDir: string }[]> {
    return this.dataSource.query(
      `SELECT id, status, driver_ref AS "driverRef", execution_dir AS "executionDir" FROM job_executions WHERE job_id = $1 AND status IN ('pending', 'running')`,
      [jobId],
    );
  }

  /** What the hub asked to kill an execution another hub follows needs to know of it. */
  async stopTarget(id: string): Promise<{ driverRef: string | null; executionDir: string; hub: number | null } | undefined> {
    const rows: { driverRef: string | null; executionDir: string; hub: number | null }[] = await this.dataSource.query(
      `SELECT driver_ref AS "driverRef", execution_dir AS "executionDir", hub FROM job_executions WHERE id = $1`,
      [id],
    );
    return rows[0];
  }

  /**
   * Writes an execution's transition (and its job's status) if it is still `expected` (and this
   * hub's, when `hub` is given); false when it has moved on meanwhile (and nothing is announced).
   */
  async transition(id: string, expected: ExecutionStatus, hub: number | null, change: ExecutionChange, manager?: EntityManager): Promise<boolean> {
    const values = [...transitionValues(id, expected, hub, change), change.notices ?? []];
    // Within a transaction, on its connection; otherwise as the named statement every start and end runs.
    const [{ written }]: { written: number }[] = manager
      ? await manager.query(TRANSITION.text, values)
      : (await runNamed<{ written: number }>(this.dataSource, TRANSITION, values)).rows;
    return written > 0;
  }

  /**
   * Records the end of an execution this hub follows, `expected` as it is (running, or pending when
   * its start is written with its end; false, and nothing changed, when it was stopped meanwhile),
   * and gives its CPUs to `nextId`, which this hub prepared on its node, in one statement: the node
   * is never seen emptier than it is, and its CPUs are never booked twice. `handed` is false when
   * the next was stopped meanwhile, or its owner may not take them (see handOver).
   */
  async endAndHandOver(
    hub: number,
    id: string,
    expected: 'pending' | 'running',
    change: ExecutionChange,
    nextId: string,
    cap: number | null,
  ): Promise<{ written: boolean; handed: boolean }> {
    const values = [...transitionValues(id, expected, hub, change), nextId, cap, change.notices ?? []];
    const [{ written, handed }] = (await runNamed<{ written: number; handed: number }>(this.dataSource, END_AND_HAND_OVER, values)).rows;
    return { written: written > 0, handed: handed > 0 };
  }

  /**
   * Changes an execution under its row lock, then its job's status; `change` returns false to
   * leave it as it is (it has moved on meanwhile). `notices` announce the change (given the
   * execution as changed and its job's workload key), in the same transaction.
   */
  async updateExecution(
    id: string,
    change: (execution: JobExecution) => boolean,
    notices?: (execution: JobExecution, workloadKey: string | null) => readonly string[],
  ): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      const execution = await manager.getRepository(JobExecution).createQueryBuilder('e').setLock('pessimistic_write').where('e.id = :id', { id }).getOne();
      if (!execution) return;
      const expected = execution.status;
      if (!change(execution)) return;
      const rows: { workloadKey: string | null }[] = notices
        ? await manager.query('SELECT workload_key AS "workloadKey" FROM cluster_jobs WHERE id = $1', [execution.jobId])
        : [];
      const { status, nodeId, driverRef, exitCode, taskState } = execution;
      await this.transition(
        id,
        expected,
        null,
        { status, nodeId, driverRef, exitCode, taskState, notices: notices?.(execution, rows[0]?.workloadKey ?? null) },
        manager,
      );
    });
  }
}

import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { latestAttemptsSelect, type LatestAttemptRow } from '../cluster/cluster.service.js';
import { queryKept } from '../common/database/named-statements.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import { fetchListSlice, isoTime, whereInScopeOrOwned } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { NodeState, RunState } from './dto/pipeline-run.dto.js';
import { PipelineRun } from './entities/pipeline-run.entity.js';
import type { PipelineSpecShape } from './pipeline-validation.js';
import type { Outcome } from './run-graph.js';

export interface NodeEvent {
  readonly time: string;
  readonly type: string;
  readonly details: Readonly<Record<string, string>>;
}

/** A run as the engine and the replies read it. */
export interface RunRow {
  readonly id: string;
  readonly namespaceId: string;
  readonly namespaceName: string;
  readonly pipelineId: string | null;
  readonly ownerId: string;
  readonly ownerName: string;
  readonly executionProfileId: string;
  readonly spec: PipelineSpecShape;
  readonly entryPoint: string | null;
  readonly environment: readonly { readonly name: string; readonly value: string }[];
  readonly state: RunState;
  readonly cancelled: boolean;
  readonly created: string;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
}

/** A node of a run, as stored. The engine changes these and writes back the ones it changed. */
/** A run as the engine locks it, with the revision its lock raised it to. */
export interface LockedRun extends RunRow {
  readonly revision: number;
  /** The latest attempts of the jobs the lock was asked to read with it (see lock); absent when it was asked for none. */
  readonly attempts?: LatestAttemptRow[];
  /**
   * The run's nodes, without their events, when the lock was asked for them and no other writer of
   * the run came in between its statement's snapshot and the lock (see lock); absent otherwise.
   */
  readonly nodes?: NodeRow[];
}

/** What a run's lock reads besides the run (see PipelineRunsRepository.lock). */
export interface RunLockReads {
  /** Its spec (default true). */
  readonly spec?: boolean;
  /** The latest attempts of these jobs. */
  readonly attemptsOf?: readonly string[];
  /** Its nodes, without their events, when no writer came in between (default false). */
  readonly nodes?: boolean;
}

export interface NodeRow {
  readonly runId: string;
  readonly name: string;
  readonly position: number;
  state: NodeState;
  outcome: Outcome | null;
  /** The attempt asked of the cluster (1 for the first); 0 before the first. */
  attempt: number;
  jobId: string | null;
  executionId: string | null;
  exitCode: number | null;
  startedAt: string | null;
  finishedAt: string | null;
  /** When the next attempt is due (a retry's delay). */
  retryAt: string | null;
  /** When the running attempt times out. */
  deadline: string | null;
  /** The attempt that was stopped for running past its timeout. */
  timedOut: number | null;
  overQuota: boolean;
  logsStored: boolean;
  events: NodeEvent[];
}

export interface ResultRow {
  readonly node: string;
  readonly name: string;
  readonly contentType: string;
  readonly size: number;
  readonly key: string;
}

export interface NewRun {
  readonly namespaceId: string;
  readonly pipelineId: string | null;
  readonly owner: { readonly id: string; readonly name: string };
  readonly executionProfileId: string;
  readonly spec: PipelineSpecShape;
  readonly entryPoint: string | null;
  readonly environment: readonly { readonly name: string; readonly value: string }[];
  readonly nodes: readonly string[];
}

/** A run to insert under the id the hub gave it. */
export interface IdentifiedRun extends NewRun {
  readonly id: string;
}

const RUN_COLUMNS = `r.id, r.namespace_id AS "namespaceId", n.name AS "namespaceName", r.pipeline_id AS "pipelineId", r.owner_id AS "ownerId",
  r.owner_name AS "ownerName", r.execution_profile_id AS "executionProfileId", r.spec, r.entry_point AS "entryPoint", r.environment, r.state, r.cancelled,
  ${isoTime('r.created')} AS created, ${isoTime('r.started_at')} AS "startedAt", ${isoTime('r.finished_at')} AS "finishedAt"`;

const NODE_COLUMNS = `run_id AS "runId", name, position, state, outcome, attempt, job_id AS "jobId", execution_id AS "executionId", exit_code AS "exitCode",
  ${isoTime('started_at')} AS "startedAt", ${isoTime('finished_at')} AS "finishedAt", ${isoTime('retry_at')} AS "retryAt", ${isoTime('deadline')} AS deadline,
  timed_out AS "timedOut", over_quota AS "overQuota", logs_stored AS "logsStored", events`;

/** A node's columns, its events left out (empty) when not `withEvents`. */
function nodeColumns(withEvents: boolean): string {
  return withEvents ? NODE_COLUMNS : NODE_COLUMNS.replace(/, events$/, `, '[]'::jsonb AS events`);
}

/** What a run list item reads beyond the run's own columns. */
const LIST_COLUMNS = ['id', 'namespaceId', 'pipelineId', 'ownerId', 'executionProfileId', 'state', 'cancelled'];
const LIST_EXTRA = {
  namespaceName: '(SELECT n.name FROM namespaces n WHERE n.id = run.namespace_id)',
  created: isoTime('run.created'),
  startedAt: isoTime('run.started_at'),
  finishedAt: isoTime('run.finished_at'),
};

export type RunListRow = Pick<
  RunRow,
  'id' | 'namespaceId' | 'namespaceName' | 'pipelineId' | 'ownerId' | 'executionProfileId' | 'state' | 'cancelled' | 'created' | 'startedAt' | 'finishedAt'
>;

@Injectable()
export class PipelineRunsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** A run and its nodes, all Waiting: the statement of insertMany, for one. */
  async insert(run: NewRun): Promise<string> {
    const id = randomUUID();
    await this.insertMany(this.dataSource.manager, [{ ...run, id }]);
    return id;
  }

  /**
   * Runs and their nodes, all Waiting, in one statement of the caller's transaction, under the ids
   * the hub gave them (a trigger's firing names its run before either is written). Each distinct
   * spec is sent once: a batch of firings starts many runs of few pipelines.
   */
  async insertMany(manager: EntityManager, runs: readonly IdentifiedRun[]): Promise<void> {
    if (runs.length === 0) return;
    const specs: PipelineSpecShape[] = [];
    const nodeLists: (readonly string[])[] = [];
    const indexes = new Map<PipelineSpecShape, Map<readonly string[], number>>();
    const indexOf = (run: IdentifiedRun): number => {
      const byNodes = indexes.get(run.spec) ?? new Map<readonly string[], number>();
      indexes.set(run.spec, byNodes);
      let index = byNodes.get(run.nodes);
      if (index === undefined) {
        index = specs.push(run.spec) - 1;
        nodeLists.push(run.nodes);
        byNodes.set(run.nodes, index);
      }
      return index;
    };
    const rows = runs.map((run) => ({
      id: run.id,
      namespace_id: run.namespaceId,
      pipeline_id: run.pipelineId,
      owner_id: run.owner.id,
      owner_name: run.owner.name,
      execution_profile_id: run.executionProfileId,
      spec: indexOf(run),
      entry_point: run.entryPoint,
      environment: run.environment,
    }));
    await manager.query(
      `WITH given AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, namespace_id uuid, pipeline_id uuid, owner_id uuid, owner_name text,
           execution_profile_id uuid, spec int, entry_point text, environment jsonb)),
         runs AS (INSERT INTO pipeline_runs (id, namespace_id, pipeline_id, owner_id, owner_name, execution_profile_id, spec, entry_point, environment)
           SELECT id, namespace_id, pipeline_id, owner_id, owner_name, execution_profile_id, $2::jsonb -> spec, entry_point, environment FROM given RETURNING id)
       INSERT INTO pipeline_run_nodes (run_id, name, position)
       SELECT given.id, node.name, node.position - 1
       FROM runs JOIN given ON given.id = runs.id, jsonb_array_elements_text($3::jsonb -> given.spec) WITH ORDINALITY AS node(name, position)`,
      [JSON.stringify(rows), JSON.stringify(specs), JSON.stringify(nodeLists)],
    );
  }

  async find(id: string, manager: EntityManager = this.dataSource.manager): Promise<RunRow | null> {
    const rows = await queryKept<RunRow>(manager, `SELECT ${RUN_COLUMNS} FROM pipeline_runs r JOIN namespaces n ON n.id = r.namespace_id WHERE r.id = $1`, [
      id,
    ]);
    return rows[0] ?? null;
  }

  /**
   * The run, locked for this transaction, its revision raised (see the RunRevisions migration):
   * every write of its nodes goes through here or setJobs, so a hub that wrote the revision before
   * this one knows its nodes as they are. Null when there is none. With `spec: false` its spec is
   * left out (`null`): a run's spec never changes, and the engine keeps it parsed. With `attemptsOf`,
   * the latest attempts of those jobs are read in the same statement (`attempts`), read after the
   * lock is taken: a pass that knows which jobs it will read spares a round trip. With `nodes`,
   * so are the run's nodes (without their events), a round trip a pass that kept none (a run's first,
   * the first after another hub wrote) spares: they are those of the statement's snapshot, taken
   * before any wait for the lock, so they come back (`nodes`) only when the revision that snapshot
   * saw is the one just raised (no writer of the run came in between), else the caller reads them.
   */
  async lock(manager: EntityManager, id: string, read: RunLockReads = {}): Promise<LockedRun | null> {
    const { spec: withSpec = true, attemptsOf: jobIds, nodes: withNodes = false } = read;
    const columns = withSpec ? RUN_COLUMNS : RUN_COLUMNS.replace('r.spec,', 'NULL AS spec,');
    const params: unknown[] = [id];
    let extra = '';
    if (jobIds !== undefined) {
      params.push(jobIds);
      extra += `, (SELECT coalesce(json_agg(a), '[]') FROM (${latestAttemptsSelect(`$${params.length}`)}) a) AS attempts`;
    }
    if (withNodes)
      extra += `, (SELECT revision FROM pipeline_runs WHERE id = $1) AS "seenRevision",
        (SELECT coalesce(json_agg(o ORDER BY o.position), '[]') FROM (SELECT ${nodeColumns(false)} FROM pipeline_run_nodes WHERE run_id = $1) o) AS nodes`;
    // Of a few shapes (the options above), each kept planned: a pass of every node's end runs it.
    const rows = await queryKept<LockedRun & { seenRevision?: number }>(
      manager,
      `WITH r AS (UPDATE pipeline_runs SET revision = revision + 1 WHERE id = $1 RETURNING *) SELECT ${columns}, r.revision${extra} FROM r JOIN namespaces n ON n.id = r.namespace_id`,
      params,
    );
    const row = rows[0];
    if (!row || !withNodes) return row ?? null;
    const { seenRevision, nodes, ...run } = row;
    return seenRevision === run.revision - 1 ? { ...run, nodes } : run;
  }

  /**
   * A run's nodes in spec order; without their events when `withEvents` is false (what the engine
   * reads on every pass: it appends events, and parsing every node's for each would cost a run of
   * many nodes the most of its time).
   */
  nodesOf(runId: string, manager: EntityManager = this.dataSource.manager, withEvents = true): Promise<NodeRow[]> {
    return queryKept(manager, `SELECT ${nodeColumns(withEvents)} FROM pipeline_run_nodes WHERE run_id = $1 ORDER BY position`, [runId]);
  }

  async node(runId: string, name: string): Promise<NodeRow | null> {
    const rows: NodeRow[] = await this.dataSource.query(`SELECT ${NODE_COLUMNS} FROM pipeline_run_nodes WHERE run_id = $1 AND name = $2`, [runId, name]);
    return rows[0] ?? null;
  }

  /** Writes back the nodes the engine changed, in one statement; their `events` are appended to those stored. */
  async saveNodes(manager: EntityManager, nodes: readonly NodeRow[]): Promise<void> {
    if (nodes.length === 0) return;
    await queryKept(
      manager,
      `UPDATE pipeline_run_nodes n SET state = c.state, outcome = c.outcome, attempt = c.attempt, job_id = c.job_id, execution_id = c.execution_id,
         exit_code = c.exit_code, started_at = c.started_at, finished_at = c.finished_at, retry_at = c.retry_at, deadline = c.deadline,
         timed_out = c.timed_out, over_quota = c.over_quota, logs_stored = n.logs_stored OR c.logs_stored, events = n.events || c.events
       FROM jsonb_to_recordset($1::jsonb) AS c(run_id uuid, name text, state text, outcome text, attempt int, job_id uuid, execution_id uuid, exit_code int,
         started_at timestamptz, finished_at timestamptz, retry_at timestamptz, deadline timestamptz, timed_out int, over_quota boolean, logs_stored boolean, events jsonb)
       WHERE n.run_id = c.run_id AND n.name = c.name`,
      [
        JSON.stringify(
          nodes.map((node) => ({
            run_id: node.runId,
            name: node.name,
            state: node.state,
            outcome: node.outcome,
            attempt: node.attempt,
            job_id: node.jobId,
            execution_id: node.executionId,
            exit_code: node.exitCode,
            started_at: node.startedAt,
            finished_at: node.finishedAt,
            retry_at: node.retryAt,
            deadline: node.deadline,
            timed_out: node.timedOut,
            over_quota: node.overQuota,
            logs_stored: node.logsStored,
            events: node.events,
          })),
        ),
      ],
    );
  }

  async saveRun(
    manager: EntityManager,
    id: string,
    change: { state: RunState; cancelled?: boolean; startedAt?: string | null; finishedAt?: string | null },
  ): Promise<void> {
    await queryKept(
      manager,
      `UPDATE pipeline_runs SET state = $2, cancelled = cancelled OR $3, started_at = coalesce(started_at, $4), finished_at = coalesce(finished_at, $5) WHERE id = $1`,
      [id, change.state, change.cancelled ?? false, change.startedAt ?? null, change.finishedAt ?? null],
    );
  }

  /**
   * Records nodes' jobs once the cluster has them (a node keeps its one job across attempts; it
   * waits for no quota any more), raising the run's revision (the run's row is locked first, as a
   * pass locks it); whether the run has ended meanwhile (cancelled) and the revision, or null when
   * the run is gone.
   */
  async setJobs(runId: string, jobs: readonly { readonly name: string; readonly jobId: string }[]): Promise<{ ended: boolean; revision: number } | null> {
    const rows = await queryKept<{ ended: boolean; revision: number }>(
      this.dataSource.manager,
      `WITH bump AS (UPDATE pipeline_runs SET revision = revision + 1 WHERE id = $1 RETURNING state, revision),
       set AS (UPDATE pipeline_run_nodes n SET job_id = j.job_id, over_quota = false FROM jsonb_to_recordset($2::jsonb) AS j(name text, job_id uuid)
         WHERE n.run_id = $1 AND n.name = j.name AND n.job_id IS NULL AND EXISTS (SELECT FROM bump))
       SELECT state NOT IN ('Queued', 'Executing') AS ended, revision FROM bump`,
      [runId, JSON.stringify(jobs.map(({ name, jobId }) => ({ name, job_id: jobId })))],
    );
    return rows[0] ?? null;
  }

  /**
   * Flags nodes whose logs the hub's store holds, under the run's lock as every write of several
   * nodes is (so that none waits for another in a cycle); the revision stays, as a hub that kept
   * the nodes without the flag only copies their logs once more (a pass's write keeps the flag).
   */
  async setLogsStored(runId: string, names: readonly string[]): Promise<void> {
    await queryKept(
      this.dataSource.manager,
      `WITH r AS (SELECT FROM pipeline_runs WHERE id = $1 FOR UPDATE)
       UPDATE pipeline_run_nodes SET logs_stored = true WHERE run_id = $1 AND name = ANY($2::text[]) AND EXISTS (SELECT FROM r)`,
      [runId, names],
    );
  }

  /**
   * Runs not ended with a node still Waiting or Running on a job that ended before `before` (see
   * PipelineEngine.sweepUnheard); a node waiting for its retry's time is left to its timer.
   */
  async runsWithUnheardEnds(before: Date): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(
      `SELECT DISTINCT r.id FROM pipeline_runs r
       JOIN pipeline_run_nodes n ON n.run_id = r.id AND n.state IN ('Waiting', 'Running') AND n.retry_at IS NULL
       JOIN cluster_jobs j ON j.id = n.job_id AND j.status = 'dead' AND j.finished_time < $1
       WHERE r.state IN ('Queued', 'Executing')`,
      [before.toISOString()],
    );
    return rows.map((row) => row.id);
  }

  /** The runs not yet ended, for a hub that reconciles. */
  async activeRunIds(): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(`SELECT id FROM pipeline_runs WHERE state IN ('Queued', 'Executing')`);
    return rows.map((row) => row.id);
  }

  /** The owners with a node waiting for room in their quota. */
  async ownersOverQuota(): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(
      `SELECT DISTINCT r.owner_id AS id FROM pipeline_run_nodes n JOIN pipeline_runs r ON r.id = n.run_id WHERE n.over_quota`,
    );
    return rows.map((row) => row.id);
  }

  /** Runs of an owner with a node waiting for room in the owner's quota. */
  async runsOverQuota(ownerId: string): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(
      `SELECT DISTINCT n.run_id AS id FROM pipeline_run_nodes n JOIN pipeline_runs r ON r.id = n.run_id WHERE n.over_quota AND r.owner_id = $1`,
      [ownerId],
    );
    return rows.map((row) => row.id);
  }

  /**
   * Runs in `scope` (and the caller's own, wherever they are), in `namespaceIds` when given; one
   * page, no count. A run starts and finishes after it was created, so a `startedAt` or
   * `finishedAt` LT bounds `created` too: given as a condition, it lets the walk along the index of
   * `created` start at that bound instead of at the newest run (PostgreSQL takes the times as
   * independent and walked 900,000 runs for `finishedAt` LT a date early in a million: 1.2 s
   * against 0.4 ms). The bound is an hour later than the filter's date, as `created` is the
   * database's clock and the times the hub's.
   */
  list(query: ListQuery, scope: NamespaceScope, callerId: string, namespaceIds?: readonly string[]): Promise<RunListRow[]> {
    const qb = this.dataSource.getRepository(PipelineRun).createQueryBuilder('run');
    whereInScopeOrOwned(qb, { namespace: 'run.namespace_id', item: 'run.id' }, scope, 'run.owner_id', callerId);
    if (namespaceIds) qb.andWhere('run.namespace_id = ANY(:namespaceIds)', { namespaceIds });
    query.filters.forEach((condition, index) => {
      if ((condition.field === 'startedAt' || condition.field === 'finishedAt') && condition.operator === 'LT')
        qb.andWhere(`run.created < CAST(:createdBound${index} AS timestamptz) + interval '1 hour'`, { [`createdBound${index}`]: condition.value });
    });
    return fetchListSlice<PipelineRun, RunListRow>(qb, query, { columns: LIST_COLUMNS, extra: LIST_EXTRA });
  }

  async insertResults(manager: EntityManager, runId: string, results: readonly ResultRow[]): Promise<void> {
    if (results.length === 0) return;
    await manager.query(
      `INSERT INTO pipeline_results (run_id, node, name, content_type, size, key)
       SELECT $1, r.node, r.name, r.content_type, r.size, r.key FROM jsonb_to_recordset($2::jsonb) AS r(node text, name text, content_type text, size bigint, key text)
       ON CONFLICT (run_id, node, name) DO UPDATE SET content_type = excluded.content_type, size = excluded.size, key = excluded.key`,
      [
        runId,
        JSON.stringify(
          results.map((result) => ({ node: result.node, name: result.name, content_type: result.contentType, size: result.size, key: result.key })),
        ),
      ],
    );
  }

  resultsOf(runId: string, node?: string): Promise<ResultRow[]> {
    return this.dataSource.query(
      `SELECT node, name, content_type AS "contentType", size::float8 AS size, key FROM pipeline_results WHERE run_id = $1 AND ($2::text IS NULL OR node = $2) ORDER BY node, name`,
      [runId, node ?? null],
    );
  }

  async result(runId: string, node: string, name: string): Promise<ResultRow | null> {
    const rows: ResultRow[] = await this.dataSource.query(
      `SELECT node, name, content_type AS "contentType", size::float8 AS size, key FROM pipeline_results WHERE run_id = $1 AND node = $2 AND name = $3`,
      [runId, node, name],
    );
    return rows[0] ?? null;
  }

  /** Deletes a finished run (its nodes and results with it); false when it is not finished. */
  async deleteFinished(id: string): Promise<boolean> {
    // A CTE, so that the reply is rows whatever the driver makes of a DELETE's.
    const rows: unknown[] = await this.dataSource.query(
      `WITH gone AS (DELETE FROM pipeline_runs WHERE id = $1 AND state NOT IN ('Queued', 'Executing') RETURNING id) SELECT id FROM gone`,
      [id],
    );
    return rows.length > 0;
  }

  /** Finished runs older than `before`, for the retention prune. */
  async finishedBefore(before: Date, limit: number): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(
      `SELECT id FROM pipeline_runs WHERE finished_at < $1 AND state NOT IN ('Queued', 'Executing') ORDER BY finished_at LIMIT $2`,
      [before, limit],
    );
    return rows.map((row) => row.id);
  }

  async countIn(namespaceId: string, manager: EntityManager): Promise<number> {
    const [{ count }]: { count: string }[] = await manager.query('SELECT count(*) AS count FROM pipeline_runs WHERE namespace_id = $1', [namespaceId]);
    return Number(count);
  }

  async location(id: string): Promise<{ namespaceId: string; namespaceName: string; ownerId: string } | null> {
    const rows: { namespaceId: string; namespaceName: string; ownerId: string }[] = await this.dataSource.query(
      'SELECT r.namespace_id AS "namespaceId", n.name AS "namespaceName", r.owner_id AS "ownerId" FROM pipeline_runs r JOIN namespaces n ON n.id = r.namespace_id WHERE r.id = $1',
      [id],
    );
    return rows[0] ?? null;
  }
}

import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { announceChange, ChangeFeed, RowCache } from '../common/database/change-feed.js';
import { isUniqueViolation } from '../common/database/postgres-errors.js';
import { ConflictError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import { fetchListPage, isoTime, whereInScope, type ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { LibraryEngine } from './dto/library-definition.dto.js';

/** A published library as stored, with what its definition says now. */
export interface PublishedRow {
  readonly id: string;
  readonly libraryDefinitionId: string;
  readonly name: string;
  readonly namespaceId: string;
  readonly namespaceName: string;
  readonly engine: LibraryEngine;
  readonly path: string | null;
  readonly options: Record<string, unknown>;
  readonly executionProfileId: string;
  readonly workers: number;
  readonly publisherId: string;
  readonly publisherName: string;
  readonly failedWorkerCount: number;
  readonly startTime: string;
}

export const WORKER_STATES = ['starting', 'ready', 'failed', 'stopped'] as const;
/** The change feed's "table" of publishers a start of whose workers was refused (id: the publisher). */
export const REFUSED_NOTICE = 'library_publisher_refused';
export type WorkerState = (typeof WORKER_STATES)[number];

/** One worker of a pool: the job it runs now (none while it is replaced), its endpoint, and how it stands. */
export interface WorkerRow {
  readonly libraryId: string;
  readonly index: number;
  /** Counts the worker's processes: each new job's workload key holds it, so that a start is submitted once. */
  readonly generation: number;
  readonly state: WorkerState;
  readonly jobId: string | null;
  readonly host: string | null;
  readonly port: number | null;
  readonly secret: string | null;
  readonly startTime: string | null;
  readonly retryAt: string | null;
  readonly message: string | null;
}

const PUBLISHED_SQL = `
  SELECT p.id, p.definition_id AS "libraryDefinitionId", d.name, d.namespace_id AS "namespaceId", n.name AS "namespaceName", d.engine, d.path,
         d.options, p.execution_profile_id AS "executionProfileId", p.workers, p.publisher_id AS "publisherId", p.publisher_name AS "publisherName",
         p.failed_worker_count AS "failedWorkerCount", ${isoTime('p.start_time')} AS "startTime"
  FROM published_libraries p JOIN library_definitions d ON d.id = p.definition_id JOIN namespaces n ON n.id = d.namespace_id`;

const WORKER_COLUMNS = `w.published_library_id AS "libraryId", w.worker_index AS "index", w.generation, w.state, w.job_id AS "jobId", w.host, w.port,
  w.secret, ${isoTime('w.start_time')} AS "startTime", ${isoTime('w.retry_at')} AS "retryAt", w.message`;

/** What a change of a worker sets. */
export interface WorkerChanges {
  readonly state?: WorkerState;
  readonly jobId?: string | null;
  /** Where it listens (host and port null until a launch on a node has picked them) and its secret. */
  readonly endpoint?: { readonly host: string | null; readonly port: number | null; readonly secret: string } | null;
  readonly startTime?: Date | null;
  readonly retryAt?: Date | null;
  readonly message?: string | null;
  /** Failed because its start was refused (the quota): a job of the publisher's ending may make room for it. */
  readonly refused?: boolean;
  /** Adds one to the generation: a new process is to be started. */
  readonly nextGeneration?: true;
}

/**
 * Published libraries and their workers. What every relayed request reads (the library, its ready
 * workers) is cached per hub and dropped by the change feed when any hub changes it (triggers of the
 * Libraries migration), and at once for this hub's own writes.
 */
@Injectable()
export class PublishedLibrariesRepository {
  private readonly libraries: RowCache<PublishedRow>;
  private readonly ready: RowCache<WorkerRow[]>;

  constructor(
    private readonly dataSource: DataSource,
    changes: ChangeFeed,
  ) {
    this.libraries = new RowCache<PublishedRow>(changes, 'published_libraries').clearOn('library_definitions').clearOn('namespaces');
    this.ready = new RowCache<WorkerRow[]>(changes, 'library_workers').clearOn('published_libraries');
  }

  /** A published library as requests read it (cached; see the class). */
  cached(id: string): Promise<PublishedRow | null> {
    return this.libraries.get(id, (key) => this.find(key));
  }

  /** Drops what this hub cached of a library, for a request that found its workers unreachable. */
  forget(libraryId: string): void {
    this.libraries.forget(libraryId);
    this.ready.forget(libraryId);
  }

  list(query: ListQuery, scope: NamespaceScope): Promise<ListPage<PublishedRow>> {
    const libraries = this.dataSource.createQueryBuilder().from<PublishedRow>(`(${PUBLISHED_SQL})`, 'library');
    return fetchListPage(whereInScope(libraries, { namespace: 'library."namespaceId"', item: 'library.id' }, scope), query);
  }

  async find(id: string, manager: EntityManager = this.dataSource.manager): Promise<PublishedRow | null> {
    const rows: PublishedRow[] = await manager.query(`${PUBLISHED_SQL} WHERE p.id = $1`, [id]);
    return rows[0] ?? null;
  }

  /** Every published library: what a hub follows at start. */
  all(): Promise<PublishedRow[]> {
    return this.dataSource.query(PUBLISHED_SQL);
  }

  /** Records a published library with its workers, all `starting` and without jobs yet; 409 when its definition is published already. */
  async insert(library: {
    id: string;
    definitionId: string;
    executionProfileId: string;
    workers: number;
    publisherId: string;
    publisherName: string;
    startTime: Date;
  }): Promise<void> {
    try {
      await this.dataSource.transaction(async (manager) => {
        await manager.query(
          `INSERT INTO published_libraries (id, definition_id, execution_profile_id, workers, publisher_id, publisher_name, start_time) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          [library.id, library.definitionId, library.executionProfileId, library.workers, library.publisherId, library.publisherName, library.startTime],
        );
        await manager.query(`INSERT INTO library_workers (published_library_id, worker_index) SELECT $1, index FROM generate_series(0, $2::int - 1) AS index`, [
          library.id,
          library.workers,
        ]);
      });
    } catch (error) {
      if (isUniqueViolation(error, 'published_libraries_definition_key'))
        throw new ConflictError('The library definition is published already: a definition is published once at a time');
      throw error;
    }
  }

  /** Deletes a published library (its workers and operations go with it); answers its workers as they were, or null when there was none. */
  async delete(id: string): Promise<WorkerRow[] | null> {
    return this.dataSource
      .transaction(async (manager) => {
        const locked: unknown[] = await manager.query('SELECT id FROM published_libraries WHERE id = $1 FOR UPDATE', [id]);
        if (locked.length === 0) return null;
        const workers: WorkerRow[] = await manager.query(
          `SELECT ${WORKER_COLUMNS} FROM library_workers w WHERE w.published_library_id = $1 ORDER BY w.worker_index`,
          [id],
        );
        await manager.query('DELETE FROM published_libraries WHERE id = $1', [id]);
        return workers;
      })
      .finally(() => this.forget(id));
  }

  workers(libraryId: string): Promise<WorkerRow[]> {
    return this.dataSource.query(`SELECT ${WORKER_COLUMNS} FROM library_workers w WHERE w.published_library_id = $1 ORDER BY w.worker_index`, [libraryId]);
  }

  /** The ready workers of a library, in index order: those requests go to (cached; see the class). */
  async readyWorkers(libraryId: string): Promise<WorkerRow[]> {
    return (await this.ready.get(libraryId, (key) => this.readyNow(key))) ?? [];
  }

  private readyNow(libraryId: string): Promise<WorkerRow[]> {
    return this.dataSource.query(
      `SELECT ${WORKER_COLUMNS} FROM library_workers w WHERE w.published_library_id = $1 AND w.state = 'ready' ORDER BY w.worker_index`,
      [libraryId],
    );
  }

  async worker(libraryId: string, index: number): Promise<WorkerRow | null> {
    const rows: WorkerRow[] = await this.dataSource.query(
      `SELECT ${WORKER_COLUMNS} FROM library_workers w WHERE w.published_library_id = $1 AND w.worker_index = $2`,
      [libraryId, index],
    );
    return rows[0] ?? null;
  }

  /** The worker whose job this is now, if any. */
  async workerOfJob(jobId: string): Promise<WorkerRow | null> {
    const rows: WorkerRow[] = await this.dataSource.query(`SELECT ${WORKER_COLUMNS} FROM library_workers w WHERE w.job_id = $1`, [jobId]);
    return rows[0] ?? null;
  }

  /**
   * Changes a worker when it is still at `generation` (a worker restarted or replaced meanwhile is
   * left alone): answers it as changed, or null. One statement, so that of several hubs acting on
   * one announcement only one changes it.
   */
  async updateWorker(
    libraryId: string,
    index: number,
    generation: number,
    changes: WorkerChanges,
    onlyStates?: readonly WorkerState[],
  ): Promise<WorkerRow | null> {
    const sets: string[] = [];
    const values: unknown[] = [libraryId, index, generation];
    const set = (column: string, value: unknown) => {
      values.push(value);
      sets.push(`${column} = $${values.length}`);
    };
    if (changes.state !== undefined) set('state', changes.state);
    if (changes.jobId !== undefined) set('job_id', changes.jobId);
    if (changes.endpoint !== undefined) {
      set('host', changes.endpoint?.host ?? null);
      set('port', changes.endpoint?.port ?? null);
      set('secret', changes.endpoint?.secret ?? null);
    }
    if (changes.startTime !== undefined) set('start_time', changes.startTime);
    if (changes.retryAt !== undefined) set('retry_at', changes.retryAt);
    if (changes.message !== undefined) set('message', changes.message);
    if (changes.refused !== undefined) set('refused', changes.refused);
    if (changes.nextGeneration) sets.push('generation = w.generation + 1');
    let where = 'w.published_library_id = $1 AND w.worker_index = $2 AND w.generation = $3';
    if (onlyStates) {
      values.push(onlyStates);
      where += ` AND w.state = ANY($${values.length})`;
    }
    const rows: WorkerRow[] = await this.dataSource.query(
      `WITH w AS (UPDATE library_workers w SET ${sets.join(', ')} WHERE ${where} RETURNING w.*) SELECT ${WORKER_COLUMNS} FROM w`,
      values,
    );
    this.forget(libraryId);
    return rows[0] ?? null;
  }

  /**
   * Takes the worker whose job `jobId` ended unasked: counted in its library's failedWorkerCount,
   * without a job, at its next generation. One that was ready is left `starting`, for the caller to
   * start its replacement at once (a retry pass takes only failed workers, so no other hub starts
   * it too); one that ended before it was ever ready is left `failed` until `retryAt`, so that a
   * worker that cannot start (a broken file, a node without room) is not restarted in a tight loop.
   * Null when the job is no worker's now (restarted, unpublished, or taken by another hub already).
   */
  async takeEnded(jobId: string, message: string, retryAt: Date): Promise<WorkerRow | null> {
    return this.dataSource
      .transaction(async (manager) => {
        const rows: WorkerRow[] = await manager.query(
          `WITH w AS (UPDATE library_workers w SET state = CASE WHEN w.state = 'ready' THEN 'starting' ELSE 'failed' END,
             retry_at = CASE WHEN w.state = 'ready' THEN NULL ELSE $3::timestamptz END,
             job_id = NULL, host = NULL, port = NULL, secret = NULL, start_time = NULL, generation = w.generation + 1, message = $2, refused = false
           WHERE w.job_id = $1 RETURNING w.*) SELECT ${WORKER_COLUMNS} FROM w`,
          [jobId, message, retryAt],
        );
        const worker = rows[0];
        if (!worker) return null;
        await manager.query('UPDATE published_libraries SET failed_worker_count = failed_worker_count + 1 WHERE id = $1', [worker.libraryId]);
        return worker;
      })
      .then((worker) => {
        if (worker) this.forget(worker.libraryId);
        return worker;
      });
  }

  /**
   * Claims the failed workers due for another try (one publisher's whose start was refused when
   * `publisherId` is given: one of their jobs ended, which may make room; else those whose retry
   * time has come): each moved to `starting` at its next generation
   * in one statement, skipping rows another hub holds, so that each is started by one hub.
   */
  claimRetries(now: Date, publisherId?: string): Promise<WorkerRow[]> {
    return this.dataSource.query(
      `WITH due AS (
         SELECT w.published_library_id, w.worker_index FROM library_workers w JOIN published_libraries p ON p.id = w.published_library_id
         WHERE w.state = 'failed' AND w.job_id IS NULL AND ${publisherId ? 'p.publisher_id = $1 AND w.refused' : '(w.retry_at IS NULL OR w.retry_at <= $1)'}
         ORDER BY w.retry_at NULLS FIRST LIMIT 100 FOR UPDATE OF w SKIP LOCKED),
       w AS (UPDATE library_workers w SET state = 'starting', generation = w.generation + 1, retry_at = NULL, refused = false
         FROM due WHERE w.published_library_id = due.published_library_id AND w.worker_index = due.worker_index RETURNING w.*)
       SELECT ${WORKER_COLUMNS} FROM w`,
      [publisherId ?? now],
    );
  }

  /** The publishers with workers whose start was refused, waiting for one of their jobs to end (see claimRetries). */
  async publishersRefused(): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(
      `SELECT DISTINCT p.publisher_id AS id FROM library_workers w JOIN published_libraries p ON p.id = w.published_library_id
       WHERE w.state = 'failed' AND w.job_id IS NULL AND w.refused`,
    );
    return rows.map((row) => row.id);
  }

  /** Tells every hub (this one too) that a start of one of this publisher's workers was refused. */
  announceRefused(publisherId: string): Promise<void> {
    return announceChange(this.dataSource, { table: REFUSED_NOTICE, id: publisherId });
  }

  /** Workers still starting without a job (a hub ended between claiming and submitting): failed, to be tried again at once. */
  async releaseOrphans(): Promise<void> {
    await this.dataSource.query(`UPDATE library_workers SET state = 'failed', retry_at = NULL WHERE state = 'starting' AND job_id IS NULL`);
  }

  /** The earliest retry time among failed workers, for the timer. */
  async nextRetry(): Promise<Date | null> {
    const rows: { at: Date | null }[] = await this.dataSource.query(`SELECT min(retry_at) AS at FROM library_workers WHERE state = 'failed'`);
    return rows[0]?.at ?? null;
  }

  /** Every worker of every library with a job: what a hub reconciles at start. */
  withJobs(): Promise<WorkerRow[]> {
    return this.dataSource.query(`SELECT ${WORKER_COLUMNS} FROM library_workers w WHERE w.job_id IS NOT NULL`);
  }
}

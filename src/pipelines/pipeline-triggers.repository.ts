import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import type { NamespaceScope } from '../common/http/access-scope.js';
import { fetchListPage, isoTime, whereInScope, type ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { FiringState, TriggerSpecShape, TriggerType } from './dto/pipeline-trigger.dto.js';
import { PipelineTrigger } from './entities/pipeline-trigger.entity.js';
import { TriggerFiring } from './entities/trigger-firing.entity.js';

/** A trigger as replies and the firing loop read it: its pipeline's namespace beside it, times as ISO strings. */
export interface TriggerRow {
  readonly id: string;
  readonly pipelineId: string;
  readonly namespaceId: string;
  readonly namespaceName: string;
  readonly ownerId: string;
  readonly ownerName: string;
  readonly type: TriggerType;
  readonly disabled: boolean;
  readonly spec: TriggerSpecShape;
  readonly executionProfileId: string;
  readonly enabledAt: string;
  readonly nextDue: string | null;
  readonly lastTriggered: string | null;
  readonly version: number;
  readonly created: string;
  readonly modified: string;
}

/** What a create or an update sets. */
export interface TriggerChanges {
  readonly pipelineId: string;
  readonly owner: { readonly id: string; readonly name: string };
  readonly disabled: boolean;
  readonly spec: TriggerSpecShape;
  readonly executionProfileId: string;
  readonly enabledAt: Date;
  readonly nextDue: Date | null;
}

export type TriggerListRow = Omit<TriggerRow, 'namespaceId' | 'namespaceName' | 'ownerName' | 'enabledAt' | 'nextDue'>;

export interface FiringRow {
  readonly triggerId: string;
  readonly triggerTime: string;
  readonly state: FiringState;
  readonly runId: string | null;
  readonly error: string | null;
}

/** A firing to record, with its claim key (api-map §7). */
export interface NewFiring {
  readonly triggerId: string;
  readonly triggerTime: Date;
  readonly kind: 'Cron' | 'Arrival' | 'Existence';
  readonly file?: { readonly path: string; readonly size: number; readonly mtime: Date };
  readonly runId: string | null;
  readonly error: string | null;
}

/** Where a handled trigger goes on: its next due instant (null: none left), and the latest triggerTime it fired (null: none). */
export interface TriggerAdvance {
  readonly id: string;
  readonly nextDue: Date | null;
  readonly lastTriggered: Date | null;
}

/** A file as a poll saw it. */
export interface SeenFile {
  readonly path: string;
  readonly size: number;
  readonly mtime: Date;
}

const TRIGGER_COLUMNS = `t.id, t.pipeline_id AS "pipelineId", e.namespace_id AS "namespaceId", n.name AS "namespaceName", t.owner_id AS "ownerId",
  t.owner_name AS "ownerName", t.type, t.disabled, t.spec, t.execution_profile_id AS "executionProfileId", ${isoTime('t.enabled_at')} AS "enabledAt",
  ${isoTime('t.next_due')} AS "nextDue", ${isoTime('t.last_triggered')} AS "lastTriggered", t.version, ${isoTime('t.created')} AS created,
  ${isoTime('t.modified')} AS modified`;
const TRIGGER_FROM = 'pipeline_triggers t JOIN pipeline_entries e ON e.id = t.pipeline_id JOIN namespaces n ON n.id = e.namespace_id';

const LIST_COLUMNS = ['id', 'pipelineId', 'ownerId', 'type', 'disabled', 'spec', 'executionProfileId', 'version'];
const LIST_EXTRA = { created: isoTime('trigger.created'), modified: isoTime('trigger.modified'), lastTriggered: isoTime('trigger.last_triggered') };

const FIRING_COLUMNS = ['triggerId', 'state', 'runId', 'error'];
const FIRING_EXTRA = { triggerTime: isoTime('firing.trigger_time') };

@Injectable()
export class PipelineTriggersRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** A page of a pipeline's triggers. */
  list(pipelineId: string, query: ListQuery): Promise<ListPage<TriggerListRow>> {
    const qb = this.dataSource.getRepository(PipelineTrigger).createQueryBuilder('trigger').where('trigger.pipeline_id = :pipelineId', { pipelineId });
    return fetchListPage<PipelineTrigger, TriggerListRow>(qb, query, { columns: LIST_COLUMNS, extra: LIST_EXTRA });
  }

  async find(id: string, manager: EntityManager = this.dataSource.manager): Promise<TriggerRow | null> {
    const rows: TriggerRow[] = await manager.query(`SELECT ${TRIGGER_COLUMNS} FROM ${TRIGGER_FROM} WHERE t.id = $1`, [id]);
    return rows[0] ?? null;
  }

  /** Inserts a trigger, with the files a File trigger takes as seen (those present when it is created). */
  async insert(changes: TriggerChanges, seen?: readonly SeenFile[]): Promise<TriggerRow> {
    const id = await this.dataSource.transaction(async (manager) => {
      const [{ id }]: { id: string }[] = await manager.query(
        `INSERT INTO pipeline_triggers (pipeline_id, owner_id, owner_name, type, disabled, spec, execution_profile_id, enabled_at, next_due, version)
         VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, 1) RETURNING id`,
        [
          changes.pipelineId,
          changes.owner.id,
          changes.owner.name,
          changes.spec.type,
          changes.disabled,
          JSON.stringify(changes.spec),
          changes.executionProfileId,
          changes.enabledAt,
          changes.nextDue,
        ],
      );
      if (seen) await this.arrivals(manager, id, seen);
      return id;
    });
    return (await this.find(id)) as TriggerRow;
  }

  /**
   * Writes `changes` if the trigger is still at `version` (with the files a File trigger takes as
   * seen when it is enabled); false when it changed meanwhile (or is gone).
   */
  async update(id: string, version: number, changes: TriggerChanges, seen?: readonly SeenFile[]): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      // An UPDATE answers [rows, how many] through TypeORM.
      const [, updated]: [unknown, number] = await manager.query(
        `UPDATE pipeline_triggers SET owner_id = $3, owner_name = $4, type = $5, disabled = $6, spec = $7::jsonb, execution_profile_id = $8, enabled_at = $9,
           next_due = $10, version = version + 1, modified = now()
         WHERE id = $1 AND version = $2`,
        [
          id,
          version,
          changes.owner.id,
          changes.owner.name,
          changes.spec.type,
          changes.disabled,
          JSON.stringify(changes.spec),
          changes.executionProfileId,
          changes.enabledAt,
          changes.nextDue,
        ],
      );
      if (updated === 0) return false;
      if (seen) await this.replaceSeen(manager, id, seen);
      return true;
    });
  }

  /** Deletes a trigger still at `version`, with its firings and seen files; false when it changed meanwhile (or is gone). */
  async delete(id: string, version: number): Promise<boolean> {
    const [, deleted]: [unknown, number] = await this.dataSource.query('DELETE FROM pipeline_triggers WHERE id = $1 AND version = $2', [id, version]);
    return deleted > 0;
  }

  /** A page of firings: of one trigger, or of every trigger in `scope`. */
  listFirings(query: ListQuery, only: { triggerId: string } | { scope: NamespaceScope }): Promise<ListPage<FiringRow>> {
    const qb = this.dataSource.getRepository(TriggerFiring).createQueryBuilder('firing');
    if ('triggerId' in only) qb.where('firing.trigger_id = :triggerId', { triggerId: only.triggerId });
    else {
      // The triggers of the pipelines in scope, a semi-join: few rows, found by the pipelines' namespaces (and ids, for a Deny on some).
      const visible = whereInScope(
        this.dataSource
          .createQueryBuilder()
          .select('scoped.id')
          .from('pipeline_triggers', 'scoped')
          .innerJoin('pipeline_entries', 'scoped_entry', 'scoped_entry.id = scoped.pipeline_id'),
        { namespace: 'scoped_entry.namespace_id', item: 'scoped_entry.id' },
        only.scope,
      );
      if (visible.expressionMap.wheres.length > 0) qb.andWhere(`firing.trigger_id IN (${visible.getQuery()})`, visible.getParameters());
    }
    return fetchListPage<TriggerFiring, FiringRow>(qb, query, { columns: FIRING_COLUMNS, extra: FIRING_EXTRA });
  }

  // The firing loop's statements.

  /** The earliest instant a trigger is due, if any is enabled. */
  async earliestDue(): Promise<Date | null> {
    const [row]: { due: Date | null }[] = await this.dataSource.query('SELECT min(next_due) AS due FROM pipeline_triggers WHERE next_due IS NOT NULL');
    return row.due;
  }

  /**
   * Up to `limit` triggers due by `now`, locked for the transaction; those another hub holds are
   * skipped (it fires them). Earliest first; of those due together, by pipeline, owner and profile,
   * so that a batch's runs share their checks (PipelineRunsService.buildForTriggers).
   */
  async claimDue(manager: EntityManager, now: Date, limit: number): Promise<TriggerRow[]> {
    return manager.query(
      `SELECT ${TRIGGER_COLUMNS} FROM ${TRIGGER_FROM}
       WHERE t.id IN (SELECT id FROM pipeline_triggers WHERE next_due IS NOT NULL AND next_due <= $1
         ORDER BY next_due, pipeline_id, owner_id, execution_profile_id LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [now, limit],
    );
  }

  /**
   * After a batch of claimed triggers was handled, in one statement: records its firings, each
   * unless its claim key (api-map §7, the unique partial indexes of the Triggers migration) was
   * fired already, and moves each trigger on to its next due instant, with the latest triggerTime
   * it fired. The runs of the firings recorded, by id (those of the others must not be written).
   */
  async recordFirings(manager: EntityManager, firings: readonly NewFiring[], advances: readonly TriggerAdvance[]): Promise<Set<string>> {
    const rows: { runId: string }[] = await manager.query(
      `WITH recorded AS (
         INSERT INTO pipeline_trigger_firings (trigger_id, trigger_time, kind, path, size, mtime, state, run_id, error)
         SELECT f.trigger_id, f.trigger_time, f.kind, f.path, f.size, f.mtime, CASE WHEN f.run_id IS NULL THEN 'Failed' ELSE 'Success' END, f.run_id,
           CASE WHEN f.run_id IS NULL THEN f.error END
         FROM jsonb_to_recordset($1::jsonb) AS f(trigger_id uuid, trigger_time timestamptz, kind text, path text, size bigint, mtime timestamptz, run_id uuid, error text)
         ON CONFLICT DO NOTHING RETURNING run_id),
       advanced AS (
         UPDATE pipeline_triggers t SET next_due = a.next_due,
           last_triggered = CASE WHEN a.last_triggered IS NULL THEN t.last_triggered ELSE greatest(t.last_triggered, a.last_triggered) END
         FROM jsonb_to_recordset($2::jsonb) AS a(id uuid, next_due timestamptz, last_triggered timestamptz) WHERE t.id = a.id)
       SELECT run_id AS "runId" FROM recorded WHERE run_id IS NOT NULL`,
      [
        JSON.stringify(
          firings.map((firing) => ({
            trigger_id: firing.triggerId,
            trigger_time: firing.triggerTime,
            kind: firing.kind,
            path: firing.file?.path ?? null,
            size: firing.file?.size ?? null,
            mtime: firing.file?.mtime ?? null,
            run_id: firing.runId,
            error: firing.error,
          })),
        ),
        JSON.stringify(advances.map((advance) => ({ id: advance.id, next_due: advance.nextDue, last_triggered: advance.lastTriggered }))),
      ],
    );
    return new Set(rows.map((row) => row.runId));
  }

  /**
   * Of the files a poll saw, those new or changed (size or mtime) since the trigger last saw them,
   * now recorded as seen. Under the trigger's row lock; the conditional upsert alone would also
   * let only one of two concurrent polls have a file.
   */
  async arrivals(manager: EntityManager, triggerId: string, files: readonly SeenFile[]): Promise<SeenFile[]> {
    if (files.length === 0) return [];
    const rows: { path: string; size: string; mtime: Date }[] = await manager.query(
      `INSERT INTO pipeline_trigger_seen_files AS s (trigger_id, path, size, mtime)
       SELECT $1, f.path, f.size, f.mtime FROM jsonb_to_recordset($2::jsonb) AS f(path text, size bigint, mtime timestamptz)
       ON CONFLICT (trigger_id, path) DO UPDATE SET size = excluded.size, mtime = excluded.mtime
       WHERE s.size <> excluded.size OR s.mtime <> excluded.mtime
       RETURNING path, size, mtime`,
      [triggerId, JSON.stringify(files.map((file) => ({ path: file.path, size: file.size, mtime: file.mtime.toISOString() })))],
    );
    return rows.map((row) => ({ path: row.path, size: Number(row.size), mtime: row.mtime })).sort((a, b) => a.path.localeCompare(b.path));
  }

  /** Deletes firings whose triggerTime is before `before`, a batch at a time; how many. */
  async pruneFirings(before: Date, batch: number): Promise<number> {
    let pruned = 0;
    for (;;) {
      const [, deleted]: [unknown, number] = await this.dataSource.query(
        'DELETE FROM pipeline_trigger_firings WHERE id IN (SELECT id FROM pipeline_trigger_firings WHERE trigger_time < $1 LIMIT $2)',
        [before, batch],
      );
      pruned += deleted;
      if (deleted < batch) return pruned;
    }
  }

  /** The files a File trigger takes as seen when it is created or enabled: those present then. */
  private async replaceSeen(manager: EntityManager, triggerId: string, files: readonly SeenFile[]): Promise<void> {
    await manager.query('DELETE FROM pipeline_trigger_seen_files WHERE trigger_id = $1', [triggerId]);
    await this.arrivals(manager, triggerId, files);
  }
}

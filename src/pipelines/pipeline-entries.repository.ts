import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { isForeignKeyViolation, isUniqueViolation } from '../common/database/postgres-errors.js';
import { ConflictError, InvalidInputError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import { fetchListPage, isoTime, type ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { PipelineEntryType } from './dto/pipeline-entry.dto.js';
import { PipelineEntry } from './entities/pipeline-entry.entity.js';
import { PIPELINE_ENTRY_LIST_QUERY } from './list-queries.js';
import type { PipelineSpecShape } from './pipeline-validation.js';

/** An entry as replies show it: its namespace's name beside its id, its times as ISO strings. */
export interface PipelineEntryRow {
  readonly id: string;
  readonly namespaceId: string;
  readonly namespaceName: string;
  readonly type: PipelineEntryType;
  readonly name: string;
  readonly folderId: string | null;
  readonly folderPath: string;
  readonly spec: PipelineSpecShape | null;
  readonly version: number;
  readonly created: string;
  readonly modified: string;
}

/** The client-settable state of an entry, its namespace and folder by id. */
export interface PipelineEntryChanges {
  readonly namespaceId: string;
  readonly type: PipelineEntryType;
  readonly name: string;
  readonly folderId: string | null;
  readonly spec: PipelineSpecShape | null;
}

const ENTRY_SQL = `
  SELECT e.id, e.namespace_id AS "namespaceId", n.name AS "namespaceName", e.type, e.name, e.folder_id AS "folderId",
         e.folder_path AS "folderPath", e.spec, e.version, ${isoTime('e.created')} AS created, ${isoTime('e.modified')} AS modified
  FROM pipeline_entries e JOIN namespaces n ON n.id = e.namespace_id
  WHERE e.id = $1`;

/** What a list item reads beyond the entry's own columns. */
const LIST_COLUMNS = ['id', 'namespaceId', 'type', 'name', 'folderId', 'folderPath', 'spec', 'version'];
const LIST_EXTRA = {
  namespaceName: '(SELECT n.name FROM namespaces n WHERE n.id = entry.namespace_id)',
  created: isoTime('entry.created'),
  modified: isoTime('entry.modified'),
};

const STALE = Symbol('stale');
const PREPARE_ATTEMPTS = 3;

/** The path of the entries a folder holds: its own path and name. */
export function pathBelow(folderPath: string, name: string): string {
  return folderPath === '/' ? `/${name}` : `${folderPath}/${name}`;
}

/**
 * Every change to the entries of a namespace takes this lock first (both namespaces', in order, for
 * a move between them): a folder's rename or move rewrites the paths below it, a create reads its
 * folder's path, a move checks that a folder does not go below itself, and none of these may see
 * the tree half changed by another. Entries are edited by people, rarely: one writer at a time per
 * namespace costs nothing that matters.
 */
async function lockNamespaces(manager: EntityManager, namespaceIds: readonly string[]): Promise<void> {
  for (const id of [...new Set(namespaceIds)].sort()) await manager.query(`SELECT pg_advisory_xact_lock(hashtext('pipeline_entries'), hashtext($1))`, [id]);
}

interface LockedEntry {
  readonly namespace_id: string;
  readonly type: PipelineEntryType;
  readonly name: string;
  readonly folder_path: string;
  readonly version: number;
}

async function lockEntry(manager: EntityManager, id: string): Promise<LockedEntry | undefined> {
  const rows: LockedEntry[] = await manager.query('SELECT namespace_id, type, name, folder_path, version FROM pipeline_entries WHERE id = $1 FOR UPDATE', [id]);
  return rows[0];
}

/** The path of the entries inside `folderId` (`/` at the top level); 400 unless it is a folder of the namespace. */
async function pathInto(manager: EntityManager, namespaceId: string, folderId: string | null): Promise<string> {
  if (folderId === null) return '/';
  const rows: { namespace_id: string; type: PipelineEntryType; name: string; folder_path: string }[] = await manager.query(
    'SELECT namespace_id, type, name, folder_path FROM pipeline_entries WHERE id = $1',
    [folderId],
  );
  const folder = rows[0];
  if (!folder || folder.namespace_id !== namespaceId) throw InvalidInputError.at('/folderId', `No folder ${folderId} is in the entry's namespace`);
  if (folder.type !== 'Folder') throw InvalidInputError.at('/folderId', `Entry ${folderId} is a pipeline, not a folder`);
  return pathBelow(folder.folder_path, folder.name);
}

async function holdsEntries(manager: EntityManager, folderId: string): Promise<boolean> {
  const rows: unknown[] = await manager.query('SELECT 1 FROM pipeline_entries WHERE folder_id = $1 LIMIT 1', [folderId]);
  return rows.length > 0;
}

/** 400 when `folderId` is the folder `id` or lies below it. */
async function refuseCycle(manager: EntityManager, id: string, folderId: string): Promise<void> {
  const rows: unknown[] = await manager.query(
    `WITH RECURSIVE above AS (
       SELECT id, folder_id FROM pipeline_entries WHERE id = $2
       UNION ALL
       SELECT e.id, e.folder_id FROM pipeline_entries e JOIN above a ON e.id = a.folder_id)
     SELECT 1 FROM above WHERE id = $1 LIMIT 1`,
    [id, folderId],
  );
  if (rows.length > 0) throw InvalidInputError.at('/folderId', 'A folder cannot move into itself or below itself');
}

function conflictOf(error: unknown, changes: PipelineEntryChanges | undefined): unknown {
  if (isUniqueViolation(error, 'pipeline_entries_name_key'))
    return new ConflictError(`An entry named '${changes?.name}' already exists in this folder of the namespace (names are compared ignoring case)`);
  if (isForeignKeyViolation(error, 'pipeline_entries_folder_id_fkey')) return new ConflictError('The folder changed while this request was applied; retry');
  if (isForeignKeyViolation(error, 'pipeline_entries_namespace_id_fkey')) return new ConflictError('The namespace was deleted while this request was applied');
  return error;
}

@Injectable()
export class PipelineEntriesRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** A page of entries in `scope`, `total` from the kept counts where they serve the request. */
  list(query: ListQuery, scope: NamespaceScope): Promise<ListPage<PipelineEntryRow>> {
    return fetchListPage<PipelineEntry, PipelineEntryRow>(this.dataSource.getRepository(PipelineEntry).createQueryBuilder('entry'), query, {
      counts: PIPELINE_ENTRY_LIST_QUERY.counts,
      scope: { namespaces: scope, columns: { namespace: 'entry.namespace_id', item: 'entry.id' } },
      columns: LIST_COLUMNS,
      extra: LIST_EXTRA,
    });
  }

  async findById(id: string): Promise<PipelineEntryRow | null> {
    const rows: PipelineEntryRow[] = await this.dataSource.query(ENTRY_SQL, [id]);
    return rows[0] ?? null;
  }

  /** Inserts an entry into its folder (400 unless a folder of its namespace) and reads it back. */
  async insert(changes: PipelineEntryChanges): Promise<PipelineEntryRow> {
    try {
      return await this.dataSource.transaction(async (manager) => {
        await lockNamespaces(manager, [changes.namespaceId]);
        const folderPath = await pathInto(manager, changes.namespaceId, changes.folderId);
        const inserted: { id: string }[] = await manager.query(
          `INSERT INTO pipeline_entries (namespace_id, type, name, folder_id, folder_path, spec, version) VALUES ($1, $2, $3, $4, $5, $6::jsonb, 1) RETURNING id`,
          [changes.namespaceId, changes.type, changes.name, changes.folderId, folderPath, changes.spec && JSON.stringify(changes.spec)],
        );
        const rows: PipelineEntryRow[] = await manager.query(ENTRY_SQL, [inserted[0].id]);
        return rows[0];
      });
    } catch (error) {
      throw conflictOf(error, changes);
    }
  }

  /**
   * Changes an entry as `prepare` decides from its current state (outside any transaction, so it
   * may ask other services), then, under the namespaces' lock and the row's, applies it if the row
   * is still at that version (else prepares again; 409 after a few tries). A folder's new path is
   * written to every entry below it in the same transaction. Null when there is no such entry.
   */
  async update(id: string, prepare: (current: PipelineEntryRow) => Promise<PipelineEntryChanges>): Promise<PipelineEntryRow | null> {
    for (let attempt = 1; ; attempt += 1) {
      const current = await this.findById(id);
      if (!current) return null;
      const changes = await prepare(current);
      let result: PipelineEntryRow | null | typeof STALE;
      try {
        result = await this.dataSource.transaction(async (manager) => {
          await lockNamespaces(manager, [current.namespaceId, changes.namespaceId]);
          const locked = await lockEntry(manager, id);
          if (!locked) return null;
          if (locked.version !== current.version) return STALE;
          if (current.type === 'Folder' && changes.namespaceId !== current.namespaceId && (await holdsEntries(manager, id)))
            throw new ConflictError(`Folder '${current.name}' still holds entries: a folder moves to another namespace only when empty`);
          if (current.type === 'Folder' && changes.folderId !== null) await refuseCycle(manager, id, changes.folderId);
          const folderPath = await pathInto(manager, changes.namespaceId, changes.folderId);
          await manager.query(
            `UPDATE pipeline_entries SET namespace_id = $2, name = $3, folder_id = $4, folder_path = $5, spec = $6::jsonb, version = version + 1, modified = now()
             WHERE id = $1`,
            [id, changes.namespaceId, changes.name, changes.folderId, folderPath, changes.spec && JSON.stringify(changes.spec)],
          );
          const before = pathBelow(locked.folder_path, locked.name);
          const after = pathBelow(folderPath, changes.name);
          // The entries below a folder renamed or moved follow it; their ETags change with their paths.
          if (current.type === 'Folder' && before !== after)
            await manager.query(
              `WITH RECURSIVE below AS (
                 SELECT id FROM pipeline_entries WHERE folder_id = $1
                 UNION ALL
                 SELECT e.id FROM pipeline_entries e JOIN below b ON e.folder_id = b.id)
               UPDATE pipeline_entries SET folder_path = $3::text || substr(folder_path, length($2::text) + 1), version = version + 1
               WHERE id IN (SELECT id FROM below)`,
              [id, before, after],
            );
          const rows: PipelineEntryRow[] = await manager.query(ENTRY_SQL, [id]);
          return rows[0];
        });
      } catch (error) {
        throw conflictOf(error, changes);
      }
      if (result !== STALE) return result;
      if (attempt === PREPARE_ATTEMPTS) throw new ConflictError('The resource kept changing while this request was applied; retry');
    }
  }

  /** Deletes an entry once `check` (If-Match) passes; a folder that holds entries is 409. Null when there is none. */
  async delete(id: string, check: (current: PipelineEntryRow) => void): Promise<PipelineEntryRow | null> {
    for (let attempt = 1; ; attempt += 1) {
      const current = await this.findById(id);
      if (!current) return null;
      const result = await this.dataSource.transaction(async (manager) => {
        await lockNamespaces(manager, [current.namespaceId]);
        const locked = await lockEntry(manager, id);
        if (!locked) return null;
        if (locked.version !== current.version) return STALE;
        check(current);
        if (current.type === 'Folder' && (await holdsEntries(manager, id)))
          throw new ConflictError(`Folder '${current.name}' still holds entries; delete or move them first`);
        await manager.query('DELETE FROM pipeline_entries WHERE id = $1', [id]);
        return current;
      });
      if (result !== STALE) return result;
      if (attempt === PREPARE_ATTEMPTS) throw new ConflictError('The resource kept changing while this request was applied; retry');
    }
  }

  /** How many entries are in a namespace (inside the transaction deleting it). */
  async countIn(namespaceId: string, manager: EntityManager): Promise<number> {
    const [{ count }]: { count: string }[] = await manager.query('SELECT count(*) AS count FROM pipeline_entries WHERE namespace_id = $1', [namespaceId]);
    return Number(count);
  }
}

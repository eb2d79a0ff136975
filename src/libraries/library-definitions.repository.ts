import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { deleteLocked, updatePrepared } from '../common/database/locked-rows.js';
import { isForeignKeyViolation, isUniqueViolation } from '../common/database/postgres-errors.js';
import { ConflictError } from '../common/errors/hub-errors.js';
import { fetchListPage, type ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { LibraryDefinitionRow } from './dto/library-definition.dto.js';
import { LibraryDefinition } from './entities/library-definition.entity.js';

/** The client-settable state of a definition, its namespace by id. */
export type LibraryDefinitionChanges = Pick<LibraryDefinition, 'namespaceId' | 'name' | 'engine' | 'path' | 'options'>;

/** Definitions with their namespace's name. */
const DEFINITIONS_SQL = `
  SELECT d.id, d.namespace_id AS "namespaceId", n.name AS "namespaceName", d.name, d.engine, d.path, d.options, d.version, d.created, d.modified
  FROM library_definitions d JOIN namespaces n ON n.id = d.namespace_id`;

function conflictOf(error: unknown, changes: { name: string } | undefined): unknown {
  return isUniqueViolation(error, 'library_definitions_name_key')
    ? new ConflictError(`A library definition named '${changes?.name}' already exists in this namespace`)
    : error;
}

@Injectable()
export class LibraryDefinitionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  list(query: ListQuery): Promise<ListPage<LibraryDefinitionRow>> {
    return fetchListPage(this.dataSource.createQueryBuilder().from<LibraryDefinitionRow>(`(${DEFINITIONS_SQL})`, 'definition'), query);
  }

  async findById(id: string): Promise<LibraryDefinitionRow | null> {
    const rows: LibraryDefinitionRow[] = await this.dataSource.query(`${DEFINITIONS_SQL} WHERE d.id = $1`, [id]);
    return rows[0] ?? null;
  }

  /** Inserts a definition and reads it back in the same transaction. */
  async insert(changes: LibraryDefinitionChanges): Promise<LibraryDefinitionRow> {
    try {
      return await this.dataSource.transaction(async (manager) => {
        const inserted: { id: string }[] = await manager.query(
          'INSERT INTO library_definitions (namespace_id, name, engine, path, options) VALUES ($1, $2, $3, $4, $5) RETURNING id',
          [changes.namespaceId, changes.name, changes.engine, changes.path, JSON.stringify(changes.options)],
        );
        const rows: LibraryDefinitionRow[] = await manager.query(`${DEFINITIONS_SQL} WHERE d.id = $1`, [inserted[0].id]);
        return rows[0];
      });
    } catch (error) {
      throw conflictOf(error, changes);
    }
  }

  /** Changes a definition as `decide` prepares it from its current state (outside any transaction); false when there is none. */
  async update(id: string, decide: (current: LibraryDefinition) => Promise<LibraryDefinitionChanges>): Promise<boolean> {
    let changes: LibraryDefinitionChanges | undefined;
    try {
      return (await updatePrepared(this.dataSource, LibraryDefinition, id, async (current) => (changes = await decide(current)))) !== null;
    } catch (error) {
      throw conflictOf(error, changes);
    }
  }

  /** How many definitions are in a namespace (inside the transaction deleting it). */
  async countIn(namespaceId: string, manager: EntityManager): Promise<number> {
    const [{ count }]: { count: number }[] = await manager.query('SELECT count(*)::int AS count FROM library_definitions WHERE namespace_id = $1', [
      namespaceId,
    ]);
    return count;
  }

  /** Deletes a definition unless it is published (the published library's foreign key refuses: 409). */
  async delete(id: string, check: (current: LibraryDefinition) => void): Promise<LibraryDefinition | null> {
    try {
      return await deleteLocked(this.dataSource, LibraryDefinition, id, check);
    } catch (error) {
      if (isForeignKeyViolation(error, 'published_libraries_definition_id_fkey'))
        throw new ConflictError('The library definition is published: unpublish it before deleting it');
      throw error;
    }
  }
}

import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { isForeignKeyViolation, isUniqueViolation } from '../common/database/postgres-errors.js';
import { ConflictError, InvalidInputError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import { fetchListPage, whereInScope, type ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';

/** A binding as the repository reads it, with its profile's and namespace's names. */
export interface ProfileBindingRow {
  readonly id: string;
  readonly executionProfileId: string;
  readonly profileName: string;
  readonly namespaceId: string;
  readonly namespaceName: string;
  readonly isDefault: boolean;
  readonly version: number;
}

export interface ProfileBindingChanges {
  readonly executionProfileId: string;
  readonly namespaceId: string;
  readonly isDefault: boolean;
}

const BINDINGS_SQL = `
  SELECT b.id, b.execution_profile_id AS "executionProfileId", p.name AS "profileName", b.namespace_id AS "namespaceId",
         n.name AS "namespaceName", b.is_default AS "isDefault", b.version
  FROM execution_profile_bindings b
  JOIN execution_profiles p ON p.id = b.execution_profile_id
  JOIN namespaces n ON n.id = b.namespace_id`;

/**
 * Serialises every change to which binding is a namespace's default, across hubs: one
 * transaction-scoped advisory lock, taken before any row lock, so that no two such changes can
 * wait on each other. The partial unique index keeps the rule even without it.
 */
const DEFAULTS_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('hub:execution-profile-defaults', 0))";

function conflictOf(error: unknown): unknown {
  if (isUniqueViolation(error, 'execution_profile_bindings_unique_key')) return new ConflictError('This execution profile is already bound to this namespace');
  if (isUniqueViolation(error, 'execution_profile_bindings_pkey')) return new ConflictError('A binding with this id already exists');
  if (isUniqueViolation(error, 'execution_profile_bindings_one_default_key'))
    return new ConflictError('Another binding became the default of this namespace at the same time; retry');
  if (isForeignKeyViolation(error)) return new InvalidInputError('The execution profile or the namespace was deleted meanwhile');
  return error;
}

async function clearDefault(manager: EntityManager, namespaceId: string, except: string): Promise<void> {
  await manager.query(
    'UPDATE execution_profile_bindings SET is_default = false, version = version + 1, modified = now() WHERE namespace_id = $1 AND is_default AND id <> $2',
    [namespaceId, except],
  );
}

@Injectable()
export class ProfileBindingsRepository {
  constructor(private readonly dataSource: DataSource) {}

  list(query: ListQuery, scope: NamespaceScope): Promise<ListPage<ProfileBindingRow>> {
    const bindings = this.dataSource.createQueryBuilder().from<ProfileBindingRow>(`(${BINDINGS_SQL})`, 'binding');
    return fetchListPage(whereInScope(bindings, { namespace: 'binding."namespaceId"', item: 'binding.id' }, scope), query);
  }

  async findById(id: string, manager: EntityManager = this.dataSource.manager): Promise<ProfileBindingRow | null> {
    const rows: ProfileBindingRow[] = await manager.query(`${BINDINGS_SQL} WHERE b.id = $1`, [id]);
    return rows[0] ?? null;
  }

  async findIn(namespaceId: string, executionProfileId: string): Promise<ProfileBindingRow | null> {
    const rows: ProfileBindingRow[] = await this.dataSource.query(`${BINDINGS_SQL} WHERE b.namespace_id = $1 AND b.execution_profile_id = $2`, [
      namespaceId,
      executionProfileId,
    ]);
    return rows[0] ?? null;
  }

  async defaultOf(namespaceId: string): Promise<ProfileBindingRow | null> {
    const rows: ProfileBindingRow[] = await this.dataSource.query(`${BINDINGS_SQL} WHERE b.namespace_id = $1 AND b.is_default`, [namespaceId]);
    return rows[0] ?? null;
  }

  /** Inserts a binding (a default one takes the flag from the namespace's previous default) and reads it back. */
  async insert(id: string, changes: ProfileBindingChanges): Promise<ProfileBindingRow> {
    try {
      return await this.dataSource.transaction(async (manager) => {
        await manager.query(DEFAULTS_LOCK);
        if (changes.isDefault) await clearDefault(manager, changes.namespaceId, id);
        await manager.query('INSERT INTO execution_profile_bindings (id, execution_profile_id, namespace_id, is_default, version) VALUES ($1, $2, $3, $4, 1)', [
          id,
          changes.executionProfileId,
          changes.namespaceId,
          changes.isDefault,
        ]);
        return (await this.findById(id, manager)) as ProfileBindingRow;
      });
    } catch (error) {
      throw conflictOf(error);
    }
  }

  /**
   * Changes a binding: `decide` sees its current state outside any transaction (it may query other
   * services), then the commit takes the defaults lock and the row's, and writes if the row is
   * still the version `decide` saw (else it decides again; after a few tries, 409). False when
   * there is no such binding.
   */
  async update(id: string, decide: (current: ProfileBindingRow) => Promise<ProfileBindingChanges> | ProfileBindingChanges): Promise<boolean> {
    for (let attempt = 1; ; attempt += 1) {
      const current = await this.findById(id);
      if (!current) return false;
      const changes = await decide(current);
      let outcome: 'gone' | 'changed' | 'written';
      try {
        outcome = await this.dataSource.transaction(async (manager) => {
          await manager.query(DEFAULTS_LOCK);
          const locked: { version: number }[] = await manager.query('SELECT version FROM execution_profile_bindings WHERE id = $1 FOR UPDATE', [id]);
          if (locked.length === 0) return 'gone';
          if (locked[0].version !== current.version) return 'changed';
          if (changes.isDefault) await clearDefault(manager, changes.namespaceId, id);
          await manager.query(
            'UPDATE execution_profile_bindings SET execution_profile_id = $2, namespace_id = $3, is_default = $4, version = version + 1, modified = now() WHERE id = $1',
            [id, changes.executionProfileId, changes.namespaceId, changes.isDefault],
          );
          return 'written';
        });
      } catch (error) {
        throw conflictOf(error);
      }
      if (outcome !== 'changed') return outcome === 'written';
      if (attempt === 3) throw new ConflictError('The binding kept changing while this request was applied; retry');
    }
  }

  /** Makes a binding its namespace's default, whatever its version; false when there is no such binding. */
  async makeDefault(id: string): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query(DEFAULTS_LOCK);
      const locked: { namespaceId: string }[] = await manager.query(
        'SELECT namespace_id AS "namespaceId" FROM execution_profile_bindings WHERE id = $1 FOR UPDATE',
        [id],
      );
      if (locked.length === 0) return false;
      await clearDefault(manager, locked[0].namespaceId, id);
      await manager.query('UPDATE execution_profile_bindings SET is_default = true, version = version + 1, modified = now() WHERE id = $1 AND NOT is_default', [
        id,
      ]);
      return true;
    });
  }

  async delete(id: string, check: (current: ProfileBindingRow) => void): Promise<ProfileBindingRow | null> {
    return this.dataSource.transaction(async (manager) => {
      const rows: ProfileBindingRow[] = await manager.query(`${BINDINGS_SQL} WHERE b.id = $1 FOR UPDATE OF b`, [id]);
      if (rows.length === 0) return null;
      check(rows[0]);
      await manager.query('DELETE FROM execution_profile_bindings WHERE id = $1', [id]);
      return rows[0];
    });
  }

  /** How many bindings are in a namespace (inside the transaction deleting it). */
  async countIn(namespaceId: string, manager: EntityManager): Promise<number> {
    const [{ count }]: { count: string }[] = await manager.query('SELECT count(*) AS count FROM execution_profile_bindings WHERE namespace_id = $1', [
      namespaceId,
    ]);
    return Number(count);
  }

  /** How many namespaces a profile is bound to (inside the transaction deleting it). */
  async countOf(executionProfileId: string, manager: EntityManager): Promise<number> {
    const [{ count }]: { count: string }[] = await manager.query('SELECT count(*) AS count FROM execution_profile_bindings WHERE execution_profile_id = $1', [
      executionProfileId,
    ]);
    return Number(count);
  }
}

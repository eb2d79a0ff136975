import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { deleteLocked, updateLocked } from '../common/database/locked-rows.js';
import { isUniqueViolation } from '../common/database/postgres-errors.js';
import { ConflictError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import { fetchListPage, isoTime, whereInScope, type ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { NamespaceListRow } from './dto/namespace.dto.js';
import { Namespace } from './entities/namespace.entity.js';

/** The client-settable state of a namespace. */
export interface NamespaceChanges {
  readonly name: string;
  readonly description: string | null;
  readonly isDefault: boolean;
}

/** Only one namespace is the default: the previous one gives the flag up in the same transaction. */
async function clearDefault(manager: EntityManager): Promise<void> {
  await manager.createQueryBuilder().update(Namespace).set({ isDefault: false }).where('is_default').execute();
}

function conflictOf(error: unknown, name: string | undefined): unknown {
  if (isUniqueViolation(error, 'namespaces_name_lower_key'))
    return new ConflictError(`A namespace named '${name}' already exists (names are compared ignoring case)`);
  if (isUniqueViolation(error, 'namespaces_one_default_key')) return new ConflictError('Another request changed the default namespace at the same time; retry');
  return error;
}

@Injectable()
export class NamespacesRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** A page of namespaces, their times formatted by PostgreSQL: parsing each into a Date and formatting it again cost the hub more. */
  list(query: ListQuery, scope: NamespaceScope): Promise<ListPage<NamespaceListRow>> {
    return fetchListPage<Namespace, NamespaceListRow>(
      whereInScope(this.dataSource.getRepository(Namespace).createQueryBuilder('namespace'), { namespace: 'namespace.id', item: 'namespace.id' }, scope),
      query,
      { columns: ['id', 'name', 'description', 'isDefault'], extra: { created: isoTime('namespace.created'), modified: isoTime('namespace.modified') } },
    );
  }

  findById(id: string): Promise<Namespace | null> {
    return this.dataSource.getRepository(Namespace).findOneBy({ id });
  }

  /** Namespaces whose lower-case names are among these. */
  findByNames(lowerCaseNames: readonly string[]): Promise<Namespace[]> {
    return this.dataSource
      .getRepository(Namespace)
      .createQueryBuilder('namespace')
      .where('lower(namespace.name) = ANY(:names)', { names: lowerCaseNames })
      .getMany();
  }

  /** Names are unique ignoring case; this lookup uses the same index. */
  findByName(name: string): Promise<Namespace | null> {
    return this.dataSource.getRepository(Namespace).createQueryBuilder('namespace').where('lower(namespace.name) = lower(:name)', { name }).getOne();
  }

  async insert(changes: NamespaceChanges): Promise<Namespace> {
    try {
      return await this.dataSource.transaction(async (manager) => {
        if (changes.isDefault) await clearDefault(manager);
        return manager.save(manager.create(Namespace, changes));
      });
    } catch (error) {
      throw conflictOf(error, changes.name);
    }
  }

  /**
   * Changes a namespace under a row lock: `decide` sees the current state (to check `If-Match`, to
   * apply a patch) and returns the new one. Null when there is no such namespace.
   */
  async update(id: string, decide: (current: Namespace) => Promise<NamespaceChanges> | NamespaceChanges): Promise<Namespace | null> {
    let name: string | undefined;
    try {
      return await updateLocked(this.dataSource, Namespace, id, async (current, manager) => {
        const changes = await decide(current);
        name = changes.name;
        if (changes.isDefault && !current.isDefault) await clearDefault(manager);
        return changes;
      });
    } catch (error) {
      throw conflictOf(error, name);
    }
  }

  /** Deletes a namespace under a row lock once `check` (If-Match, what it still holds) passes. */
  delete(id: string, check: (current: Namespace, manager: EntityManager) => Promise<void>): Promise<Namespace | null> {
    return deleteLocked(this.dataSource, Namespace, id, check);
  }
}

import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { deleteLocked, updateLocked } from '../common/database/locked-rows.js';
import { isUniqueViolation } from '../common/database/postgres-errors.js';
import { ConflictError } from '../common/errors/hub-errors.js';
import type { ItemDenials } from '../common/http/access-scope.js';
import { fetchListPage, whereNotHidden, type ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import { ExecutionProfile } from './entities/execution-profile.entity.js';

export type ExecutionProfileChanges = Pick<ExecutionProfile, 'name' | 'description' | 'isDefault' | 'environment' | 'constraints' | 'properties'>;

/**
 * The list filters that are not columns, as the service resolved them; each applies (they
 * combine with AND). Ids of profiles the caller holds a permission on; namespace ids, an empty
 * list or null meaning that no namespace matched (so no profile does).
 */
export interface ProfileListConditions {
  readonly permitted: (readonly string[])[];
  readonly boundToAny: (readonly string[])[];
  readonly boundToAll: (readonly string[])[];
  readonly defaultFor: (string | null)[];
}

/** Only one profile is the hub's default: the previous one gives the flag up in the same transaction. */
async function clearDefault(manager: EntityManager): Promise<void> {
  await manager.createQueryBuilder().update(ExecutionProfile).set({ isDefault: false }).where('is_default').execute();
}

function conflictOf(error: unknown, name: string | undefined): unknown {
  if (isUniqueViolation(error, 'execution_profiles_name_lower_key'))
    return new ConflictError(`An execution profile named '${name}' already exists (names are compared ignoring case)`);
  if (isUniqueViolation(error, 'execution_profiles_one_default_key'))
    return new ConflictError('Another request changed the default execution profile at the same time; retry');
  return error;
}

@Injectable()
export class ExecutionProfilesRepository {
  constructor(private readonly dataSource: DataSource) {}

  list(query: ListQuery, conditions: ProfileListConditions, denials: ItemDenials | undefined): Promise<ListPage<ExecutionProfile>> {
    const qb = whereNotHidden(this.dataSource.getRepository(ExecutionProfile).createQueryBuilder('profile'), 'profile.id', denials);
    const bound = 'SELECT 1 FROM execution_profile_bindings b WHERE b.execution_profile_id = profile.id';
    conditions.permitted.forEach((ids, index) => qb.andWhere(`profile.id = ANY(:permitted${index})`, { [`permitted${index}`]: ids }));
    conditions.boundToAny.forEach((ids, index) =>
      qb.andWhere(`EXISTS (${bound} AND b.namespace_id = ANY(:boundToAny${index}))`, { [`boundToAny${index}`]: ids }),
    );
    conditions.boundToAll.forEach((ids, index) => {
      if (ids.length === 0) qb.andWhere('false');
      else
        qb.andWhere(
          `(SELECT count(*) FROM execution_profile_bindings b WHERE b.execution_profile_id = profile.id AND b.namespace_id = ANY(:boundToAll${index})) = ${ids.length}`,
          {
            [`boundToAll${index}`]: ids,
          },
        );
    });
    conditions.defaultFor.forEach((id, index) =>
      qb.andWhere(`EXISTS (${bound} AND b.namespace_id = :defaultFor${index} AND b.is_default)`, { [`defaultFor${index}`]: id }),
    );
    return fetchListPage(qb, query);
  }

  findById(id: string): Promise<ExecutionProfile | null> {
    return this.dataSource.getRepository(ExecutionProfile).findOneBy({ id });
  }

  findByName(name: string): Promise<ExecutionProfile | null> {
    return this.dataSource.getRepository(ExecutionProfile).createQueryBuilder('profile').where('lower(profile.name) = lower(:name)', { name }).getOne();
  }

  /** Every profile's id with the namespaces it is bound to, for permission filtering. */
  async placements(): Promise<{ id: string; namespaceIds: string[] }[]> {
    return this.dataSource.query(
      `SELECT p.id, coalesce(array_agg(b.namespace_id) FILTER (WHERE b.namespace_id IS NOT NULL), '{}') AS "namespaceIds"
       FROM execution_profiles p LEFT JOIN execution_profile_bindings b ON b.execution_profile_id = p.id GROUP BY p.id`,
    );
  }

  async insert(changes: ExecutionProfileChanges): Promise<ExecutionProfile> {
    try {
      return await this.dataSource.transaction(async (manager) => {
        if (changes.isDefault) await clearDefault(manager);
        return manager.save(manager.create(ExecutionProfile, changes));
      });
    } catch (error) {
      throw conflictOf(error, changes.name);
    }
  }

  async update(id: string, decide: (current: ExecutionProfile) => Promise<ExecutionProfileChanges>): Promise<ExecutionProfile | null> {
    let name: string | undefined;
    try {
      return await updateLocked(this.dataSource, ExecutionProfile, id, async (current, manager) => {
        const changes = await decide(current);
        name = changes.name;
        if (changes.isDefault && !current.isDefault) await clearDefault(manager);
        return changes;
      });
    } catch (error) {
      throw conflictOf(error, name);
    }
  }

  delete(id: string, check: (current: ExecutionProfile, manager: EntityManager) => Promise<void>): Promise<ExecutionProfile | null> {
    return deleteLocked(this.dataSource, ExecutionProfile, id, check);
  }
}

import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { isUniqueViolation } from '../common/database/postgres-errors.js';
import { ConflictError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import { fetchListPage, runListStatement, whereFilters, whereInScope, type ListPage } from '../common/query/list-page.js';
import type { FilterCondition, ListQuery } from '../common/query/list-query.js';
import { ADMINISTRATOR_ROLE } from './built-in-roles.js';
import type { RoleBindingRow } from './dto/role-binding.dto.js';
import { RoleBinding } from './entities/role-binding.entity.js';

export type NewRoleBinding = Pick<RoleBinding, 'roleId' | 'principalId' | 'principalType' | 'namespaceId'>;

/**
 * Bindings with the names they are shown, sorted and filtered by. `protected`: the built-in
 * administrator role given to a system user in `*`, which keeps the hub administrable.
 */
const BINDINGS_SQL = `
  SELECT binding.id AS "id", binding.created AS "created", binding.role_id AS "role", role.name AS "roleName", role.permissions AS "permissions",
         binding.principal_id AS "principal", binding.principal_type AS "principalType", coalesce(users.user_name, groups.name) AS "principalName",
         binding.namespace_id AS "namespaceId", coalesce(namespaces.name, '*') AS "namespace",
         (role.system AND role.name = '${ADMINISTRATOR_ROLE}' AND binding.namespace_id IS NULL AND coalesce(users.system, false)) AS "protected"
  FROM role_bindings binding
  JOIN roles role ON role.id = binding.role_id
  LEFT JOIN users ON binding.principal_type = 'User' AND users.id = binding.principal_id
  LEFT JOIN groups ON binding.principal_type = 'Group' AND groups.id = binding.principal_id
  LEFT JOIN namespaces ON namespaces.id = binding.namespace_id`;

@Injectable()
export class RoleBindingsRepository {
  constructor(private readonly dataSource: DataSource) {}

  private bindings() {
    return this.dataSource.createQueryBuilder().from<RoleBindingRow>(`(${BINDINGS_SQL})`, 'binding');
  }

  list(query: ListQuery, scope: NamespaceScope): Promise<ListPage<RoleBindingRow>> {
    return fetchListPage(whereInScope(this.bindings(), { namespace: 'binding."namespaceId"', item: 'binding."id"' }, scope), query);
  }

  /** The bindings of these principals (a user and its groups), with their roles' permissions, oldest first. */
  ofPrincipals(principalIds: readonly string[]): Promise<RoleBindingRow[]> {
    return this.bindings()
      .select('binding.*')
      .where('binding."principal" = ANY(:principalIds)', { principalIds })
      .orderBy('binding."created"')
      .addOrderBy('binding."id"')
      .getRawMany<RoleBindingRow>();
  }

  async findById(id: string): Promise<RoleBindingRow | null> {
    const [row] = await this.bindings().select('binding.*').where('binding."id" = :id', { id }).getRawMany<RoleBindingRow>();
    return row ?? null;
  }

  async insert(binding: NewRoleBinding): Promise<string> {
    try {
      const result = await this.dataSource.createQueryBuilder().insert().into(RoleBinding).values(binding).returning('id').execute();
      return (result.raw as { id: string }[])[0].id;
    } catch (error) {
      if (isUniqueViolation(error, 'role_bindings_unique_key')) throw new ConflictError('This principal already has this role in this namespace');
      throw error;
    }
  }

  /** Gives a role to a principal unless it has it already. */
  async ensure(binding: NewRoleBinding): Promise<void> {
    await this.dataSource.createQueryBuilder().insert().into(RoleBinding).values(binding).orIgnore().execute();
  }

  /** How many bindings are in a namespace (inside the transaction deleting it). */
  async countIn(namespaceId: string, manager: EntityManager): Promise<number> {
    const [{ count }]: { count: string }[] = await manager.query('SELECT count(*) AS count FROM role_bindings WHERE namespace_id = $1', [namespaceId]);
    return Number(count);
  }

  /** Deletes the bindings matching every filter, but protected ones; returns how many. */
  async deleteWhere(filters: readonly FilterCondition[]): Promise<number> {
    const [select, parameters] = whereFilters(this.bindings().select('binding."id"'), filters).andWhere('NOT binding."protected"').getQueryAndParameters();
    const [, count] = await runListStatement<[unknown, number]>(this.dataSource, `DELETE FROM role_bindings WHERE id IN (${select})`, parameters);
    return count;
  }
}

import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager, type Repository } from 'typeorm';
import { deleteLocked, updatePrepared } from '../common/database/locked-rows.js';
import { isUniqueViolation } from '../common/database/postgres-errors.js';
import { ConflictError } from '../common/errors/hub-errors.js';
import type { ItemDenials } from '../common/http/access-scope.js';
import { fetchListPage, whereNotHidden, type ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import { Role } from './entities/role.entity.js';

export type RoleChanges = Pick<Role, 'name' | 'description' | 'permissions'>;

function conflictOf(error: unknown, changes: RoleChanges | undefined): unknown {
  return isUniqueViolation(error, 'roles_name_lower_key')
    ? new ConflictError(`A role named '${changes?.name}' already exists (names are compared ignoring case)`)
    : error;
}

@Injectable()
export class RolesRepository {
  private readonly roles: Repository<Role>;

  constructor(private readonly dataSource: DataSource) {
    this.roles = dataSource.getRepository(Role);
  }

  list(query: ListQuery, denials: ItemDenials | undefined): Promise<ListPage<Role>> {
    return fetchListPage(whereNotHidden(this.roles.createQueryBuilder('role'), 'role.id', denials), query);
  }

  findById(id: string): Promise<Role | null> {
    return this.roles.findOneBy({ id });
  }

  findByName(name: string): Promise<Role | null> {
    return this.roles.createQueryBuilder('role').where('lower(role.name) = lower(:name)', { name }).getOne();
  }

  async insert(changes: RoleChanges): Promise<Role> {
    try {
      return await this.roles.save(this.roles.create(changes));
    } catch (error) {
      throw conflictOf(error, changes);
    }
  }

  async update(id: string, decide: (current: Role) => Promise<RoleChanges> | RoleChanges): Promise<Role | null> {
    let changes: RoleChanges | undefined;
    try {
      return await updatePrepared(this.dataSource, Role, id, async (current) => (changes = await decide(current)));
    } catch (error) {
      throw conflictOf(error, changes);
    }
  }

  delete(id: string, check: (current: Role, manager: EntityManager) => Promise<void> | void): Promise<Role | null> {
    return deleteLocked(this.dataSource, Role, id, check);
  }

  /** How many bindings give this role (inside the deleting transaction). */
  async bindingCount(manager: EntityManager, roleId: string): Promise<number> {
    const [{ count }]: { count: string }[] = await manager.query('SELECT count(*) AS count FROM role_bindings WHERE role_id = $1', [roleId]);
    return Number(count);
  }

  /**
   * Creates a built-in role, or brings its description and permissions up to this release's;
   * safe when several hubs start together.
   */
  /** The built-in roles as given, in one statement: each inserted, or updated where this release changed it. */
  async upsertSystemRoles(roles: readonly RoleChanges[]): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO roles (name, description, permissions, system, version)
       SELECT given.name, given.description, given.permissions, true, 1
         FROM jsonb_to_recordset($1::jsonb) AS given(name text, description text, permissions jsonb)
       ON CONFLICT (lower(name)) DO UPDATE SET description = excluded.description, permissions = excluded.permissions,
         version = roles.version + 1, modified = now()
       WHERE roles.system AND (roles.description IS DISTINCT FROM excluded.description OR roles.permissions <> excluded.permissions)`,
      [JSON.stringify(roles.map(({ name, description, permissions }) => ({ name, description, permissions })))],
    );
  }
}

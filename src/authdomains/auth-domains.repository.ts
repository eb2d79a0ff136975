import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { deleteLocked, updatePrepared } from '../common/database/locked-rows.js';
import { isUniqueViolation } from '../common/database/postgres-errors.js';
import { ConflictError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import { fetchListPage, whereInScope, type ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { AuthDomainRow } from './dto/auth-domain.dto.js';
import { AuthDomain } from './entities/auth-domain.entity.js';

/** The client-settable state of an auth domain, its namespace by id. */
export type AuthDomainChanges = Pick<AuthDomain, 'namespaceId' | 'name' | 'description' | 'allowPersonalCredentials'>;

/** Auth domains with their namespace's name. */
const DOMAINS_SQL = `
  SELECT d.id, d.namespace_id AS "namespaceId", n.name AS "namespaceName", d.name, d.description,
         d.allow_personal_credentials AS "allowPersonalCredentials", d.version, d.created, d.modified
  FROM auth_domains d JOIN namespaces n ON n.id = d.namespace_id`;

function conflictOf(error: unknown, changes: { name: string } | undefined): unknown {
  return isUniqueViolation(error, 'auth_domains_name_lower_key')
    ? new ConflictError(`An auth domain named '${changes?.name}' already exists in this namespace (names are compared ignoring case)`)
    : error;
}

@Injectable()
export class AuthDomainsRepository {
  constructor(private readonly dataSource: DataSource) {}

  list(query: ListQuery, scope: NamespaceScope): Promise<ListPage<AuthDomainRow>> {
    const domains = this.dataSource.createQueryBuilder().from<AuthDomainRow>(`(${DOMAINS_SQL})`, 'domain');
    return fetchListPage(whereInScope(domains, { namespace: 'domain."namespaceId"', item: 'domain.id' }, scope), query);
  }

  async findById(id: string): Promise<AuthDomainRow | null> {
    const rows: AuthDomainRow[] = await this.dataSource.query(`${DOMAINS_SQL} WHERE d.id = $1`, [id]);
    return rows[0] ?? null;
  }

  /** Inserts a domain and reads it back in the same transaction. */
  async insert(changes: AuthDomainChanges): Promise<AuthDomainRow> {
    try {
      return await this.dataSource.transaction(async (manager) => {
        const result = await manager.createQueryBuilder().insert().into(AuthDomain).values(changes).returning('id').execute();
        const rows: AuthDomainRow[] = await manager.query(`${DOMAINS_SQL} WHERE d.id = $1`, [(result.raw as { id: string }[])[0].id]);
        return rows[0];
      });
    } catch (error) {
      throw conflictOf(error, changes);
    }
  }

  /** Changes a domain as `decide` prepares it from its current state (outside any transaction); false when there is none. */
  async update(id: string, decide: (current: AuthDomain) => Promise<AuthDomainChanges>): Promise<boolean> {
    let changes: AuthDomainChanges | undefined;
    try {
      return (await updatePrepared(this.dataSource, AuthDomain, id, async (current) => (changes = await decide(current)))) !== null;
    } catch (error) {
      throw conflictOf(error, changes);
    }
  }

  /** Deletes a domain and, by the foreign key's cascade, its credentials. */
  delete(id: string, check: (current: AuthDomain) => void): Promise<AuthDomain | null> {
    return deleteLocked(this.dataSource, AuthDomain, id, check);
  }

  /** How many domains are in a namespace (inside the transaction deleting it). */
  async countIn(namespaceId: string, manager: EntityManager): Promise<number> {
    const [{ count }]: { count: string }[] = await manager.query('SELECT count(*) AS count FROM auth_domains WHERE namespace_id = $1', [namespaceId]);
    return Number(count);
  }
}

import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { ConflictError, InvalidInputError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import { fetchListPage, whereInScope, type ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import { RANK_GAP, rankBetween } from './credential-rank.js';
import type { CredentialRow } from './dto/credential.dto.js';
import type { CredentialType } from './entities/credential.entity.js';

/**
 * Where to put a credential in its domain's order: a position (with the credentials it is placed
 * against), or a rank given directly.
 */
export type RankPlacement =
  | { readonly position: 'High' | 'Low' | 'Mid' }
  | { readonly position: 'Above'; readonly above: string }
  | { readonly position: 'Below'; readonly below: string }
  | { readonly position: 'Between'; readonly above: string; readonly below: string }
  | { readonly value: bigint };

/** The stored state of a credential but its rank; `sealedData` undefined keeps what is stored. */
export interface CredentialWrite {
  readonly principalId: string;
  readonly principalType: 'User' | 'Group';
  readonly disabled: boolean;
  readonly label: string;
  readonly type: CredentialType;
  readonly vaultPath: string | null;
  readonly sealedData: Buffer | null | undefined;
}

/** What an update decides once it has seen the current state under its locks. */
export interface CredentialUpdate {
  readonly changes?: CredentialWrite;
  readonly placement?: RankPlacement;
}

/** A list item: a credential with its domain's and principal's names, its namespace; never its data. */
const LIST_SQL = `
  SELECT c.id, c.auth_domain_id AS "authDomainId", d.name AS "authDomainName", d.namespace_id AS "namespaceId",
         n.name AS "namespaceName", c.principal_id AS "principalId", coalesce(u.user_name, g.name) AS "principalName",
         c.disabled, c.label, c.type, c.rank, c.vault_path AS "vaultPath", c.version, c.created, c.modified
  FROM credentials c
  JOIN auth_domains d ON d.id = c.auth_domain_id
  JOIN namespaces n ON n.id = d.namespace_id
  LEFT JOIN users u ON u.id = c.principal_id
  LEFT JOIN groups g ON g.id = c.principal_id`;

/** One credential, sealed data included. */
const ROW_SQL = `
  SELECT c.id, c.auth_domain_id AS "authDomainId", d.name AS "authDomainName", d.namespace_id AS "namespaceId",
         c.principal_id AS "principalId", c.disabled, c.label, c.type, c.rank, c.vault_path AS "vaultPath",
         c.sealed_data AS "sealedData", c.version, c.created, c.modified
  FROM credentials c JOIN auth_domains d ON d.id = c.auth_domain_id`;

/** Other credentials of the domain than the one being placed (`$1` domain, `$2` the credential or null). */
const OTHERS = 'auth_domain_id = $1 AND ($2::uuid IS NULL OR id <> $2)';

function toBigInt(rank: string | null | undefined): bigint | null {
  return rank === null || rank === undefined ? null : BigInt(rank);
}

@Injectable()
export class CredentialsRepository {
  constructor(private readonly dataSource: DataSource) {}

  private listed() {
    return this.dataSource.createQueryBuilder().from<CredentialRow>(`(${LIST_SQL})`, 'credential');
  }

  list(query: ListQuery, scope: NamespaceScope): Promise<ListPage<CredentialRow>> {
    return fetchListPage(whereInScope(this.listed(), { namespace: 'credential."namespaceId"', item: 'credential.id' }, scope), query);
  }

  /** A user's own credentials, in every domain. */
  listOf(principalId: string, query: ListQuery): Promise<ListPage<CredentialRow>> {
    return fetchListPage(this.listed().where('credential."principalId" = :principalId', { principalId }), query);
  }

  async findById(id: string, manager: EntityManager = this.dataSource.manager): Promise<CredentialRow | null> {
    const rows: CredentialRow[] = await manager.query(`${ROW_SQL} WHERE c.id = $1`, [id]);
    return rows[0] ?? null;
  }

  /** Where a credential lives and whose it is, for the access guard. */
  async locationOf(id: string): Promise<{ namespaceId: string; namespaceName: string; principalId: string; principalType: 'User' | 'Group' } | null> {
    const rows: { namespaceId: string; namespaceName: string; principalId: string; principalType: 'User' | 'Group' }[] = await this.dataSource.query(
      `SELECT d.namespace_id AS "namespaceId", n.name AS "namespaceName", c.principal_id AS "principalId", c.principal_type AS "principalType"
       FROM credentials c JOIN auth_domains d ON d.id = c.auth_domain_id JOIN namespaces n ON n.id = d.namespace_id WHERE c.id = $1`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** The best-ranked enabled credential of any of these principals in a domain. */
  async best(authDomainId: string, principalIds: readonly string[]): Promise<CredentialRow | null> {
    const rows: CredentialRow[] = await this.dataSource.query(
      `${ROW_SQL} WHERE c.auth_domain_id = $1 AND c.principal_id = ANY($2::uuid[]) AND NOT c.disabled ORDER BY c.rank LIMIT 1`,
      [authDomainId, principalIds],
    );
    return rows[0] ?? null;
  }

  /** Inserts a credential at its place in the domain's order, and reads it back; null when the domain was deleted meanwhile. */
  async insert(id: string, authDomainId: string, write: CredentialWrite, placement: RankPlacement, errorPath: string): Promise<CredentialRow | null> {
    return this.dataSource.transaction(async (manager) => {
      if (!(await this.lockDomain(manager, authDomainId))) return null;
      const rank = await this.place(manager, authDomainId, null, placement, errorPath);
      await manager.query(
        `INSERT INTO credentials (id, auth_domain_id, principal_id, principal_type, disabled, label, type, rank, vault_path, sealed_data, version)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 1)`,
        [
          id,
          authDomainId,
          write.principalId,
          write.principalType,
          write.disabled,
          write.label,
          write.type,
          String(rank),
          write.vaultPath,
          write.sealedData ?? null,
        ],
      );
      return this.findById(id, manager);
    });
  }

  /**
   * Changes a credential: `decide` sees its current state, outside any transaction (it may query
   * other services), and returns new fields, a new place, or both; the commit takes the domain's
   * ranking lock and the credential's row lock, places it, and writes, if the row is still the version `decide`
   * saw (else it decides again; after a few tries, 409). False when there is no such credential.
   */
  async update(id: string, errorPath: string, decide: (current: CredentialRow) => Promise<CredentialUpdate> | CredentialUpdate): Promise<boolean> {
    for (let attempt = 1; ; attempt += 1) {
      const current = await this.findById(id);
      if (!current) return false;
      const update = await decide(current);
      const outcome = await this.dataSource.transaction(async (manager) => {
        if (!(await this.lockDomain(manager, current.authDomainId))) return 'gone';
        const locked: { version: number }[] = await manager.query('SELECT version FROM credentials WHERE id = $1 FOR UPDATE', [id]);
        if (locked.length === 0) return 'gone';
        if (locked[0].version !== current.version) return 'changed';
        await this.write(manager, current, update, errorPath);
        return 'written';
      });
      if (outcome !== 'changed') return outcome === 'written';
      if (attempt === 3) throw new ConflictError('The credential kept changing while this request was applied; retry');
    }
  }

  /**
   * Moves a credential in its domain's order, whatever its version (a move depends on the order
   * now, which the domain's lock holds still); null when there is no such credential.
   */
  async move(id: string, placement: RankPlacement, errorPath: string): Promise<CredentialRow | null> {
    return this.dataSource.transaction(async (manager) => {
      const domain: { authDomainId: string }[] = await manager.query('SELECT auth_domain_id AS "authDomainId" FROM credentials WHERE id = $1', [id]);
      if (domain.length === 0 || !(await this.lockDomain(manager, domain[0].authDomainId))) return null;
      const current = await this.findById(id, manager);
      if (!current) return null;
      await this.write(manager, current, { placement }, errorPath);
      return current;
    });
  }

  private async write(manager: EntityManager, current: CredentialRow, { changes, placement }: CredentialUpdate, errorPath: string): Promise<void> {
    const rank = String(placement ? await this.place(manager, current.authDomainId, current.id, placement, errorPath) : current.rank);
    if (!changes) {
      await manager.query('UPDATE credentials SET rank = $2, version = version + 1, modified = now() WHERE id = $1', [current.id, rank]);
      return;
    }
    await manager.query(
      `UPDATE credentials SET principal_id = $2, principal_type = $3, disabled = $4, label = $5, type = $6, rank = $7, vault_path = $8,
         sealed_data = CASE WHEN $9 THEN $10 ELSE sealed_data END, version = version + 1, modified = now()
       WHERE id = $1`,
      [
        current.id,
        changes.principalId,
        changes.principalType,
        changes.disabled,
        changes.label,
        changes.type,
        rank,
        changes.vaultPath,
        changes.sealedData !== undefined,
        changes.sealedData ?? null,
      ],
    );
  }

  async delete(id: string, check: (current: CredentialRow) => void): Promise<CredentialRow | null> {
    return this.dataSource.transaction(async (manager) => {
      const rows: CredentialRow[] = await manager.query(`${ROW_SQL} WHERE c.id = $1 FOR UPDATE OF c`, [id]);
      if (rows.length === 0) return null;
      check(rows[0]);
      await manager.query('DELETE FROM credentials WHERE id = $1', [id]);
      return rows[0];
    });
  }

  /**
   * Serialises every change to a domain's order: its row, locked without blocking the key-share
   * locks that credential inserts take on it.
   */
  private async lockDomain(manager: EntityManager, authDomainId: string): Promise<boolean> {
    const rows: unknown[] = await manager.query('SELECT 1 FROM auth_domains WHERE id = $1 FOR NO KEY UPDATE', [authDomainId]);
    return rows.length > 0;
  }

  /** The rank a placement gives, renumbering the domain first when the gap it needs is used up. */
  private async place(manager: EntityManager, authDomainId: string, self: string | null, placement: RankPlacement, errorPath: string): Promise<bigint> {
    const rank = await this.rankFor(manager, authDomainId, self, placement, errorPath);
    if (rank !== null) return rank;
    await this.renumber(manager, authDomainId);
    const renumbered = await this.rankFor(manager, authDomainId, self, placement, errorPath);
    if (renumbered === null) throw new ConflictError('This auth domain holds too many credentials to place another one');
    return renumbered;
  }

  private async rankFor(
    manager: EntityManager,
    authDomainId: string,
    self: string | null,
    placement: RankPlacement,
    errorPath: string,
  ): Promise<bigint | null> {
    const scalar = async (sql: string, ...more: unknown[]): Promise<bigint | null> => {
      const rows: { rank: string | null }[] = await manager.query(sql, [authDomainId, self, ...more]);
      return toBigInt(rows[0]?.rank);
    };
    const rankOf = async (id: string, field: 'above' | 'below'): Promise<bigint> => {
      if (id === self) throw InvalidInputError.at(`${errorPath}/${field}`, `${field} names the credential being placed`);
      const rank = await scalar(`SELECT rank FROM credentials WHERE ${OTHERS} AND id = $3`, id);
      if (rank === null) throw InvalidInputError.at(`${errorPath}/${field}`, `No credential ${id} is in this auth domain`);
      return rank;
    };
    const worseThan = (rank: bigint) => scalar(`SELECT min(rank)::text AS rank FROM credentials WHERE ${OTHERS} AND rank > $3`, String(rank));
    const betterThan = (rank: bigint) => scalar(`SELECT max(rank)::text AS rank FROM credentials WHERE ${OTHERS} AND rank < $3`, String(rank));
    if ('value' in placement) {
      const holders: unknown[] = await manager.query(`SELECT 1 FROM credentials WHERE ${OTHERS} AND rank = $3`, [authDomainId, self, String(placement.value)]);
      if (holders.length > 0)
        throw new ConflictError(`Rank ${placement.value} is held by another credential of this auth domain; choose another value or a position`);
      return placement.value;
    }
    switch (placement.position) {
      case 'High':
        return rankBetween(null, await scalar(`SELECT min(rank)::text AS rank FROM credentials WHERE ${OTHERS}`));
      case 'Low':
        return rankBetween(await scalar(`SELECT max(rank)::text AS rank FROM credentials WHERE ${OTHERS}`), null);
      case 'Mid': {
        const [{ count }]: { count: string }[] = await manager.query(`SELECT count(*) AS count FROM credentials WHERE ${OTHERS}`, [authDomainId, self]);
        const middle = Math.floor(Number(count) / 2);
        if (middle === 0) return rankBetween(null, await scalar(`SELECT min(rank)::text AS rank FROM credentials WHERE ${OTHERS}`));
        const pair: { rank: string }[] = await manager.query(`SELECT rank FROM credentials WHERE ${OTHERS} ORDER BY rank OFFSET $3 LIMIT 2`, [
          authDomainId,
          self,
          middle - 1,
        ]);
        return rankBetween(toBigInt(pair[0]?.rank), toBigInt(pair[1]?.rank));
      }
      case 'Above': {
        const above = await rankOf(placement.above, 'above');
        return rankBetween(await betterThan(above), above);
      }
      case 'Below': {
        const below = await rankOf(placement.below, 'below');
        return rankBetween(below, await worseThan(below));
      }
      case 'Between': {
        const [above, below] = [await rankOf(placement.above, 'above'), await rankOf(placement.below, 'below')];
        if (above >= below) throw InvalidInputError.at(`${errorPath}/above`, 'above must rank better (lower) than below');
        return rankBetween(above, await worseThan(above));
      }
    }
  }

  /**
   * Spreads a domain's ranks one gap apart again, keeping their order, inside the caller's
   * transaction; each credential whose rank changes gets a new version (and ETag).
   */
  private async renumber(manager: EntityManager, authDomainId: string): Promise<void> {
    // Ranks pass through duplicates while the rows are rewritten; the constraint is checked at commit.
    await manager.query('SET CONSTRAINTS credentials_domain_rank_key DEFERRED');
    await manager.query(
      `UPDATE credentials c SET rank = ordered.position * $2::bigint, version = c.version + 1, modified = now()
       FROM (SELECT id, row_number() OVER (ORDER BY rank) AS position FROM credentials WHERE auth_domain_id = $1) ordered
       WHERE c.id = ordered.id AND c.rank <> ordered.position * $2::bigint`,
      [authDomainId, String(RANK_GAP)],
    );
  }
}

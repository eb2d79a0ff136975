import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager, type QueryResult, type Repository } from 'typeorm';
import { deleteLocked, updateLocked } from '../common/database/locked-rows.js';
import { isForeignKeyViolation, isUniqueViolation } from '../common/database/postgres-errors.js';
import { ConflictError } from '../common/errors/hub-errors.js';
import type { ItemDenials } from '../common/http/access-scope.js';
import { fetchListPage, whereNotHidden, fetchListRows, type ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { GroupMemberDto, PrincipalType } from './dto/group.dto.js';
import { Group } from './entities/group.entity.js';

export type GroupChanges = Pick<Group, 'name' | 'externalId'> & Partial<Pick<Group, 'system'>>;

/** A principal a member change names, resolved. */
export interface PrincipalRef {
  readonly type: PrincipalType;
  readonly id: string;
  readonly name: string;
}

/** A row of the principals list (the `system` column only filters). */
export interface PrincipalRow {
  readonly type: PrincipalType;
  readonly id: string;
  readonly displayName: string;
  readonly external: boolean;
}

/** One resolved change of a batch, in the order given. */
export interface MemberChange {
  readonly op: 'add' | 'remove';
  readonly member: PrincipalRef;
}

/** What a batch of member changes did. */
export interface MemberChangeOutcome {
  added: number;
  removed: number;
  unchanged: number;
}

/**
 * Thrown inside the member-change transaction, rolling it back, when change `index` cannot be
 * made: it would close a cycle, or its principal was deleted since it was looked up.
 */
export class MemberChangeError extends Error {
  constructor(
    readonly index: number,
    readonly reason: 'cycle' | 'gone',
  ) {
    super(`Member change ${index} cannot be made (${reason})`);
  }
}

function conflictOf(error: unknown, changes: GroupChanges | undefined): unknown {
  if (isUniqueViolation(error, 'groups_name_lower_key'))
    return new ConflictError(`A group named '${changes?.name}' already exists (names are compared ignoring case)`);
  if (isUniqueViolation(error, 'groups_external_id_key')) return new ConflictError(`Another group already has the externalId '${changes?.externalId}'`);
  return error;
}

/** Every group a user is in, directly or through other groups (UNION also ends any cycle). */
const EFFECTIVE_GROUPS_SQL = `
  WITH RECURSIVE reached(id) AS (
    SELECT group_id FROM group_user_members WHERE user_id = $1
    UNION
    SELECT membership.group_id FROM group_group_members membership JOIN reached ON membership.member_group_id = reached.id
  )
  SELECT id FROM reached`;

/** A group and every group that contains it, directly or through others: whose roles its members get. */
const GROUP_AND_CONTAINING_SQL = `
  WITH RECURSIVE reached(id) AS (
    SELECT CAST($1 AS uuid)
    UNION
    SELECT membership.group_id FROM group_group_members membership JOIN reached ON membership.member_group_id = reached.id
  )
  SELECT id FROM reached`;

/** A group's members: member groups at every depth, and the users in the group or any of them; direct wins. */
const GROUP_MEMBERS_SQL = `
  WITH RECURSIVE below(id, direct) AS (
    SELECT member_group_id, true FROM group_group_members WHERE group_id = :groupId
    UNION
    SELECT membership.member_group_id, false FROM group_group_members membership JOIN below ON membership.group_id = below.id
  ),
  containing(id, direct) AS (
    SELECT CAST(:groupId AS uuid), true
    UNION ALL
    SELECT id, false FROM below
  )
  SELECT CASE WHEN bool_or(below.direct) THEN 'direct' ELSE 'indirect' END AS "membershipType",
         'Group' AS "principalType", groups.id AS "id", groups.name AS "name"
  FROM below JOIN groups ON groups.id = below.id
  GROUP BY groups.id, groups.name
  UNION ALL
  SELECT CASE WHEN bool_or(containing.direct) THEN 'direct' ELSE 'indirect' END, 'User', users.id, users.user_name
  FROM containing
  JOIN group_user_members membership ON membership.group_id = containing.id
  JOIN users ON users.id = membership.user_id
  GROUP BY users.id, users.user_name`;

/** Users and groups as one table, for the principals list. */
const PRINCIPALS_SQL = `
  SELECT 'User' AS "type", users.id AS "id", coalesce(nullif(users.display_name, ''), users.user_name) AS "displayName",
         coalesce(users.external_id, '') <> '' AS "external", users.system AS "system"
  FROM users
  UNION ALL
  SELECT 'Group', groups.id, groups.name, coalesce(groups.external_id, '') <> '', groups.system
  FROM groups`;

/** Whether `memberGroupId` already contains `groupId` (or is it): adding it to `groupId` would close a cycle. */
const CLOSES_CYCLE_SQL = `
  WITH RECURSIVE below(id) AS (
    SELECT CAST($2 AS uuid)
    UNION
    SELECT membership.member_group_id FROM group_group_members membership JOIN below ON membership.group_id = below.id
  )
  SELECT EXISTS (SELECT 1 FROM below WHERE id = $1) AS "closes"`;

/** Serialises changes to the group-in-group graph, so that two concurrent additions cannot close a cycle together. */
const NESTING_LOCK_KEY = 'hub.group_nesting';

@Injectable()
export class GroupsRepository {
  private readonly groups: Repository<Group>;

  constructor(private readonly dataSource: DataSource) {
    this.groups = dataSource.getRepository(Group);
  }

  list(query: ListQuery, denials: ItemDenials | undefined): Promise<ListPage<Group>> {
    return fetchListPage(whereNotHidden(this.groups.createQueryBuilder('groups'), 'groups.id', denials), query);
  }

  listPrincipals(query: ListQuery): Promise<ListPage<PrincipalRow>> {
    return fetchListPage(this.dataSource.createQueryBuilder().from<PrincipalRow>(`(${PRINCIPALS_SQL})`, 'principal'), query);
  }

  findById(id: string): Promise<Group | null> {
    return this.groups.findOneBy({ id });
  }

  async insert(changes: GroupChanges): Promise<Group> {
    try {
      return await this.groups.save(this.groups.create(changes));
    } catch (error) {
      throw conflictOf(error, changes);
    }
  }

  async update(id: string, decide: (current: Group) => Promise<GroupChanges> | GroupChanges): Promise<Group | null> {
    let changes: GroupChanges | undefined;
    try {
      return await updateLocked(this.dataSource, Group, id, async (current) => (changes = await decide(current)));
    } catch (error) {
      throw conflictOf(error, changes);
    }
  }

  /** Deletes a group (its memberships, both ways, go with it) once `check` passes. */
  delete(id: string, check: (current: Group, manager: EntityManager) => Promise<void> | void): Promise<Group | null> {
    return deleteLocked(this.dataSource, Group, id, check);
  }

  /** Ids of every group the user is in, directly or not. */
  async effectiveGroupIds(userId: string): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(EFFECTIVE_GROUPS_SQL, [userId]);
    return rows.map((row) => row.id);
  }

  /** The group and the groups it is in, directly or not: a member of the group gets the roles bound to any of them. */
  async groupAndContainingIds(groupId: string): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(GROUP_AND_CONTAINING_SQL, [groupId]);
    return rows.map((row) => row.id);
  }

  members(groupId: string, query: ListQuery): Promise<GroupMemberDto[]> {
    const qb = this.dataSource.createQueryBuilder().from<GroupMemberDto>(`(${GROUP_MEMBERS_SQL})`, 'member').setParameters({ groupId });
    return fetchListRows(qb, query);
  }

  /** Users and groups with these ids. */
  async principalsById(ids: readonly string[]): Promise<PrincipalRef[]> {
    if (ids.length === 0) return [];
    return this.dataSource.query(
      `SELECT 'User' AS "type", id, user_name AS "name" FROM users WHERE id = ANY($1)
       UNION ALL SELECT 'Group', id, name FROM groups WHERE id = ANY($1)`,
      [ids],
    );
  }

  /**
   * Users and groups with these names, compared ignoring case as the unique indexes compare them;
   * each carries the name it was asked for as `lookup`.
   */
  async principalsByName(userNames: readonly string[], groupNames: readonly string[]): Promise<(PrincipalRef & { lookup: string })[]> {
    if (userNames.length === 0 && groupNames.length === 0) return [];
    return this.dataSource.query(
      `SELECT 'User' AS "type", users.id, users.user_name AS "name", asked.name AS "lookup"
       FROM unnest($1::text[]) AS asked(name) JOIN users ON lower(users.user_name) = lower(asked.name)
       UNION ALL
       SELECT 'Group', groups.id, groups.name, asked.name
       FROM unnest($2::text[]) AS asked(name) JOIN groups ON lower(groups.name) = lower(asked.name)`,
      [userNames, groupNames],
    );
  }

  /**
   * Applies a batch of member changes to a group in one transaction, in order. Adding a group
   * takes a lock that serialises nesting changes and then checks for a cycle, so the graph stays
   * acyclic; a cycle, or a principal deleted meanwhile, throws {@link MemberChangeError} and
   * nothing changes. Null when the group does not exist.
   */
  async changeMembers(groupId: string, changes: readonly MemberChange[]): Promise<{ group: Group; outcome: MemberChangeOutcome } | null> {
    return this.dataSource.transaction(async (manager) => {
      const group = await manager
        .getRepository(Group)
        .createQueryBuilder('groups')
        .setLock('pessimistic_read')
        .where('groups.id = :groupId', { groupId })
        .getOne();
      if (!group) return null;
      if (changes.some((change) => change.op === 'add' && change.member.type === 'Group')) {
        await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [NESTING_LOCK_KEY]);
      }
      const outcome: MemberChangeOutcome = { added: 0, removed: 0, unchanged: 0 };
      for (const [index, { op, member }] of changes.entries()) {
        if (op === 'add' && member.type === 'Group') {
          const [{ closes }]: { closes: boolean }[] = await manager.query(CLOSES_CYCLE_SQL, [groupId, member.id]);
          if (closes) throw new MemberChangeError(index, 'cycle');
        }
        const changed = await applyMemberChange(manager, groupId, op, member).catch((error: unknown) => {
          throw isForeignKeyViolation(error) ? new MemberChangeError(index, 'gone') : error;
        });
        if (!changed) outcome.unchanged += 1;
        else if (op === 'add') outcome.added += 1;
        else outcome.removed += 1;
      }
      return { group, outcome };
    });
  }
}

/** Adds or removes one membership; false when it was already so. */
async function applyMemberChange(manager: EntityManager, groupId: string, op: 'add' | 'remove', member: PrincipalRef): Promise<boolean> {
  const [table, column] = member.type === 'User' ? ['group_user_members', 'user_id'] : ['group_group_members', 'member_group_id'];
  const sql =
    op === 'add'
      ? `INSERT INTO ${table} (group_id, ${column}) VALUES ($1, $2) ON CONFLICT DO NOTHING`
      : `DELETE FROM ${table} WHERE group_id = $1 AND ${column} = $2`;
  const runner = manager.queryRunner;
  if (!runner) throw new Error('Member changes run inside a transaction');
  const result: QueryResult = await runner.query(sql, [groupId, member.id], true);
  return (result.affected ?? 0) > 0;
}

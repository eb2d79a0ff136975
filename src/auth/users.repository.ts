import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager, type Repository } from 'typeorm';
import { deleteLocked, updateLocked } from '../common/database/locked-rows.js';
import { isUniqueViolation } from '../common/database/postgres-errors.js';
import { ConflictError } from '../common/errors/hub-errors.js';
import type { ItemDenials } from '../common/http/access-scope.js';
import { fetchListPage, fetchListRows, whereNotHidden, type ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { UserMembershipDto } from './dto/group.dto.js';
import { User } from './entities/user.entity.js';
import { UserInvitation } from './entities/user-invitation.entity.js';

/** What a create or a change may set; `passwordHash` undefined keeps the current one. */
export type UserChanges = Partial<
  Pick<
    User,
    | 'userName'
    | 'displayName'
    | 'email'
    | 'active'
    | 'system'
    | 'externalId'
    | 'unixHomeDirectory'
    | 'unixUserName'
    | 'userPrincipalName'
    | 'invitationPending'
    | 'invitationExpiry'
    | 'passwordHash'
    | 'tokenVersion'
  >
>;

function userConflictOf(error: unknown, changes: UserChanges | undefined): unknown {
  if (isUniqueViolation(error, 'users_user_name_lower_key'))
    return new ConflictError(`A user named '${changes?.userName}' already exists (names are compared ignoring case)`);
  if (isUniqueViolation(error, 'users_external_id_key')) return new ConflictError(`Another user already has the externalId '${changes?.externalId}'`);
  if (isUniqueViolation(error, 'users_unix_user_name_key'))
    return new ConflictError(`Another user already has the unixUserName '${changes?.unixUserName}': jobs run as that account, so it is one user's`);
  return error;
}

/** A user's groups: direct ones, then those reached through them, each once (direct wins). */
const USER_GROUPS_SQL = `
  WITH RECURSIVE reached(id, direct) AS (
    SELECT group_id, true FROM group_user_members WHERE user_id = :userId
    UNION
    SELECT membership.group_id, false FROM group_group_members membership JOIN reached ON membership.member_group_id = reached.id
  )
  SELECT CASE WHEN bool_or(reached.direct) THEN 'direct' ELSE 'indirect' END AS "membershipType", groups.id AS "id", groups.name AS "name"
  FROM reached JOIN groups ON groups.id = reached.id
  GROUP BY groups.id, groups.name`;

@Injectable()
export class UsersRepository {
  private readonly users: Repository<User>;

  constructor(private readonly dataSource: DataSource) {
    this.users = dataSource.getRepository(User);
  }

  list(query: ListQuery, denials: ItemDenials | undefined): Promise<ListPage<User>> {
    return fetchListPage(whereNotHidden(this.users.createQueryBuilder('users'), 'users.id', denials), query);
  }

  /** `id` is a UUID (a path parameter checked by ResourceId, or a token's subject). */
  findById(id: string): Promise<User | null> {
    return this.users.findOneBy({ id });
  }

  /** User names are unique ignoring case; this lookup uses the same index. */
  findByUserName(userName: string): Promise<User | null> {
    return this.users.createQueryBuilder('users').where('lower(users.user_name) = lower(:userName)', { userName }).getOne();
  }

  async systemUserIds(): Promise<string[]> {
    return (await this.users.find({ select: { id: true }, where: { system: true } })).map((user) => user.id);
  }

  hasSystemUser(): Promise<boolean> {
    return this.users.existsBy({ system: true });
  }

  /** Inserts the user unless one of that name exists; true when this call created it. */
  async insertIfAbsent(user: UserChanges): Promise<boolean> {
    const result = await this.users.createQueryBuilder().insert().values(user).orIgnore().returning('id').execute();
    return (result.raw as unknown[]).length > 0;
  }

  /** Creates a user, with the hash of its invitation token when an invitation is pending. */
  async insert(changes: UserChanges, invitationTokenHash?: Buffer): Promise<User> {
    try {
      return await this.dataSource.transaction(async (manager) => {
        const user = await manager.save(manager.create(User, changes));
        if (invitationTokenHash) await manager.insert(UserInvitation, { userId: user.id, tokenHash: invitationTokenHash });
        return user;
      });
    } catch (error) {
      throw userConflictOf(error, changes);
    }
  }

  /** Changes a user under a row lock once `decide` has seen the current state; null when there is none. */
  async update(id: string, decide: (current: User) => Promise<UserChanges> | UserChanges): Promise<User | null> {
    let changes: UserChanges | undefined;
    try {
      return await updateLocked(this.dataSource, User, id, async (current) => (changes = await decide(current)));
    } catch (error) {
      throw userConflictOf(error, changes);
    }
  }

  /** Deletes a user (its memberships and invitation go with it) once `check` passes. */
  delete(id: string, check: (current: User, manager: EntityManager) => Promise<void> | void): Promise<User | null> {
    return deleteLocked(this.dataSource, User, id, check);
  }

  /**
   * Accepts an invitation: finds the user whose invitation token hashes to `tokenHash`, lets
   * `decide` check it and say what changes, and uses the invitation up, all in one transaction,
   * so that a token works once even under concurrent attempts. The user row is locked before the
   * invitation row, in the order a deletion of the user takes them. Null for an unknown or used token.
   */
  async acceptInvitation(tokenHash: Buffer, decide: (invited: User) => Promise<UserChanges> | UserChanges): Promise<User | null> {
    let changes: UserChanges | undefined;
    try {
      return await this.dataSource.transaction(async (manager) => {
        const invitation = await manager.findOneBy(UserInvitation, { tokenHash });
        if (!invitation) return null;
        const invited = await manager
          .getRepository(User)
          .createQueryBuilder('users')
          .setLock('pessimistic_write')
          .where('users.id = :userId', { userId: invitation.userId })
          .getOne();
        const used = await manager.delete(UserInvitation, { userId: invitation.userId, tokenHash });
        if (!invited || !used.affected) return null;
        changes = await decide(invited);
        return manager.save(Object.assign(invited, changes));
      });
    } catch (error) {
      throw userConflictOf(error, changes);
    }
  }

  /** The groups a user belongs to, directly or through other groups. */
  groupsOf(userId: string, query: ListQuery): Promise<UserMembershipDto[]> {
    const qb = this.dataSource.createQueryBuilder().from<UserMembershipDto>(`(${USER_GROUPS_SQL})`, 'membership').setParameters({ userId });
    return fetchListRows(qb, query);
  }
}

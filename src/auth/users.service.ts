import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { ChangeFeed, RowCache } from '../common/database/change-feed.js';
import { ConflictError, ForbiddenError, InvalidInputError, NotFoundError, type FieldError } from '../common/errors/hub-errors.js';
import type { ItemDenials } from '../common/http/access-scope.js';
import type { Caller } from '../common/http/caller.js';
import { requireIfMatch, Versioned, type EntityTagCondition } from '../common/http/entity-tag.js';
import { toListEnvelope, type ListEnvelope } from '../common/http/list-envelope.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import { applyJsonPatch, type JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import { applyProjection, type Projection } from '../common/query/projection.js';
import { invalidBody, validateInput } from '../common/validation/validate-input.js';
import { CallerCache } from './caller-cache.js';
import type { UserMembershipDto } from './dto/group.dto.js';
import { toUnixDetails, toUserResponse, UserInputDto, type CreatedUserDto, type UnixDetailsDto, type UserDto } from './dto/user.dto.js';
import type { User } from './entities/user.entity.js';
import { invitationTokenHash, newInvitationToken } from './invitation-token.js';
import { GroupsRepository } from './groups.repository.js';
import { LoginThrottle } from './login-throttle.js';
import { PasswordHasher } from './password-hasher.js';
import { PasswordPolicy } from './password-policy.js';
import { RoleGuard } from './role-guard.js';
import { UsersRepository, type UserChanges } from './users.repository.js';

function versioned(user: User): Versioned<UserDto> {
  return new Versioned(toUserResponse(user), user.version);
}

function notFound(id: string): NotFoundError {
  return new NotFoundError(`User ${id} not found`);
}

function sameInstant(a: Date | null, b: string | null | undefined): boolean {
  return (a?.getTime() ?? null) === (b ? new Date(b).getTime() : null);
}

/** What a user may change of their own record without Update permission on it (api-map §6). */
const SELF_SERVICE_FIELDS: readonly (keyof UserChanges)[] = ['displayName', 'email'];

/** Refuses (403) a change by a user to their own record beyond their display name and e-mail. */
function refuseChangesBeyondSelfService(current: User, input: UserInputDto, changes: UserChanges): void {
  const changed = (Object.keys(changes) as (keyof UserChanges)[]).filter(
    (field) => !SELF_SERVICE_FIELDS.includes(field) && field !== 'passwordHash' && changes[field] !== current[field],
  );
  for (const field of ['system', 'invitationPending'] as const) if ((input[field] ?? current[field]) !== current[field]) changed.push(field);
  if (input.password !== undefined) changed.push('passwordHash');
  if (changed.length > 0) {
    const names = changed.map((field) => (field === 'passwordHash' ? 'password' : field));
    throw new ForbiddenError(
      `You may change only your own displayName and email, not ${names.join(', ')}; change your password with PUT /api/v2/auth/me/password`,
    );
  }
}

/** The columns a body sets, but the password. */
function columnsFrom(input: UserInputDto): UserChanges {
  return {
    userName: input.userName,
    displayName: input.displayName ?? null,
    email: input.email ?? null,
    active: input.active ?? true,
    externalId: input.externalId ?? null,
    unixHomeDirectory: input.unixHomeDirectory ?? null,
    unixUserName: input.unixUserName ?? null,
    userPrincipalName: input.userPrincipalName ?? null,
  };
}

/** Which of the fields that make a user who they are (the key to every role they hold) a body changes. */
function identityChanges(current: User, input: UserInputDto): string[] {
  const columns = columnsFrom(input);
  return [
    ...(input.password !== undefined ? ['password'] : []),
    ...(['active', 'externalId', 'unixUserName'] as const).filter((field) => columns[field] !== current[field]),
  ];
}

/** How far ahead an invitation may be set to expire. */
const MAX_INVITATION_DAYS = 365;

@Injectable()
export class UsersService {
  /** Users' unixUserName by id: every job's submission needs its owner's (the user row's changes drop it). */
  private readonly unixUserNames: RowCache<{ readonly unixUserName: string | null }>;

  constructor(
    private readonly users: UsersRepository,
    private readonly groupsRepository: GroupsRepository,
    private readonly hasher: PasswordHasher,
    private readonly policy: PasswordPolicy,
    private readonly callers: CallerCache,
    private readonly roleGuard: RoleGuard,
    private readonly throttle: LoginThrottle,
    private readonly config: HubConfig,
    private readonly clock: Clock,
    changes: ChangeFeed,
  ) {
    this.unixUserNames = new RowCache(changes, 'users');
  }

  /** The users, but those a Deny hides from the caller's single reads. */
  async query(_caller: Caller, query: ListQuery, denials: ItemDenials | undefined): Promise<ListEnvelope<UserDto>> {
    return toListEnvelope(await this.users.list(query, denials), query, toUserResponse);
  }

  /**
   * Creates a user with a password, or, with `invitationPending`, without one: the reply then
   * carries the invitation's token, this once (only its hash is kept).
   */
  async create(caller: Caller, input: UserInputDto): Promise<Versioned<CreatedUserDto>> {
    const pending = input.invitationPending ?? false;
    const errors: FieldError[] = [];
    if (input.system) errors.push({ path: '/system', message: 'system is set by the hub; only built-in users are system users' });
    if (pending && input.password !== undefined)
      errors.push({ path: '/password', message: 'password must be absent when invitationPending is true: the invitee chooses it' });
    if (!pending && input.password === undefined) errors.push({ path: '/password', message: 'password is required unless invitationPending is true' });
    if (!pending && input.invitationExpiry) errors.push({ path: '/invitationExpiry', message: 'invitationExpiry needs invitationPending true' });
    const expiryProblem = pending && input.invitationExpiry ? this.invitationExpiryProblem(new Date(input.invitationExpiry)) : undefined;
    if (expiryProblem) errors.push({ path: '/invitationExpiry', message: expiryProblem });
    if (errors.length > 0) throw invalidBody(errors);
    if (input.externalId) await this.roleGuard.requireAdministrator(caller, `set the externalId of a user (it links an external identity to the account)`);
    if (input.unixUserName) await this.roleGuard.requireAdministrator(caller, `set the unixUserName of a user (jobs run as that host account)`);
    const changes = await this.changesFrom(input);
    if (!pending) return versioned(await this.users.insert(changes));
    const token = newInvitationToken();
    const expiry = input.invitationExpiry ? new Date(input.invitationExpiry) : new Date(this.clock.now().getTime() + this.config.invitationTtlSeconds * 1000);
    const user = await this.users.insert({ ...changes, invitationPending: true, invitationExpiry: expiry }, invitationTokenHash(token));
    return new Versioned({ ...toUserResponse(user), invitationToken: token }, user.version);
  }

  async get(_caller: Caller, id: string, projection: Projection | undefined): Promise<Versioned<Partial<UserDto>>> {
    return this.projected(await this.users.findById(id), projection, () => notFound(id));
  }

  /** A user's unixUserName (null when unset), for the areas that run work as them; 404 when there is no such user. */
  async unixUserNameOf(id: string): Promise<string | null> {
    const found = await this.unixUserNames.get(id, async () => {
      const user = await this.users.findById(id);
      return user && { unixUserName: user.unixUserName };
    });
    if (!found) throw notFound(id);
    return found.unixUserName;
  }

  async getCurrent(caller: Caller, projection: Projection | undefined): Promise<Versioned<Partial<UserDto>>> {
    return this.projected(await this.users.findById(caller.userId), projection, () => new NotFoundError('Your user record no longer exists'));
  }

  /** `asSelf`: the caller may change only their own displayName and email (api-map §6). */
  async replace(caller: Caller, id: string, input: UserInputDto, ifMatch: EntityTagCondition | undefined, asSelf = false): Promise<Versioned<UserDto>> {
    return this.update(caller, id, ifMatch, asSelf, () => input);
  }

  async patch(caller: Caller, id: string, patch: JsonPatch, ifMatch: EntityTagCondition | undefined, asSelf = false): Promise<Versioned<UserDto>> {
    return this.update(caller, id, ifMatch, asSelf, (current) => validateInput(UserInputDto, applyJsonPatch(toUserResponse(current), patch)));
  }

  async delete(_caller: Caller, id: string, ifMatch: EntityTagCondition | undefined): Promise<MessageDto> {
    const deleted = await this.users.delete(id, (current) => {
      requireIfMatch(ifMatch, current.version);
      if (current.system) throw new ForbiddenError(`User '${current.userName}' is a system user and cannot be deleted`);
    });
    if (!deleted) throw notFound(id);
    this.forget(id);
    return message(`User '${deleted.userName}' deleted`);
  }

  /**
   * Lifts the lock five bad logins put on a user's name and clears its failures. Letting the user
   * log in again is acting for them, so it is guarded like a reset of their password: Use on every
   * role bound to them (for the bootstrap administrator, an administrator's).
   */
  async unlock(caller: Caller, id: string): Promise<MessageDto> {
    const user = await this.users.findById(id);
    if (!user) throw notFound(id);
    if (user.id !== caller.userId) await this.roleGuard.requireUseOfRolesBoundTo(caller, await this.principalsOf(user.id), `unlocking user '${user.userName}'`);
    await this.throttle.unlock(user.userName);
    return message(`User '${user.userName}' unlocked: its failed logins are cleared`);
  }

  /** Ids of the system users (the bootstrap administrator), for other areas. */
  systemUserIds(): Promise<string[]> {
    return this.users.systemUserIds();
  }

  async groups(_caller: Caller, id: string, query: ListQuery): Promise<UserMembershipDto[]> {
    if (!(await this.users.findById(id))) throw notFound(id);
    return this.users.groupsOf(id, query);
  }

  async unixDetails(_caller: Caller, id: string): Promise<UnixDetailsDto> {
    const user = await this.users.findById(id);
    if (!user) throw notFound(id);
    return toUnixDetails(user);
  }

  private projected(user: User | null, projection: Projection | undefined, missing: () => NotFoundError): Versioned<Partial<UserDto>> {
    if (!user) throw missing();
    return new Versioned(applyProjection(toUserResponse(user), projection), user.version);
  }

  /** A replace or a patch: `decide` gives the new state once the current one is locked. */
  private async update(
    caller: Caller,
    id: string,
    ifMatch: EntityTagCondition | undefined,
    asSelf: boolean,
    decide: (current: User) => UserInputDto | Promise<UserInputDto>,
  ): Promise<Versioned<UserDto>> {
    // The escalation guard reads bindings and groups: it decides on the user as read before the
    // row is locked (a locked row holds a pooled connection meanwhile), and a change under the
    // lock that touches more than it checked is a conflict. A caller acting as themself may change
    // none of these fields.
    let checked: string[] = [];
    if (!asSelf) {
      const before = await this.users.findById(id);
      if (!before) throw notFound(id);
      checked = identityChanges(before, await decide(before));
      await this.refuseEscalation(caller, before, checked);
    }
    const updated = await this.users.update(id, async (current) => {
      requireIfMatch(ifMatch, current.version);
      const input = await decide(current);
      if (asSelf) refuseChangesBeyondSelfService(current, input, {});
      this.refuseChangesToHubFields(current, input);
      const changes = { ...(await this.changesFrom(input)), invitationExpiry: this.invitationExpiry(current, input) };
      if (asSelf) refuseChangesBeyondSelfService(current, input, changes);
      if (identityChanges(current, input).some((field) => !checked.includes(field)))
        throw new ConflictError(`User '${current.userName}' changed while this change was checked; send it again`);
      // A new password or a deactivation revokes every token issued before (a reactivation must not revive them).
      const revokes = changes.passwordHash !== undefined || (current.active && !changes.active);
      return revokes ? { ...changes, tokenVersion: current.tokenVersion + 1 } : changes;
    });
    if (!updated) throw notFound(id);
    this.forget(id);
    return versioned(updated);
  }

  /** The user and every group it is in, directly or not: the principals whose roles the user holds. */
  private async principalsOf(userId: string): Promise<string[]> {
    return [userId, ...(await this.groupsRepository.effectiveGroupIds(userId))];
  }

  /**
   * Who a user is — their password, `active`, `externalId`, `unixUserName` — is the key to every
   * role they hold: changing it for another user needs Use on each of those roles, as binding them
   * does; `externalId` (an external identity) and `unixUserName` (the host account jobs run as)
   * are an administrator's alone, the caller's own record included (api-map §1); and the
   * bootstrap administrator's password is theirs alone.
   */
  private async refuseEscalation(caller: Caller, current: User, changed: readonly string[]): Promise<void> {
    if (changed.length === 0) return;
    if (changed.includes('externalId')) await this.roleGuard.requireAdministrator(caller, `set the externalId of user '${current.userName}'`);
    if (changed.includes('unixUserName'))
      await this.roleGuard.requireAdministrator(caller, `set the unixUserName of user '${current.userName}' (jobs run as that host account)`);
    if (current.id === caller.userId) return;
    if (current.system && changed.includes('password'))
      throw new ForbiddenError(`The password of '${current.userName}', the bootstrap administrator, is changed only by themself`);
    await this.roleGuard.requireUseOfRolesBoundTo(
      caller,
      await this.principalsOf(current.id),
      `changing the ${changed.join(', ')} of user '${current.userName}'`,
    );
  }

  /**
   * `system` and `invitationPending` are the hub's to set: a replace may send them back as read,
   * not change them. An invitee sets their own password. A system user stays active, so the hub
   * always keeps an administrator.
   */
  private refuseChangesToHubFields(current: User, input: UserInputDto): void {
    if ((input.system ?? current.system) !== current.system) throw InvalidInputError.at('/system', 'system is set by the hub and cannot be changed');
    if ((input.invitationPending ?? current.invitationPending) !== current.invitationPending)
      throw InvalidInputError.at('/invitationPending', 'invitationPending cannot be changed; an invitation is completed with POST /api/v2/auth/accounts');
    if (current.invitationPending && input.password !== undefined)
      throw InvalidInputError.at('/password', 'password must be absent while the invitation is pending: the invitee chooses it');
    if (current.system && input.active === false) throw new ForbiddenError(`User '${current.userName}' is a system user and cannot be deactivated`);
  }

  /** A pending invitation's expiry may be moved (absent keeps it); other users have none. */
  private invitationExpiry(current: User, input: UserInputDto): Date | null {
    if (!input.invitationExpiry || sameInstant(current.invitationExpiry, input.invitationExpiry)) return current.invitationExpiry;
    if (!current.invitationPending) throw InvalidInputError.at('/invitationExpiry', 'invitationExpiry applies only while an invitation is pending');
    const expiry = new Date(input.invitationExpiry);
    const problem = this.invitationExpiryProblem(expiry);
    if (problem) throw InvalidInputError.at('/invitationExpiry', problem);
    return expiry;
  }

  private invitationExpiryProblem(expiry: Date): string | undefined {
    const now = this.clock.now().getTime();
    if (expiry.getTime() <= now) return 'invitationExpiry must be in the future';
    if (expiry.getTime() > now + MAX_INVITATION_DAYS * 24 * 3600 * 1000) return `invitationExpiry must be within ${MAX_INVITATION_DAYS} days`;
    return undefined;
  }

  /** The columns a body sets; a password is checked against the policy and hashed (absent keeps the current one). */
  private async changesFrom(input: UserInputDto): Promise<UserChanges> {
    if (input.password !== undefined) this.policy.check(input.password, input.userName, '/password');
    return { ...columnsFrom(input), ...(input.password !== undefined && { passwordHash: await this.hasher.hash(input.password) }) };
  }

  /** Drops what this process cached of a user it changed, so that its next request sees the change (other replicas hear of it through the change feed). */
  private forget(id: string): void {
    this.callers.forget(id);
    this.unixUserNames.forget(id);
  }
}

import { Injectable } from '@nestjs/common';
import { ForbiddenError, InvalidInputError, NotFoundError, type FieldError } from '../common/errors/hub-errors.js';
import type { ItemDenials } from '../common/http/access-scope.js';
import type { Caller } from '../common/http/caller.js';
import { requireIfMatch, Versioned, type EntityTagCondition } from '../common/http/entity-tag.js';
import { toListEnvelope, type ListEnvelope } from '../common/http/list-envelope.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import { applyJsonPatch, type JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import { applyProjection, type Projection } from '../common/query/projection.js';
import { validateInput } from '../common/validation/validate-input.js';
import { CallerCache } from './caller-cache.js';
import { GroupInputDto, toGroupResponse, type GroupDto, type GroupMemberChangeDto, type GroupMemberDto } from './dto/group.dto.js';
import type { PrincipalDto } from './dto/principal.dto.js';
import type { Group } from './entities/group.entity.js';
import { GroupsRepository, MemberChangeError, type GroupChanges, type MemberChange, type PrincipalRef } from './groups.repository.js';
import { RoleGuard } from './role-guard.js';

function versioned(group: Group): Versioned<GroupDto> {
  return new Versioned(toGroupResponse(group), group.version);
}

function notFound(id: string): NotFoundError {
  return new NotFoundError(`Group ${id} not found`);
}

function changesFrom(input: GroupInputDto): GroupChanges {
  return { name: input.name, externalId: input.externalId ?? null };
}

const describePrincipal = (ref: PrincipalRef) => `${ref.type === 'User' ? 'user' : 'group'} '${ref.name}'`;

@Injectable()
export class GroupsService {
  constructor(
    private readonly groups: GroupsRepository,
    private readonly callers: CallerCache,
    private readonly roleGuard: RoleGuard,
  ) {}

  /** The groups, but those a Deny hides from the caller's single reads. */
  async query(_caller: Caller, query: ListQuery, denials: ItemDenials | undefined): Promise<ListEnvelope<GroupDto>> {
    return toListEnvelope(await this.groups.list(query, denials), query, toGroupResponse);
  }

  async create(_caller: Caller, input: GroupInputDto): Promise<Versioned<GroupDto>> {
    if (input.system) throw InvalidInputError.at('/system', 'system is set by the hub; only built-in groups are system groups');
    return versioned(await this.groups.insert(changesFrom(input)));
  }

  async get(_caller: Caller, id: string, projection: Projection | undefined): Promise<Versioned<Partial<GroupDto>>> {
    const group = await this.groups.findById(id);
    if (!group) throw notFound(id);
    return new Versioned(applyProjection(toGroupResponse(group), projection), group.version);
  }

  async replace(_caller: Caller, id: string, input: GroupInputDto, ifMatch: EntityTagCondition | undefined): Promise<Versioned<GroupDto>> {
    return this.update(id, ifMatch, () => input);
  }

  async patch(_caller: Caller, id: string, patch: JsonPatch, ifMatch: EntityTagCondition | undefined): Promise<Versioned<GroupDto>> {
    return this.update(id, ifMatch, (current) => validateInput(GroupInputDto, applyJsonPatch(toGroupResponse(current), patch)));
  }

  async delete(_caller: Caller, id: string, ifMatch: EntityTagCondition | undefined): Promise<MessageDto> {
    const deleted = await this.groups.delete(id, (current) => {
      requireIfMatch(ifMatch, current.version);
      if (current.system) throw new ForbiddenError(`Group '${current.name}' is a built-in group and cannot be deleted`);
    });
    if (!deleted) throw notFound(id);
    this.callers.clear();
    return message(`Group '${deleted.name}' deleted`);
  }

  async members(_caller: Caller, id: string, query: ListQuery): Promise<GroupMemberDto[]> {
    if (!(await this.groups.findById(id))) throw notFound(id);
    return this.groups.members(id, query);
  }

  /**
   * Adds and removes members, in order, all or nothing: an unknown principal or an addition that
   * would make a group contain itself (directly or through others) is a 400 and changes nothing.
   * Adding a member twice or removing a non-member changes nothing and is counted as unchanged.
   * A member gets the roles bound to the group and to every group containing it, and a removal
   * can lift a Deny: either needs Use on each of those roles, as binding them does.
   */
  async changeMembers(caller: Caller, id: string, items: readonly GroupMemberChangeDto[]): Promise<MessageDto> {
    const changes = await this.resolveMembers(items);
    await this.roleGuard.requireUseOfRolesBoundTo(caller, await this.groups.groupAndContainingIds(id), `changing the members of group ${id}`);
    let result;
    try {
      result = await this.groups.changeMembers(id, changes);
    } catch (error) {
      if (!(error instanceof MemberChangeError)) throw error;
      const member = describePrincipal(changes[error.index].member);
      throw InvalidInputError.at(
        `/${error.index}`,
        error.reason === 'cycle' ? `Adding ${member} would make a group contain itself (directly or through its members)` : `The ${member} no longer exists`,
      );
    }
    if (!result) throw notFound(id);
    this.callers.clear();
    const { added, removed, unchanged } = result.outcome;
    return message(`Members of group '${result.group.name}' changed: ${added} added, ${removed} removed, ${unchanged} unchanged`);
  }

  /** A user or group by id, for other areas (role bindings); null when there is none. */
  async findPrincipal(id: string): Promise<PrincipalRef | null> {
    const [found] = await this.groups.principalsById([id.toLowerCase()]);
    return found ?? null;
  }

  /** Users and groups with these ids, for other areas (explain); unknown ids are left out. */
  findPrincipals(ids: readonly string[]): Promise<PrincipalRef[]> {
    return this.groups.principalsById([...new Set(ids.map((id) => id.toLowerCase()))]);
  }

  /** Ids of the groups a user is in, directly or not. */
  effectiveGroupIds(userId: string): Promise<string[]> {
    return this.groups.effectiveGroupIds(userId);
  }

  async queryPrincipals(_caller: Caller, query: ListQuery): Promise<ListEnvelope<PrincipalDto>> {
    const page = await this.groups.listPrincipals(query);
    return toListEnvelope(page, query, (row) => ({ _type: row.type, _id: row.id, displayName: row.displayName, external: row.external }));
  }

  private async update(
    id: string,
    ifMatch: EntityTagCondition | undefined,
    decide: (current: Group) => GroupInputDto | Promise<GroupInputDto>,
  ): Promise<Versioned<GroupDto>> {
    const updated = await this.groups.update(id, async (current) => {
      requireIfMatch(ifMatch, current.version);
      const input = await decide(current);
      if ((input.system ?? current.system) !== current.system) throw InvalidInputError.at('/system', 'system is set by the hub and cannot be changed');
      return changesFrom(input);
    });
    if (!updated) throw notFound(id);
    return versioned(updated);
  }

  /** Finds the principal each item names, reporting every item that names none (or names two). */
  private async resolveMembers(items: readonly GroupMemberChangeDto[]): Promise<MemberChange[]> {
    const ids = items.flatMap((item) => (item.id ? [item.id.toLowerCase()] : []));
    const named = (type: string) => items.flatMap((item) => (!item.id && item.name && item.principalType === type ? [item.name] : []));
    const [byId, byName] = await Promise.all([this.groups.principalsById(ids), this.groups.principalsByName(named('User'), named('Group'))]);
    const found = new Map<string, PrincipalRef>(byId.map((ref) => [ref.id, ref]));
    const foundByName = new Map<string, PrincipalRef>(byName.map(({ lookup, ...ref }) => [`${ref.type}:${lookup}`, ref]));
    const errors: FieldError[] = [];
    const changes: MemberChange[] = [];
    items.forEach((item, index) => {
      const error = (field: string, text: string) => errors.push({ path: `/${index}${field}`, message: text });
      if (item.id) {
        const ref = found.get(item.id.toLowerCase());
        if (!ref) return error('/id', `No user or group has the id ${item.id}`);
        if (item.principalType && item.principalType !== ref.type) return error('/principalType', `${item.id} is a ${ref.type}, not a ${item.principalType}`);
        if (item.name && item.name.toLowerCase() !== ref.name.toLowerCase()) return error('/name', `${item.id} is named '${ref.name}', not '${item.name}'`);
        return changes.push({ op: item.op, member: ref });
      }
      if (!item.name) return error('', 'Each item names a member by id, or by name with principalType');
      if (!item.principalType) return error('/principalType', 'principalType (User or Group) is required with name');
      const ref = foundByName.get(`${item.principalType}:${item.name}`);
      if (!ref) return error('/name', `No ${item.principalType === 'User' ? 'user' : 'group'} is named '${item.name}'`);
      changes.push({ op: item.op, member: ref });
    });
    if (errors.length > 0) throw new InvalidInputError(`Invalid member changes: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`, errors);
    return changes;
  }
}

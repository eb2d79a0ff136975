import { Injectable } from '@nestjs/common';
import { ChangeFeed, RowCache } from '../common/database/change-feed.js';
import { usesOf, type UsageCheck } from '../common/database/usage-checks.js';
import { ConflictError, NotFoundError, type FieldError } from '../common/errors/hub-errors.js';
import type { ItemDenials } from '../common/http/access-scope.js';
import type { Caller } from '../common/http/caller.js';
import { requireIfMatch, Versioned, type EntityTagCondition } from '../common/http/entity-tag.js';
import { toListEnvelope, type ListEnvelope } from '../common/http/list-envelope.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import { applyJsonPatch, type JsonPatch } from '../common/patch/json-patch.js';
import type { FilterCondition, ListQuery } from '../common/query/list-query.js';
import { isUuid } from '../common/query/query-values.js';
import { ENTITY_NAME, ENTITY_NAME_RULE } from '../common/validation/entity-name.js';
import { invalidBody, validateInput } from '../common/validation/validate-input.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { AccessEvaluator } from '../rbac/access-evaluator.js';
import {
  ExecutionProfileInputDto,
  toExecutionProfileListItem,
  toExecutionProfileResponse,
  type ExecutionProfileDto,
  type ExecutionProfileListItemDto,
  type NameAvailabilityDto,
} from './dto/execution-profile.dto.js';
import type { ExecutionProfile } from './entities/execution-profile.entity.js';
import { ExecutionProfilesRepository, type ExecutionProfileChanges, type ProfileListConditions } from './execution-profiles.repository.js';
import { constraintValueProblem } from './node-constraints.js';

const MAX_PROPERTIES_BYTES = 64 * 1024;

/**
 * How an area tells that a profile is still in use (bindings; later jobs, sessions and triggers
 * running under it).
 */
export type ProfileUsageCheck = UsageCheck;

export function profileNotFound(id: string): NotFoundError {
  return new NotFoundError(`Execution profile ${id} not found`);
}

function versioned(profile: ExecutionProfile): Versioned<ExecutionProfileDto> {
  return new Versioned(toExecutionProfileResponse(profile), profile.version);
}

/** The columns a body sets, once its constraints' values fit their operators and its properties their size. */
function changesFrom(input: ExecutionProfileInputDto): ExecutionProfileChanges {
  const constraints = (input.constraints ?? []).map(({ attribute, operator, value }) => ({ attribute, operator, value }));
  const errors: FieldError[] = [];
  constraints.forEach((constraint, index) => {
    const problem = constraintValueProblem(constraint);
    if (problem) errors.push({ path: `/constraints/${index}/value`, message: problem });
  });
  const properties = input.properties ?? {};
  if (Buffer.byteLength(JSON.stringify(properties)) > MAX_PROPERTIES_BYTES)
    errors.push({ path: '/properties', message: 'properties must be at most 64 KiB of JSON' });
  if (errors.length > 0) throw invalidBody(errors);
  return {
    name: input.name,
    description: input.description ?? null,
    isDefault: input.isDefault ?? false,
    environment: input.environment ?? {},
    constraints,
    properties,
  };
}

@Injectable()
export class ExecutionProfilesService {
  private readonly usageChecks: ProfileUsageCheck[] = [];
  /** Profiles by id, for the areas that run work under them: every submission reads its profile. */
  private readonly cache: RowCache<ExecutionProfileDto>;

  constructor(
    private readonly profiles: ExecutionProfilesRepository,
    private readonly namespaces: NamespacesService,
    private readonly evaluator: AccessEvaluator,
    changes: ChangeFeed,
  ) {
    this.cache = new RowCache<ExecutionProfileDto>(changes, 'execution_profiles');
  }

  /** Called by each area whose entities run under a profile, so that a profile in use is not deleted. */
  registerUsageCheck(check: ProfileUsageCheck): void {
    this.usageChecks.push(check);
  }

  /** The profiles the filters keep, but those a Deny hides from the caller's single reads. */
  async query(caller: Caller, query: ListQuery, denials: ItemDenials | undefined): Promise<ListEnvelope<ExecutionProfileListItemDto>> {
    const conditions = await this.conditionsOf(caller, query.filters);
    return toListEnvelope(await this.profiles.list(query, conditions, denials), query, toExecutionProfileListItem);
  }

  /** Whether a name is free for a new profile; never an error, whatever is asked. */
  async nameAvailability(_caller: Caller, name: unknown): Promise<NameAvailabilityDto> {
    if (Array.isArray(name)) return { result: false, reason: 'invalid', msg: 'Give one name' };
    if (typeof name !== 'string' || name.trim() === '') return { result: false, reason: 'invalid', msg: 'A name is required' };
    if (!ENTITY_NAME.test(name)) return { result: false, reason: 'invalid', msg: ENTITY_NAME_RULE.replace(/^name/, 'A name') };
    const existing = await this.profiles.findByName(name);
    if (existing)
      return { result: false, reason: 'taken', msg: `An execution profile named '${existing.name}' already exists (names are compared ignoring case)` };
    return { result: true };
  }

  async create(_caller: Caller, input: ExecutionProfileInputDto): Promise<Versioned<ExecutionProfileDto>> {
    return versioned(await this.profiles.insert(changesFrom(input)));
  }

  async get(_caller: Caller, id: string): Promise<Versioned<ExecutionProfileDto>> {
    const profile = await this.profiles.findById(id);
    if (!profile) throw profileNotFound(id);
    return versioned(profile);
  }

  async replace(
    _caller: Caller,
    id: string,
    input: ExecutionProfileInputDto,
    ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<ExecutionProfileDto>> {
    const updated = await this.profiles.update(id, async (current) => {
      requireIfMatch(ifMatch, current.version);
      return Promise.resolve(changesFrom(input));
    });
    this.cache.forget(id.toLowerCase());
    if (!updated) throw profileNotFound(id);
    return versioned(updated);
  }

  async patch(_caller: Caller, id: string, patch: JsonPatch, ifMatch: EntityTagCondition | undefined): Promise<Versioned<ExecutionProfileDto>> {
    const updated = await this.profiles.update(id, async (current) => {
      requireIfMatch(ifMatch, current.version);
      return changesFrom(await validateInput(ExecutionProfileInputDto, applyJsonPatch(toExecutionProfileResponse(current), patch)));
    });
    this.cache.forget(id.toLowerCase());
    if (!updated) throw profileNotFound(id);
    return versioned(updated);
  }

  /** Refused (409) while the profile is bound to a namespace or anything runs under it. */
  async delete(_caller: Caller, id: string, ifMatch: EntityTagCondition | undefined): Promise<MessageDto> {
    const deleted = await this.profiles.delete(id, async (current, manager) => {
      requireIfMatch(ifMatch, current.version);
      const held = await usesOf(this.usageChecks, id, manager);
      if (held.length > 0) throw new ConflictError(`Execution profile '${current.name}' is still used by ${held.join(', ')}; remove them first`);
    });
    this.cache.forget(id.toLowerCase());
    if (!deleted) throw profileNotFound(id);
    return message(`Execution profile '${deleted.name}' deleted`);
  }

  /** A profile for other areas (a namespace's default); null when there is none. */
  async find(id: string): Promise<ExecutionProfileDto | null> {
    return this.cache.get(id.toLowerCase(), async () => {
      const profile = await this.profiles.findById(id);
      return profile && toExecutionProfileResponse(profile);
    });
  }

  /** The list filters that are not columns, resolved: permissions decided per profile, namespaces by id or name. */
  private async conditionsOf(caller: Caller, filters: readonly FilterCondition[]): Promise<ProfileListConditions> {
    const conditions: ProfileListConditions = { permitted: [], boundToAny: [], boundToAll: [], defaultFor: [] };
    for (const filter of filters) {
      if (filter.field === 'hasPermission') conditions.permitted.push(await this.permittedIds(caller, String(filter.value)));
      if (filter.field === 'isDefaultFor') conditions.defaultFor.push((await this.namespaceIdsOf(caller, [String(filter.value)]))[0] ?? null);
      if (filter.field === 'hasBindingTo') {
        const ids = await this.namespaceIdsOf(caller, filter.value as readonly string[]);
        const known = ids.filter((id): id is string => id !== undefined);
        if (filter.operator === 'ANY') conditions.boundToAny.push(known);
        // A namespace that does not exist has no bindings: ALL then matches nothing.
        else conditions.boundToAll.push(known.length === ids.length ? [...new Set(known)] : []);
      }
    }
    return conditions;
  }

  /**
   * The profiles on which the caller holds `action`: in `*`, or in a namespace the profile is
   * bound to (where workloads use it).
   */
  private async permittedIds(caller: Caller, action: string): Promise<string[]> {
    const [permissions, placements] = await Promise.all([this.evaluator.permissionsOf(caller), this.profiles.placements()]);
    return placements
      .filter(({ id, namespaceIds }) =>
        [null, ...namespaceIds].some((namespaceId) => permissions.decide({ object: `/ExecutionProfiles/${id}`, action, namespaceId }) === 'Allow'),
      )
      .map(({ id }) => id);
  }

  /**
   * Namespace ids for values that are ids or names (an id first, then a name); undefined for none,
   * and for a namespace whose bindings the caller may not read, so that these filters tell nothing
   * of what the bindings list would hide.
   */
  private async namespaceIdsOf(caller: Caller, values: readonly string[]): Promise<(string | undefined)[]> {
    const [byName, permissions] = await Promise.all([this.namespaces.findByNames(values), this.evaluator.permissionsOf(caller)]);
    const readable = (id: string | undefined) =>
      id !== undefined && permissions.decide({ object: '/ExecutionProfileBindings', action: 'Read', namespaceId: id }) === 'Allow' ? id : undefined;
    return Promise.all(
      values.map(async (value) => {
        const byId = isUuid(value) ? await this.namespaces.find({ id: value.toLowerCase() }) : null;
        return readable(byId?.id ?? byName.get(value.toLowerCase())?.id);
      }),
    );
  }
}

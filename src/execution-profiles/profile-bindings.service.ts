import { randomUUID } from 'node:crypto';
import { ChangeFeed, RowCache } from '../common/database/change-feed.js';
import { Injectable } from '@nestjs/common';
import { InvalidInputError, NotFoundError, type FieldError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import type { Caller } from '../common/http/caller.js';
import { requireIfMatch, Versioned, type EntityTagCondition } from '../common/http/entity-tag.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import { applyJsonPatch, type JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import { invalidBody, validateInput } from '../common/validation/validate-input.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { namespaceOfResource, NO_SUCH_NAMESPACE } from '../rbac/access-evaluator.js';
import { AccessService } from '../rbac/access.service.js';
import type { ExecutionProfileDto } from './dto/execution-profile.dto.js';
import { ProfileBindingInputDto, toProfileBindingResponse, type ProfileBindingDto, type ProfileBindingListDto } from './dto/profile-binding.dto.js';
import { ExecutionProfilesService } from './execution-profiles.service.js';
import { ProfileBindingsRepository, type ProfileBindingChanges, type ProfileBindingRow } from './profile-bindings.repository.js';

function bindingNotFound(id: string): NotFoundError {
  return new NotFoundError(`Execution profile binding ${id} not found`);
}

function versioned(binding: ProfileBindingRow): Versioned<ProfileBindingDto> {
  return new Versioned(toProfileBindingResponse(binding), binding.version);
}

/**
 * Bindings of execution profiles to namespaces (hub-interface §2.8, api-map §4). Binding a
 * profile hands it out to a namespace, so it needs Use on the profile (in `*`) besides the
 * permission on the binding; at most one binding per namespace is its default.
 */
@Injectable()
export class ProfileBindingsService {
  /** Which profiles are bound where, by profile and namespace: every submission asks. Any change to any binding clears it. */
  private readonly bound: RowCache<true>;

  constructor(
    private readonly bindings: ProfileBindingsRepository,
    private readonly profiles: ExecutionProfilesService,
    private readonly namespaces: NamespacesService,
    private readonly access: AccessService,
    changes: ChangeFeed,
  ) {
    this.bound = new RowCache<true>(changes, 'execution_profile_bindings').clearOn('execution_profile_bindings');
  }

  /** The bindings in `scope`, with the names of their profiles. */
  async query(_caller: Caller, query: ListQuery, scope: NamespaceScope): Promise<ProfileBindingListDto> {
    const page = await this.bindings.list(query, scope);
    return {
      totalCount: page.totalCount,
      data: page.items.map(toProfileBindingResponse),
      executionProfiles: Object.fromEntries(page.items.map((row) => [row.executionProfileId, row.profileName])),
    };
  }

  async create(caller: Caller, input: ProfileBindingInputDto): Promise<Versioned<ProfileBindingDto>> {
    const changes = await this.changesFrom(caller, input, undefined);
    return versioned(await this.bindings.insert(input.id?.toLowerCase() ?? randomUUID(), changes));
  }

  async get(_caller: Caller, id: string): Promise<Versioned<ProfileBindingDto>> {
    const binding = await this.bindings.findById(id);
    if (!binding) throw bindingNotFound(id);
    return versioned(binding);
  }

  async replace(caller: Caller, id: string, input: ProfileBindingInputDto, ifMatch: EntityTagCondition | undefined): Promise<Versioned<ProfileBindingDto>> {
    return this.update(caller, id, ifMatch, () => input);
  }

  async patch(caller: Caller, id: string, patch: JsonPatch, ifMatch: EntityTagCondition | undefined): Promise<Versioned<ProfileBindingDto>> {
    return this.update(caller, id, ifMatch, (current) => validateInput(ProfileBindingInputDto, applyJsonPatch(toProfileBindingResponse(current), patch)));
  }

  /** Makes a binding its namespace's default; the previous default stops being it. */
  async makeDefault(caller: Caller, id: string): Promise<Versioned<ProfileBindingDto>> {
    if (!(await this.bindings.makeDefault(id))) throw bindingNotFound(id);
    return this.get(caller, id);
  }

  async delete(_caller: Caller, id: string, ifMatch: EntityTagCondition | undefined): Promise<MessageDto> {
    const deleted = await this.bindings.delete(id, (current) => requireIfMatch(ifMatch, current.version));
    this.bound.clear();
    if (!deleted) throw bindingNotFound(id);
    return message(`Execution profile '${deleted.profileName}' unbound from namespace '${deleted.namespaceName}'`);
  }

  /** The profile of a namespace's default binding. */
  async defaultProfile(_caller: Caller, namespaceId: string): Promise<ExecutionProfileDto> {
    const binding = await this.bindings.defaultOf(namespaceId);
    const profile = binding && (await this.profiles.find(binding.executionProfileId));
    if (!profile) throw new NotFoundError(`Namespace ${namespaceId} has no default execution profile`);
    return profile;
  }

  /** Whether a profile is bound to a namespace (so that workloads there may run under it), for other areas. */
  async isBound(executionProfileId: string, namespaceId: string): Promise<boolean> {
    const key = `${executionProfileId.toLowerCase()} ${namespaceId.toLowerCase()}`;
    return (await this.bound.get(key, async () => ((await this.bindings.findIn(namespaceId, executionProfileId)) !== null ? true : null))) === true;
  }

  /** The binding of a profile in a namespace. */
  async bindingIn(_caller: Caller, namespaceId: string, executionProfileId: string): Promise<Versioned<ProfileBindingDto>> {
    const binding = await this.bindings.findIn(namespaceId, executionProfileId);
    if (!binding) throw new NotFoundError(`Execution profile ${executionProfileId} is not bound to namespace ${namespaceId}`);
    return versioned(binding);
  }

  private async update(
    caller: Caller,
    id: string,
    ifMatch: EntityTagCondition | undefined,
    decide: (current: ProfileBindingRow) => ProfileBindingInputDto | Promise<ProfileBindingInputDto>,
  ): Promise<Versioned<ProfileBindingDto>> {
    const found = await this.bindings.update(id, async (current) => {
      requireIfMatch(ifMatch, current.version);
      const input = await decide(current);
      if (input.id && input.id.toLowerCase() !== id) throw InvalidInputError.at('/id', "id must be the binding's own id (or absent)");
      return this.changesFrom(caller, input, current);
    });
    this.bound.clear();
    if (!found) throw bindingNotFound(id);
    return this.get(caller, id);
  }

  /**
   * The profile and the namespace must exist. Binding a profile (anew, or another one) needs Use
   * on it; moving a binding to another namespace needs Create on bindings there.
   */
  private async changesFrom(caller: Caller, input: ProfileBindingInputDto, current: ProfileBindingRow | undefined): Promise<ProfileBindingChanges> {
    const profileId = input.executionProfileId.toLowerCase();
    const namespaceId = input.namespaceId.toLowerCase();
    const [profile, namespace] = await Promise.all([this.profiles.find(profileId), this.namespaces.find({ id: namespaceId })]);
    // The permissions first, so that a refusal tells nothing of which profiles and namespaces exist.
    if (profileId !== current?.executionProfileId) await this.access.require(caller, `/ExecutionProfiles/${profileId}`, 'Use', { id: null, name: '*' });
    if (current && namespaceId !== current.namespaceId) {
      const target = { id: namespace?.id ?? NO_SUCH_NAMESPACE, name: namespaceId };
      await this.access.require(caller, '/ExecutionProfileBindings', 'Create', target, namespaceOfResource('namespace', namespaceId).where);
    }
    const errors: FieldError[] = [];
    if (!profile) errors.push({ path: '/executionProfileId', message: `No execution profile has the id ${input.executionProfileId}` });
    if (!namespace) errors.push({ path: '/namespaceId', message: `No namespace has the id ${input.namespaceId}` });
    if (errors.length > 0) throw invalidBody(errors);
    return { executionProfileId: profileId, namespaceId, isDefault: input.isDefault ?? false };
  }
}

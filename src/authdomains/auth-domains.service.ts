import { Injectable } from '@nestjs/common';
import { InvalidInputError, NotFoundError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import type { Caller } from '../common/http/caller.js';
import { requireIfMatch, Versioned, type EntityTagCondition } from '../common/http/entity-tag.js';
import { toListEnvelope, type ListEnvelope } from '../common/http/list-envelope.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import { applyJsonPatch, type JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import { validateInput } from '../common/validation/validate-input.js';
import { NamespacesService, type NamespaceRef } from '../namespaces/namespaces.service.js';
import { NO_SUCH_NAMESPACE } from '../rbac/access-evaluator.js';
import { AccessService } from '../rbac/access.service.js';
import { AuthDomainsRepository, type AuthDomainChanges } from './auth-domains.repository.js';
import { AuthDomainInputDto, toAuthDomainResponse, type AuthDomainDto, type AuthDomainRow } from './dto/auth-domain.dto.js';

function noSuchNamespace(name: string): InvalidInputError {
  return InvalidInputError.at('/namespace', `No namespace is named '${name}'`);
}

export function authDomainNotFound(id: string): NotFoundError {
  return new NotFoundError(`Auth domain ${id} not found`);
}

@Injectable()
export class AuthDomainsService {
  constructor(
    private readonly domains: AuthDomainsRepository,
    private readonly namespaces: NamespacesService,
    private readonly access: AccessService,
  ) {}

  /** The domains in `scope` (the namespaces where the caller may read them). */
  async query(_caller: Caller, query: ListQuery, scope: NamespaceScope): Promise<ListEnvelope<AuthDomainDto>> {
    return toListEnvelope(await this.domains.list(query, scope), query, toAuthDomainResponse);
  }

  async create(_caller: Caller, input: AuthDomainInputDto): Promise<Versioned<AuthDomainDto>> {
    const namespace = await this.namespaces.find({ name: input.namespace });
    if (!namespace) throw noSuchNamespace(input.namespace);
    return versioned(await this.domains.insert(changesFrom(input, namespace)));
  }

  async get(_caller: Caller, id: string): Promise<Versioned<AuthDomainDto>> {
    const domain = await this.domains.findById(id);
    if (!domain) throw authDomainNotFound(id);
    return versioned(domain);
  }

  async replace(caller: Caller, id: string, input: AuthDomainInputDto, ifMatch: EntityTagCondition | undefined): Promise<Versioned<AuthDomainDto>> {
    return this.update(caller, id, ifMatch, () => input);
  }

  async patch(caller: Caller, id: string, patch: JsonPatch, ifMatch: EntityTagCondition | undefined): Promise<Versioned<AuthDomainDto>> {
    return this.update(caller, id, ifMatch, async (current) => validateInput(AuthDomainInputDto, applyJsonPatch(toAuthDomainResponse(current), patch)));
  }

  /** Deletes a domain with every credential in it. */
  async delete(_caller: Caller, id: string, ifMatch: EntityTagCondition | undefined): Promise<MessageDto> {
    const deleted = await this.domains.delete(id, (current) => requireIfMatch(ifMatch, current.version));
    if (!deleted) throw authDomainNotFound(id);
    return message(`Auth domain '${deleted.name}' deleted with its credentials`);
  }

  /**
   * A replace or a patch. Moving a domain to another namespace is creating it there, so it needs
   * Create on /AuthDomains in the new namespace too.
   */
  private async update(
    caller: Caller,
    id: string,
    ifMatch: EntityTagCondition | undefined,
    decide: (current: AuthDomainRow) => AuthDomainInputDto | Promise<AuthDomainInputDto>,
  ): Promise<Versioned<AuthDomainDto>> {
    const updated = await this.domains.update(id, async (current) => {
      requireIfMatch(ifMatch, current.version);
      const currentNamespace = await this.namespaces.find({ id: current.namespaceId });
      const input = await decide({ ...current, namespaceName: currentNamespace?.name ?? '' });
      const namespace = await this.namespaces.find({ name: input.namespace });
      // Checked before the namespace's existence, and named as the caller gave it, so that a
      // refusal tells nothing of which namespaces exist.
      if (namespace?.id !== current.namespaceId)
        await this.access.require(caller, '/AuthDomains', 'Create', { id: namespace?.id ?? NO_SUCH_NAMESPACE, name: input.namespace });
      if (!namespace) throw noSuchNamespace(input.namespace);
      return changesFrom(input, namespace);
    });
    if (!updated) throw authDomainNotFound(id);
    return this.get(caller, id);
  }
}

function changesFrom(input: AuthDomainInputDto, namespace: NamespaceRef): AuthDomainChanges {
  return {
    namespaceId: namespace.id,
    name: input.name,
    description: input.description ?? null,
    allowPersonalCredentials: input.allowPersonalCredentials ?? false,
  };
}

function versioned(domain: AuthDomainRow): Versioned<AuthDomainDto> {
  return new Versioned(toAuthDomainResponse(domain), domain.version);
}

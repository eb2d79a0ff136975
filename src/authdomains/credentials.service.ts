import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { GroupsService } from '../auth/groups.service.js';
import { ForbiddenError, InvalidInputError, NotFoundError, type FieldError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import type { Caller } from '../common/http/caller.js';
import { requireIfMatch, Versioned, type EntityTagCondition } from '../common/http/entity-tag.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import { applyJsonPatch, type JsonPatch } from '../common/patch/json-patch.js';
import type { ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import { invalidBody, validateInput } from '../common/validation/validate-input.js';
import { namespaceOfResource, notAllowed } from '../rbac/access-evaluator.js';
import { AccessService } from '../rbac/access.service.js';
import { AuthDomainsRepository } from './auth-domains.repository.js';
import { authDomainNotFound } from './auth-domains.service.js';
import { CredentialCipher } from './credential-cipher.js';
import { CredentialsRepository, type CredentialWrite, type RankPlacement } from './credentials.repository.js';
import type { AuthDomainRow } from './dto/auth-domain.dto.js';
import {
  CredentialInputDto,
  toCredentialListItem,
  toCredentialResponse,
  type CredentialDto,
  type CredentialListDto,
  type CredentialRow,
  type RankDefinitionDto,
} from './dto/credential.dto.js';

/** A body field that was sent with a value (not absent, not null). */
const given = <T>(value: T | null | undefined): value is T => value !== undefined && value !== null;

function credentialNotFound(id: string): NotFoundError {
  return new NotFoundError(`Credential ${id} not found`);
}

function notPersonal(domain: AuthDomainRow): ForbiddenError {
  return new ForbiddenError(`Auth domain '${domain.name}' does not allow personal credentials; ask someone who manages its credentials`);
}

/**
 * A rankDefinition as a placement: a position with exactly the references it needs, or a value
 * alone. `path` is where the definition sits in the body, for error paths.
 */
export function rankPlacementOf(definition: RankDefinitionDto, path: string): RankPlacement {
  const { position, above, below, value } = definition;
  if (given(value) && given(position)) throw InvalidInputError.at(`${path}/value`, 'value sets the rank directly; give either a position or a value, not both');
  if (given(value)) {
    if (given(above) || given(below)) throw InvalidInputError.at(`${path}/value`, 'above and below go with a position, not with a value');
    return { value: BigInt(value) };
  }
  if (!position) throw InvalidInputError.at(`${path}/position`, 'a rankDefinition needs a position or a value');
  const errors: FieldError[] = [];
  const needs = { above: position === 'Above' || position === 'Between', below: position === 'Below' || position === 'Between' };
  for (const field of ['above', 'below'] as const) {
    if (needs[field] && !given(definition[field])) errors.push({ path: `${path}/${field}`, message: `position ${position} needs ${field}` });
    if (!needs[field] && given(definition[field])) errors.push({ path: `${path}/${field}`, message: `position ${position} takes no ${field}` });
  }
  if (errors.length > 0) throw invalidBody(errors);
  const lower = (id: string | null | undefined) => (id as string).toLowerCase();
  switch (position) {
    case 'Above':
      return { position, above: lower(above) };
    case 'Below':
      return { position, below: lower(below) };
    case 'Between':
      return { position, above: lower(above), below: lower(below) };
    default:
      return { position };
  }
}

/**
 * Credentials (api-map §3): their secrets sealed at rest, ranked within their domain, and
 * resolved for a caller to the best-ranked enabled one of theirs or their groups'. A caller who
 * does not manage a domain's credentials may hold their own there when the domain allows personal
 * credentials (the routes let them through "as self").
 */
@Injectable()
export class CredentialsService {
  constructor(
    private readonly credentials: CredentialsRepository,
    private readonly domains: AuthDomainsRepository,
    private readonly cipher: CredentialCipher,
    private readonly groups: GroupsService,
    private readonly access: AccessService,
  ) {}

  /** A domain's credentials, in the namespaces where the caller may read credentials. */
  async query(_caller: Caller, query: ListQuery, scope: NamespaceScope): Promise<CredentialListDto> {
    return toList(await this.credentials.list(query, scope));
  }

  /** The caller's own credentials, in every domain. */
  async queryMine(caller: Caller, query: ListQuery): Promise<CredentialListDto> {
    return toList(await this.credentials.listOf(caller.userId, query));
  }

  async create(caller: Caller, asSelf: boolean, input: CredentialInputDto): Promise<Versioned<CredentialDto>> {
    const domainId = input.authDomainId.toLowerCase();
    const domain = await this.domains.findById(domainId);
    // As self, an unknown domain is refused like one the caller may not see, so as not to tell them apart.
    if (!domain && asSelf) throw notAllowed('Read', `/AuthDomains/${domainId}`, namespaceOfResource('authDomain', domainId));
    if (!domain) throw InvalidInputError.at('/authDomainId', `No auth domain has the id ${input.authDomainId}`);
    if (asSelf) await this.requirePersonal(caller, domain);
    const id = randomUUID();
    const write = await this.writeOf(id, input, undefined);
    const placement = input.rank ? rankPlacementOf(input.rank, '/rank') : { position: 'Low' as const };
    const created = await this.credentials.insert(id, domain.id, write, placement, '/rank');
    if (!created) throw InvalidInputError.at('/authDomainId', `Auth domain ${domain.id} was deleted`);
    return new Versioned(this.toResponse(caller, created), created.version);
  }

  /** One credential; its data only for its own principal. */
  async get(caller: Caller, id: string): Promise<Versioned<CredentialDto>> {
    const credential = await this.credentials.findById(id);
    if (!credential) throw credentialNotFound(id);
    return new Versioned(this.toResponse(caller, credential), credential.version);
  }

  /** The best-ranked enabled credential of the caller or of any of the caller's groups in a domain, with its data. */
  async resolve(caller: Caller, authDomainId: string): Promise<CredentialDto> {
    const domain = await this.domains.findById(authDomainId);
    if (!domain) throw authDomainNotFound(authDomainId);
    const best = await this.credentials.best(domain.id, [caller.userId, ...caller.groups]);
    if (!best) throw new NotFoundError(`Neither you nor any of your groups holds an enabled credential in auth domain '${domain.name}'`);
    return toCredentialResponse(best, this.dataOf(best));
  }

  async replace(
    caller: Caller,
    asSelf: boolean,
    id: string,
    input: CredentialInputDto,
    ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<CredentialDto>> {
    return this.update(caller, asSelf, id, ifMatch, () => input);
  }

  async patch(caller: Caller, asSelf: boolean, id: string, patch: JsonPatch, ifMatch: EntityTagCondition | undefined): Promise<Versioned<CredentialDto>> {
    return this.update(caller, asSelf, id, ifMatch, (current) => {
      const shown = this.toResponse(caller, current);
      const patched = applyJsonPatch(shown, patch);
      // Its own principal sees the data, so removing it from what they see clears it (elsewhere an
      // absent `data` keeps what is stored, as other callers never see it).
      if (shown.data !== undefined && patched.data === undefined && patched.type === 'Internal') patched.data = {};
      return validateInput(CredentialInputDto, patched);
    });
  }

  /** Moves a credential in its domain's order. */
  async setRank(caller: Caller, asSelf: boolean, id: string, definition: RankDefinitionDto): Promise<MessageDto> {
    const placement = rankPlacementOf(definition, '');
    if (asSelf) {
      const current = await this.credentials.findById(id);
      if (!current) throw credentialNotFound(id);
      await this.requirePersonal(caller, await this.domainOf(current));
    }
    const moved = await this.credentials.move(id, placement, '');
    if (!moved) throw credentialNotFound(id);
    return message(`Credential '${moved.label}' moved in auth domain '${moved.authDomainName}'`);
  }

  async delete(_caller: Caller, id: string, ifMatch: EntityTagCondition | undefined): Promise<MessageDto> {
    const deleted = await this.credentials.delete(id, (current) => requireIfMatch(ifMatch, current.version));
    if (!deleted) throw credentialNotFound(id);
    return message(`Credential '${deleted.label}' deleted`);
  }

  /**
   * A replace or a patch, prepared from the current state and committed under the domain's ranking
   * lock. A credential stays in its domain; one changed by its own principal "as self" stays
   * theirs, in a domain that allows personal credentials.
   */
  private async update(
    caller: Caller,
    asSelf: boolean,
    id: string,
    ifMatch: EntityTagCondition | undefined,
    decide: (current: CredentialRow) => CredentialInputDto | Promise<CredentialInputDto>,
  ): Promise<Versioned<CredentialDto>> {
    const found = await this.credentials.update(id, '/rank', async (current) => {
      requireIfMatch(ifMatch, current.version);
      const input = await decide(current);
      if (input.authDomainId.toLowerCase() !== current.authDomainId)
        throw InvalidInputError.at('/authDomainId', 'A credential cannot move to another auth domain');
      if (asSelf) {
        await this.requirePersonal(caller, await this.domainOf(current));
        if (input.principal.toLowerCase() !== caller.userId)
          throw new ForbiddenError('Only those who manage credentials here may give a credential to another principal');
      }
      return { changes: await this.writeOf(id, input, current), placement: input.rank ? rankPlacementOf(input.rank, '/rank') : undefined };
    });
    if (!found) throw credentialNotFound(id);
    return this.get(caller, id);
  }

  /** A personal credential needs a domain that allows them, and that the caller may see. */
  private async requirePersonal(caller: Caller, domain: AuthDomainRow): Promise<void> {
    await this.access.require(
      caller,
      `/AuthDomains/${domain.id}`,
      'Read',
      { id: domain.namespaceId, name: domain.namespaceName },
      namespaceOfResource('authDomain', domain.id).where,
    );
    if (!domain.allowPersonalCredentials) throw notPersonal(domain);
  }

  private async domainOf(credential: CredentialRow): Promise<AuthDomainRow> {
    const domain = await this.domains.findById(credential.authDomainId);
    if (!domain) throw credentialNotFound(credential.id);
    return domain;
  }

  /**
   * The stored fields of a body: its principal must exist; an Internal credential keeps its data
   * sealed (a body without `data` keeps what is stored), a Vault one a path instead.
   */
  private async writeOf(id: string, input: CredentialInputDto, current: CredentialRow | undefined): Promise<CredentialWrite> {
    const principal = await this.groups.findPrincipal(input.principal);
    const errors: FieldError[] = [];
    if (!principal) errors.push({ path: '/principal', message: `No user or group has the id ${input.principal}` });
    if (input.type === 'Vault') {
      if (!given(input.vaultPath)) errors.push({ path: '/vaultPath', message: 'vaultPath is required for type Vault' });
      if (given(input.data)) errors.push({ path: '/data', message: 'data is not stored for type Vault: the secret is at vaultPath' });
    } else if (given(input.vaultPath)) {
      errors.push({ path: '/vaultPath', message: 'vaultPath is only for type Vault' });
    }
    if (!principal || errors.length > 0) throw invalidBody(errors);
    // Data stays only with its principal: given to another, a credential keeps no secret it was not given anew.
    const keepsData = input.type === 'Internal' && !given(input.data) && current?.type === 'Internal' && current.principalId === principal.id;
    return {
      principalId: principal.id,
      principalType: principal.type,
      disabled: input.disabled ?? false,
      label: input.label,
      type: input.type,
      vaultPath: input.type === 'Vault' ? (input.vaultPath ?? null) : null,
      sealedData: input.type === 'Vault' ? null : keepsData ? undefined : this.cipher.seal(id, input.data ?? {}),
    };
  }

  private toResponse(caller: Caller, credential: CredentialRow): CredentialDto {
    return toCredentialResponse(credential, credential.principalId === caller.userId ? this.dataOf(credential) : undefined);
  }

  private dataOf(credential: CredentialRow): Record<string, string> | undefined {
    return credential.sealedData ? this.cipher.open(credential.id, credential.sealedData) : undefined;
  }
}

function toList(page: ListPage<CredentialRow>): CredentialListDto {
  return {
    totalCount: page.totalCount,
    data: page.items.map(toCredentialListItem),
    authDomains: Object.fromEntries(page.items.map((row) => [row.authDomainId, row.authDomainName])),
  };
}

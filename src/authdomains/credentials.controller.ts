import { Body, Controller, Param } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { AsSelf, ListScope, type NamespaceScope } from '../common/http/access-scope.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import { IfMatch, type EntityTagCondition, type Versioned } from '../common/http/entity-tag.js';
import { MessageDto } from '../common/http/message.dto.js';
import { Route } from '../common/http/route.decorator.js';
import { ListParams, PatchBody, ResourceId } from '../common/http/route-params.js';
import type { JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import { CredentialsService } from './credentials.service.js';
import { CredentialDto, CredentialInputDto, CredentialListDto, RankDefinitionDto } from './dto/credential.dto.js';
import { CREDENTIAL_LIST_QUERY, MY_CREDENTIAL_LIST_QUERY } from './list-queries.js';

const IN_ITS_NAMESPACE = { resource: 'credential', param: 'id' } as const;
const PERSONAL = 'Its own principal may also do this, in a domain that allows personal credentials.';

@ApiTags('Credentials')
@Controller('api/v2/authdomains')
export class CredentialsController {
  constructor(private readonly credentials: CredentialsService) {}

  @Route({
    method: 'GET',
    path: 'credentials',
    summary: 'Query the credentials of an auth domain',
    description: 'filter[authDomain][EQ] is required. Items carry their rank as an integer, lowest first, and never their data.',
    access: { object: '/Credentials', action: 'Read', namespaced: true },
    list: CREDENTIAL_LIST_QUERY,
    response: CredentialListDto,
  })
  queryCredentials(@CurrentCaller() caller: Caller, @ListParams() query: ListQuery, @ListScope() scope: NamespaceScope): Promise<CredentialListDto> {
    return this.credentials.query(caller, query, scope);
  }

  @Route({
    method: 'GET',
    path: 'me/credentials',
    summary: "Query the caller's own credentials",
    description: 'The credentials whose principal is the caller, in every auth domain; never their data.',
    access: { self: true },
    list: MY_CREDENTIAL_LIST_QUERY,
    response: CredentialListDto,
  })
  queryMyCredentials(@CurrentCaller() caller: Caller, @ListParams() query: ListQuery): Promise<CredentialListDto> {
    return this.credentials.queryMine(caller, query);
  }

  @Route({
    method: 'POST',
    path: 'credentials',
    status: 201,
    summary: 'Create a credential',
    description: `Needs Create on /Credentials in the domain's namespace; or, for a credential of the caller's own, Read on the domain and a domain that allows personal credentials. Absent a rank it goes last.`,
    access: { object: '/Credentials', action: 'Create', namespace: { resource: 'authDomain', body: 'authDomainId' }, self: { body: 'principal' } },
    response: CredentialDto,
    etag: true,
    errors: { 409: 'Rank 42 is held by credential 0b5e…; choose another value or a position' },
  })
  createCredential(@CurrentCaller() caller: Caller, @AsSelf() asSelf: boolean, @Body() body: CredentialInputDto): Promise<Versioned<CredentialDto>> {
    return this.credentials.create(caller, asSelf, body);
  }

  @Route({
    method: 'GET',
    path: 'credentials/:id',
    summary: 'Get a credential',
    description: 'Its data is returned to its own principal only. Its own principal may read it without the permission.',
    access: { object: '/Credentials/{id}', action: 'Read', namespace: IN_ITS_NAMESPACE, self: { owner: true } },
    response: CredentialDto,
    etag: true,
  })
  getCredential(@CurrentCaller() caller: Caller, @Param('id', new ResourceId('Credential')) id: string): Promise<Versioned<CredentialDto>> {
    return this.credentials.get(caller, id);
  }

  @Route({
    method: 'GET',
    path: 'authdomains/:id/credential',
    summary: "Resolve the caller's credential in an auth domain",
    description:
      'The best-ranked (lowest rank) enabled credential of the caller or of any group the caller belongs to, directly or not, with its data. Needs Use on the domain.',
    access: { object: '/AuthDomains/{id}', action: 'Use', namespace: { resource: 'authDomain', param: 'id' } },
    response: CredentialDto,
  })
  resolveCredential(@CurrentCaller() caller: Caller, @Param('id', new ResourceId('Auth domain')) id: string): Promise<CredentialDto> {
    return this.credentials.resolve(caller, id);
  }

  @Route({
    method: 'PUT',
    path: 'credentials/:id',
    summary: 'Replace a credential',
    description: `A body without data keeps the stored data; a rank moves it, none keeps its place. ${PERSONAL}`,
    access: { object: '/Credentials/{id}', action: 'Update', namespace: IN_ITS_NAMESPACE, self: { owner: true } },
    response: CredentialDto,
    etag: true,
  })
  replaceCredential(
    @CurrentCaller() caller: Caller,
    @AsSelf() asSelf: boolean,
    @Param('id', new ResourceId('Credential')) id: string,
    @Body() body: CredentialInputDto,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<CredentialDto>> {
    return this.credentials.replace(caller, asSelf, id, body, ifMatch);
  }

  @Route({
    method: 'PATCH',
    path: 'credentials/:id',
    summary: 'Patch a credential',
    description: PERSONAL,
    access: { object: '/Credentials/{id}', action: 'Update', namespace: IN_ITS_NAMESPACE, self: { owner: true } },
    response: CredentialDto,
    patch: true,
    etag: true,
  })
  patchCredential(
    @CurrentCaller() caller: Caller,
    @AsSelf() asSelf: boolean,
    @Param('id', new ResourceId('Credential')) id: string,
    @PatchBody() patch: JsonPatch,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<CredentialDto>> {
    return this.credentials.patch(caller, asSelf, id, patch, ifMatch);
  }

  @Route({
    method: 'PUT',
    path: 'credentials/:id/rank',
    summary: 'Set the rank of a credential',
    description: `Moves it in its domain's order (lowest rank first). ${PERSONAL}`,
    access: { object: '/Credentials/{id}', action: 'Update', namespace: IN_ITS_NAMESPACE, self: { owner: true } },
    response: MessageDto,
    errors: { 409: 'Rank 42 is held by credential 0b5e…; choose another value or a position' },
  })
  setCredentialRank(
    @CurrentCaller() caller: Caller,
    @AsSelf() asSelf: boolean,
    @Param('id', new ResourceId('Credential')) id: string,
    @Body() body: RankDefinitionDto,
  ): Promise<MessageDto> {
    return this.credentials.setRank(caller, asSelf, id, body);
  }

  @Route({
    method: 'DELETE',
    path: 'credentials/:id',
    summary: 'Delete a credential',
    description: 'Its own principal may delete it without the permission.',
    access: { object: '/Credentials/{id}', action: 'Delete', namespace: IN_ITS_NAMESPACE, self: { owner: true } },
    response: MessageDto,
    etag: true,
  })
  deleteCredential(
    @CurrentCaller() caller: Caller,
    @Param('id', new ResourceId('Credential')) id: string,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<MessageDto> {
    return this.credentials.delete(caller, id, ifMatch);
  }
}

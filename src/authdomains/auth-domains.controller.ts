import { Body, Controller, Param } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { ListScope, type NamespaceScope } from '../common/http/access-scope.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import { IfMatch, type EntityTagCondition, type Versioned } from '../common/http/entity-tag.js';
import type { ListEnvelope } from '../common/http/list-envelope.js';
import { MessageDto } from '../common/http/message.dto.js';
import { Route } from '../common/http/route.decorator.js';
import { ListParams, PatchBody, ResourceId } from '../common/http/route-params.js';
import type { JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import { AuthDomainsService } from './auth-domains.service.js';
import { AuthDomainDto, AuthDomainInputDto, AuthDomainListDto } from './dto/auth-domain.dto.js';
import { AUTH_DOMAIN_LIST_QUERY } from './list-queries.js';

const DUPLICATE = "An auth domain named 'Warehouse DB' already exists in this namespace (names are compared ignoring case)";
const IN_ITS_NAMESPACE = { resource: 'authDomain', param: 'id' } as const;

@ApiTags('Auth domains')
@Controller('api/v2/authdomains/authdomains')
export class AuthDomainsController {
  constructor(private readonly domains: AuthDomainsService) {}

  @Route({
    method: 'GET',
    summary: 'Query auth domains',
    access: { object: '/AuthDomains', action: 'Read', namespaced: true },
    list: AUTH_DOMAIN_LIST_QUERY,
    response: AuthDomainListDto,
  })
  queryAuthDomains(@CurrentCaller() caller: Caller, @ListParams() query: ListQuery, @ListScope() scope: NamespaceScope): Promise<ListEnvelope<AuthDomainDto>> {
    return this.domains.query(caller, query, scope);
  }

  @Route({
    method: 'POST',
    status: 201,
    summary: 'Create an auth domain',
    access: { object: '/AuthDomains', action: 'Create', namespace: { body: 'namespace' } },
    response: AuthDomainDto,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  createAuthDomain(@CurrentCaller() caller: Caller, @Body() body: AuthDomainInputDto): Promise<Versioned<AuthDomainDto>> {
    return this.domains.create(caller, body);
  }

  @Route({
    method: 'GET',
    path: ':id',
    summary: 'Get an auth domain',
    access: { object: '/AuthDomains/{id}', action: 'Read', namespace: IN_ITS_NAMESPACE },
    response: AuthDomainDto,
    etag: true,
  })
  getAuthDomain(@CurrentCaller() caller: Caller, @Param('id', new ResourceId('Auth domain')) id: string): Promise<Versioned<AuthDomainDto>> {
    return this.domains.get(caller, id);
  }

  @Route({
    method: 'PUT',
    path: ':id',
    summary: 'Replace an auth domain',
    description: 'Moving it to another namespace also needs Create on /AuthDomains there.',
    access: { object: '/AuthDomains/{id}', action: 'Update', namespace: IN_ITS_NAMESPACE },
    response: AuthDomainDto,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  replaceAuthDomain(
    @CurrentCaller() caller: Caller,
    @Param('id', new ResourceId('Auth domain')) id: string,
    @Body() body: AuthDomainInputDto,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<AuthDomainDto>> {
    return this.domains.replace(caller, id, body, ifMatch);
  }

  @Route({
    method: 'PATCH',
    path: ':id',
    summary: 'Patch an auth domain',
    access: { object: '/AuthDomains/{id}', action: 'Update', namespace: IN_ITS_NAMESPACE },
    response: AuthDomainDto,
    patch: true,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  patchAuthDomain(
    @CurrentCaller() caller: Caller,
    @Param('id', new ResourceId('Auth domain')) id: string,
    @PatchBody() patch: JsonPatch,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<AuthDomainDto>> {
    return this.domains.patch(caller, id, patch, ifMatch);
  }

  @Route({
    method: 'DELETE',
    path: ':id',
    summary: 'Delete an auth domain and its credentials',
    access: { object: '/AuthDomains/{id}', action: 'Delete', namespace: IN_ITS_NAMESPACE },
    response: MessageDto,
    etag: true,
  })
  deleteAuthDomain(
    @CurrentCaller() caller: Caller,
    @Param('id', new ResourceId('Auth domain')) id: string,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<MessageDto> {
    return this.domains.delete(caller, id, ifMatch);
  }
}

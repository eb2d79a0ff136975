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
import { NamespaceDto, NamespaceInputDto, NamespaceListDto } from './dto/namespace.dto.js';
import { NAMESPACE_LIST_QUERY } from './namespace-list.query.js';
import { NamespacesService } from './namespaces.service.js';

const DUPLICATE = "A namespace named 'analytics' already exists (names are compared ignoring case)";

@ApiTags('Namespaces')
@Controller('api/v2/namespaces')
export class NamespacesController {
  constructor(private readonly namespaces: NamespacesService) {}

  @Route({
    method: 'GET',
    summary: 'Query namespaces',
    access: { object: '/Namespaces', action: 'Read', namespaced: true },
    list: NAMESPACE_LIST_QUERY,
    response: NamespaceListDto,
  })
  queryNamespaces(@CurrentCaller() caller: Caller, @ListParams() query: ListQuery, @ListScope() scope: NamespaceScope): Promise<ListEnvelope<NamespaceDto>> {
    return this.namespaces.query(caller, query, scope);
  }

  @Route({
    method: 'POST',
    status: 201,
    summary: 'Create a namespace',
    access: { object: '/Namespaces', action: 'Create' },
    response: NamespaceDto,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  createNamespace(@CurrentCaller() caller: Caller, @Body() body: NamespaceInputDto): Promise<Versioned<NamespaceDto>> {
    return this.namespaces.create(caller, body);
  }

  @Route({
    method: 'GET',
    path: ':id',
    summary: 'Get a namespace',
    access: { object: '/Namespaces/{id}', action: 'Read', namespace: { param: 'id' } },
    response: NamespaceDto,
    etag: true,
  })
  getNamespace(@CurrentCaller() caller: Caller, @Param('id', new ResourceId('Namespace')) id: string): Promise<Versioned<NamespaceDto>> {
    return this.namespaces.get(caller, id);
  }

  @Route({
    method: 'PUT',
    path: ':id',
    summary: 'Replace a namespace',
    access: { object: '/Namespaces/{id}', action: 'Update', namespace: { param: 'id' } },
    response: NamespaceDto,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  replaceNamespace(
    @CurrentCaller() caller: Caller,
    @Param('id', new ResourceId('Namespace')) id: string,
    @Body() body: NamespaceInputDto,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<NamespaceDto>> {
    return this.namespaces.replace(caller, id, body, ifMatch);
  }

  @Route({
    method: 'PATCH',
    path: ':id',
    summary: 'Patch a namespace',
    access: { object: '/Namespaces/{id}', action: 'Update', namespace: { param: 'id' } },
    response: NamespaceDto,
    patch: true,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  patchNamespace(
    @CurrentCaller() caller: Caller,
    @Param('id', new ResourceId('Namespace')) id: string,
    @PatchBody() patch: JsonPatch,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<NamespaceDto>> {
    return this.namespaces.patch(caller, id, patch, ifMatch);
  }

  @Route({
    method: 'DELETE',
    path: ':id',
    summary: 'Delete a namespace',
    description: 'Refused with 409 while the namespace still holds entities of any area.',
    access: { object: '/Namespaces/{id}', action: 'Delete', namespace: { param: 'id' } },
    response: MessageDto,
    etag: true,
    errors: { 409: "Namespace 'analytics' still holds 2 auth domains; delete or move them first" },
  })
  deleteNamespace(
    @CurrentCaller() caller: Caller,
    @Param('id', new ResourceId('Namespace')) id: string,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<MessageDto> {
    return this.namespaces.delete(caller, id, ifMatch);
  }
}

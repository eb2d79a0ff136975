import { Body, Controller, Param } from '@nestjs/common';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import { IfMatch, type EntityTagCondition, type Versioned } from '../common/http/entity-tag.js';
import type { ListEnvelope } from '../common/http/list-envelope.js';
import { MessageDto } from '../common/http/message.dto.js';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { Route } from '../common/http/route.decorator.js';
import { ListParams, PatchBody, ResourceId } from '../common/http/route-params.js';
import type { JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import { LibraryDefinitionDto, LibraryDefinitionInputDto, LibraryDefinitionListDto } from './dto/library-definition.dto.js';
import { LibraryDefinitionsService } from './library-definitions.service.js';
import { LIBRARY_DEFINITION_LIST_QUERY } from './list-queries.js';

const DUPLICATE = "A library definition named 'sales' already exists in this namespace";
const IN_ITS_NAMESPACE = { resource: 'libraryDefinition', param: 'id' } as const;
const definitionId = new ResourceId('Library definition');
const RULES =
  'An unknown namespace or engine, a path that is not absolute or not under HUB_LIBRARY_ROOTS once `..` and symbolic links are resolved, a postgres definition without options.authDomainId naming an auth domain (or with a path) is a 400.';

@ApiTags('Libraries')
@Controller('api/v2/libraries/definitions')
export class LibraryDefinitionsController {
  constructor(private readonly definitions: LibraryDefinitionsService) {}

  @Route({
    method: 'GET',
    summary: 'Query library definitions',
    description: 'Beyond the interface. Needs Read on /LibraryDefinitions in *.',
    access: { object: '/LibraryDefinitions', action: 'Read' },
    list: LIBRARY_DEFINITION_LIST_QUERY,
    response: LibraryDefinitionListDto,
  })
  queryLibraryDefinitions(@CurrentCaller() caller: Caller, @ListParams() query: ListQuery): Promise<ListEnvelope<LibraryDefinitionDto>> {
    return this.definitions.query(caller, query);
  }

  @Route({
    method: 'POST',
    status: 201,
    summary: 'Create a library definition',
    description: `Beyond the interface. ${RULES} Names are unique within a namespace (409).`,
    access: { object: '/LibraryDefinitions', action: 'Create', namespace: { body: 'namespace' } },
    response: LibraryDefinitionDto,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  createLibraryDefinition(@CurrentCaller() caller: Caller, @Body() body: LibraryDefinitionInputDto): Promise<Versioned<LibraryDefinitionDto>> {
    return this.definitions.create(caller, body);
  }

  @Route({
    method: 'GET',
    path: ':id',
    summary: 'Get a library definition',
    description: 'Beyond the interface.',
    access: { object: '/LibraryDefinitions/{id}', action: 'Read', namespace: IN_ITS_NAMESPACE },
    response: LibraryDefinitionDto,
    etag: true,
  })
  getLibraryDefinition(@CurrentCaller() caller: Caller, @Param('id', definitionId) id: string): Promise<Versioned<LibraryDefinitionDto>> {
    return this.definitions.get(caller, id);
  }

  @Route({
    method: 'PUT',
    path: ':id',
    summary: 'Replace a library definition',
    description: `Beyond the interface; validated as a create. ${RULES} A published library keeps the workers it has; they read the new definition once restarted.`,
    access: { object: '/LibraryDefinitions/{id}', action: 'Update', namespace: IN_ITS_NAMESPACE },
    response: LibraryDefinitionDto,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  replaceLibraryDefinition(
    @CurrentCaller() caller: Caller,
    @Param('id', definitionId) id: string,
    @Body() body: LibraryDefinitionInputDto,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<LibraryDefinitionDto>> {
    return this.definitions.replace(caller, id, body, ifMatch);
  }

  @Route({
    method: 'PATCH',
    path: ':id',
    summary: 'Patch a library definition',
    description: 'Beyond the interface; the patched definition is validated as a replace.',
    access: { object: '/LibraryDefinitions/{id}', action: 'Update', namespace: IN_ITS_NAMESPACE },
    response: LibraryDefinitionDto,
    patch: true,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  patchLibraryDefinition(
    @CurrentCaller() caller: Caller,
    @Param('id', definitionId) id: string,
    @PatchBody() patch: JsonPatch,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<LibraryDefinitionDto>> {
    return this.definitions.patch(caller, id, patch, ifMatch);
  }

  @Route({
    method: 'DELETE',
    path: ':id',
    summary: 'Delete a library definition',
    description: 'Beyond the interface. A published definition is refused with 409: unpublish it first.',
    access: { object: '/LibraryDefinitions/{id}', action: 'Delete', namespace: IN_ITS_NAMESPACE },
    response: MessageDto,
    etag: true,
    errors: { 409: 'The library definition is published: unpublish it before deleting it' },
  })
  deleteLibraryDefinition(
    @CurrentCaller() caller: Caller,
    @Param('id', definitionId) id: string,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<MessageDto> {
    return this.definitions.delete(caller, id, ifMatch);
  }
}

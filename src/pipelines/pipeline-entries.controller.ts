import { Body, Controller, Param } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { ListScope, type NamespaceScope } from '../common/http/access-scope.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import { IfMatch, type EntityTagCondition, type Versioned } from '../common/http/entity-tag.js';
import type { ListEnvelope } from '../common/http/list-envelope.js';
import { MessageDto } from '../common/http/message.dto.js';
import { Route } from '../common/http/route.decorator.js';
import { ListParams, PatchBody, ProjectionParams, ResourceId } from '../common/http/route-params.js';
import type { JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { Projection } from '../common/query/projection.js';
import {
  PIPELINE_ENTRY_FIELDS,
  PipelineEntryDto,
  PipelineEntryInputDto,
  PipelineEntryListDto,
  PipelineEntryValidationInputDto,
  PipelineValidationDto,
} from './dto/pipeline-entry.dto.js';
import { PIPELINE_ENTRY_LIST_QUERY } from './list-queries.js';
import { PipelineEntriesService } from './pipeline-entries.service.js';

const DUPLICATE = "An entry named 'nightly-etl' already exists in this folder of the namespace (names are compared ignoring case)";
const TYPE_CHANGE = "Pipeline 'nightly-etl' cannot become a Folder: an entry keeps its _type";
const IN_ITS_NAMESPACE = { resource: 'pipelineEntry', param: 'id' } as const;
const entryId = new ResourceId('Pipeline entry');

@ApiTags('Pipelines')
@Controller('api/v2/pipelines/entries')
export class PipelineEntriesController {
  constructor(private readonly entries: PipelineEntriesService) {}

  @Route({
    method: 'GET',
    summary: 'Query pipeline folder entries',
    description: 'Pipelines and folders, narrowed to the namespaces where the caller may read them. `filter[folderPath][EQ]=/` selects the top level.',
    access: { object: '/Pipelines', action: 'Read', namespaced: true },
    list: PIPELINE_ENTRY_LIST_QUERY,
    response: PipelineEntryListDto,
  })
  queryPipelineEntries(
    @CurrentCaller() caller: Caller,
    @ListParams() query: ListQuery,
    @ListScope() scope: NamespaceScope,
  ): Promise<ListEnvelope<PipelineEntryDto>> {
    return this.entries.query(caller, query, scope);
  }

  @Route({
    method: 'POST',
    status: 201,
    summary: 'Create a pipeline or folder',
    description: 'A pipeline may be saved while validate still reports problems (a draft). A folder carries no spec.',
    access: { object: '/Pipelines', action: 'Create', namespace: { body: 'namespace' } },
    response: PipelineEntryDto,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  createPipelineEntry(@CurrentCaller() caller: Caller, @Body() body: PipelineEntryInputDto): Promise<Versioned<PipelineEntryDto>> {
    return this.entries.create(caller, body);
  }

  @Route({
    method: 'POST',
    path: 'validate',
    summary: 'Validate a pipeline or folder',
    description:
      "Every rule a pipeline must follow to run, reported at once, each message naming its node(s): `[]` when it may run. Checked as Read on /Pipelines in the body's namespace (in * without one).",
    access: { object: '/Pipelines', action: 'Read', namespace: { body: 'namespace' } },
    response: PipelineValidationDto,
  })
  validatePipelineEntry(@CurrentCaller() caller: Caller, @Body() body: PipelineEntryValidationInputDto): PipelineValidationDto {
    return this.entries.validate(caller, body);
  }

  @Route({
    method: 'GET',
    path: ':id',
    summary: 'Get a pipeline entry',
    access: { object: '/Pipelines/{id}', action: 'Read', namespace: IN_ITS_NAMESPACE },
    response: PipelineEntryDto,
    projection: PIPELINE_ENTRY_FIELDS,
    etag: true,
  })
  getPipelineEntry(
    @CurrentCaller() caller: Caller,
    @Param('id', entryId) id: string,
    @ProjectionParams() projection: Projection | undefined,
  ): Promise<Versioned<Partial<PipelineEntryDto>>> {
    return this.entries.get(caller, id, projection);
  }

  @Route({
    method: 'PUT',
    path: ':id',
    summary: 'Replace a pipeline entry',
    description:
      'Renaming or moving a folder moves the paths of everything below it. A folder cannot move into itself or below itself (400); moving to another namespace also needs Create on /Pipelines there.',
    access: { object: '/Pipelines/{id}', action: 'Update', namespace: IN_ITS_NAMESPACE },
    response: PipelineEntryDto,
    etag: true,
    errors: { 409: `${DUPLICATE}; or: ${TYPE_CHANGE}` },
  })
  replacePipelineEntry(
    @CurrentCaller() caller: Caller,
    @Param('id', entryId) id: string,
    @Body() body: PipelineEntryInputDto,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<PipelineEntryDto>> {
    return this.entries.replace(caller, id, body, ifMatch);
  }

  @Route({
    method: 'PATCH',
    path: ':id',
    summary: 'Patch a pipeline entry',
    description: 'Validated like a replace; changes to _id, _created, _modified and folderPath are ignored.',
    access: { object: '/Pipelines/{id}', action: 'Update', namespace: IN_ITS_NAMESPACE },
    response: PipelineEntryDto,
    patch: true,
    etag: true,
    errors: { 409: `${DUPLICATE}; or: ${TYPE_CHANGE}` },
  })
  patchPipelineEntry(
    @CurrentCaller() caller: Caller,
    @Param('id', entryId) id: string,
    @PatchBody() patch: JsonPatch,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<PipelineEntryDto>> {
    return this.entries.patch(caller, id, patch, ifMatch);
  }

  @Route({
    method: 'DELETE',
    path: ':id',
    summary: 'Delete a pipeline entry',
    description: 'A folder that still holds entries is refused with 409.',
    access: { object: '/Pipelines/{id}', action: 'Delete', namespace: IN_ITS_NAMESPACE },
    response: MessageDto,
    etag: true,
    errors: { 409: "Folder 'reports' still holds entries; delete or move them first" },
  })
  deletePipelineEntry(
    @CurrentCaller() caller: Caller,
    @Param('id', entryId) id: string,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<MessageDto> {
    return this.entries.delete(caller, id, ifMatch);
  }
}

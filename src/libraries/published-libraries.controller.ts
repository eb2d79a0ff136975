import { Body, Controller, Param, Query } from '@nestjs/common';
import { ListScope, type NamespaceScope } from '../common/http/access-scope.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import type { ListEnvelope } from '../common/http/list-envelope.js';
import { MessageDto } from '../common/http/message.dto.js';
import { ApiExtraModels, ApiResponse, ApiTags, getSchemaPath } from '../common/http/openapi-decorators.js';
import { Route } from '../common/http/route.decorator.js';
import { ListParams, ResourceId } from '../common/http/route-params.js';
import type { StatusReply } from '../common/http/status-reply.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { RawQuery } from '../common/query/query-values.js';
import {
  AsyncAcceptedDto,
  AsyncDeletionDto,
  AsyncStatusDto,
  DatasetMetadataDto,
  FilterValidationDto,
  LibraryMemberListDto,
  PublishedLibraryDto,
  PublishedLibraryListDto,
  PublishLibraryInputDto,
  RecordsDto,
  ServerStatusDto,
  WorkerStatusDto,
  type LibraryMemberDto,
} from './dto/published-library.dto.js';
import { LibraryOperationsService } from './library-operations.service.js';
import { AcceptedVersion, VersionedOperation, type InterfaceVersion } from './library-versions.js';
import { LIBRARY_MEMBER_LIST_QUERY, PUBLISHED_LIBRARY_LIST_QUERY } from './list-queries.js';
import { PublishedLibrariesService } from './published-libraries.service.js';

const libraryId = new ResourceId('Published library');
const operationId = new ResourceId('Asynchronous operation');
/** Read on the library, or the PublishedLibraryConsumer role (which holds it), in the library's namespace. */
const READ = { object: '/PublishedLibraries/{id}', action: 'Read', namespace: { resource: 'publishedLibrary', param: 'id' } } as const;
const NOT_MEMBER = "'orders' is not a member of library 'sales'";
const NO_WORKER = "No worker of library 'sales' is ready yet; try again shortly";
const DATASET_ERRORS = { 404: NOT_MEMBER, 503: NO_WORKER };
const RECORDS_QUERY = {
  limit: 'Records to return: an integer from 0 to 100000 (default 1000)',
  offset: 'Records to skip first (default 0)',
  filter: 'A WHERE clause over the dataset’s fields (docs/libraries.md "Filters"); a bad one is a 400 with the parser’s message',
  fields: 'The fields to return, in this order (repeat or separate with commas); an unknown one is a 400',
  orderby: 'Sort keys, first the most significant; a leading - sorts descending (repeat or separate with commas)',
  formatted: 'Fields returned as display strings by their format; `all` for every field',
  allowAsync:
    'true: a query not finished within HUB_LIBRARY_ASYNC_AFTER_MS answers 202 {operationId} and goes on as an operation; false (default): the request waits',
};

@ApiTags('Libraries')
@ApiExtraModels(WorkerStatusDto, RecordsDto)
@Controller('api/v2/libraries/published')
export class PublishedLibrariesController {
  constructor(
    private readonly libraries: PublishedLibrariesService,
    private readonly operations: LibraryOperationsService,
  ) {}

  @Route({
    method: 'GET',
    summary: 'queryPublishedLibraries',
    description: 'The published libraries in the namespaces where the caller may Read /PublishedLibraries (403 when there is none).',
    access: { object: '/PublishedLibraries', action: 'Read', namespaced: true },
    list: PUBLISHED_LIBRARY_LIST_QUERY,
    response: PublishedLibraryListDto,
  })
  @VersionedOperation()
  queryPublishedLibraries(
    @CurrentCaller() caller: Caller,
    @AcceptedVersion() version: InterfaceVersion,
    @ListParams() query: ListQuery,
    @ListScope() scope: NamespaceScope,
  ): Promise<ListEnvelope<PublishedLibraryDto>> {
    return this.libraries.query(caller, version, query, scope);
  }

  @Route({
    method: 'POST',
    status: 201,
    summary: 'Publish a library',
    description:
      'Beyond the interface (api-map §5). Starts `workers` service jobs (task `worker`) as the caller’s, under the profile, each with properties publishedLibraryId and workerIndex. Needs Create on /PublishedLibraries in the definition’s namespace and Use on the profile there. An unknown definition, a profile not bound there or with maxRunSeconds, a path the caller’s job identity cannot read (naming `path`) is a 400; more workers than the caller’s quota of active jobs leaves room for is a 429, and on a hub that is not root only administrators publish (403): nothing is published then.',
    access: { object: '/PublishedLibraries', action: 'Create', namespace: { resource: 'libraryDefinition', body: 'libraryDefinitionId' } },
    response: PublishedLibraryDto,
    errors: { 409: 'The library definition is published already: a definition is published once at a time' },
  })
  @VersionedOperation()
  publishLibrary(
    @CurrentCaller() caller: Caller,
    @AcceptedVersion() version: InterfaceVersion,
    @Body() body: PublishLibraryInputDto,
  ): Promise<PublishedLibraryDto> {
    return this.libraries.publish(caller, version, body);
  }

  @Route({ method: 'GET', path: ':id', summary: 'getPublishedLibrary', access: READ, response: PublishedLibraryDto })
  @VersionedOperation()
  getPublishedLibrary(
    @CurrentCaller() caller: Caller,
    @AcceptedVersion() version: InterfaceVersion,
    @Param('id', libraryId) id: string,
  ): Promise<PublishedLibraryDto> {
    return this.libraries.get(caller, version, id);
  }

  @Route({
    method: 'DELETE',
    path: ':id',
    summary: 'Unpublish a library',
    description:
      'Beyond the interface. Answers once its workers’ jobs are dead; the library and everything below it are 404 after. Needs Delete on the library.',
    access: { ...READ, action: 'Delete' },
    response: MessageDto,
  })
  @VersionedOperation()
  unpublishLibrary(@CurrentCaller() caller: Caller, @Param('id', libraryId) id: string): Promise<MessageDto> {
    return this.libraries.unpublish(caller, id);
  }

  @Route({
    method: 'GET',
    path: ':id/members',
    summary: 'queryLibraryMembers',
    description: 'The library’s members as a worker lists them, filtered, sorted and paged by the hub (type sorts by its name).',
    access: READ,
    list: LIBRARY_MEMBER_LIST_QUERY,
    response: LibraryMemberListDto,
    errors: { 503: NO_WORKER },
  })
  @VersionedOperation()
  queryLibraryMembers(
    @CurrentCaller() caller: Caller,
    @Param('id', libraryId) id: string,
    @ListParams() query: ListQuery,
  ): Promise<ListEnvelope<LibraryMemberDto>> {
    return this.libraries.members(caller, id, query);
  }

  @Route({
    method: 'GET',
    path: ':id/datasets/:name',
    summary: 'getDatasetMetadata',
    description: 'nobs exact; fields in the dataset’s order; lastModified the file’s modification time.',
    access: READ,
    response: DatasetMetadataDto,
    errors: DATASET_ERRORS,
  })
  @VersionedOperation()
  getDatasetMetadata(@CurrentCaller() caller: Caller, @Param('id', libraryId) id: string, @Param('name') name: string): Promise<DatasetMetadataDto> {
    return this.libraries.metadata(caller, id, name);
  }

  @Route({
    method: 'GET',
    path: ':id/datasets/:name/records',
    summary: 'getRecords',
    description:
      'Applied in this order: filter, orderby, offset, limit. A name that is not a field, a bad filter (the parser’s message as detail, equal to validateFilter’s msg), limit above 100000, a negative or non-integer limit or offset, allowAsync other than true/false are 400s.',
    access: READ,
    query: RECORDS_QUERY,
    response: RecordsDto,
    errors: DATASET_ERRORS,
  })
  @ApiResponse({
    status: 202,
    description: 'allowAsync=true and not finished within HUB_LIBRARY_ASYNC_AFTER_MS: the operation goes on',
    headers: { Location: { description: 'The operation’s status path', required: true, schema: { type: 'string' } } },
    content: { 'application/json': { schema: { $ref: getSchemaPath(AsyncAcceptedDto) } } },
  })
  @ApiExtraModels(AsyncAcceptedDto)
  @VersionedOperation()
  getRecords(
    @CurrentCaller() caller: Caller,
    @Param('id', libraryId) id: string,
    @Param('name') name: string,
    @Query() raw: RawQuery,
  ): Promise<StatusReply<string | Buffer | AsyncAcceptedDto>> {
    return this.libraries.records(caller, id, name, raw);
  }

  @Route({
    method: 'POST',
    path: ':id/datasets/:name/validate-filter',
    summary: 'validateFilter',
    description:
      'The body is the filter as text/plain. `{ok: true}`, or `{ok: false, msg}` with the message a getRecords with that filter would answer as its 400’s detail. An empty body is a 400 under 2026.0.0 and valid under 2.3.0.461.',
    access: READ,
    consumes: ['text/plain'],
    response: FilterValidationDto,
    errors: DATASET_ERRORS,
  })
  @VersionedOperation()
  validateFilter(
    @CurrentCaller() caller: Caller,
    @AcceptedVersion() version: InterfaceVersion,
    @Param('id', libraryId) id: string,
    @Param('name') name: string,
    @Body() body: unknown,
  ): Promise<FilterValidationDto> {
    return this.libraries.validateFilter(caller, version, id, name, body);
  }

  @Route({
    method: 'GET',
    path: ':id/datasets/:name/distinct-values',
    summary: 'getDistinctValues',
    description:
      'One key per field, its values ascending (numbers numerically, strings by code point, dates chronologically, false before true), a missing value at most once as null; at most maxValues per field (the first). timeout in seconds (1 to 3600; none: no limit); maxValues 1 to 100000 (none: every value).',
    access: READ,
    query: { timeout: 'Seconds the query may take (integer)', maxValues: 'Values kept per field (integer)' },
    responseSchema: { type: 'object', additionalProperties: { type: 'array', items: {} } },
    errors: DATASET_ERRORS,
  })
  @VersionedOperation()
  getDistinctValues(
    @CurrentCaller() caller: Caller,
    @Param('id', libraryId) id: string,
    @Param('name') name: string,
    @Query() raw: RawQuery,
  ): Promise<Record<string, unknown[]>> {
    return this.libraries.distinctValues(caller, id, name, raw);
  }

  @Route({
    method: 'GET',
    path: ':id/status',
    summary: 'getServerStatus',
    description:
      'poolSize under 2026.0.0, workerPoolSize under 2.3.0.461; workers keyed by index with state, node, startTime of the current process and requests served.',
    access: READ,
    response: ServerStatusDto,
  })
  @VersionedOperation()
  getServerStatus(@CurrentCaller() caller: Caller, @AcceptedVersion() version: InterfaceVersion, @Param('id', libraryId) id: string): Promise<ServerStatusDto> {
    return this.libraries.status(caller, version, id);
  }

  @Route({
    method: 'POST',
    path: ':id/workers/:workerIndex/restart',
    summary: 'restartWorker',
    description:
      'A new job for that worker only (a new startTime; failedWorkerCount unchanged); answers once it is submitted. The path parameter is `worker-index` (`worker-indx` under 2.3.0.461: the same position). An index outside the pool is 404, a non-integer one 400. Needs Update on the library.',
    access: { ...READ, action: 'Update' },
    response: MessageDto,
    pathNames: { workerIndex: 'worker-index' },
    errors: { 409: "Worker 0 of library 'sales' changed meanwhile; ask again" },
  })
  @VersionedOperation()
  restartWorker(@CurrentCaller() caller: Caller, @Param('id', libraryId) id: string, @Param('workerIndex') index: string): Promise<MessageDto> {
    return this.libraries.restartWorker(caller, id, index);
  }

  @Route({
    method: 'GET',
    path: ':id/operations',
    summary: 'listAsyncOperations',
    description: 'The library’s asynchronous operations, keyed by id, until each is reaped (10 minutes after it finishes).',
    access: READ,
    responseSchema: { type: 'object', additionalProperties: { $ref: '#/components/schemas/AsyncStatusDto' } },
  })
  @ApiExtraModels(AsyncStatusDto)
  @VersionedOperation()
  listAsyncOperations(@CurrentCaller() caller: Caller, @Param('id', libraryId) id: string): Promise<Record<string, unknown>> {
    return this.libraries.listOperations(caller, id);
  }

  @Route({ method: 'GET', path: ':id/operations/:operationId', summary: 'getAsyncOperationStatus', access: READ, response: AsyncStatusDto })
  @VersionedOperation()
  getAsyncOperationStatus(@Param('id', libraryId) id: string, @Param('operationId', operationId) operation: string): Promise<AsyncStatusDto> {
    return this.operations.status(id, operation);
  }

  @Route({
    method: 'GET',
    path: ':id/operations/:operationId/result',
    summary: 'getAsyncOperationResult',
    description: 'A completed operation’s result, equal to the synchronous reply; 409 while it runs or when it failed.',
    access: READ,
    response: RecordsDto,
    errors: { 409: 'Asynchronous operation 5f0c6a1e-4b8e-4a5e-9a55-0d7f3c1c2b11 is running: it has no result' },
  })
  @VersionedOperation()
  getAsyncOperationResult(@Param('id', libraryId) id: string, @Param('operationId', operationId) operation: string): Promise<StatusReply<string | Buffer>> {
    return this.operations.result(id, operation);
  }

  @Route({
    method: 'DELETE',
    path: ':id/operations/:operationId',
    summary: 'deleteAsyncOperation',
    description: 'Cancels a running operation (its worker query is aborted) and deletes it; a finished one is deleted. 404 after.',
    access: READ,
    response: AsyncDeletionDto,
  })
  @VersionedOperation()
  deleteAsyncOperation(@Param('id', libraryId) id: string, @Param('operationId', operationId) operation: string): Promise<AsyncDeletionDto> {
    return this.operations.delete(id, operation);
  }
}

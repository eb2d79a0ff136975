import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ClusterService } from '../cluster/cluster.service.js';
import { Clock } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { ConflictError, InvalidInputError, NotFoundError, type FieldError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import type { Caller } from '../common/http/caller.js';
import type { ListEnvelope } from '../common/http/list-envelope.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import type { StatusReply } from '../common/http/status-reply.js';
import { invalidQuery, parseInteger, type ListQuery } from '../common/query/list-query.js';
import { firstValue, listValues, type RawQuery } from '../common/query/query-values.js';
import { ExecutionProfilesService } from '../execution-profiles/execution-profiles.service.js';
import { ProfileBindingsService } from '../execution-profiles/profile-bindings.service.js';
import { AccessService } from '../rbac/access.service.js';
import type {
  AsyncAcceptedDto,
  DatasetFieldDto,
  DatasetMetadataDto,
  FilterValidationDto,
  LibraryMemberDto,
  PublishedLibraryDto,
  PublishLibraryInputDto,
  ServerStatusDto,
  WorkerStatusDto,
} from './dto/published-library.dto.js';
import { LibraryDefinitionsService } from './library-definitions.service.js';
import { pageOfMembers } from './library-members.js';
import { LibraryOperationsService } from './library-operations.service.js';
import { unreadablePathProblem } from './library-paths.js';
import { LibraryPool } from './library-pool.js';
import { LEGACY_VERSION, type InterfaceVersion } from './library-versions.js';
import { PublishedLibrariesRepository, type PublishedRow } from './published-libraries.repository.js';
import { workerProblem, type WorkerReply } from './worker-client.js';

/** getRecords' `limit` when none is given, and its most (hub-interface §8, api-map §5). */
const DEFAULT_LIMIT = 1000;
const MAX_LIMIT = 100_000;
/** getDistinctValues' bounds: seconds it may take, values per field. */
const MAX_TIMEOUT_SECONDS = 3600;
const MAX_DISTINCT_VALUES = 100_000;
/** How long the hub waits for a worker beyond a distinct-values timeout before it gives up itself. */
const TIMEOUT_MARGIN_MS = 5000;

export function publishedLibraryNotFound(id: string): NotFoundError {
  return new NotFoundError(`Published library ${id} not found`);
}

export function toPublishedLibraryResponse(row: PublishedRow, version: InterfaceVersion): PublishedLibraryDto {
  return {
    id: row.id,
    libraryDefinitionId: row.libraryDefinitionId,
    name: row.name,
    namespace: row.namespaceName,
    ...(version !== LEGACY_VERSION && { executionProfileId: row.executionProfileId }),
  };
}

/** The path of a dataset below a worker's routes: the name as one encoded segment. */
function datasetPath(name: string): string {
  return `/datasets/${encodeURIComponent(name)}`;
}

/** A worker's JSON reply when it succeeded, else the caller's problem. */
function parsed<T>(reply: WorkerReply): T {
  if (reply.status !== 200) throw workerProblem(reply);
  return JSON.parse(reply.body.toString('utf8')) as T;
}

function fieldOf(field: Partial<DatasetFieldDto>): DatasetFieldDto {
  return { name: String(field.name), type: String(field.type), label: field.label ?? '', length: Number(field.length ?? 0), format: field.format ?? '' };
}

/** The interface's metadata from what a worker answers: exactly the fields of §2.7, absent where it has none. */
function toMetadata(raw: Record<string, unknown>): DatasetMetadataDto {
  const text = (key: string, fallback = '') => (typeof raw[key] === 'string' ? raw[key] : fallback);
  const time = (key: string) => (typeof raw[key] === 'string' && raw[key] !== '' ? { [key]: raw[key] } : {});
  return {
    name: text('name'),
    engine: text('engine') as DatasetMetadataDto['engine'],
    ...time('created'),
    ...time('lastModified'),
    label: text('label'),
    nobs: Number(raw.nobs ?? 0),
    compressionType: text('compressionType', 'NONE'),
    type: text('type', 'DATA'),
    charEncoding: text('charEncoding', 'utf-8'),
    isPointobs: raw.isPointobs === true,
    dataRepresentation: text('dataRepresentation', 'NATIVE'),
    recordLength: Number(raw.recordLength ?? 0),
    engineProperties: Array.isArray(raw.engineProperties) ? raw.engineProperties : [],
    sort: Array.isArray(raw.sort) ? raw.sort : [],
    sortOptions: typeof raw.sortOptions === 'object' && raw.sortOptions !== null ? (raw.sortOptions as Record<string, unknown>) : {},
    indexes: Array.isArray(raw.indexes) ? raw.indexes : [],
    fields: Array.isArray(raw.fields) ? (raw.fields as Partial<DatasetFieldDto>[]).map(fieldOf) : [],
  };
}

/** getRecords' query, checked as api-map §5 says: what a worker is asked, and whether it may go on asynchronously. */
export function parseRecordsQuery(raw: RawQuery): { body: Record<string, unknown>; allowAsync: boolean } {
  const errors: FieldError[] = [];
  const limit = parseInteger(raw.limit, 'limit', 0, MAX_LIMIT, errors) ?? DEFAULT_LIMIT;
  const offset = parseInteger(raw.offset, 'offset', 0, Number.MAX_SAFE_INTEGER, errors) ?? 0;
  const single = (name: string): string | undefined => {
    const value = raw[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string') errors.push({ path: name, message: 'is given more than once' });
    return firstValue(value);
  };
  const filter = single('filter');
  const allowAsync = single('allowAsync');
  if (allowAsync !== undefined && allowAsync !== 'true' && allowAsync !== 'false') errors.push({ path: 'allowAsync', message: 'must be true or false' });
  const list = (name: string) => {
    const value = raw[name];
    if (value === undefined) return undefined;
    const values = listValues(value).map((item) => item.trim());
    if (values.some((item) => item === '' || item === '-')) errors.push({ path: name, message: 'names an empty field' });
    return values;
  };
  const fields = list('fields');
  const orderby = list('orderby');
  const formatted = list('formatted');
  if (errors.length > 0) throw invalidQuery(errors);
  return {
    body: {
      limit,
      offset,
      ...(filter !== undefined && filter.trim() !== '' && { filter }),
      ...(fields && { fields }),
      ...(orderby && { orderby }),
      ...(formatted && { formatted }),
    },
    allowAsync: allowAsync === 'true',
  };
}

/**
 * Published libraries (api-map §5): publishing a definition on a pool of workers, unpublishing,
 * and every operation of hub-interface §4.6, each answered by one of the library's ready workers
 * through its endpoint (the hub never reads a library's files itself).
 */
@Injectable()
export class PublishedLibrariesService {
  constructor(
    private readonly libraries: PublishedLibrariesRepository,
    private readonly definitions: LibraryDefinitionsService,
    private readonly pool: LibraryPool,
    private readonly operations: LibraryOperationsService,
    private readonly cluster: ClusterService,
    private readonly profiles: ExecutionProfilesService,
    private readonly bindings: ProfileBindingsService,
    private readonly access: AccessService,
    private readonly clock: Clock,
    private readonly config: HubConfig,
  ) {}

  async query(_caller: Caller, version: InterfaceVersion, query: ListQuery, scope: NamespaceScope): Promise<ListEnvelope<PublishedLibraryDto>> {
    const page = await this.libraries.list(query, scope);
    return { totalCount: page.totalCount, data: page.items.map((row) => toPublishedLibraryResponse(row, version)) };
  }

  async get(_caller: Caller, version: InterfaceVersion, id: string): Promise<PublishedLibraryDto> {
    return toPublishedLibraryResponse(await this.find(id), version);
  }

  /**
   * Publishes a definition: every check first (api-map §5 "Settled details"), then the library
   * recorded and its workers submitted as the caller's jobs. A refusal of any worker (the quota's
   * 429) undoes it all: nothing is published.
   */
  async publish(caller: Caller, version: InterfaceVersion, input: PublishLibraryInputDto): Promise<PublishedLibraryDto> {
    const definition = await this.definitions.find(input.libraryDefinitionId.toLowerCase()).catch((error: unknown) => {
      if (error instanceof NotFoundError) throw InvalidInputError.at('/libraryDefinitionId', `No library definition has the id ${input.libraryDefinitionId}`);
      throw error;
    });
    const namespace = { id: definition.namespaceId, name: definition.namespaceName };
    const profileId = input.executionProfileId.toLowerCase();
    const profile = await this.profiles.find(profileId);
    if (!profile || !(await this.bindings.isBound(profileId, namespace.id)))
      throw InvalidInputError.at('/executionProfileId', `No execution profile ${input.executionProfileId} is bound to namespace '${namespace.name}'`);
    await this.access.require(caller, `/ExecutionProfiles/${profile._id}`, 'Use', namespace);
    if (profile.properties.maxRunSeconds !== undefined)
      throw InvalidInputError.at(
        '/executionProfileId',
        `Execution profile '${profile.name}' sets maxRunSeconds: its workers would be ended and replaced for ever; publish under a profile without it`,
      );
    // The refusals of any job of the caller's (a non-root hub and no administrator: 403), before the path is judged as their identity.
    const identity = await this.cluster.jobIdentityOf({ id: caller.userId, name: caller.userName });
    if (definition.engine !== 'postgres') {
      const problem = await unreadablePathProblem(definition.path as string, definition.engine, this.config.libraryRoots, identity);
      if (problem) throw InvalidInputError.at('path', `The definition's ${problem}`);
    }
    const id = randomUUID();
    await this.libraries.insert({
      id,
      definitionId: definition.id,
      executionProfileId: profile._id,
      workers: input.workers ?? 1,
      publisherId: caller.userId,
      publisherName: caller.userName,
      startTime: this.clock.now(),
    });
    const library = (await this.libraries.find(id)) as PublishedRow;
    try {
      await this.pool.startAll(library, profile);
    } catch (error) {
      await this.unpublishRow(id, 'Publishing was refused');
      throw error;
    }
    return toPublishedLibraryResponse(library, version);
  }

  /** Unpublishes: the library and all below it are gone at once; answers once its workers' jobs are dead. */
  async unpublish(_caller: Caller, id: string): Promise<MessageDto> {
    const library = await this.find(id);
    if (!(await this.unpublishRow(id, `Library '${library.name}' unpublished`))) throw publishedLibraryNotFound(id);
    return message(`Library '${library.name}' unpublished; its workers stopped`);
  }

  async members(_caller: Caller, id: string, query: ListQuery): Promise<ListEnvelope<LibraryMemberDto>> {
    const members = parsed<LibraryMemberDto[]>(await this.pool.relay(await this.relayed(id), 'GET', '/members'));
    return pageOfMembers(members, query);
  }

  async metadata(_caller: Caller, id: string, name: string): Promise<DatasetMetadataDto> {
    return toMetadata(parsed<Record<string, unknown>>(await this.pool.relay(await this.relayed(id), 'GET', datasetPath(name))));
  }

  /** Records as the worker answers them, relayed as its bytes; with allowAsync, an operation when it takes long. */
  async records(_caller: Caller, id: string, name: string, raw: RawQuery): Promise<StatusReply<string | Buffer | AsyncAcceptedDto>> {
    const { body, allowAsync } = parseRecordsQuery(raw);
    const library = await this.relayed(id);
    const parameters = { name, ...Object.fromEntries(Object.entries(raw).filter(([key]) => key !== 'allowAsync')) };
    return this.operations.run(library.id, `/api/v2/libraries/published/${library.id}`, parameters, allowAsync, async (signal, requestId) => {
      const reply = await this.pool.relay(library, 'POST', '/records', { body: { name, ...body }, signal, requestId });
      if (reply.status !== 200) throw workerProblem(reply);
      return reply.body;
    });
  }

  /** `{ok}` or `{ok: false, msg}` with the parser's message; an empty filter is a 400 under 2026.0.0, valid under 2.3.0.461. */
  async validateFilter(_caller: Caller, version: InterfaceVersion, id: string, name: string, body: unknown): Promise<FilterValidationDto> {
    const filter = typeof body === 'string' ? body : body === undefined || body === null ? '' : undefined;
    if (filter === undefined) throw InvalidInputError.at('', 'The body is the filter as text/plain');
    const library = await this.relayed(id);
    if (filter.trim() === '') {
      if (version !== LEGACY_VERSION) throw InvalidInputError.at('', 'The body must hold the filter to validate (2026.0.0); it is empty');
      // The dataset is still checked: a name that is not a member is 404.
      parsed<Record<string, unknown>>(await this.pool.relay(library, 'GET', datasetPath(name)));
      return { ok: true };
    }
    const answer = parsed<{ ok: boolean; msg?: string }>(await this.pool.relay(library, 'POST', '/validate-filter', { body: { name, filter } }));
    return answer.ok ? { ok: true } : { ok: false, msg: answer.msg && answer.msg !== '' ? answer.msg : 'The filter is invalid' };
  }

  async distinctValues(_caller: Caller, id: string, name: string, raw: RawQuery): Promise<Record<string, unknown[]>> {
    const errors: FieldError[] = [];
    const timeout = parseInteger(raw.timeout, 'timeout', 1, MAX_TIMEOUT_SECONDS, errors);
    const maxValues = parseInteger(raw.maxValues, 'maxValues', 1, MAX_DISTINCT_VALUES, errors);
    if (errors.length > 0) throw invalidQuery(errors);
    const library = await this.relayed(id);
    const body = { name, ...(maxValues !== undefined && { maxValues }), ...(timeout !== undefined && { timeoutMs: timeout * 1000 }) };
    return parsed(
      await this.pool.relay(library, 'POST', '/distinct-values', { body, ...(timeout !== undefined && { timeoutMs: timeout * 1000 + TIMEOUT_MARGIN_MS }) }),
    );
  }

  async status(_caller: Caller, version: InterfaceVersion, id: string): Promise<ServerStatusDto> {
    const library = await this.find(id);
    const workers = await this.libraries.workers(id);
    const entries = await Promise.all(
      workers.map(async (worker): Promise<[string, WorkerStatusDto]> => {
        const execution = worker.jobId ? (await this.cluster.executionsOfJob(worker.jobId).catch(() => [])).at(-1) : undefined;
        return [
          String(worker.index),
          {
            state: worker.state,
            ...(execution?.nodeId && { node: execution.nodeId }),
            ...(worker.startTime !== null && { startTime: worker.startTime }),
            requestsServed: await this.pool.requestsServed(worker),
            ...(worker.state === 'failed' && worker.message !== null && { message: worker.message }),
          },
        ];
      }),
    );
    return {
      startTime: library.startTime,
      ...(version === LEGACY_VERSION ? { workerPoolSize: library.workers } : { poolSize: library.workers }),
      failedWorkerCount: library.failedWorkerCount,
      workers: Object.fromEntries(entries),
      description: { name: library.name, engine: library.engine, ...(library.path !== null && { path: library.path }) },
    };
  }

  /** Restarts one worker: a new job, its startTime new, failedWorkerCount unchanged; an index outside the pool is 404, a non-integer 400. */
  async restartWorker(_caller: Caller, id: string, rawIndex: string): Promise<MessageDto> {
    if (!/^\d{1,9}$/.test(rawIndex))
      throw InvalidInputError.at('worker-index', `The worker index must be a non-negative integer, not '${rawIndex.slice(0, 32)}'`);
    const index = Number(rawIndex);
    const library = await this.find(id);
    const worker = await this.libraries.worker(id, index);
    if (!worker) throw new NotFoundError(`Library '${library.name}' has no worker ${index}: its pool has ${library.workers} (0 to ${library.workers - 1})`);
    if (!(await this.pool.restart(library, worker))) throw new ConflictError(`Worker ${index} of library '${library.name}' changed meanwhile; ask again`);
    return message(`Worker ${index} of library '${library.name}' is restarting`);
  }

  listOperations(_caller: Caller, id: string): Promise<Record<string, unknown>> {
    return this.find(id).then(() => this.operations.list(id));
  }

  /** A library as the operations relayed to its workers read it: from this hub's cache, which every change clears. */
  private async relayed(id: string): Promise<PublishedRow> {
    const library = await this.libraries.cached(id);
    if (!library) throw publishedLibraryNotFound(id);
    return library;
  }

  async find(id: string): Promise<PublishedRow> {
    const library = await this.libraries.find(id);
    if (!library) throw publishedLibraryNotFound(id);
    return library;
  }

  private async unpublishRow(id: string, reason: string): Promise<boolean> {
    const workers = await this.libraries.delete(id);
    if (!workers) return false;
    await this.pool.stopAll(workers, reason);
    return true;
  }
}

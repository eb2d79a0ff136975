import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { parseByteWindow } from '../cluster/byte-window.js';
import { ClusterService } from '../cluster/cluster.service.js';
import { FilesCopiedOut, storedLogKey } from '../cluster/files-copied-out.js';
import { ConflictError, HubError, NotFoundError, RefusedError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import { ByteWindowReply } from '../common/http/byte-reply.js';
import type { Caller } from '../common/http/caller.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import type { ListQuery } from '../common/query/list-query.js';
import { ExecutionProfilesService } from '../execution-profiles/execution-profiles.service.js';
import { ProfileBindingsService } from '../execution-profiles/profile-bindings.service.js';
import { NamespacesService, type NamespaceRef } from '../namespaces/namespaces.service.js';
import { AccessService } from '../rbac/access.service.js';
import type {
  NodeStatusDto,
  PipelineRunDto,
  PipelineRunInputDto,
  PipelineRunListItemDto,
  ResultEntryDto,
  ResultMetadataDto,
  RunStatusDto,
  SubmittedRunDto,
} from './dto/pipeline-run.dto.js';
import { namespaceFilterOf } from './list-queries.js';
import { attemptProblems, pathProblems, type RunNodeSpec } from './node-launch.js';
import { nodeStore, PipelineEngine, runStorePrefix } from './pipeline-engine.js';
import { pipelineEntryNotFound } from './pipeline-entries.service.js';
import { PipelineEntriesRepository } from './pipeline-entries.repository.js';
import { PipelineRunsRepository, type IdentifiedRun, type NewRun, type NodeRow, type RunListRow, type RunRow } from './pipeline-runs.repository.js';
import { validatePipelineSpec, type PipelineSpecShape } from './pipeline-validation.js';

const LOG_TYPES = ['stdout', 'stderr'];

export function runNotFound(id: string): NotFoundError {
  return new NotFoundError(`Pipeline run ${id} not found`);
}

function nodeStatus(node: NodeRow): NodeStatusDto {
  return {
    state: node.state,
    ...(node.startedAt && { startedAt: node.startedAt }),
    ...(node.finishedAt && { finishedAt: node.finishedAt }),
    ...(node.exitCode !== null && { exitCode: node.exitCode }),
    events: node.events.map((event) => ({ time: event.time, type: event.type, details: { ...event.details } })),
  };
}

function runStatus(run: RunRow, nodes: readonly NodeRow[]): RunStatusDto {
  return {
    state: run.state,
    ...(run.startedAt && { startedAt: run.startedAt }),
    ...(run.finishedAt && { finishedAt: run.finishedAt }),
    nodeStatus: Object.fromEntries(nodes.map((node) => [node.name, nodeStatus(node)])),
  };
}

function toRunResponse(run: RunRow, nodes: readonly NodeRow[]): PipelineRunDto {
  return {
    id: run.id,
    created: run.created,
    ownerPrincipal: run.ownerId,
    ...(run.pipelineId && { pipelineId: run.pipelineId }),
    namespace: run.namespaceName,
    status: runStatus(run, nodes),
    spec: run.spec as PipelineRunDto['spec'],
    ...(run.entryPoint && { entryPoint: run.entryPoint }),
    executionProfileId: run.executionProfileId,
  };
}

function toRunListItem(run: RunListRow): PipelineRunListItemDto {
  return {
    id: run.id,
    created: run.created,
    ...(run.startedAt && { startedAt: run.startedAt }),
    ...(run.finishedAt && { finishedAt: run.finishedAt }),
    state: run.state,
    cancelled: run.cancelled,
    ownerPrincipal: run.ownerId,
    namespace: run.namespaceName,
    executionProfileId: run.executionProfileId,
    ...(run.pipelineId && { pipelineId: run.pipelineId }),
  };
}

/** A spec as stored: the validated body's JSON (its DTO instances made plain). */
function plainSpec(spec: object): PipelineSpecShape {
  return JSON.parse(JSON.stringify(spec)) as PipelineSpecShape;
}

/** What a run is asked to be, before the checks that may refuse it. */
interface RunRequest {
  readonly namespace: NamespaceRef;
  readonly pipelineId: string | null;
  readonly spec: PipelineSpecShape;
  readonly executionProfileId: string;
  readonly entryPoint: string | null;
}

/**
 * First passes of runs created by triggers that the engine is given at once. A minute's firings
 * create thousands of runs together; given all at once, their first passes would queue in the
 * engine's slots ahead of every pass an announcement asks for (a job started or ended), so that no
 * run would finish before all had been submitted. Fed a few at a time, runs enter the cluster as
 * fast as the engine takes them, and the runs whose jobs ended finish meanwhile.
 */
const STARTS_AT_ONCE = 8;
/**
 * How long runs created by triggers wait to be fed to the engine while triggers are still being
 * fired (see holdStarts) at the most: a due instant's firings take seconds, not more, unless
 * triggers come due faster than a hub fires them, and then runs must start all the same.
 */
const MAX_HOLD_MS = 10_000;

/** What a trigger's firing asks of runs: one of its pipeline, owned by its owner (as a caller: their groups as they are now). */
export interface TriggerRunRequest {
  readonly owner: Caller;
  readonly pipelineId: string;
  readonly executionProfileId: string;
  readonly environment: readonly { readonly name: string; readonly value: string }[];
}

/** Runs `work` once per key for as long as the memo is kept: one batch's reads and decisions, shared by its runs. */
type BatchMemo = <T>(key: string, work: () => Promise<T>) => Promise<T>;

function batchMemo(): BatchMemo {
  const kept = new Map<string, Promise<unknown>>();
  return <T>(key: string, work: () => Promise<T>) => {
    let done = kept.get(key) as Promise<T> | undefined;
    if (!done) {
      done = work();
      kept.set(key, done);
    }
    return done;
  };
}

/**
 * Pipeline runs (api-map §7): submitting a stored pipeline, creating an ad hoc run, reading runs,
 * their nodes, logs and results, cancelling and deleting them. The engine (pipeline-engine.ts)
 * moves them on.
 */
@Injectable()
export class PipelineRunsService {
  /** Runs created by triggers whose first pass the engine has not been given yet (from `nextStart` on), and how many it is making. */
  private readonly toStart: string[] = [];
  private nextStart = 0;
  private starting = 0;
  /** Since when the firing loop holds the feed (see holdStarts). */
  private heldSince?: number;

  constructor(
    private readonly runs: PipelineRunsRepository,
    private readonly entries: PipelineEntriesRepository,
    private readonly engine: PipelineEngine,
    private readonly cluster: ClusterService,
    private readonly files: FilesCopiedOut,
    private readonly namespaces: NamespacesService,
    private readonly profiles: ExecutionProfilesService,
    private readonly bindings: ProfileBindingsService,
    private readonly access: AccessService,
  ) {}

  /** Runs a stored pipeline under a profile (Execute on it was checked by the route). */
  async submit(caller: Caller, pipelineId: string, executionProfileId: string): Promise<SubmittedRunDto> {
    const entry = await this.entries.findById(pipelineId);
    if (!entry) throw pipelineEntryNotFound(pipelineId);
    if (entry.type !== 'Pipeline') throw new RefusedError(`Folder '${entry.name}' cannot be submitted`, [`'${entry.name}' is a folder, not a pipeline`]);
    const run = await this.start(caller, {
      namespace: { id: entry.namespaceId, name: entry.namespaceName },
      pipelineId: entry.id,
      spec: entry.spec ?? {},
      executionProfileId,
      entryPoint: null,
    });
    return { pipelineRunId: run.id };
  }

  /** Runs an ad hoc spec in a namespace (`default` when not given); Execute on /Pipelines there was checked by the route. */
  async create(caller: Caller, input: PipelineRunInputDto): Promise<PipelineRunDto> {
    const name = input.namespace ?? 'default';
    const namespace = await this.namespaces.find({ name });
    if (!namespace) throw new RefusedError(`No namespace is named '${name}'`, [`namespace: no namespace is named '${name}'`]);
    const run = await this.start(caller, {
      namespace,
      pipelineId: null,
      spec: plainSpec(input.spec),
      executionProfileId: input.executionProfileId,
      entryPoint: input.entryPoint ?? null,
    });
    return toRunResponse(run, await this.runs.nodesOf(run.id));
  }

  /**
   * Every refusal the cluster would give the run's nodes, checked before the run exists (api-map
   * §9 "Workloads started for a user"): the spec's problems, the profile (known, bound to the
   * namespace, usable by the caller there), variables the profile sets, the caller's job identity.
   */
  private async start(caller: Caller, request: RunRequest): Promise<RunRow> {
    const id = await this.insertRun(caller, request);
    // Its first nodes are submitted in this request's turn; the reply does not wait for them.
    void this.engine.advance(id);
    return (await this.runs.find(id)) as RunRow;
  }

  /**
   * The runs of a batch of trigger firings (trigger-firing-loop.ts), each owned by its trigger's
   * owner, built but not written: for each request its run (under an id given now, which its
   * firing records) or the HubError that refuses it, with the refusals of submit and Execute on
   * the pipeline. Each distinct (pipeline, owner, profile) is checked once, concurrently, as a
   * single run is; the pipelines read and the decisions made are kept for this call only, as rights,
   * pipelines and profiles may change before the next batch. The quota never refuses: the run's
   * nodes wait for room. The caller writes the runs with `insertForTriggers` in the transaction
   * that records the firings, then hands them to `advanceStarted` after its commit.
   */
  async buildForTriggers(requests: readonly TriggerRunRequest[]): Promise<(IdentifiedRun | HubError)[]> {
    const once = batchMemo();
    const templates = new Map<string, Promise<NewRun | HubError>>();
    const templateOf = (request: TriggerRunRequest) => {
      const key = `${request.pipelineId} ${request.owner.userId} ${request.executionProfileId.toLowerCase()}`;
      let template = templates.get(key);
      if (!template) {
        template = this.checkForTrigger(request, once).catch((error: unknown) => {
          if (error instanceof HubError) return error;
          throw error;
        });
        templates.set(key, template);
      }
      return template;
    };
    const built = await Promise.all(requests.map(templateOf));
    return built.map((template, index) =>
      template instanceof HubError ? template : { ...template, id: randomUUID(), environment: requests[index].environment },
    );
  }

  /** Writes runs built by buildForTriggers, with their nodes, in the caller's transaction. */
  insertForTriggers(manager: EntityManager, runs: readonly IdentifiedRun[]): Promise<void> {
    return this.runs.insertMany(manager, runs);
  }

  /**
   * Submits the first nodes of runs inserted by insertForTriggers, once their transaction has
   * committed: STARTS_AT_ONCE at a time, in the order given.
   */
  advanceStarted(ids: readonly string[]): void {
    for (const id of ids) this.toStart.push(id);
    this.feedStarts();
  }

  /**
   * Holds the runs created by triggers back from the engine while the firing loop fires (up to
   * MAX_HOLD_MS), and lets them go on: the engine's passes and the jobs they submit would compete
   * with the firings still to write for the database and the event loop, and delay them.
   */
  holdStarts(held: boolean): void {
    this.heldSince = held ? performance.now() : undefined;
    this.feedStarts();
  }

  private feedStarts(): void {
    if (this.heldSince !== undefined && performance.now() - this.heldSince < MAX_HOLD_MS) return;
    while (this.starting < STARTS_AT_ONCE && this.nextStart < this.toStart.length) {
      const id = this.toStart[this.nextStart];
      this.nextStart += 1;
      this.starting += 1;
      void this.engine
        .advance(id)
        .catch(() => undefined)
        .then(() => {
          this.starting -= 1;
          this.feedStarts();
        });
    }
    if (this.nextStart === this.toStart.length) {
      this.toStart.length = 0;
      this.nextStart = 0;
    }
  }

  /** One (pipeline, owner, profile) of a batch: the pipeline as it is now, Execute on it, then the checks of any run. */
  private async checkForTrigger(request: TriggerRunRequest, once: BatchMemo): Promise<NewRun> {
    const entry = await once(`pipeline ${request.pipelineId}`, () => this.entries.findById(request.pipelineId));
    if (!entry || entry.type !== 'Pipeline') throw new RefusedError('The pipeline was deleted', [`pipeline ${request.pipelineId} no longer exists`]);
    const namespace = { id: entry.namespaceId, name: entry.namespaceName };
    await this.access.require(request.owner, `/Pipelines/${entry.id}`, 'Execute', namespace);
    return this.prepare(
      request.owner,
      { namespace, pipelineId: entry.id, spec: entry.spec ?? {}, executionProfileId: request.executionProfileId, entryPoint: null },
      once,
    );
  }

  private async insertRun(caller: Caller, request: RunRequest): Promise<string> {
    return this.runs.insert(await this.prepare(caller, request));
  }

  /**
   * The run asked for, checked: the spec's problems, the profile (known, bound to the namespace,
   * usable by the caller there), variables the profile sets, the caller's job identity (once per
   * owner in a batch: `once`).
   */
  private async prepare(caller: Caller, request: RunRequest, once: BatchMemo = batchMemo()): Promise<NewRun> {
    const problems = validatePipelineSpec(request.spec);
    const nodes = (request.spec.nodes ?? []) as RunNodeSpec[];
    if (problems.length === 0) nodes.forEach((node, index) => problems.push(...attemptProblems(node, index), ...pathProblems(node, index)));
    if (request.entryPoint !== null && !nodes.some((node) => node.name === request.entryPoint))
      problems.push(`entryPoint: '${request.entryPoint}' names no node of the spec`);
    const profileId = request.executionProfileId.toLowerCase();
    const profile = await this.profiles.find(profileId);
    const usable =
      profile !== null &&
      (await this.bindings.isBound(profileId, request.namespace.id)) &&
      (await this.access.require(caller, `/ExecutionProfiles/${profileId}`, 'Use', request.namespace).then(
        () => true,
        () => false,
      ));
    // One message for unknown, unbound and unusable: which profiles exist is not the caller's to learn here.
    if (!usable || !profile)
      problems.push(
        `executionProfileId: no execution profile ${profileId} is bound to namespace '${request.namespace.name}' and usable by ${caller.userName} there`,
      );
    else
      nodes.forEach((node, index) => {
        for (const variable of node.task?.envVars ?? [])
          if (Object.hasOwn(profile.environment, variable.name))
            problems.push(
              `spec.nodes[${index}].task.envVars (node '${node.name}'): ${variable.name} is set by execution profile '${profile.name}'; a node may not change it`,
            );
      });
    if (problems.length > 0) throw new RefusedError(`The run was refused: ${problems.length} problem${problems.length > 1 ? 's' : ''}`, problems);
    await once(`owner ${caller.userId}`, () => this.cluster.checkOwner({ id: caller.userId, name: caller.userName }));
    return {
      namespaceId: request.namespace.id,
      pipelineId: request.pipelineId,
      owner: { id: caller.userId, name: caller.userName },
      executionProfileId: profileId,
      spec: request.spec,
      entryPoint: request.entryPoint,
      environment: [],
      nodes: nodes.map((node) => node.name),
    };
  }

  /** Runs in `scope`, and the caller's own wherever they are; newest first unless sorted. */
  async query(caller: Caller, query: ListQuery, scope: NamespaceScope): Promise<{ data: PipelineRunListItemDto[] }> {
    // The namespace filter holds for the caller's own runs too, so it is a condition of its own rather than a narrowed scope (which owned runs escape).
    const names = namespaceFilterOf(query);
    const ids = names && [...(await this.namespaces.findByNames(names)).values()].map((namespace) => namespace.id);
    const filtered = { ...query, filters: query.filters.filter((condition) => condition.field !== 'namespace') };
    return { data: (await this.runs.list(filtered, scope, caller.userId, ids)).map(toRunListItem) };
  }

  async get(_caller: Caller, id: string): Promise<PipelineRunDto> {
    const run = await this.found(id);
    return toRunResponse(run, await this.runs.nodesOf(id));
  }

  async status(_caller: Caller, id: string): Promise<RunStatusDto> {
    const run = await this.found(id);
    return runStatus(run, await this.runs.nodesOf(id));
  }

  async cancel(caller: Caller, id: string): Promise<RunStatusDto> {
    const run = await this.found(id);
    if (!(await this.engine.cancel(id, caller.userName)))
      throw new ConflictError(`Pipeline run ${id} has already ended (${run.state}); only a run not ended can be cancelled`);
    return this.status(caller, id);
  }

  /** Deletes a run that has ended, with its results (beyond the interface). */
  async delete(_caller: Caller, id: string): Promise<MessageDto> {
    const run = await this.found(id);
    if (!(await this.runs.deleteFinished(id))) throw new ConflictError(`Pipeline run ${id} has not ended (${run.state}); cancel it first`);
    await this.files.remove(runStorePrefix(id));
    return message(`Pipeline run ${id} deleted`);
  }

  async nodeStatus(_caller: Caller, id: string, nodeName: string): Promise<NodeStatusDto> {
    await this.found(id);
    return nodeStatus(await this.foundNode(id, nodeName));
  }

  /** A window of a node's log: from the hub's store once the node has ended, from its running execution before. */
  async nodeLog(caller: Caller, id: string, nodeName: string, logType: string, window: Record<string, unknown>): Promise<ByteWindowReply> {
    await this.found(id);
    const node = await this.foundNode(id, nodeName);
    if (!LOG_TYPES.includes(logType)) throw new NotFoundError(`A node has the logs ${LOG_TYPES.join(' and ')}, not '${logType}'`);
    // Not started yet: nothing logged (the window is still checked, as the cluster's logs check it).
    const empty = () => {
      parseByteWindow(window.origin, window.offset, window.limit);
      return ByteWindowReply.text('');
    };
    // An empty log is not stored (files-copied-out.ts): its key holds nothing.
    if (node.logsStored)
      return this.files.readStored(storedLogKey(nodeStore(id, node), logType), window, `the ${logType} of node '${nodeName}'`).catch((error: unknown) => {
        if (error instanceof NotFoundError) return empty();
        throw error;
      });
    if (!node.executionId) return empty();
    return this.cluster.readLog(caller, node.executionId, node.name, logType, window);
  }

  async runResults(_caller: Caller, id: string): Promise<Record<string, ResultEntryDto[]>> {
    await this.found(id);
    const grouped: Record<string, ResultEntryDto[]> = {};
    for (const result of await this.runs.resultsOf(id)) (grouped[result.node] ??= []).push({ name: result.name, size: result.size });
    return grouped;
  }

  async nodeResults(_caller: Caller, id: string, nodeName: string): Promise<ResultEntryDto[]> {
    await this.found(id);
    await this.foundNode(id, nodeName);
    return (await this.runs.resultsOf(id, nodeName)).map((result) => ({ name: result.name, size: result.size }));
  }

  /** A result's content: `{msg}` windows as the logs, or with `raw` its exact bytes as its content type. */
  async resultContent(_caller: Caller, id: string, nodeName: string, resultName: string, query: Record<string, unknown>): Promise<ByteWindowReply> {
    const result = await this.foundResult(id, nodeName, resultName);
    if (query.raw === 'true') {
      const { stream } = await this.files.openStored(result.key);
      return ByteWindowReply.raw(stream as never, result.contentType);
    }
    return this.files.readStored(result.key, query, `result '${resultName}' of node '${nodeName}'`);
  }

  async resultMetadata(_caller: Caller, id: string, nodeName: string, resultName: string): Promise<ResultMetadataDto> {
    const result = await this.foundResult(id, nodeName, resultName);
    return { name: result.name, contentType: result.contentType, size: result.size };
  }

  private async found(id: string): Promise<RunRow> {
    const run = await this.runs.find(id);
    if (!run) throw runNotFound(id);
    return run;
  }

  private async foundNode(id: string, nodeName: string): Promise<NodeRow> {
    const node = await this.runs.node(id, nodeName);
    if (!node) throw new NotFoundError(`Pipeline run ${id} has no node '${nodeName}'`);
    return node;
  }

  private async foundResult(id: string, nodeName: string, resultName: string) {
    await this.found(id);
    await this.foundNode(id, nodeName);
    const result = await this.runs.result(id, nodeName, resultName);
    if (!result) throw new NotFoundError(`Node '${nodeName}' of pipeline run ${id} has no result '${resultName}'`);
    return result;
  }
}

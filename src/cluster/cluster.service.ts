import { realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { isUniqueViolation } from '../common/database/postgres-errors.js';
import { ConflictError, InvalidInputError, NotFoundError, TooManyRequestsError, type FieldError } from '../common/errors/hub-errors.js';
import type { ItemDenials, NamespaceScope } from '../common/http/access-scope.js';
import type { Caller } from '../common/http/caller.js';
import type { TotalEnvelope } from '../common/http/list-envelope.js';
import { ByteWindowReply } from '../common/http/byte-reply.js';
import { parsePage, type ListQuery } from '../common/query/list-query.js';
import type { RawQuery } from '../common/query/query-values.js';
import { invalidBody } from '../common/validation/validate-input.js';
import { HubConfig } from '../common/config/hub-config.js';
import { HUB_VERSION } from '../common/hub-version.js';
import { ClusterMetrics } from '../common/metrics/cluster-metrics.js';
import type { ExecutionProfileDto } from '../execution-profiles/dto/execution-profile.dto.js';
import { ExecutionProfilesService } from '../execution-profiles/execution-profiles.service.js';
import { ProfileBindingsService } from '../execution-profiles/profile-bindings.service.js';
import { NamespacesService, type NamespaceRef } from '../namespaces/namespaces.service.js';
import { NO_SUCH_NAMESPACE } from '../rbac/access-evaluator.js';
import { AccessService } from '../rbac/access.service.js';
import { isDirectory, listDirectory, parseByteWindow, readWindow } from './byte-window.js';
import { Attempts } from './attempts.js';
import { heldEvent } from './dependent-jobs.js';
import { ClusterRepository, overQuota, WORKLOAD_KEY_INDEX, type LatestAttemptRow, type NewJob } from './cluster.repository.js';
import { ClusterScheduler } from './cluster-scheduler.js';
import { LIMIT_NAMES, LOG_NAMES, type ExecutionLimits, type JobIdentity } from './drivers/cluster-driver.js';
import { JobIdentities } from './job-identities.js';
import { toExecutionListItem, toExecutionResponse, toJobListItem, toJobResponse, toNodeListItem, toNodeResponse } from './cluster.mappers.js';
import type { ExecutionDto, ExecutionListItemDto, JobDto, JobListItemDto, NodeDto, NodeListItemDto, SubmitJobDto, VersionDto } from './dto/cluster.dto.js';
import type { ClusterJob, JobType } from './entities/cluster-job.entity.js';
import type { ExecutionStatus, TaskEvent } from './entities/job-execution.entity.js';

const DEFAULT_PRIORITY = 50;

/** A profile's limits on each execution: those of its `properties` that are positive integers. */
function limitsOf(properties: Readonly<Record<string, unknown>>): ExecutionLimits {
  const limits: Partial<Record<keyof ExecutionLimits, number>> = {};
  for (const name of LIMIT_NAMES) {
    const value = properties[name];
    if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) limits[name] = value;
  }
  return limits;
}

/** What other areas run on the cluster, once they have checked who may. */
export interface Workload {
  readonly name: string;
  readonly type: JobType;
  /** 0 to 100; 50 when absent. */
  readonly priority?: number;
  readonly namespace: NamespaceRef;
  readonly profile: ExecutionProfileDto;
  /** The user it runs for, who may then read and stop it. */
  readonly owner: { readonly id: string; readonly name: string };
  readonly task: {
    readonly name: string;
    readonly command: string;
    readonly args: readonly string[];
    readonly envVars: readonly { readonly name: string; readonly value: string }[];
  };
  /** Shown in the job's `properties` (beside the namespace, profile and owner). */
  readonly properties?: Readonly<Record<string, string>>;
  /**
   * Names the job among all jobs (at most MAX_WORKLOAD_KEY characters): running a workload under a
   * key that already names a job answers that job and runs nothing more, so that an area which
   * crashed between its own record and the submission, or two hubs doing the same work, submit
   * it once (the database decides).
   */
  readonly key?: string;
  /**
   * A job of the same owner this one depends on (docs/cluster.md "Dependent jobs"; Slurm's
   * afterok): held, pending, until an execution of that job completes with exit code 0; ended,
   * never run, when that job ends otherwise. 400 when there is no such job of the owner's, 409 when
   * it has ended without success already.
   */
  readonly dependsOn?: string;
}

/**
 * What became of one workload of a batch (ClusterService.runMany): its job, `existing` when its key
 * named that job already (it may have started, or ended, since: the area that links it must read it
 * as it is, as no announcement of it told the area what it is for); or why it was refused.
 */
export type BatchRun = { readonly jobId: string; readonly existing: boolean } | { readonly refused: Error };

/** A workload key's longest: every announcement of its job's executions carries it, and NOTIFY payloads are short. */
export const MAX_WORKLOAD_KEY = 512;

/** A job's latest execution, as latestAttempts gives it. */
export interface LatestAttempt {
  readonly executionId: string;
  /** Its directory, for FilesCopiedOut (which reads it by the execution's id when not given it). */
  readonly executionDir: string;
  /** 1 for the first execution. */
  readonly attempt: number;
  readonly status: ExecutionStatus;
  readonly exitCode: number | null;
  /** When the task's own process started. */
  readonly startedAt?: string;
  /** When it ended: set only once the execution has ended. */
  readonly finishedAt?: string;
  /** The event that ended it (Terminated, LimitExceeded, Lost, a stop's) and its message. */
  readonly endEvent?: { readonly type: string; readonly message: string };
  /**
   * Pending, the message of the placement failure it last noted, while no node takes it (as
   * announced with `placementFailed`; gone once it is placeable): for an engine that reconciles,
   * or that recorded its workload after the announcement.
   */
  readonly placementFailure?: string;
}

/** For a workload engine that reads its jobs' latest attempts in a statement of its own (with its lock): the select, and its rows' meaning. */
export { latestAttemptsSelect, type LatestAttemptRow } from './cluster.repository.js';

/** The latest attempts of rows as latestAttemptsSelect reads them, by job. */
export function latestAttemptsOf(rows: readonly LatestAttemptRow[]): Map<string, LatestAttempt> {
  return new Map(
    rows.map((row) => {
      const events = row.taskState.events;
      const ended = ['completed', 'failed', 'lost'].includes(row.status);
      const last = ended ? events[events.length - 1] : undefined;
      return [
        row.jobId,
        {
          executionId: row.executionId,
          executionDir: row.executionDir,
          attempt: row.attempts,
          status: row.status,
          exitCode: row.exitCode,
          startedAt: row.taskState.startedAt ?? undefined,
          finishedAt: ended ? (row.taskState.finishedAt ?? undefined) : undefined,
          endEvent: last && { type: last.type, message: last.message },
          placementFailure: placementFailureOf(row.status, events),
        },
      ];
    }),
  );
}

/** The refusals of a workload that depend on it alone: its key's length, and an environment variable its profile sets (a job may add to the profile's environment, never change it: it is the administrator's word, devices and threads). */
function checkWorkload({ key, task, profile }: Workload): void {
  if (key !== undefined && (key.length === 0 || key.length > MAX_WORKLOAD_KEY))
    throw InvalidInputError.at('key', `A workload key has 1 to ${MAX_WORKLOAD_KEY} characters`);
  const overriding = task.envVars.flatMap(({ name }, index) =>
    Object.hasOwn(profile.environment, name)
      ? [{ path: `/task/envVars/${index}/name`, message: `${name} is set by execution profile '${profile.name}'; a job may not change it` }]
      : [],
  );
  if (overriding.length > 0) throw invalidBody(overriding);
}

/** A workload's job as the repository inserts it, under the profile as it is now. */
function newJob(workload: Workload, identity: JobIdentity | null): NewJob {
  const { namespace, profile, owner, task, key, dependsOn } = workload;
  return {
    name: workload.name,
    type: workload.type,
    priority: workload.priority ?? DEFAULT_PRIORITY,
    namespaceId: namespace.id,
    executionProfileId: profile._id,
    ownerId: owner.id,
    task: {
      name: task.name,
      command: task.command,
      args: [...task.args],
      envVars: task.envVars.map(({ name, value }) => ({ name, value })),
      environment: profile.environment,
      constraints: profile.constraints,
      identity,
      limits: limitsOf(profile.properties),
    },
    properties: {
      ...workload.properties,
      namespace: namespace.name,
      executionProfileId: profile._id,
      executionProfile: profile.name,
      owner: owner.name,
      ownerId: owner.id,
      ...(dependsOn !== undefined && { dependsOn }),
    },
    workloadKey: key ?? null,
  };
}

function placementFailureOf(status: ExecutionStatus, events: readonly TaskEvent[]): string | undefined {
  const last = events.at(-1);
  return status === 'pending' && last?.type === 'PlacementFailed' ? last.message : undefined;
}

function nodeNotFound(id: string): NotFoundError {
  return new NotFoundError(`Cluster node ${id} not found`);
}

function jobNotFound(id: string): NotFoundError {
  return new NotFoundError(`Job ${id} not found`);
}

function executionNotFound(id: string): NotFoundError {
  return new NotFoundError(`Job execution ${id} not found`);
}

/**
 * The cluster as the API shows it (api-map §9), and the service other areas submit workloads to:
 * nodes, jobs, executions, their logs and files. Placing and watching executions is the
 * scheduler's; reaching the cluster is the configured driver's.
 */
@Injectable()
export class ClusterService {
  constructor(
    private readonly cluster: ClusterRepository,
    private readonly scheduler: ClusterScheduler,
    private readonly namespaces: NamespacesService,
    private readonly profiles: ExecutionProfilesService,
    private readonly bindings: ProfileBindingsService,
    private readonly access: AccessService,
    private readonly identities: JobIdentities,
    private readonly config: HubConfig,
    private readonly metrics: ClusterMetrics,
    private readonly attempts: Attempts,
  ) {}

  version(): VersionDto {
    return { version: HUB_VERSION };
  }

  // Nodes

  async queryNodes(_caller: Caller, query: ListQuery, denials: ItemDenials | undefined): Promise<TotalEnvelope<NodeListItemDto>> {
    const page = await this.cluster.listNodes(query, denials);
    return { total: page.totalCount, data: page.items.map(toNodeListItem) };
  }

  async getNode(_caller: Caller, id: string): Promise<NodeDto> {
    const node = await this.cluster.findNode(id);
    if (!node) throw nodeNotFound(id);
    return toNodeResponse(node);
  }

  /** A draining node takes no new work; what runs there goes on. */
  async drainNode(_caller: Caller, id: string, enable: boolean): Promise<NodeDto> {
    const node = await this.cluster.setDraining(id, enable);
    if (!node) throw nodeNotFound(id);
    if (!enable) this.scheduler.wake();
    return toNodeResponse(node);
  }

  nodeLabels(_caller: Caller): Promise<string[]> {
    return this.cluster.distinctLabels();
  }

  operatingSystems(_caller: Caller): Promise<string[]> {
    return this.cluster.distinctOperatingSystems();
  }

  // Jobs

  /** Jobs in `scope`, and the caller's own wherever they are. */
  async queryJobs(caller: Caller, query: ListQuery, scope: NamespaceScope): Promise<TotalEnvelope<JobListItemDto>> {
    const page = await this.cluster.listJobs(query, scope, caller.userId);
    return { total: page.totalCount, data: page.items.map(toJobListItem) };
  }

  /** The job detail; `page[offset]` and `page[limit]` are taken (as the interface lists them) and checked, though it has no list to page. */
  async getJob(_caller: Caller, id: string, query: Record<string, unknown> = {}): Promise<JobDto> {
    parsePage(query as RawQuery);
    const job = await this.cluster.findJob(id);
    if (!job) throw jobNotFound(id);
    return toJobResponse(job);
  }

  /**
   * Submits a batch job in a namespace under an execution profile bound there, which the caller
   * must be allowed to Use there. Its one execution waits (pending) for a node that meets the
   * profile's constraints and has room.
   */
  async submit(caller: Caller, input: SubmitJobDto): Promise<JobDto> {
    const profileId = input.executionProfileId.toLowerCase();
    const namespace = await this.namespaces.find({ name: input.namespace });
    // The permission first, so that a refusal tells nothing of which profiles exist.
    await this.access.require(caller, `/ExecutionProfiles/${profileId}`, 'Use', namespace ?? { id: NO_SUCH_NAMESPACE, name: input.namespace });
    const profile = await this.profiles.find(profileId);
    const errors: FieldError[] = [];
    if (!namespace) errors.push({ path: '/namespace', message: `No namespace is named '${input.namespace}'` });
    // One answer for a profile that does not exist and one not bound here, by id: its name may not be the caller's to know.
    else if (!profile || !(await this.bindings.isBound(profileId, namespace.id)))
      errors.push({ path: '/executionProfileId', message: `No execution profile ${profileId} is bound to namespace '${namespace.name}'` });
    if (!namespace || !profile || errors.length > 0) throw invalidBody(errors);
    // Going before other users' jobs is a permission of its own.
    if ((input.priority ?? DEFAULT_PRIORITY) > DEFAULT_PRIORITY) await this.access.require(caller, '/ClusterJobs', 'Update', namespace);
    return this.run({
      name: input.name,
      type: 'batch',
      priority: input.priority ?? undefined,
      namespace,
      profile,
      owner: { id: caller.userId, name: caller.userName },
      task: { name: 'main', command: input.task.command, args: input.task.args ?? [], envVars: input.task.envVars ?? [] },
    });
  }

  /**
   * Runs a workload another area has already authorised (a pipeline node, a link session, a
   * library worker) as a job with one execution, under the profile's environment and constraints
   * as they are now; with a key that names a job already, answers that job (see Workload.key).
   */
  async run(workload: Workload): Promise<JobDto> {
    return (await this.runKeyed(workload)).job;
  }

  /** As `run`, and whether the job its key names existed already (see BatchRun). */
  async runKeyed(workload: Workload): Promise<{ job: JobDto; existing: boolean }> {
    const { owner, key } = workload;
    checkWorkload(workload);
    const { identity, event: identityEvent } = await this.identities.of(owner);
    const dependsOn = workload.dependsOn;
    const held = dependsOn !== undefined && (await this.scheduler.dependencyOf(dependsOn, owner.id)) === 'held';
    // The job the key names, when it names one; else `otherwise`.
    const keyed = async (otherwise: Error): Promise<{ job: JobDto; existing: boolean }> => {
      const existing = key !== undefined && (await this.cluster.findJobByKey(key));
      if (existing) return { job: toJobResponse(existing), existing: true };
      throw otherwise;
    };
    let job: ClusterJob | undefined;
    try {
      job = await this.cluster.insertJob(
        newJob(workload, identity),
        {
          reservedCpu: 1,
          reservedMemory: 0,
          executionDirOf: (executionId) => this.scheduler.executionDir(executionId),
          events: [...(identityEvent ? [identityEvent] : []), ...(held ? [heldEvent(dependsOn)] : [])],
          ...(held && { heldBy: dependsOn }),
        },
        this.config.maxActiveJobsPerUser,
        this.scheduler.queueNotice(),
      );
    } catch (error) {
      // Submitted by another hub just now, or over the quota: the job the key names, whatever the quota says now.
      if (isUniqueViolation(error, WORKLOAD_KEY_INDEX) || error instanceof TooManyRequestsError) return keyed(error as Error);
      throw error;
    }
    // Nothing inserted: the key names a job already.
    if (!job) return keyed(new ConflictError(`The job workload key ${key} named was deleted just now; submit it again`));
    this.metrics.submitted();
    // Placed in this request's own turn: what can start now does not wait for a tick.
    this.scheduler.submitted(workload.priority ?? DEFAULT_PRIORITY, owner.id);
    return { job: toJobResponse(job), existing: false };
  }

  /**
   * Whether a job run with `dependsOn` is prepared while its dependency runs and started the moment
   * it succeeds (the local driver); where it is not (a queueing cluster), a held job is given to
   * the cluster only once its dependency succeeded, which gains an area nothing over running it then.
   */
  get preparesDependents(): boolean {
    return this.scheduler.preparesDependents;
  }

  /**
   * Runs workloads of one owner as `run` does each (without `dependsOn`), in one statement
   * however many (ClusterRepository.insertJobs) and one placement for all: for an area that
   * submits many at once (a pipeline's pass). Answers, in order, each one's job id (that of the
   * job its key names already, as `run` answers it), or why it was refused: its own problem (its
   * key, its environment), or the owner's quota (`TooManyRequestsError`, for as many as do not
   * fit, the last ones). When a key is taken meanwhile by another submission, each is run on its own.
   */
  async runMany(workloads: readonly Workload[]): Promise<BatchRun[]> {
    if (workloads.length === 0) return [];
    const owner = workloads[0].owner;
    if (workloads.some((workload) => workload.owner.id !== owner.id || workload.dependsOn !== undefined))
      throw new Error('runMany takes the workloads of one owner, none with dependsOn');
    const problems = workloads.map((workload) => {
      try {
        checkWorkload(workload);
        return undefined;
      } catch (error) {
        return error as Error;
      }
    });
    const { identity, event: identityEvent } = await this.identities.of(owner);
    const valid = workloads.flatMap((workload, index) => (problems[index] ? [] : [{ workload, index }]));
    let inserted: Awaited<ReturnType<ClusterRepository['insertJobs']>>;
    try {
      inserted = await this.cluster.insertJobs(
        owner.id,
        valid.map(({ workload }) => newJob(workload, identity)),
        {
          reservedCpu: 1,
          reservedMemory: 0,
          executionDirOf: (executionId) => this.scheduler.executionDir(executionId),
          ...(identityEvent && { events: [identityEvent] }),
        },
        this.config.maxActiveJobsPerUser,
        this.scheduler.queueNotice(),
      );
    } catch (error) {
      if (!isUniqueViolation(error, WORKLOAD_KEY_INDEX)) throw error;
      return Promise.all(
        workloads.map(async (workload): Promise<BatchRun> => {
          try {
            const { job, existing } = await this.runKeyed(workload);
            return { jobId: job.id, existing };
          } catch (refused) {
            return { refused: refused as Error };
          }
        }),
      );
    }
    const results: BatchRun[] = problems.map((problem) => ({ refused: problem as Error }));
    valid.forEach(({ index }, at) => {
      const { jobId, outcome } = inserted[at];
      results[index] = outcome === 'overQuota' ? { refused: overQuota(this.config.maxActiveJobsPerUser) } : { jobId, existing: outcome === 'existing' };
      if (outcome === 'inserted') this.metrics.submitted();
    });
    if (inserted.some(({ outcome }) => outcome === 'inserted'))
      this.scheduler.submitted(Math.max(...valid.map(({ workload }) => workload.priority ?? DEFAULT_PRIORITY)), owner.id);
    return results;
  }

  /** The job a workload was run under `key` (see Workload.key), if any. */
  async jobByKey(key: string): Promise<JobDto | null> {
    const job = await this.cluster.findJobByKey(key);
    return job && toJobResponse(job);
  }

  /**
   * Runs an ended job again: a new execution (attempt number `attempt`, 1-based) that counts
   * against its owner's active jobs as a new job does (429 over the quota); nothing more when the
   * job already has `attempt` executions (asked again after a crash). See attempts.ts.
   */
  async retry(jobId: string, attempt: number): Promise<JobDto> {
    return toJobResponse(await this.attempts.retry(jobId, attempt));
  }

  /**
   * Stops a workload another area ran (a pipeline's cancel), as `stop` does for a user: resolves
   * once the job is recorded dead, its running executions killed and its pending ones never to start.
   */
  async stopWorkload(jobId: string, reason: string): Promise<void> {
    const job = await this.cluster.findJob(jobId);
    if (!job) throw jobNotFound(jobId);
    await this.scheduler.stopJob(job, reason);
  }

  /**
   * The refusals `run` would give a workload of `owner` that do not depend on what it runs (a hub
   * that is not root and an owner who is no administrator, a Slurm cluster with no account for
   * them), thrown without running anything: for an area that must refuse a request at once rather
   * than fail its workloads later (submitting a pipeline).
   */
  async checkOwner(owner: { readonly id: string; readonly name: string }): Promise<void> {
    await this.identities.of(owner);
  }

  /**
   * Who `owner`'s jobs run as (null: as the hub's own user, on a hub that is not root), for an
   * area that reads files on the owner's behalf (a File trigger's directory); the refusals of
   * checkOwner otherwise.
   */
  async jobIdentityOf(owner: { readonly id: string; readonly name: string }): Promise<JobIdentity | null> {
    return (await this.identities.of(owner)).identity;
  }

  /**
   * The latest execution (attempt) of each job, by job id, with its number (1 for the first): what
   * an engine that runs workloads reads when an execution change is announced, or when it
   * reconciles, rather than polling. Read in the caller's transaction when it gives its manager
   * (one connection for a whole step, so that steps at once cannot exhaust the pool).
   */
  async latestAttempts(jobIds: readonly string[], manager?: EntityManager): Promise<Map<string, LatestAttempt>> {
    return latestAttemptsOf(await this.cluster.latestAttempts(jobIds, manager));
  }

  /** Stops a job: its pending executions never start, its running ones are killed; it is then dead. */
  async stop(caller: Caller, id: string): Promise<JobDto> {
    const job = await this.cluster.findJob(id);
    if (!job) throw jobNotFound(id);
    await this.scheduler.stopJob(job, `Stopped by ${caller.userName}`);
    return this.getJob(caller, id);
  }

  // Executions

  async queryExecutions(caller: Caller, query: ListQuery, scope: NamespaceScope): Promise<TotalEnvelope<ExecutionListItemDto>> {
    const page = await this.cluster.listExecutions(query, scope, caller.userId);
    return { total: page.totalCount, data: page.items.map(toExecutionListItem) };
  }

  async getExecution(_caller: Caller, id: string): Promise<ExecutionDto> {
    const execution = await this.cluster.findExecution(id);
    if (!execution?.job) throw executionNotFound(id);
    return toExecutionResponse(execution, execution.job);
  }

  /** A job's executions, oldest first, for the areas that watch the workloads they run. */
  async executionsOfJob(jobId: string): Promise<ExecutionDto[]> {
    const job = await this.cluster.findJob(jobId);
    if (!job) throw jobNotFound(jobId);
    return (await this.cluster.executionsOf(jobId)).map((execution) => toExecutionResponse(execution, job));
  }

  /** A window of one of a task's logs (`stdout`, `stderr`), read without loading the rest of it. */
  async readLog(_caller: Caller, id: string, taskName: string, logName: string, window: Record<string, unknown>): Promise<ByteWindowReply> {
    const range = parseByteWindow(window.origin, window.offset, window.limit);
    const execution = await this.cluster.findExecution(id);
    if (!execution) throw executionNotFound(id);
    if (execution.taskName !== taskName) throw new NotFoundError(`Job execution ${id} has no task '${taskName}'`);
    if (!(LOG_NAMES as readonly string[]).includes(logName)) throw new NotFoundError(`A task has the logs ${LOG_NAMES.join(' and ')}, not '${logName}'`);
    const logs = join(execution.executionDir, 'logs');
    try {
      return await readWindow(join(logs, logName), await realpath(logs), range, `log '${logName}'`);
    } catch (error) {
      // Not started yet: nothing logged.
      if (error instanceof NotFoundError || (error as NodeJS.ErrnoException).code === 'ENOENT') return ByteWindowReply.text('');
      throw error;
    }
  }

  /**
   * A window of a file in an execution's working directory, or the listing of a directory there
   * (one name per line, directories ending in `/`, at most 10,000). Paths are relative; `..`,
   * absolute paths and links that lead out of the working directory are refused (400), and what
   * is read is checked on the opened descriptor, so that a task swapping directories for links
   * meanwhile cannot lead the read elsewhere.
   */
  async readFile(_caller: Caller, id: string, query: Record<string, unknown>): Promise<ByteWindowReply> {
    const range = parseByteWindow(undefined, query.offset, query.limit);
    if (Array.isArray(query.path)) throw InvalidInputError.at('path', 'path is given more than once');
    const path = typeof query.path === 'string' ? query.path : '';
    const problem = path.includes('\0')
      ? 'must not contain NUL'
      : isAbsolute(path)
        ? 'must be relative to the working directory'
        : path.split('/').includes('..')
          ? 'must not contain ..'
          : undefined;
    if (problem) throw InvalidInputError.at('path', `path ${problem}`);
    const execution = await this.cluster.findExecution(id);
    if (!execution) throw executionNotFound(id);
    const root = join(execution.executionDir, 'work');
    let rootReal: string;
    try {
      rootReal = await realpath(root);
      // The working directory itself, not a link a task put in its place.
      if (rootReal !== join(await realpath(execution.executionDir), 'work'))
        throw InvalidInputError.at('path', 'The working directory was replaced by a link; it is not read');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new NotFoundError(`Job execution ${id} has not started: it has no working directory yet`);
      throw error;
    }
    const what = `'${path}' in the working directory of job execution ${id}`;
    let resolved: string;
    try {
      resolved = await realpath(join(root, path));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new NotFoundError(`No ${what}`);
      throw InvalidInputError.at('path', `${what} cannot be read`);
    }
    const inside = relative(rootReal, resolved);
    if (inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside)) throw InvalidInputError.at('path', 'path leads out of the working directory');
    if (await isDirectory(resolved)) return ByteWindowReply.text((await listDirectory(resolved, rootReal, what)).join('\n'));
    return readWindow(resolved, rootReal, range, what);
  }
}

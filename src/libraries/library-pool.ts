import { Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { GroupsService } from '../auth/groups.service.js';
import { CredentialsService } from '../authdomains/credentials.service.js';
import { ClusterService } from '../cluster/cluster.service.js';
import { ExecutionAnnouncements, type ExecutionChange } from '../cluster/execution-announcements.js';
import { ServiceEndpoints, type ServiceEndpoint } from '../cluster/service-endpoints.js';
import { ShippedPrograms } from '../cluster/shipped-programs.js';
import { Clock, type CancelTimer } from '../common/clock/clock.js';
import { ChangeFeed } from '../common/database/change-feed.js';
import { ServiceUnavailableError, TooManyRequestsError } from '../common/errors/hub-errors.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import type { ExecutionProfileDto } from '../execution-profiles/dto/execution-profile.dto.js';
import { ExecutionProfilesService } from '../execution-profiles/execution-profiles.service.js';
import { PublishedLibrariesRepository, REFUSED_NOTICE, type PublishedRow, type WorkerRow } from './published-libraries.repository.js';
import { OwnersWaitingForRoom } from '../cluster/owners-waiting-for-room.js';
import { WorkerClient, workerProblem, WorkerUnreachableError, type WorkerReply, type WorkerRequest } from './worker-client.js';

/** The workload key of a worker's job: the library, the index and the generation, so that each process is submitted once. */
export const WORKER_KEY_PREFIX = 'library:';
/** The variables a worker learns its endpoint from. */
const WORKER_ENDPOINT_VARIABLES = { host: 'HUB_WORKER_HOST', port: 'HUB_WORKER_PORT' };
/** The task a worker's job runs (api-map §9). */
const WORKER_TASK = 'worker';
/** A failed worker is tried again at least this often (api-map §5). */
export const RETRY_INTERVAL_MS = 60_000;
/** How long the status waits for a worker's own count of requests. */
const HEALTH_TIMEOUT_MS = 1000;

function keyOf(libraryId: string, index: number, generation: number): string {
  return `${WORKER_KEY_PREFIX}${libraryId}:${index}:${generation}`;
}

export function endpointOf(worker: WorkerRow): ServiceEndpoint | null {
  return worker.host !== null && worker.port !== null && worker.secret !== null ? { host: worker.host, port: worker.port, secret: worker.secret } : null;
}

/** What a worker is told of its library: never a credential (a postgres connection comes later, over its channel). */
function optionsFor(library: PublishedRow): Record<string, unknown> {
  if (library.engine !== 'postgres') return library.options;
  return { schema: typeof library.options.schema === 'string' ? library.options.schema : 'public' };
}

/**
 * The pools of workers of published libraries (api-map §5): each worker a `service` job of the
 * publisher's (task `worker`) with an endpoint, ready once its port listens (and, for postgres, once
 * the hub has sent it its connection). The engine reacts to the cluster's announcements, never
 * polling it: a worker whose job ends unasked is counted in failedWorkerCount and replaced; a
 * replacement the quota (or anything else) refuses leaves it `failed`, tried again when the
 * publisher's jobs end and at least every RETRY_INTERVAL_MS. Every change of a worker is one
 * conditional statement on its row at its generation, so that of several hubs on one database one
 * acts; a hub restarted follows the workers it finds.
 */
@Injectable()
export class LibraryPool implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly client = new WorkerClient();
  private readonly logger: Logger;
  /** This hub's readiness probes, by job id. */
  private readonly probes = new Map<string, AbortController>();
  /** The next ready worker to send each library's request to (round robin). */
  private readonly turns = new Map<string, number>();
  private unsubscribe?: () => void;
  private backstop?: NodeJS.Timeout;
  private retryTimer?: { at: number; cancel: CancelTimer };
  private closed = false;
  /** Publishers with workers whose start was refused (see OwnersWaitingForRoom): only their jobs' ends send this hub to retry (two statements). */
  private readonly publishersRefused: OwnersWaitingForRoom;

  constructor(
    private readonly libraries: PublishedLibrariesRepository,
    private readonly cluster: ClusterService,
    private readonly endpoints: ServiceEndpoints,
    private readonly announcements: ExecutionAnnouncements,
    private readonly programs: ShippedPrograms,
    private readonly profiles: ExecutionProfilesService,
    private readonly credentials: CredentialsService,
    private readonly groups: GroupsService,
    private readonly clock: Clock,
    private readonly changes: ChangeFeed,
    logger: HubLogger,
  ) {
    this.logger = logger.for('libraries');
    this.publishersRefused = new OwnersWaitingForRoom(changes, REFUSED_NOTICE);
  }

  async onApplicationBootstrap(): Promise<void> {
    this.unsubscribe = this.announcements.subscribe((change) => void this.heard(change));
    this.publishersRefused.listen();
    await this.reconcile();
    // The net under the timers: workers another hub failed are retried here too.
    this.backstop = setInterval(() => void this.retryDue(), RETRY_INTERVAL_MS);
    this.backstop.unref();
  }

  onApplicationShutdown(): void {
    this.closed = true;
    this.unsubscribe?.();
    clearInterval(this.backstop);
    this.retryTimer?.cancel();
    for (const probe of this.probes.values()) probe.abort();
    this.probes.clear();
    this.client.close();
  }

  /**
   * Starts the workers of a library just recorded, one job each; the first refusal (the
   * publisher's quota: 429, or any check of the cluster's) is thrown, the caller undoing it all.
   */
  async startAll(library: PublishedRow, profile: ExecutionProfileDto): Promise<void> {
    for (const worker of await this.libraries.workers(library.id)) await this.submit(library, worker, profile);
  }

  /** Stops the jobs of workers of a library that is gone (unpublished); resolves once they are dead. */
  async stopAll(workers: readonly WorkerRow[], reason: string): Promise<void> {
    await Promise.all(workers.flatMap((worker) => (worker.jobId ? [this.stopJob(worker.jobId, reason)] : [])));
  }

  /** Restarts one worker (a new job, a new startTime; failedWorkerCount unchanged); false when it was changing meanwhile. */
  async restart(library: PublishedRow, worker: WorkerRow): Promise<boolean> {
    const taken = await this.libraries.updateWorker(library.id, worker.index, worker.generation, {
      state: 'starting',
      jobId: null,
      endpoint: null,
      startTime: null,
      retryAt: null,
      message: null,
      nextGeneration: true,
    });
    if (!taken) return false;
    if (worker.jobId) await this.stopJob(worker.jobId, `Worker ${worker.index} of library '${library.name}' restarted`);
    await this.launch(library, taken);
    return true;
  }

  /** Sends a request to one of the library's ready workers, in turn; 503 when none is ready. */
  async relay(library: PublishedRow, method: 'GET' | 'POST', path: string, request: WorkerRequest = {}): Promise<WorkerReply> {
    for (let attempt = 1; ; attempt += 1) {
      const ready = await this.libraries.readyWorkers(library.id);
      if (ready.length === 0) throw new ServiceUnavailableError(`No worker of library '${library.name}' is ready yet; try again shortly`);
      const turn = this.turns.get(library.id) ?? 0;
      this.turns.set(library.id, turn + 1);
      const endpoint = endpointOf(ready[turn % ready.length]) as ServiceEndpoint;
      try {
        return await this.client.send(endpoint, method, path, request);
      } catch (error) {
        // A worker replaced since this hub cached the pool (the change feed's word comes a moment
        // after): read the pool again, once.
        if (!(error instanceof WorkerUnreachableError) || attempt > 1) throw error;
        this.libraries.forget(library.id);
      }
    }
  }

  /**
   * Cancels the query a request named `requestId` runs, whichever worker of the library runs it
   * (this hub may not be the one that sent it): each ready worker is asked; none running it is no error.
   */
  async cancel(libraryId: string, requestId: string): Promise<void> {
    const ready = await this.libraries.readyWorkers(libraryId);
    await Promise.all(
      ready.map(async (worker) => {
        const endpoint = endpointOf(worker);
        if (endpoint)
          await this.client.send(endpoint, 'POST', `/cancel/${encodeURIComponent(requestId)}`, { timeoutMs: HEALTH_TIMEOUT_MS }).catch(() => undefined);
      }),
    );
  }

  /** A worker's own count of the requests it served, or 0 when it does not answer at once. */
  async requestsServed(worker: WorkerRow): Promise<number> {
    const endpoint = endpointOf(worker);
    if (!endpoint || worker.state !== 'ready') return 0;
    try {
      const reply = await this.client.send(endpoint, 'GET', '/health', { timeoutMs: HEALTH_TIMEOUT_MS });
      const served = (JSON.parse(reply.body.toString('utf8')) as { requestsServed?: unknown }).requestsServed;
      return typeof served === 'number' ? served : 0;
    } catch {
      return 0;
    }
  }

  /** One pass of retries of failed workers whose time has come (exposed for the fake clock's tests). */
  async retryDue(publisherId?: string): Promise<void> {
    if (this.closed) return;
    try {
      const claim = () => this.libraries.claimRetries(this.clock.now(), publisherId);
      const claimed = publisherId === undefined ? await claim() : (await this.publishersRefused.lookFor(publisherId, claim)).found;
      for (const worker of claimed) {
        const library = await this.libraries.find(worker.libraryId);
        if (library) await this.launch(library, worker);
      }
    } catch (error) {
      this.logger.error({ err: error }, 'Retrying failed library workers failed; the next pass tries again');
    }
    await this.armRetry();
  }

  /** Submits a worker's job (the worker at its generation, without a job) and follows it; refusals are thrown. */
  private async submit(library: PublishedRow, worker: WorkerRow, profile: ExecutionProfileDto): Promise<void> {
    const endpoint = await this.endpoints.allocate();
    const { node, entry } = await this.programs.libraryWorker();
    // The hub's port on the local driver; on a node, the launch picks one and writes it for the probe.
    const launch = this.endpoints.launch(endpoint, { command: node, args: [entry] }, WORKER_ENDPOINT_VARIABLES);
    const job = await this.cluster.run({
      name: `library ${library.name} worker ${worker.index}`,
      type: 'service',
      namespace: { id: library.namespaceId, name: library.namespaceName },
      profile,
      owner: { id: library.publisherId, name: library.publisherName },
      task: {
        name: WORKER_TASK,
        command: launch.command,
        args: launch.args,
        envVars: [
          ...launch.envVars,
          { name: 'HUB_WORKER_SECRET', value: endpoint.secret },
          { name: 'HUB_LIBRARY_ENGINE', value: library.engine },
          { name: 'HUB_LIBRARY_PATH', value: library.path ?? '' },
          { name: 'HUB_LIBRARY_OPTIONS', value: JSON.stringify(optionsFor(library)) },
        ],
      },
      properties: { publishedLibraryId: library.id, workerIndex: String(worker.index) },
      key: keyOf(library.id, worker.index, worker.generation),
    });
    const recorded = await this.libraries.updateWorker(library.id, worker.index, worker.generation, { jobId: job.id, endpoint, state: 'starting' });
    // Moved on meanwhile (restarted, retried by another hub, unpublished): this job is no one's.
    if (!recorded) return this.stopJob(job.id, `Worker ${worker.index} of library '${library.name}' was replaced meanwhile`);
    this.follow(library, recorded);
    // Its job may have ended before this hub listened for it.
    const attempt = (await this.cluster.latestAttempts([job.id])).get(job.id);
    if (attempt?.finishedAt !== undefined) await this.ended(job.id, attempt.endEvent?.message ?? `The worker exited (${attempt.status})`);
  }

  /** Starts a worker taken for a (re)start; a refusal leaves it failed, to be tried again. */
  private async launch(library: PublishedRow, worker: WorkerRow): Promise<void> {
    try {
      const profile = await this.profiles.find(library.executionProfileId);
      if (!profile) throw new Error(`Execution profile ${library.executionProfileId} no longer exists`);
      await this.submit(library, worker, profile);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (!(error instanceof TooManyRequestsError))
        this.logger.warn({ err: error, libraryId: library.id, workerIndex: worker.index }, 'A library worker could not start');
      await this.libraries.updateWorker(library.id, worker.index, worker.generation, {
        state: 'failed',
        retryAt: new Date(this.clock.now().getTime() + RETRY_INTERVAL_MS),
        message,
        refused: true,
      });
      // Known here at once; the other hubs hear it from the change feed.
      this.publishersRefused.noticed(library.publisherId);
      await this.libraries.announceRefused(library.publisherId);
      await this.armRetry();
    }
  }

  /** Probes a starting worker's port; once it listens (and has its connection, for postgres) it is ready. */
  private follow(library: PublishedRow, worker: WorkerRow): void {
    const jobId = worker.jobId;
    if (!jobId || worker.secret === null || worker.state !== 'starting' || this.probes.has(jobId)) return;
    const grant = { host: worker.host, port: worker.port, secret: worker.secret };
    const probe = new AbortController();
    this.probes.set(jobId, probe);
    void this.endpoints
      .ready(jobId, grant, { type: 'port' }, probe.signal)
      .then(async (seen) => {
        if (!seen) return;
        if (library.engine === 'postgres') await this.connect(library, seen.endpoint);
        const startedAt = (await this.cluster.latestAttempts([jobId])).get(jobId)?.startedAt;
        // Where it listens, as the probe found it (on a node, its launch picked the port).
        await this.libraries.updateWorker(
          library.id,
          worker.index,
          worker.generation,
          { state: 'ready', startTime: startedAt ? new Date(startedAt) : seen.at, endpoint: seen.endpoint },
          ['starting'],
        );
      })
      .catch((error: unknown) => this.logger.error({ err: error, libraryId: library.id, workerIndex: worker.index }, 'A library worker did not become ready'))
      .finally(() => {
        if (this.probes.get(jobId) === probe) this.probes.delete(jobId);
      });
  }

  /**
   * Sends a postgres worker its connection: the publisher's credential resolved in the
   * definition's auth domain now, over the worker's authenticated channel (never its envVars).
   */
  private async connect(library: PublishedRow, endpoint: ServiceEndpoint): Promise<void> {
    const publisher = { userId: library.publisherId, userName: library.publisherName, groups: await this.groups.effectiveGroupIds(library.publisherId) };
    const credential = await this.credentials.resolve(publisher, String(library.options.authDomainId));
    const reply = await this.client.send(endpoint, 'POST', '/connection', { body: { ...credential.data, schema: optionsFor(library).schema } });
    if (reply.status !== 200) throw workerProblem(reply);
  }

  private async stopJob(jobId: string, reason: string): Promise<void> {
    this.probes.get(jobId)?.abort();
    try {
      await this.cluster.stopWorkload(jobId, reason);
    } catch (error) {
      this.logger.error({ err: error, jobId }, 'Could not stop a library worker’s job');
    }
  }

  /** A worker's job ended: unless it was asked to (restart, unpublish), it counts as failed and is replaced (at once when it had been ready). */
  private async ended(jobId: string, message: string): Promise<void> {
    this.probes.get(jobId)?.abort();
    const worker = await this.libraries.takeEnded(jobId, message, new Date(this.clock.now().getTime() + RETRY_INTERVAL_MS));
    if (!worker) return;
    // One that never became ready waits for the retry pass (see takeEnded).
    if (worker.state === 'failed') return this.armRetry();
    const library = await this.libraries.find(worker.libraryId);
    if (library) await this.launch(library, worker);
  }

  private async heard(change: ExecutionChange | 'reconnected'): Promise<void> {
    try {
      if (change === 'reconnected') return await this.reconcile();
      if (change.kind !== 'ended') return;
      // A worker's own end is followed by its replacement or its own timer: retrying its publisher's
      // failed workers at once would restart one that cannot start in a tight loop.
      if (change.workloadKey?.startsWith(WORKER_KEY_PREFIX))
        return await this.ended(change.jobId, change.message ?? `The worker exited (${change.status ?? 'ended'})`);
      // Another job of someone's ended: room in their quota, maybe, for their refused workers.
      if (!change.ownerId || !this.publishersRefused.mayWait(change.ownerId)) return;
      await this.retryDue(change.ownerId);
    } catch (error) {
      this.logger.error({ err: error, change }, 'Could not follow a change of a library worker’s job');
    }
  }

  /** At start and after the change feed reconnects: settles workers whose jobs ended unheard, probes starting ones, retries failed ones. */
  private async reconcile(): Promise<void> {
    await this.publishersRefused.reload(() => this.libraries.publishersRefused());
    await this.libraries.releaseOrphans();
    const workers = await this.libraries.withJobs();
    const attempts = await this.cluster.latestAttempts(workers.map((worker) => worker.jobId as string));
    for (const worker of workers) {
      const attempt = attempts.get(worker.jobId as string);
      if (!attempt || attempt.finishedAt !== undefined || ['completed', 'failed', 'lost'].includes(attempt.status)) {
        await this.ended(worker.jobId as string, attempt?.endEvent?.message ?? 'The worker ended while no hub followed it');
        continue;
      }
      if (worker.state === 'starting') {
        const library = await this.libraries.find(worker.libraryId);
        if (library) this.follow(library, worker);
      }
    }
    await this.retryDue();
  }

  /** Arms this hub's timer for the earliest retry due (on the injected clock, so tests move it). */
  private async armRetry(): Promise<void> {
    if (this.closed) return;
    const next = await this.libraries.nextRetry();
    if (!next) return;
    const at = next.getTime();
    if (this.retryTimer && this.retryTimer.at <= at) return;
    this.retryTimer?.cancel();
    const cancel = this.clock.setTimer(next, () => {
      this.retryTimer = undefined;
      return this.retryDue();
    });
    this.retryTimer = { at, cancel };
  }
}

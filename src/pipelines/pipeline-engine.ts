import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { ExecutionAnnouncements, type ExecutionChange } from '../cluster/execution-announcements.js';
import { ClusterService, latestAttemptsOf, type LatestAttempt, type Workload } from '../cluster/cluster.service.js';
import { OwnersWaitingForRoom } from '../cluster/owners-waiting-for-room.js';
import { FilesCopiedOut, type CopiedExecution, type CopiedFile } from '../cluster/files-copied-out.js';
import { announceChange, ChangeFeed } from '../common/database/change-feed.js';
import { Clock, type CancelTimer } from '../common/clock/clock.js';
import { TooManyRequestsError } from '../common/errors/hub-errors.js';
import type { ExecutionProfileDto } from '../execution-profiles/dto/execution-profile.dto.js';
import { ExecutionProfilesService } from '../execution-profiles/execution-profiles.service.js';
import type { NodeState } from './dto/pipeline-run.dto.js';
import { attemptsOf, FETCH_FAILED_EXIT, INPUTS_FILE, nodeCommand, parseInputNotes, redactedRepo, type InputNote, type RunNodeSpec } from './node-launch.js';
import { PipelineRunsRepository, type LockedRun, type NodeEvent, type NodeRow, type ResultRow, type RunRow } from './pipeline-runs.repository.js';
import { FINISHED, RunGraph, type GraphDecision, type Outcome } from './run-graph.js';

/** The change feed's "table" of owners some of whose nodes the quota now holds back (id: the owner). */
const OVER_QUOTA_NOTICE = 'pipeline_owner_over_quota';
/** The prefix of a node job's workload key: `pipeline-run:<run id>:<node name>`. */
const KEY_PREFIX = 'pipeline-run:';
/** Runs advanced at once by this hub: each holds a connection, and a cluster call may need another. */
const CONCURRENT_ADVANCES = 4;
const DEFAULT_CONTENT_TYPE = 'application/octet-stream';
/** How often a hub looks for nodes whose job ended with no hub acting on it (see sweepUnheard), and how long ago such an end must be. */
const SWEEP_INTERVAL_MS = 30_000;
/** Submissions and retries a pass asks of the cluster at once. */
const ASKS_AT_ONCE = 8;
/** How many nodes deep jobs are submitted ahead of the last node decided, each held on the one before (see holdAhead). */
const HELD_AHEAD = 4;
/**
 * How long nodes whose logs were stored wait to be flagged so, together, unless their run's next
 * pass flags them with its write first, as it does in a run going on (reads take the execution's
 * own logs meanwhile).
 */
const LOG_FLAGS_AFTER_MS = 250;

export function workloadKeyOf(runId: string, node: string): string {
  return `${KEY_PREFIX}${runId}:${node}`;
}

function runOfKey(key: string | undefined): string | undefined {
  if (!key?.startsWith(KEY_PREFIX)) return undefined;
  return key.slice(KEY_PREFIX.length, KEY_PREFIX.length + 36);
}

/**
 * Where a node's files go in the hub's store (its logs and results; its input notes apart, so that
 * no artifact's name can meet them): by node position, as node names may hold characters a key
 * may not.
 */
export function nodeStore(runId: string, node: { readonly position: number }, part: 'files' | 'inputs' = 'files'): string {
  return part === 'files' ? `runs/${runId}/${node.position}` : `runs/${runId}/${node.position}/inputs`;
}

export function runStorePrefix(runId: string): string {
  return `runs/${runId}`;
}

function event(type: string, details: Record<string, string> = {}, time = new Date().toISOString()): NodeEvent {
  return { time, type, details };
}

/** What the engine read of an attempt's working directory after it ended (outside any transaction). */
interface Collected {
  readonly attempt: number;
  readonly inputs: InputNote[];
  readonly artifacts: CopiedFile[];
}

/** A run's spec as the engine reads it: parsed once. */
interface RunPlan {
  readonly spec: RunRow['spec'];
  readonly specs: ReadonlyMap<string, RunNodeSpec>;
  readonly graph: RunGraph;
}

/** Runs whose plans a hub keeps (cleared whole past it: plans are made again on demand). */
const MAX_PLANS = 1000;

/** What the next pass of a run is asked to read and do (see PipelineEngine.advance). */
interface PassRequest {
  again: boolean;
  /** The changes announced since the pass under way began; every job of the run's when `all`. */
  changes: ExecutionChange[];
  all: boolean;
  retryWaiting: boolean;
  done: Promise<void>;
}

/** A run's nodes as this hub last wrote them, and the revision that write left the run at. */
interface KeptNodes {
  revision: number;
  readonly nodes: NodeRow[];
}

/** What a pass saw of an execution and acted on: its start (the node Running), or its end (settled). */
type Seen = 'started' | 'ended';

/** Nodes whose attempt the cluster must be asked for, once the transaction that decided it committed. */
/** A job the cluster made, or had made already under the node's workload key (`existing`), for a node. */
interface NodeJob {
  readonly node: NodeRow;
  readonly jobId: string;
  readonly existing: boolean;
}

interface ClusterWork {
  readonly submit: NodeRow[];
  readonly retry: NodeRow[];
  /** Jobs held for nodes the run skipped. */
  readonly stop: string[];
}

/**
 * The run engine (api-map §7): event-driven, its state in PostgreSQL. Each execution change the
 * cluster announces (here or in another hub) advances the run its job belongs to: under the run's
 * row lock, so that one hub at a time moves a run on, the engine reads its nodes and their jobs'
 * latest attempts, records starts and ends, decides (run-graph.ts) which nodes run next and which
 * are skipped, and commits; then it asks the cluster for the jobs it decided, by workload key, so
 * that a crash between the decision and the job, or two hubs deciding alike, never starts a node
 * twice. A hub reconciles every run not ended when it starts and whenever its change feed comes
 * back, so nothing waits for an announcement missed meanwhile.
 */
@Injectable()
export class PipelineEngine implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('PipelineEngine');
  /** Runs being advanced here, and whether another pass was asked for meanwhile. */
  private readonly advancing = new Map<string, PassRequest>();
  /** Per run, the timers of its nodes with a retry or a timeout due (see armTimers). */
  private readonly timers = new Map<string, Map<string, NodeJS.Timeout>>();
  private readonly storingLogs = new Set<string>();
  /** Nodes whose logs were stored, per run, not yet flagged so in the database (see flagLogsStored). */
  private readonly logsToFlag = new Map<string, Set<string>>();
  private flagging?: NodeJS.Timeout;
  /** LOG_FLAGS_AFTER_MS; a spec lengthens it to see what passes flag whatever the machine's load. */
  private logFlagsAfterMs = LOG_FLAGS_AFTER_MS;
  /** Each run's spec, parsed, and its graph: a run's spec never changes, and a pass would otherwise parse both again. */
  private readonly plans = new Map<string, RunPlan>();
  /**
   * Each run's nodes as this hub's last write left them: a pass that finds the run at the next
   * revision uses them instead of reading every node again (see PipelineRunsRepository.lock).
   */
  private readonly kept = new Map<string, KeptNodes>();
  /**
   * The executions whose start or end a committed pass of this hub acted on, per run: their
   * announcements, which often come while that pass runs (a start and an end are announced
   * together), need no pass of their own.
   */
  private readonly seen = new Map<string, Map<string, Seen>>();
  /** Placement failures announced for a run's nodes, recorded as Queued events by its next pass. */
  private readonly placementNotes = new Map<string, Map<string, string>>();
  /** Owners with nodes the quota holds back (see OwnersWaitingForRoom). */
  private readonly ownersWaiting: OwnersWaitingForRoom;
  /** How many of each owner's jobs this hub heard end (see askCluster). */
  private readonly ownerEnds = new Map<string, number>();
  /**
   * Room each owner waiting for it may have, as this hub heard: one more for each of their jobs
   * that ended, every room there may be (Infinity) when it reconciled. Held-back nodes are asked
   * for up to it (one at the least), as each ask past the room is a refused insert.
   */
  private readonly roomHeard = new Map<string, number>();
  /**
   * Runs this hub last saw holding nodes back for their owner's quota: an end of one of such a
   * run's own jobs makes room that the pass recording it asks for at once (see heard), without a
   * lookup of the owner's runs and a pass of its own. Stale either way, it costs nothing wrong: a
   * run no longer holding any back asks for none, and one not known here is found by the lookup.
   */
  private readonly holdingBack = new Set<string>();
  private slots = CONCURRENT_ADVANCES;
  private readonly waitingForSlot: (() => void)[] = [];
  private unsubscribe?: () => void;
  private stopped = false;
  private cancelSweep?: CancelTimer;

  constructor(
    private readonly runs: PipelineRunsRepository,
    private readonly dataSource: DataSource,
    private readonly cluster: ClusterService,
    private readonly announcements: ExecutionAnnouncements,
    private readonly files: FilesCopiedOut,
    private readonly profiles: ExecutionProfilesService,
    private readonly changes: ChangeFeed,
    private readonly clock: Clock,
  ) {
    this.ownersWaiting = new OwnersWaitingForRoom(changes, OVER_QUOTA_NOTICE);
  }

  onApplicationBootstrap(): void {
    this.unsubscribe = this.announcements.subscribe((change) => this.heard(change));
    this.ownersWaiting.listen();
    void this.reconcile();
    this.armSweep();
  }

  private armSweep(): void {
    if (this.stopped) return;
    this.cancelSweep = this.clock.setTimer(new Date(this.clock.now().getTime() + SWEEP_INTERVAL_MS), () => this.sweepUnheard());
  }

  /**
   * Advances the runs with a node waiting on, or running, a job that ended more than
   * SWEEP_INTERVAL_MS ago: an end no hub acted on (a notice lost between hubs while the change feed
   * stayed up, or a path not foreseen), which would otherwise leave the run waiting for good. An
   * end heard is acted on in milliseconds, so this finds nothing as a rule; it reads the active
   * runs' nodes only (their partial index), every SWEEP_INTERVAL_MS in each hub.
   */
  async sweepUnheard(): Promise<void> {
    try {
      const since = new Date(this.clock.now().getTime() - SWEEP_INTERVAL_MS);
      const ids = await this.runs.runsWithUnheardEnds(since);
      if (ids.length > 0) this.logger.warn(`Advancing ${ids.length} pipeline run(s) with a node whose job ended unheard`);
      await Promise.all(ids.map((id) => this.advance(id)));
    } catch (error) {
      this.logger.error(`Looking for pipeline nodes whose job ended unheard failed: ${(error as Error).message}`);
    } finally {
      this.armSweep();
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.cancelSweep?.();
    for (const timers of this.timers.values()) for (const timer of timers.values()) clearTimeout(timer);
    this.timers.clear();
    await this.flagLogsStored();
  }

  /** A run with its spec, which a lock without it leaves out, from the plans kept (made on first sight). */
  private withPlan(run: RunRow): RunRow {
    if (run.spec !== null) {
      if (this.plans.size >= MAX_PLANS) this.forgetAll();
      const specs = specsOf(run);
      this.plans.set(run.id, { spec: run.spec, specs, graph: new RunGraph([...specs.values()], run.spec.keepGoing === true, run.entryPoint ?? undefined) });
      return run;
    }
    return { ...run, spec: (this.plans.get(run.id) as RunPlan).spec };
  }

  /** What this hub keeps of runs (plans, nodes, executions seen): all of it may be read again from the database. */
  private forgetAll(): void {
    this.plans.clear();
    this.kept.clear();
    this.seen.clear();
    this.holdingBack.clear();
  }

  /** What this hub keeps of a run that has ended (here or on another hub): its timers too, which have nothing left to do. */
  private forget(runId: string): void {
    for (const timer of this.timers.get(runId)?.values() ?? []) clearTimeout(timer);
    this.timers.delete(runId);
    this.plans.delete(runId);
    this.kept.delete(runId);
    this.seen.delete(runId);
    this.holdingBack.delete(runId);
  }

  /** The locked run's nodes: those kept when this hub wrote the revision before, else as readNodes gives them. */
  private async nodesOf(manager: EntityManager, run: LockedRun): Promise<NodeRow[]> {
    const kept = this.kept.get(run.id);
    this.kept.delete(run.id);
    if (kept?.revision === run.revision - 1) return kept.nodes;
    return this.readNodes(manager, run);
  }

  /** The locked run's nodes as its lock read them, else read (without their events). */
  private async readNodes(manager: EntityManager, run: LockedRun): Promise<NodeRow[]> {
    return run.nodes ?? this.runs.nodesOf(run.id, manager, false);
  }

  /** Keeps the nodes a committed write left at `revision` (their events are stored: a pass appends only new ones). */
  private keep(runId: string, revision: number, nodes: NodeRow[]): void {
    for (const node of nodes) node.events = [];
    this.kept.set(runId, { revision, nodes });
  }

  private planOf(run: RunRow): RunPlan {
    const plan = this.plans.get(run.id);
    if (plan) return plan;
    const specs = specsOf(run);
    return { spec: run.spec, specs, graph: new RunGraph([...specs.values()], run.spec.keepGoing === true, run.entryPoint ?? undefined) };
  }

  /** Advances every run not ended: at start, and when changes may have been missed. */
  async reconcile(): Promise<void> {
    try {
      const owners = await this.ownersWaiting.reload(() => this.runs.ownersOverQuota());
      for (const owner of owners) this.roomHeard.set(owner, Infinity);
      await Promise.all((await this.runs.activeRunIds()).map((id) => this.advance(id, { retryWaiting: true })));
    } catch (error) {
      this.logger.error(`Reconciling pipeline runs failed: ${(error as Error).message}`);
    }
  }

  /**
   * Advances a run now, or once more after the pass under way here (passes of one run never
   * overlap in a hub). `reason` narrows what the pass reads of the cluster: the attempts of the job
   * whose change was announced (others' are read when an announcement of theirs comes), or all
   * of them; and whether nodes waiting for the owner's quota are asked for again.
   */
  advance(runId: string, reason: { readonly change?: ExecutionChange; readonly retryWaiting?: boolean } = {}): Promise<void> {
    const current = this.advancing.get(runId);
    const wanted = (entry: PassRequest) => {
      entry.again = true;
      if (reason.change === undefined) entry.all = true;
      else entry.changes.push(reason.change);
      entry.retryWaiting ||= reason.retryWaiting === true;
    };
    if (current) {
      wanted(current);
      return current.done;
    }
    const entry: PassRequest = { again: false, changes: [], all: false, retryWaiting: false, done: Promise.resolve() };
    wanted(entry);
    entry.done = (async () => {
      try {
        while (entry.again && !this.stopped) {
          const changes = entry.changes.filter((change) => !this.acted(runId, change));
          const request = { jobs: entry.all ? ('all' as const) : new Set(changes.map((change) => change.jobId)), retryWaiting: entry.retryWaiting };
          const needed = entry.all || entry.retryWaiting || changes.length > 0;
          entry.again = false;
          entry.changes = [];
          entry.all = false;
          entry.retryWaiting = false;
          if (!needed) continue;
          await this.withSlot(() => this.pass(runId, request)).catch((error: unknown) => {
            // What this hub kept of the run may not be what the database has after a failed write.
            this.kept.delete(runId);
            this.logger.error(`Advancing pipeline run ${runId} failed: ${(error as Error).stack ?? String(error)}`);
          });
        }
      } finally {
        this.advancing.delete(runId);
      }
    })();
    this.advancing.set(runId, entry);
    return entry.done;
  }

  /** Whether a committed pass of this hub already acted on what `change` announces. */
  private acted(runId: string, change: ExecutionChange): boolean {
    const seen = this.seen.get(runId)?.get(change.executionId);
    return (change.kind === 'started' && seen !== undefined) || (change.kind === 'ended' && seen === 'ended');
  }

  private heard(change: ExecutionChange | 'reconnected'): void {
    if (change === 'reconnected') {
      void this.reconcile();
      return;
    }
    const runId = runOfKey(change.workloadKey);
    if (runId) {
      if (change.kind === 'placementFailed' && change.message) {
        const node = change.workloadKey?.slice(KEY_PREFIX.length + 37) ?? '';
        const notes = this.placementNotes.get(runId) ?? new Map<string, string>();
        notes.set(node, change.message);
        this.placementNotes.set(runId, notes);
      }
    }
    // A job of the owner ended: a node waiting for room in their quota may go now.
    const ownerId = change.ownerId;
    const ended = change.kind === 'ended' && ownerId !== '';
    if (ended) this.ownerEnds.set(ownerId, (this.ownerEnds.get(ownerId) ?? 0) + 1);
    // The node of a run holding nodes back: the pass that records its end asks for them too, with
    // the room it made, rather than a lookup of the owner's runs and a pass of its own for that.
    const ownRoom = ended && runId !== undefined && this.holdingBack.has(runId);
    const lookForRoom = ended && !ownRoom && this.ownersWaiting.mayWait(ownerId);
    if (ownRoom || lookForRoom) this.roomHeard.set(ownerId, (this.roomHeard.get(ownerId) ?? 0) + 1);
    if (runId) void this.advance(runId, { change, retryWaiting: ownRoom });
    if (lookForRoom) {
      void this.ownersWaiting
        .lookFor(ownerId, () => this.runs.runsOverQuota(ownerId))
        .then(({ found, dropped }) => {
          if (dropped) this.roomHeard.delete(ownerId);
          return Promise.all(found.map((id) => this.advance(id, { retryWaiting: true })));
        })
        .catch((error: unknown) => this.logger.error(`Finding runs waiting for quota failed: ${(error as Error).message}`));
    }
  }

  private async withSlot<T>(work: () => Promise<T>): Promise<T> {
    if (this.slots === 0) await new Promise<void>((resolve) => this.waitingForSlot.push(resolve));
    else this.slots -= 1;
    try {
      return await work();
    } finally {
      const next = this.waitingForSlot.shift();
      if (next) next();
      else this.slots += 1;
    }
  }

  /**
   * One pass over a run: first, outside any transaction, read what ended attempts left in their
   * working directories (input notes, artifacts); then decide under the run's lock; then ask the
   * cluster for what was decided.
   */
  private async pass(
    runId: string,
    request: { readonly jobs: ReadonlySet<string> | 'all'; readonly retryWaiting: boolean },
    collected: ReadonlyMap<string, Collected> = new Map(),
  ): Promise<void> {
    // One transaction on one connection: the jobs' attempts are read in it too (passes at once,
    // each holding a connection and waiting for another, could exhaust the pool). Nodes are read
    // without their events, which a pass only appends to, and only when this hub does not know
    // them as they are.
    const outcome = await this.dataSource.transaction(async (manager) => {
      // The jobs to read, from the nodes kept here: when the lock finds the run at the revision
      // after theirs, they are the run's nodes, and their jobs' attempts come with the lock.
      const kept = this.kept.get(runId);
      const guessed = kept && jobsToRead(kept.nodes, request.jobs);
      // With no nodes kept (the run's first pass here, or another hub wrote last), they come with the lock.
      let locked = await this.runs.lock(manager, runId, {
        spec: !this.plans.has(runId),
        attemptsOf: guessed?.length ? guessed : undefined,
        nodes: kept === undefined,
      });
      // Its plan was let go of meanwhile (too many kept): the spec after all.
      if (locked && locked.spec === null && !this.plans.has(runId)) locked = await this.runs.lock(manager, runId);
      if (!locked || FINISHED_RUN.has(locked.state)) {
        this.forget(runId);
        return undefined;
      }
      const run = this.withPlan(locked);
      const nodes = await this.nodesOf(manager, locked);
      const jobs = jobsToRead(nodes, request.jobs);
      // The attempts read with the lock are those of its statement's snapshot, taken before any
      // wait for the lock: they serve only when no other writer of the run came in between.
      const latest =
        locked.attempts && nodes === kept?.nodes && sameJobs(jobs, guessed)
          ? latestAttemptsOf(locked.attempts)
          : await this.cluster.latestAttempts(jobs, manager);
      const step = this.step(run, nodes, collected, latest);
      // Nodes whose logs were stored since are flagged by this write, not by a statement of their own (see flagLogsStored).
      const toFlag = this.logsToFlag.get(runId);
      const flagged = toFlag ? nodes.filter((node) => toFlag.has(node.name)) : [];
      for (const node of flagged) node.logsStored = true;
      await this.runs.saveNodes(manager, flagged.length === 0 ? step.changed : [...new Set([...step.changed, ...flagged])]);
      if (step.results.length > 0) await this.runs.insertResults(manager, runId, step.results);
      if (step.run) await this.runs.saveRun(manager, runId, step.run);
      return {
        run,
        revision: locked.revision,
        nodes,
        latest,
        seen: step.seen,
        work: step.work,
        unread: step.unread,
        ended: step.run?.finishedAt !== undefined,
        flagged,
      };
    });
    if (!outcome) return;
    this.flagged(runId, outcome.flagged);
    if (outcome.ended) this.forget(runId);
    else {
      this.keep(runId, outcome.revision, outcome.nodes);
      const seen = this.seen.get(runId) ?? new Map<string, Seen>();
      for (const [executionId, what] of outcome.seen) seen.set(executionId, what);
      this.seen.set(runId, seen);
    }
    this.armTimers(outcome.run, outcome.nodes);
    if (!outcome.ended && outcome.nodes.some((node) => node.overQuota)) this.holdingBack.add(runId);
    for (const node of outcome.nodes)
      if (FINISHED.has(node.state) && !node.logsStored && node.executionId) void this.storeLogs(runId, node, outcome.latest.get(node.jobId as string));
    const submitted = await this.askCluster(outcome.run, outcome.work, request.retryWaiting);
    if (!outcome.ended) await this.holdAhead(outcome.run, outcome.nodes, submitted);
    await Promise.all(outcome.work.stop.map((jobId) => this.cluster.stopWorkload(jobId, `Pipeline run ${runId} skipped the node this job was held for`)));
    // Nodes that ended leaving files to read (input notes, artifacts): read outside any
    // transaction, as copying takes time, then settled by another pass.
    if (outcome.unread.length > 0)
      await this.pass(
        runId,
        { jobs: new Set(outcome.unread.map((node) => node.jobId as string)), retryWaiting: false },
        await this.collectEnded(outcome.run, outcome.unread, outcome.latest),
      );
  }

  /** What ended attempts left: read before the transaction, as copying files takes time. */
  private async collectEnded(run: RunRow, watched: readonly NodeRow[], latest: ReadonlyMap<string, LatestAttempt>): Promise<Map<string, Collected>> {
    const collected = new Map<string, Collected>();
    const specs = this.planOf(run).specs;
    await Promise.all(
      watched.map(async (node) => {
        const attempt = latest.get(node.jobId as string);
        const spec = specs.get(node.name);
        if (!attempt || !spec || attempt.attempt !== node.attempt || !attempt.finishedAt) return;
        const hasInputs = Object.keys(spec.inputs?.resources ?? {}).length > 0;
        const artifacts = Object.entries(spec.outputs?.artifacts ?? {}).map(([name, artifact]) => ({ name, path: artifact.path }));
        const inputs = hasInputs ? await this.readInputNotes(run.id, node, attempt) : [];
        const copied = artifacts.length > 0 ? await this.files.copyOut(attempt, artifacts, nodeStore(run.id, node)) : [];
        collected.set(node.name, { attempt: attempt.attempt, inputs, artifacts: copied });
      }),
    );
    return collected;
  }

  private async readInputNotes(runId: string, node: NodeRow, execution: CopiedExecution): Promise<InputNote[]> {
    const [copied] = await this.files.copyOut(execution, [{ name: 'inputs', path: INPUTS_FILE }], nodeStore(runId, node, 'inputs'));
    if (!copied?.stored) return [];
    const { stream } = await this.files.openStored(copied.key);
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
    return parseInputNotes(Buffer.concat(chunks).toString('utf8'));
  }

  /**
   * The decisions of one pass, made in memory over the locked run's nodes: starts and ends of
   * attempts, retries that are due, nodes to run and to skip, and the run's end.
   */
  private step(
    run: RunRow,
    nodes: NodeRow[],
    collected: ReadonlyMap<string, Collected>,
    latest: ReadonlyMap<string, LatestAttempt>,
  ): {
    changed: NodeRow[];
    results: ResultRow[];
    run?: Parameters<PipelineRunsRepository['saveRun']>[2];
    work: ClusterWork;
    unread: NodeRow[];
    seen: [string, Seen][];
  } {
    const specs = this.planOf(run).specs;
    const changed = new Set<NodeRow>();
    const seen: [string, Seen][] = [];
    const results: ResultRow[] = [];
    const now = new Date();
    const unread: NodeRow[] = [];
    const notes = this.placementNotes.get(run.id);
    this.placementNotes.delete(run.id);
    /** Records what the node's latest attempt did since the last pass (a job held for it, before it was decided, is not its attempt yet). */
    const observe = (node: NodeRow, spec: RunNodeSpec, tag: Record<string, string>) => {
      const attempt = node.jobId ? latest.get(node.jobId) : undefined;
      if (FINISHED.has(node.state) || !attempt || attempt.attempt !== node.attempt) return;
      // A retry the quota had held back exists now.
      if (node.overQuota) {
        node.overQuota = false;
        changed.add(node);
      }
      if (node.state === 'Waiting' && attempt.startedAt) {
        node.state = 'Running';
        node.executionId = attempt.executionId;
        node.startedAt ??= attempt.startedAt;
        const timeout = attemptsOf(spec).timeoutSeconds;
        node.deadline = timeout === undefined ? null : new Date(Date.parse(attempt.startedAt) + timeout * 1000).toISOString();
        node.events.push(event('Started', tag, attempt.startedAt));
        changed.add(node);
        seen.push([attempt.executionId, 'started']);
      }
      if (!attempt.finishedAt) return;
      const found = collected.get(node.name);
      if (found?.attempt !== node.attempt && hasFiles(spec)) {
        unread.push(node);
        return;
      }
      this.settle(node, spec, attempt, found, tag, results);
      changed.add(node);
      seen.push([attempt.executionId, 'ended']);
    };
    for (const node of nodes) {
      const spec = specs.get(node.name) as RunNodeSpec;
      const tag: Record<string, string> = attemptsOf(spec).retries > 0 ? { attempt: String(Math.max(node.attempt, 1)) } : {};
      const note = notes?.get(node.name);
      if (note && node.state === 'Waiting' && node.attempt > 0) {
        node.events.push(event('Queued', { ...tag, message: note }));
        changed.add(node);
      }
      observe(node, spec, tag);
    }
    // Retries whose delay has passed.
    for (const node of nodes)
      if (node.state === 'Waiting' && node.retryAt && Date.parse(node.retryAt) <= now.getTime()) {
        node.retryAt = null;
        node.attempt += 1;
        node.events.push(event('Queued', { attempt: String(node.attempt) }));
        changed.add(node);
      }
    const graph = this.planOf(run).graph;
    const byName = new Map(nodes.map((node) => [node.name, node]));
    const stop: string[] = [];
    let decision: GraphDecision;
    let submitted = false;
    for (;;) {
      decision = graph.decide(byName);
      for (const { name, why } of decision.skip) {
        const node = byName.get(name) as NodeRow;
        node.state = 'Skipped';
        node.outcome = 'skipped';
        node.events.push(event('Skipped', { message: why }));
        changed.add(node);
        // A job held for it (the cluster ends it when its dependency fails; here, when the run will not run it for another reason).
        if (node.jobId) stop.push(node.jobId);
      }
      let held = false;
      for (const name of decision.submit) {
        const node = byName.get(name) as NodeRow;
        const spec = specs.get(name) as RunNodeSpec;
        node.attempt = 1;
        const tag: Record<string, string> = attemptsOf(spec).retries > 0 ? { attempt: '1' } : {};
        // A job held for it was released by its predecessor's end, and may have started since (its start is recorded later): queued then, so that its events stay in order.
        const releasedAt = node.jobId ? graph.predecessorsOf(name).map((predecessor) => byName.get(predecessor)?.finishedAt)[0] : undefined;
        node.events.push(event('Queued', tag, releasedAt && releasedAt < now.toISOString() ? releasedAt : undefined));
        changed.add(node);
        submitted = true;
        // Its job, held until now, is its first attempt: it may have started, or ended, already.
        if (node.jobId) {
          observe(node, spec, tag);
          held ||= FINISHED.has(node.state);
        }
      }
      // One that ended decides what comes after it in this pass too.
      if (!held) break;
    }
    let runChange: Parameters<PipelineRunsRepository['saveRun']>[2] | undefined;
    if (submitted && run.state === 'Queued') runChange = { state: 'Executing', startedAt: now.toISOString() };
    if (decision.ends) runChange = { state: decision.ends, finishedAt: now.toISOString(), ...(run.state === 'Queued' && { startedAt: now.toISOString() }) };
    const submit = nodes.filter((node) => node.state === 'Waiting' && node.attempt > 0 && !node.jobId && !node.retryAt);
    const retry = nodes.filter((node) => {
      const attempt = node.jobId ? latest.get(node.jobId) : undefined;
      return node.state === 'Waiting' && node.jobId && node.attempt > 1 && !node.retryAt && (attempt?.attempt ?? 0) < node.attempt;
    });
    return { changed: [...changed], results, run: runChange, work: { submit, retry, stop }, unread, seen };
  }

  /** Records how an attempt ended: a retry to come, or the node's end with its results. */
  private settle(
    node: NodeRow,
    spec: RunNodeSpec,
    attempt: LatestAttempt,
    found: Collected | undefined,
    tag: Record<string, string>,
    results: ResultRow[],
  ): void {
    const finishedAt = attempt.finishedAt as string;
    node.executionId = attempt.executionId;
    node.deadline = null;
    node.overQuota = false;
    if (!node.startedAt && attempt.startedAt) node.startedAt = attempt.startedAt;
    for (const input of found?.inputs ?? []) {
      const repo = redactedRepo(spec.inputs?.resources?.[input.name]?.repo ?? '');
      if (input.fetched) node.events.push(event('InputFetched', { ...tag, name: input.name, repo }, input.time));
      else
        node.events.push(
          event(
            'Error',
            { ...tag, name: input.name, repo, message: `Fetching git input '${input.name}' from ${repo} failed: ${redactedRepo(input.error)}` },
            input.time,
          ),
        );
    }
    const fetchFailed = (found?.inputs ?? []).some((input) => !input.fetched) && attempt.exitCode === FETCH_FAILED_EXIT;
    let failed: boolean;
    if (node.timedOut === node.attempt) {
      const seconds = attemptsOf(spec).timeoutSeconds ?? 0;
      node.events.push(event('Timeout', { ...tag, message: `The attempt ran past its timeoutSeconds (${seconds}) and was stopped` }, finishedAt));
      failed = true;
    } else if (fetchFailed) {
      failed = true;
    } else if (attempt.status === 'lost' || (attempt.endEvent && attempt.endEvent.type !== 'Terminated')) {
      const message = attempt.endEvent?.message ?? 'The execution was lost';
      if (attempt.exitCode !== null) node.events.push(event('Exited', { ...tag, exitCode: String(attempt.exitCode) }, finishedAt));
      node.events.push(event('Error', { ...tag, message }, finishedAt));
      failed = true;
    } else {
      node.events.push(event('Exited', { ...tag, exitCode: String(attempt.exitCode ?? -1) }, finishedAt));
      const code = attempt.exitCode;
      failed = spec.task?.conditionNode ? code !== 0 && code !== 1 : code !== 0;
    }
    node.exitCode = attempt.exitCode;
    const { retries, retryDelaySeconds } = attemptsOf(spec);
    if (failed && node.attempt <= retries) {
      node.state = 'Waiting';
      const delay = retryDelaySeconds * 2 ** (node.attempt - 1) * 1000;
      if (delay > 0) {
        node.retryAt = new Date(Date.now() + delay).toISOString();
        return;
      }
      node.attempt += 1;
      node.events.push(event('Queued', { attempt: String(node.attempt) }));
      return;
    }
    for (const artifact of found?.artifacts ?? []) {
      if (artifact.stored) {
        const contentType = spec.outputs?.artifacts?.[artifact.name]?.contentType || DEFAULT_CONTENT_TYPE;
        results.push({ node: node.name, name: artifact.name, contentType, size: artifact.size, key: artifact.key });
        node.events.push(event('ResultStored', { ...tag, name: artifact.name, size: String(artifact.size) }, finishedAt));
      } else {
        node.events.push(
          event(
            'Error',
            { ...tag, name: artifact.name, message: `Result '${artifact.name}' (${artifact.path}) was not stored: ${artifact.reason}` },
            finishedAt,
          ),
        );
        failed = true;
      }
    }
    const code = attempt.exitCode;
    const outcome: Outcome = failed ? 'error' : spec.task?.conditionNode ? (code === 0 ? 'true' : 'false') : 'success';
    node.outcome = outcome;
    node.state = failed ? 'Failed' : 'Succeeded';
    node.finishedAt = finishedAt;
  }

  /**
   * Asks the cluster for the attempts decided: new jobs by workload key, retries by attempt number,
   * a few at a time in the nodes' order. Nodes waiting for room in the owner's quota are asked for
   * only when room may have come (`retryWaiting`: one of the owner's jobs ended, or the hub
   * reconciles), one at a time; once the quota refuses one, the rest wait without being asked, so
   * that a fan-out past the quota costs one refusal per pass rather than one per node.
   */
  private async askCluster(run: RunRow, work: ClusterWork, retryWaiting: boolean): Promise<NodeJob[]> {
    const asks = [
      ...work.submit.filter((node) => !node.overQuota).map((node) => ({ node, retry: false })),
      ...work.retry.filter((node) => !node.overQuota).map((node) => ({ node, retry: true })),
    ];
    const waiting = retryWaiting ? [...work.submit, ...work.retry].filter((node) => node.overQuota).map((node) => ({ node, retry: node.jobId !== null })) : [];
    if (asks.length === 0 && waiting.length === 0) return [];
    const endsBefore = this.ownerEnds.get(run.ownerId) ?? 0;
    const profile = await this.profiles.find(run.executionProfileId);
    const failures: { node: NodeRow; message: string }[] = [];
    const overQuota: { node: NodeRow; message: string }[] = [];
    const submitted: NodeJob[] = [];
    let full: string | undefined;
    /** Asks for a node's next attempt (a retry); whether the cluster took it. */
    const ask = async ({ node }: { node: NodeRow }): Promise<boolean> => {
      if (full !== undefined) {
        overQuota.push({ node, message: full });
        return false;
      }
      try {
        await this.cluster.retry(node.jobId as string, node.attempt);
        return true;
      } catch (error) {
        if (error instanceof TooManyRequestsError) {
          full = error.message;
          overQuota.push({ node, message: error.message });
        } else failures.push({ node, message: (error as Error).message });
        return false;
      }
    };
    /** Asks for new jobs in one batch (one statement however many: the quota takes as many as fit, the first ones); how many the cluster took. */
    const askMany = async (nodes: readonly NodeRow[]): Promise<number> => {
      if (nodes.length === 0) return 0;
      if (full !== undefined) {
        for (const node of nodes) overQuota.push({ node, message: full });
        return 0;
      }
      if (!profile) {
        for (const node of nodes) failures.push({ node, message: `Execution profile ${run.executionProfileId} no longer exists` });
        return 0;
      }
      const ran = await this.cluster.runMany(nodes.map((node) => this.workloadOf(run, node, profile)));
      let taken = 0;
      ran.forEach((result, index) => {
        const node = nodes[index];
        if ('jobId' in result) {
          submitted.push({ node, jobId: result.jobId, existing: result.existing });
          taken += 1;
        } else if (result.refused instanceof TooManyRequestsError) {
          full = result.refused.message;
          overQuota.push({ node, message: full });
        } else failures.push({ node, message: result.refused.message });
      });
      return taken;
    };
    await askMany(asks.filter(({ retry }) => !retry).map(({ node }) => node));
    const retries = asks.filter(({ retry }) => retry);
    for (let next = 0; next < retries.length; next += ASKS_AT_ONCE) await Promise.all(retries.slice(next, next + ASKS_AT_ONCE).map(ask));
    // Those the quota held back, one at a time, as many as the room heard of (each of the owner's
    // jobs that ended makes room for one; every ask past it is a refused insert contending for the
    // owner's count), one at the least: what is submitted ends too, so nothing waits for good.
    let unasked = 0;
    if (waiting.length > 0) {
      const room = Math.max(1, this.roomHeard.get(run.ownerId) ?? 0);
      const asked = waiting.slice(0, Math.min(waiting.length, room));
      unasked = waiting.length - asked.length;
      let taken = await askMany(asked.filter(({ retry }) => !retry).map(({ node }) => node));
      for (const one of asked.filter(({ retry }) => retry)) if (await ask(one)) taken += 1;
      this.roomHeard.set(run.ownerId, full === undefined ? room - taken : 0);
    }
    if (submitted.length > 0) await this.recordJobs(run.id, submitted);
    // Nodes already held back need no write: a refusal of theirs says nothing new.
    const heldBack = overQuota.filter(({ node }) => !node.overQuota);
    if (failures.length > 0 || heldBack.length > 0) await this.recordRefusals(run.id, failures, heldBack);
    // Whether the run holds nodes back now: those refused, those not asked for (past the room), or those a pass not looking for room left waiting.
    if (overQuota.length > 0 || unasked > 0 || (!retryWaiting && [...work.submit, ...work.retry].some((node) => node.overQuota))) this.holdingBack.add(run.id);
    else this.holdingBack.delete(run.id);
    if (overQuota.length > 0) {
      this.ownersWaiting.noticed(run.ownerId);
      // One of the owner's jobs ended after the quota refused, before the refusal was recorded: its
      // lookup may have found nothing held back yet, so the room it made is asked for now.
      if ((this.ownerEnds.get(run.ownerId) ?? 0) !== endsBefore) void this.advance(run.id, { retryWaiting: true });
    }
    return submitted;
  }

  /**
   * Submits ahead the jobs of nodes that run exactly when a node whose job exists succeeds (see
   * RunGraph.heldAfter), each held on that job (the cluster's dependent jobs, docs/cluster.md):
   * the cluster prepares its launch while its predecessor runs and starts it the moment that one
   * ends well, rather than once this engine heard of that end and decided (a handover's
   * 5–6 ms) and the cluster placed and launched a new job (13–14 ms); when it ends otherwise, the
   * cluster ends the held job, never run, and `decide` skips its node as it would have. Only
   * after nodes whose success is their exit code 0 alone (no retries, timeout, artifacts or
   * condition), up to HELD_AHEAD nodes past the last one decided, and only where the cluster
   * prepares such jobs (not on a queueing cluster). A held node is still undecided here (Waiting,
   * attempt 0, its job recorded); the pass that decides to run it takes that job as its first
   * attempt. Nothing is asked once the run has a failure nothing handles, and a refusal (the quota)
   * is not recorded: the node is submitted when decided, as any other.
   */
  private async holdAhead(run: RunRow, nodes: readonly NodeRow[], submitted: readonly NodeJob[]): Promise<void> {
    if (!this.cluster.preparesDependents) return;
    const { graph, specs } = this.planOf(run);
    if (!graph.holdsAny(ASKS_AT_ONCE) || nodes.some((node) => graph.failsRun(node))) return;
    const byName = new Map(nodes.map((node) => [node.name, node]));
    const jobOf = new Map(nodes.flatMap((node) => (node.jobId && !FINISHED.has(node.state) ? [[node.name, node.jobId] as const] : [])));
    for (const { node, jobId } of submitted) jobOf.set(node.name, jobId);
    const leads = (name: string) => {
      const spec = specs.get(name) as RunNodeSpec;
      const { retries, timeoutSeconds } = attemptsOf(spec);
      return retries === 0 && timeoutSeconds === undefined && !spec.task?.conditionNode && Object.keys(spec.outputs?.artifacts ?? {}).length === 0;
    };
    let profile: ExecutionProfileDto | null | undefined;
    let refused = false;
    const held: NodeJob[] = [];
    // Level by level from the nodes decided whose jobs exist: those held already are passed through.
    let frontier = [...jobOf.keys()].filter((name) => (byName.get(name) as NodeRow).attempt > 0);
    for (let depth = 1; depth <= HELD_AHEAD && frontier.length > 0 && !refused; depth += 1) {
      const next: string[] = [];
      const asks: { node: NodeRow; after: string }[] = [];
      for (const name of frontier.filter(leads))
        for (const target of graph.heldAfter(name, ASKS_AT_ONCE)) {
          const node = byName.get(target);
          if (!node || node.state !== 'Waiting' || node.attempt > 0 || node.overQuota) continue;
          if (node.jobId) next.push(target);
          else asks.push({ node, after: jobOf.get(name) as string });
        }
      if (asks.length > 0) profile ??= await this.profiles.find(run.executionProfileId);
      const made = await Promise.all(
        asks.map(async ({ node, after }) => {
          try {
            return { node, ...(await this.submitNode(run, node, profile ?? null, after)) };
          } catch (error) {
            // The quota, or the predecessor ended meanwhile: the node is submitted when decided.
            if (error instanceof TooManyRequestsError) refused = true;
            return undefined;
          }
        }),
      );
      for (const one of made)
        if (one) {
          held.push(one);
          jobOf.set(one.node.name, one.jobId);
          next.push(one.node.name);
        }
      frontier = next;
    }
    if (held.length > 0) await this.recordJobs(run.id, held);
  }

  /**
   * Records the jobs the cluster made for nodes, in one statement; those of a run cancelled while
   * they were being made (cancel may have looked for them before they existed) are stopped at once.
   * A job that existed already (asked for before, by a pass whose hub did not live to record it,
   * or held ahead and not recorded) may have started or ended while no node was linked to it, and
   * its announcements found nothing to advance: another pass reads it as it is.
   */
  private async recordJobs(runId: string, submitted: readonly NodeJob[]): Promise<void> {
    const recorded = await this.runs.setJobs(
      runId,
      submitted.map(({ node, jobId }) => ({ name: node.name, jobId })),
    );
    const kept = this.kept.get(runId);
    if (recorded && kept?.revision === recorded.revision - 1) {
      kept.revision = recorded.revision;
      for (const { node, jobId } of submitted) {
        node.jobId ??= jobId;
        node.overQuota = false;
      }
    } else this.kept.delete(runId);
    if (recorded?.ended !== false) await Promise.all(submitted.map(({ jobId }) => this.cluster.stopWorkload(jobId, `Pipeline run ${runId} has ended`)));
    else if (submitted.some(({ existing }) => existing)) void this.advance(runId);
  }

  /** A node's first attempt: its job, under the workload key that makes asking twice harmless; held on job `after` when given (see holdAhead). */
  private async submitNode(run: RunRow, node: NodeRow, profile: ExecutionProfileDto | null, after?: string): Promise<{ jobId: string; existing: boolean }> {
    if (!profile) throw new Error(`Execution profile ${run.executionProfileId} no longer exists`);
    const { job, existing } = await this.cluster.runKeyed(this.workloadOf(run, node, profile, after));
    return { jobId: job.id, existing };
  }

  /** What a node's job runs, and as whom. */
  private workloadOf(run: RunRow, node: NodeRow, profile: ExecutionProfileDto, after?: string): Workload {
    const spec = this.planOf(run).specs.get(node.name) as RunNodeSpec;
    const { command, args } = nodeCommand(spec);
    return {
      name: `${run.id.slice(0, 8)}-${node.name}`.slice(0, 128),
      type: 'batch',
      namespace: { id: run.namespaceId, name: run.namespaceName },
      profile,
      owner: { id: run.ownerId, name: run.ownerName },
      key: workloadKeyOf(run.id, node.name),
      task: {
        name: node.name,
        command,
        args,
        envVars: [...run.environment, ...(spec.task?.envVars ?? []), { name: 'HUB_RUN_ID', value: run.id }, { name: 'HUB_NODE_NAME', value: node.name }],
      },
      properties: { pipelineRunId: run.id, pipelineNode: node.name, ...(run.pipelineId && { pipelineId: run.pipelineId }) },
      ...(after !== undefined && { dependsOn: after }),
    };
  }

  /**
   * Records what the cluster refused: a node over its owner's quota stays Waiting (a Queued event
   * says why, once) until one of the owner's jobs ends; any other refusal fails the node.
   */
  private async recordRefusals(runId: string, failures: { node: NodeRow; message: string }[], overQuota: { node: NodeRow; message: string }[]): Promise<void> {
    await this.locked(runId, true, async (manager, run, all) => {
      const nodes = new Map(all.map((node) => [node.name, node]));
      const changed: NodeRow[] = [];
      for (const { node: decided, message } of overQuota) {
        const node = nodes.get(decided.name);
        if (!node || node.state !== 'Waiting' || node.overQuota) continue;
        node.overQuota = true;
        node.events.push(event('Queued', { message: `Waiting for room in the owner's quota: ${message}` }));
        changed.push(node);
      }
      // Every hub looks for this owner's runs when one of their jobs ends (see ownersWaiting).
      if (changed.length > 0) await announceChange(manager, { table: OVER_QUOTA_NOTICE, id: run.ownerId });
      for (const { node: decided, message } of failures) {
        const node = nodes.get(decided.name);
        if (!node || node.state !== 'Waiting') continue;
        node.state = 'Failed';
        node.outcome = 'error';
        node.finishedAt = new Date().toISOString();
        node.events.push(event('Error', { message }));
        changed.push(node);
      }
      await this.runs.saveNodes(manager, changed);
    });
    if (failures.length > 0) void this.advance(runId);
  }

  /**
   * Runs `work` on a run not ended, under its lock, with its nodes, and returns what it returns;
   * undefined when the run is gone or has ended. Within a pass (`withKept`) the nodes this hub kept
   * serve and are kept again as the work left them; elsewhere (a timer, a cancel: concurrent with
   * the run's passes here, which go on using the nodes they kept) they are read afresh, and this
   * hub's raised revision makes the next pass read them too.
   */
  private async locked<T>(
    runId: string,
    withKept: boolean,
    work: (manager: EntityManager, run: LockedRun, nodes: NodeRow[]) => Promise<T>,
  ): Promise<T | undefined> {
    let written: KeptNodes | undefined;
    try {
      const result = await this.dataSource.transaction(async (manager) => {
        const run = await this.runs.lock(manager, runId, { spec: false, nodes: !withKept || !this.kept.has(runId) });
        if (!run || FINISHED_RUN.has(run.state)) return undefined;
        const nodes = withKept ? await this.nodesOf(manager, run) : await this.readNodes(manager, run);
        const done = await work(manager, run, nodes);
        if (withKept) written = { revision: run.revision, nodes };
        return done;
      });
      if (written) this.keep(runId, written.revision, written.nodes);
      return result;
    } catch (error) {
      this.kept.delete(runId);
      throw error;
    }
  }

  /** Timers for retries due later and attempts that may time out; a hub that restarts arms them again from the rows. */
  private armTimers(run: RunRow, nodes: readonly NodeRow[]): void {
    let timers = this.timers.get(run.id);
    for (const node of nodes) {
      const due = node.state === 'Waiting' ? node.retryAt : node.state === 'Running' && node.timedOut !== node.attempt ? node.deadline : null;
      // Most nodes have no timer and nothing due: a pass over a wide run looks up nothing for them.
      if (!due && !timers?.has(node.name)) continue;
      clearTimeout(timers?.get(node.name));
      timers?.delete(node.name);
      if (!due) continue;
      const timer = setTimeout(
        () => {
          this.timers.get(run.id)?.delete(node.name);
          if (node.state === 'Waiting') void this.advance(run.id);
          else void this.timeOut(run.id, node.name, node.attempt);
        },
        Math.max(0, Date.parse(due) - Date.now()),
      );
      timer.unref();
      if (!timers) this.timers.set(run.id, (timers = new Map<string, NodeJS.Timeout>()));
      timers.set(node.name, timer);
    }
    if (timers?.size === 0) this.timers.delete(run.id);
  }

  /** Stops an attempt that ran past its timeout; its end, announced, fails it with a Timeout event. */
  private async timeOut(runId: string, name: string, attempt: number): Promise<void> {
    const jobId = await this.locked(runId, false, async (manager, _run, nodes) => {
      const node = nodes.find((candidate) => candidate.name === name);
      if (!node || node.state !== 'Running' || node.attempt !== attempt || !node.jobId) return undefined;
      node.timedOut = attempt;
      await this.runs.saveNodes(manager, [node]);
      return node.jobId;
    });
    if (jobId) await this.cluster.stopWorkload(jobId, `Timed out: node '${name}' ran past its timeoutSeconds`);
  }

  /** Copies a finished node's logs into the hub's store, so that they outlive the job (once at a time per node). */
  private async storeLogs(runId: string, node: NodeRow, attempt?: LatestAttempt): Promise<void> {
    const key = `${runId}/${node.name}`;
    if (this.storingLogs.has(key)) return;
    this.storingLogs.add(key);
    try {
      await this.files.copyLogs(attempt?.executionId === node.executionId ? attempt : (node.executionId as string), nodeStore(runId, node));
      // The node this hub keeps, when it is that one (a write of its nodes never clears the flag).
      node.logsStored = true;
      const names = this.logsToFlag.get(runId) ?? new Set<string>();
      this.logsToFlag.set(runId, names.add(node.name));
      if (!this.flagging) {
        this.flagging = setTimeout(() => void this.flagLogsStored(), this.logFlagsAfterMs);
        this.flagging.unref();
      }
    } catch (error) {
      this.logger.warn(`Storing the logs of node '${node.name}' of run ${runId} failed: ${(error as Error).message}`);
    } finally {
      this.storingLogs.delete(key);
    }
  }

  /** Nodes a committed pass flagged as having their logs stored: no statement of their own is needed. */
  private flagged(runId: string, nodes: readonly NodeRow[]): void {
    const names = this.logsToFlag.get(runId);
    if (!names) return;
    for (const node of nodes) names.delete(node.name);
    if (names.size === 0) this.logsToFlag.delete(runId);
  }

  /**
   * Flags the nodes whose logs were stored meanwhile and that no pass of their run flagged with its
   * own write since, one statement a run (a fan-out's ends come together).
   */
  private async flagLogsStored(): Promise<void> {
    clearTimeout(this.flagging);
    this.flagging = undefined;
    const flags = [...this.logsToFlag];
    this.logsToFlag.clear();
    await Promise.all(
      flags.map(([runId, names]) =>
        this.runs
          .setLogsStored(runId, [...names])
          .catch((error: unknown) => this.logger.warn(`Flagging the stored logs of run ${runId} failed: ${(error as Error).message}`)),
      ),
    );
  }

  /**
   * Cancels a run: its nodes not ended end Cancelled, the run Cancelled; then every job still
   * running is stopped, in parallel, and this answers once each is recorded dead. False when the
   * run had already ended.
   */
  async cancel(runId: string, by: string): Promise<boolean> {
    const stopping = await this.locked(runId, false, async (manager, _run, nodes) => {
      const now = new Date().toISOString();
      const changed = nodes.filter((node) => !FINISHED.has(node.state));
      for (const node of changed) {
        node.state = 'Cancelled' satisfies NodeState;
        node.outcome = 'cancelled';
        node.deadline = null;
        node.retryAt = null;
        node.overQuota = false;
        if (node.startedAt) node.finishedAt = now;
        node.events.push(event('Cancelled', { message: `Cancelled by ${by}` }, now));
      }
      await this.runs.saveNodes(manager, changed);
      await this.runs.saveRun(manager, runId, { state: 'Cancelled', cancelled: true, finishedAt: now });
      // Held jobs too (nodes not decided yet whose jobs were submitted ahead).
      return changed.filter((node) => node.attempt > 0 || node.jobId);
    });
    if (!stopping) return false;
    this.forget(runId);
    await Promise.all(
      stopping.map(async (node) => {
        const jobId = node.jobId ?? (await this.cluster.jobByKey(workloadKeyOf(runId, node.name)))?.id;
        if (jobId) await this.cluster.stopWorkload(jobId, `Pipeline run ${runId} was cancelled by ${by}`);
      }),
    );
    // The stopped nodes' logs, kept as a finished node's are (their latest attempts, read at once).
    const latest = await this.cluster.latestAttempts(stopping.flatMap((node) => (node.jobId ? [node.jobId] : [])));
    for (const node of stopping) {
      const attempt = node.jobId ? latest.get(node.jobId) : undefined;
      if (attempt) void this.storeLogs(runId, { ...node, executionId: attempt.executionId }, attempt);
    }
    return true;
  }
}

const FINISHED_RUN: ReadonlySet<string> = new Set(['Succeeded', 'Failed', 'Cancelled']);

function hasFiles(node: RunNodeSpec): boolean {
  return Object.keys(node.inputs?.resources ?? {}).length > 0 || Object.keys(node.outputs?.artifacts ?? {}).length > 0;
}

/**
 * The jobs whose latest attempts a pass reads: those of nodes not ended whose changes were
 * announced (`all` of them when asked), and held jobs (nodes not decided yet: the pass that decides
 * one may find it started, or ended, meanwhile).
 */
function jobsToRead(nodes: readonly NodeRow[], announced: ReadonlySet<string> | 'all'): string[] {
  return nodes
    .filter((node) => node.jobId && !FINISHED.has(node.state) && (announced === 'all' || announced.has(node.jobId) || node.attempt === 0))
    .map((node) => node.jobId as string);
}

function sameJobs(jobs: readonly string[], guessed: readonly string[] | undefined): boolean {
  return guessed !== undefined && jobs.length === guessed.length && jobs.every((job, index) => job === guessed[index]);
}

function specsOf(run: Pick<RunRow, 'spec'>): Map<string, RunNodeSpec> {
  return new Map(((run.spec.nodes ?? []) as RunNodeSpec[]).map((node) => [node.name, node]));
}

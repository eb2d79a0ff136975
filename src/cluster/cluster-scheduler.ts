import { join } from 'node:path';
import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import type { Logger } from 'pino';
import { DataSource } from 'typeorm';
import { HubConfig } from '../common/config/hub-config.js';
import { ChangeFeed } from '../common/database/change-feed.js';
import { ClusterMetrics } from '../common/metrics/cluster-metrics.js';
import { StartupError } from '../common/errors/startup-error.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import { describeConstraint, unmetConstraint, type NodeFacts } from '../execution-profiles/node-constraints.js';
import {
  ClusterRepository,
  taskEvent,
  type ClaimedExecution,
  type HeldFound,
  type NodeRoom,
  type PendingExecution,
  type Placement,
  type StartedExecution,
} from './cluster.repository.js';
import { removeExecutionDir } from './drivers/execution-dir.js';
import { DependentJobs, type Dependency } from './dependent-jobs.js';
import { ExecutionAnnouncements, type AnnouncedExecution, type News } from './execution-announcements.js';
import { launchOf } from './execution-launch.js';
import { ExecutionStops, type StoppableIn, type StoppingScheduler } from './execution-stops.js';
import { HubFairShare, shareOut, type FairShare } from './fair-share.js';
import { HubPresence } from './hub-presence.js';
import { CLUSTER_DRIVER, type ClusterDriver, type Ended, type Outcome } from './drivers/cluster-driver.js';
import type { ClusterJob } from './entities/cluster-job.entity.js';
import type { TaskEvent, TaskState } from './entities/job-execution.entity.js';
import { endEventOf, endTask, markRunning } from './task-state.js';

/** The safety net's period, and a queueing cluster's poll: nothing that can start now waits for it. */
const TICK_MS = 1000;
const NODE_SYNC_EVERY = 10;
const ADOPT_EVERY = 5;
/**
 * How long the start of a task the driver tells the end of waits to be written: one that ends
 * meanwhile (most short tasks) has its start and end written in one statement. On a busy host a
 * short task's end comes tens of milliseconds after its start (at 5 ms a third of a burst's starts
 * were written on their own); its `startedAt` is exact either way, only its row says `running` later.
 */
const START_RECORD_AFTER_MS = 50;
/** At most how long a submission that can only be prepared waits for the round it shares with others. */
const PREPARE_AFTER_MS = 20;
/** How many executions in line one placement round looks at. */
const PLACE_BATCH = 32;
/** Announced (at commit) by a submission: hubs wake to place it. */
const QUEUE_NOTICE = 'cluster_queue';
const PRUNE_INTERVAL_MS = 3600 * 1000;
const PRUNE_BATCH = 500;

/** A node as constraints see it: `node.attr.os` and `node.os` agree, as the node detail shows `os` among its attributes. */
function factsOf(node: NodeRoom): NodeFacts {
  return { name: node.name, os: node.os, labels: node.labels, attributes: { ...node.attributes, os: node.os } };
}

/** Line order: higher priority first, then the older, then by id (as the placement round reads the line). */
function ahead(a: { priority: number; created: Date; id: string }, b: { priority: number; created: Date; id: string }): number {
  return b.priority - a.priority || new Date(a.created).getTime() - new Date(b.created).getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * An execution this hub is starting or started: its node and CPUs, which its end may hand to a
 * prepared launch; the record of its start (before it is written, the database does not list it
 * as this hub's), and what was recorded, from which its end is written when the driver tells how
 * it ended (`ending`: the follow leaves it alone); else `handedOver`: its CPUs went to a prepared
 * launch, and the follow records its end once they have.
 */
interface Followed {
  /** What its announcements name. */
  readonly execution: AnnouncedExecution;
  readonly nodeId: string;
  readonly cpu: number;
  /** Settles once the start's record is written (true) or will never be (false). */
  readonly startRecorded: Promise<boolean>;
  readonly settleStart: (recorded: boolean) => void;
  /** Settles once its start is deferred (see deferredStart) or settled: what an end heard before waits for. */
  readonly startKnown: Promise<void>;
  readonly knowStart: () => void;
  recorded?: { readonly driverRef: string; readonly taskState: TaskState };
  /** Its end was heard before its start was recorded: the follow looks again once it is. */
  endHeard?: boolean;
  /** Its start, while it waits to be written (see START_RECORD_AFTER_MS); `take` has its end write it. */
  deferredStart?: DeferredStart;
  ending?: boolean;
  handedOver?: Promise<boolean>;
}

/** The start of a task, not yet written. */
interface DeferredStart {
  readonly execution: ClaimedExecution;
  readonly nodeName: string;
  readonly driverRef: string;
  readonly startedAt: Date;
  readonly taskState: TaskState;
  readonly take: () => void;
}

/** A launch this hub prepared for one of the next in line: it waits at its gate for a slot on its node. */
interface PreparedLaunch {
  readonly execution: ClaimedExecution;
  readonly nodeName: string;
  /** The driver's reference once the launch waits at its gate; undefined when it could not be prepared (it is then recorded failed). */
  readonly ready: Promise<string | undefined>;
  /**
   * While it is held (dependent-jobs.ts): the job it waits on, whose end on this node hands it the
   * CPUs if it ends well; no free CPU is given to it meanwhile.
   */
  after?: string;
}

/**
 * A placement round's decision, and what it takes out of this hub's prepared launches: those given
 * a slot (`released`), and those put back in line behind one ahead of them (`displaced`).
 */
interface Decision extends Placement {
  readonly excluded: Map<string, string[]>;
  readonly released: PreparedLaunch[];
  readonly displaced: PreparedLaunch[];
  /** Held executions it claims to prepare, by id, with the job each waits on. */
  readonly held: Map<string, string>;
  /** Every node of this hub full once it is done: the worst priority among its prepared launches (Infinity when it prepares none). */
  readonly fullBelow?: number;
  /** With fair share, the one owner holding and waiting on this hub's nodes, for whom alone `fullBelow` holds (undefined: none holds). */
  readonly fullFor?: string;
  /**
   * A round after it may claim more: there was more in line than it looked at, and either CPUs or
   * room for prepared launches are left, or it moved some to the back of the line (placement failed).
   */
  readonly moreInLine: boolean;
}

/** Whether an event says what the last one said (a placement that keeps failing is one event, not one per tick). */
function repeats(last: TaskEvent | null | undefined, event: TaskEvent): boolean {
  return last?.type === event.type && last.message === event.message;
}

/**
 * Places pending executions on nodes and follows them to their end, in every hub. Nothing that can
 * start now waits for a timer: a submission places in its own request's turn (and wakes the other
 * hubs through the database), a process's end settles it and refills its CPU at once. A placement
 * round is one transaction that claims executions with row locks other hubs skip, under a lock per
 * node so that hubs sharing a node never fill more than its CPUs; the claiming hub alone starts,
 * follows and settles an execution. Where the driver prepares launches, the next in line are
 * claimed `prepared` while the node is full and launched up to their gate; the end of an
 * execution this hub started hands its CPUs to the first of them at once (one statement, with its
 * end where the driver told it, then a write to its gate). A hub that dies leaves its executions to a
 * live hub sharing their node (see {@link HubPresence}), or to its own return. A tick each second
 * is the safety net, a queueing cluster's poll, and where nodes are synced and dead hubs' work
 * adopted.
 */
@Injectable()
export class ClusterScheduler implements OnApplicationBootstrap, OnApplicationShutdown {
  /** The nodes this hub's driver reaches, by name, with their ids. */
  private ownNodes = new Map<string, string>();
  private ownNodeIds = new Set<string>();
  private presence?: HubPresence;
  private ticks = 0;
  private running: Promise<void> | undefined;
  private placeDue = false;
  /** Set by the tick: its round notes why executions wait for a CPU (see decide). */
  private noteWaiting = false;
  private followDue = false;
  /** Starts under way, awaited at shutdown. */
  private readonly starting = new Set<Promise<void>>();
  /** This hub's prepared launches on each node, in line order. */
  private readonly prepared = new Map<string, PreparedLaunch[]>();
  /** Each execution this hub is starting or started, until its end is recorded. */
  private readonly followed = new Map<string, Followed>();
  /**
   * Set by the last round when it left every node full: a new submission of no better priority
   * than this (the worst of those prepared) can neither start nor go before those prepared, so it
   * runs no round of its own (see `submitted`). Whatever frees CPUs runs a round, which says again.
   */
  private fullBelow?: number;
  private fullFor?: string;
  private readonly fairShare: HubFairShare;
  private readonly stops: ExecutionStops;
  private readonly dependents: DependentJobs;
  /** The round submissions that can only be prepared share (see `submitted`). */
  private placeSoon?: NodeJS.Timeout;
  private stopped = false;
  /** Why no execution may start now (the disk below its reserve, see DiskReserve); undefined: they may. */
  private startsHeld?: string;
  private readonly logger: Logger;

  constructor(
    private readonly cluster: ClusterRepository,
    @Inject(CLUSTER_DRIVER) private readonly driver: ClusterDriver,
    private readonly config: HubConfig,
    private readonly metrics: ClusterMetrics,
    private readonly dataSource: DataSource,
    changes: ChangeFeed,
    logger: HubLogger,
    private readonly announcements: ExecutionAnnouncements,
  ) {
    this.logger = logger.for('cluster');
    // Fair share and the cap are the hub's on its own nodes; a queueing cluster applies its own.
    this.fairShare = new HubFairShare(config.maxRunningJobsPerUser, !driver.queues);
    driver.onChange(() => this.wake(true));
    driver.onExit?.((executionId, ended) => this.heardExit(executionId, ended));
    changes.subscribe(QUEUE_NOTICE, (change) => {
      if (change === 'reset') this.wake(true);
      if (change === 'reset' || change.id !== String(this.presence?.hub)) this.wake();
    });
    const scheduler: StoppingScheduler = {
      hub: () => this.presence?.hub,
      reaches: (nodeId) => this.ownNodeIds.has(nodeId),
      forget: (executionId) => this.followed.delete(executionId),
      dropPrepared: (executionId) => this.dropPrepared(executionId),
      wake: () => this.wake(),
    };
    this.stops = new ExecutionStops(scheduler, cluster, driver, metrics, dataSource, changes, announcements, this.logger);
    this.dependents = new DependentJobs(
      dataSource,
      announcements,
      (execution, event, which) => this.stops.stopExecution(execution, event, which),
      // A launch held on it, prepared here, may take a free CPU now (its node's next round).
      (jobId) => {
        if ([...this.prepared.values()].some((launches) => launches.some((launch) => launch.after === jobId))) this.wake();
      },
      this.logger,
    );
    metrics.readFrom(() => cluster.snapshot());
  }

  /** This hub's number while it runs. */
  private get hub(): number {
    if (!this.presence) throw new Error('The cluster scheduler has not started');
    return this.presence.hub;
  }

  /** An execution's directory: its working directory (`work/`), its logs and its exit code. */
  executionDir(executionId: string): string {
    return join(this.config.sharedDir, 'executions', executionId);
  }

  /** Holds every start (placement, and the hand-off of a freed slot to a prepared launch) while `why` is given; lets them go, and places, without. */
  holdStarts(why?: string): void {
    const released = this.startsHeld !== undefined && why === undefined;
    this.startsHeld = why;
    if (released) this.wake();
  }

  /** What a submission announces at its commit, so that the other hubs place it at once. */
  queueNotice(): string {
    return JSON.stringify({ table: QUEUE_NOTICE, id: String(this.presence?.hub ?? '') });
  }

  async onApplicationBootstrap(): Promise<void> {
    try {
      await this.syncNodes();
    } catch (error) {
      throw new StartupError(`The ${this.driver.name} cluster driver cannot reach its cluster: ${(error as Error).message}`);
    }
    this.presence = new HubPresence((this.dataSource.options as { url: string }).url, await this.cluster.nextHubNumber(), this.logger);
    await this.presence.hold();
    this.dependents.listen();
    await this.adopt();
    await this.follow();
    this.wake();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.dependents.close();
    clearTimeout(this.placeSoon);
    await this.running;
    await Promise.all(this.starting);
    // What this hub prepared goes back in line for the hubs that stay (or for its return).
    const prepared = [...this.prepared.values()].flat();
    this.prepared.clear();
    await Promise.all(prepared.map((launch) => this.letGo(launch)));
    await this.driver.close?.();
    await this.presence?.release();
  }

  /**
   * Places a new submission now, unless it could go nowhere but among those prepared (see
   * `fullBelow`): then it waits for a round that others share, PREPARE_AFTER_MS later at the most
   * (none while as many are prepared as may be), rather than run one of its own: while
   * submissions pour in, that is one round for many of them, where each round costs more than a
   * submission. Nothing that could start now waits for it.
   */
  submitted(priority: number, ownerId: string): void {
    if (this.fullBelow === undefined || priority > this.fullBelow || (!this.driver.queues && this.fullFor !== ownerId)) return this.wake();
    if (this.preparedFewerThan(1)) this.placeSoon ??= setTimeout(() => this.placeShared(), PREPARE_AFTER_MS);
  }

  private placeShared(): void {
    this.placeSoon = undefined;
    this.wake();
  }

  /** Whether this hub keeps fewer prepared launches on one of its nodes than `share` of what it may keep there. */
  private preparedFewerThan(share: number): boolean {
    const wanted = Math.ceil((this.driver.preparesPerNode ?? 0) * share);
    return wanted > 0 && [...this.ownNodeIds].some((nodeId) => (this.prepared.get(nodeId)?.length ?? 0) < wanted);
  }

  /**
   * Places what waits now, or with `follow` settles what ended (and places if that freed a CPU);
   * once more after the pass under way when one is.
   */
  wake(follow = false): void {
    if (this.stopped || !this.presence) return;
    if (follow) this.followDue = true;
    else this.placeDue = true;
    this.running ??= this.pass().finally(() => {
      this.running = undefined;
      if (this.placeDue || this.followDue) this.wake(this.followDue);
    });
  }

  @Interval('cluster-tick', TICK_MS)
  async tickOnSchedule(): Promise<void> {
    if (this.stopped || !this.presence) return;
    try {
      this.ticks += 1;
      if (this.ticks % NODE_SYNC_EVERY === 0) await this.syncNodes();
      if (this.ticks % ADOPT_EVERY === 0) {
        await this.adopt();
        await this.dependents.sweep();
      }
    } catch (error) {
      this.logger.error({ err: error }, 'Cluster upkeep failed; retrying at the next tick');
    }
    this.noteWaiting = true;
    this.wake(true);
    this.wake();
  }

  /** Whether held jobs are prepared while their dependency runs (see ClusterService.preparesDependents). */
  get preparesDependents(): boolean {
    return !this.driver.queues && (this.driver.preparesPerNode ?? 0) > 0;
  }

  /** How a job depending on `jobId` for `ownerId` is submitted (see DependentJobs.dependencyOf). */
  dependencyOf(jobId: string, ownerId: string): Promise<Dependency> {
    return this.dependents.dependencyOf(jobId, ownerId);
  }

  /** See ExecutionStops.stopJob. */
  stopJob(job: Pick<ClusterJob, 'id'>, reason: string, revoked = false): Promise<void> {
    return this.stops.stopJob(job, reason, revoked);
  }

  /** See ExecutionStops.stopExecution. */
  stopExecution(execution: { id: string; executionDir: string }, event: TaskEvent, which: StoppableIn = 'any'): Promise<boolean> {
    return this.stops.stopExecution(execution, event, which);
  }

  @Interval('cluster-prune', PRUNE_INTERVAL_MS)
  async prune(): Promise<void> {
    const before = new Date(Date.now() - this.config.jobRetentionDays * 24 * 3600 * 1000);
    const dead = await this.cluster.deadBefore(before, PRUNE_BATCH);
    if (dead.length === 0) return;
    for (const job of dead)
      for (const dir of job.executionDirs) {
        const failure = await removeExecutionDir(dir);
        if (failure) this.logger.warn({ err: failure, dir }, 'Could not delete all of a pruned execution’s directory');
      }
    await this.cluster.deleteJobs(dead.map((job) => job.id));
    this.logger.info({ jobs: dead.length }, 'Pruned finished jobs past their retention');
  }

  /** Settles what ended when asked to, then places until a round leaves nothing more it could do. */
  private async pass(): Promise<void> {
    while ((this.placeDue || this.followDue) && !this.stopped) {
      const follow = this.followDue;
      let place = this.placeDue;
      this.followDue = false;
      this.placeDue = false;
      try {
        // A round when CPUs were freed (not handed to a prepared launch), or when half or more of those prepared have gone.
        if (follow && ((await this.follow()) || this.preparedFewerThan(0.5))) place = true;
        while (place && !this.stopped && (await this.placeRound()));
      } catch (error) {
        this.logger.error({ err: error }, 'Cluster scheduling failed; retrying at the next event or tick');
      }
    }
  }

  private async syncNodes(): Promise<void> {
    let reported;
    try {
      reported = await this.driver.nodes();
    } catch (error) {
      this.metrics.driverFailed('nodes');
      throw error;
    }
    await this.cluster.syncNodes(reported);
    const nodes = await this.cluster.nodesNamed(reported.map((node) => node.name));
    this.ownNodes = new Map(nodes.map((node) => [node.name, node.id]));
    this.ownNodeIds = new Set(this.ownNodes.values());
  }

  /** Takes over, on this hub's nodes, what hubs no longer alive left there. */
  private async adopt(): Promise<void> {
    const adopted = await this.cluster.adopt(this.hub, [...this.ownNodeIds]);
    if (adopted > 0) {
      this.logger.info({ executions: adopted }, 'Following executions a hub no longer alive started on nodes this hub shares');
      this.followDue = true;
    }
  }

  /** One placement round; whether the next may find more to do (it changed something, and there was more in line than it looked at). */
  private async placeRound(): Promise<boolean> {
    if (this.ownNodeIds.size === 0 || this.startsHeld !== undefined) return false;
    let placement: Decision = { claims: [], notes: [], excluded: new Map(), released: [], displaced: [], held: new Map(), moreInLine: false };
    let claimed: ClaimedExecution[];
    let news: News | undefined;
    const line = this.fairShare.line(this.prepared.values());
    const held = {
      // A queueing cluster is given a held job once it may run (see dependent-jobs.ts): nothing is prepared there.
      prepare: this.driver.queues ? 0 : (this.driver.preparesPerNode ?? 0),
      launches: [...this.prepared.values()].flatMap((launches) => launches.flatMap((launch) => (launch.after ? [launch.execution.id] : []))),
    };
    try {
      claimed = await this.cluster.placeRound(
        this.hub,
        [...this.ownNodeIds],
        !this.driver.queues,
        PLACE_BATCH,
        line,
        held,
        (pending, nodes, holdings, locked, found) => {
          placement = this.decide(pending, nodes, this.noteWaiting, this.fairShare.forRound(nodes, holdings, locked), found);
          news = this.announcements.ofPlacement(pending, placement);
          return { ...placement, notices: news.notices };
        },
      );
      news?.publish();
      this.noteWaiting = false;
    } catch (error) {
      // Nothing of the round was written: what it took out of line goes back.
      for (const launch of [...placement.released, ...placement.displaced]) this.keepPrepared(launch);
      throw error;
    }
    const nodeNames = new Map([...this.ownNodes].map(([name, id]) => [id, name]));
    const released = new Map(placement.released.map((launch) => [launch.execution.id, launch]));
    for (const execution of claimed) {
      const launch = released.get(execution.id);
      released.delete(execution.id);
      const nodeName = nodeNames.get(execution.nodeId) as string;
      const excluded = placement.excluded.get(execution.id) ?? [];
      if (launch) this.track(this.release(launch));
      else if (execution.prepared) this.keepPrepared(this.prepare(execution, nodeName, excluded, placement.held.get(execution.id)));
      else this.track(this.start(execution, nodeName, excluded));
    }
    // Given a slot but stopped meanwhile, or put back behind a better one: let go of.
    for (const launch of [...released.values(), ...placement.displaced]) this.track(this.letGo(launch));
    this.fullBelow = placement.fullBelow;
    this.fullFor = placement.fullFor;
    return (placement.claims.length > 0 || placement.notes.length > 0) && placement.moreInLine;
  }

  /** Keeps a promise of work under way until it settles, for the shutdown to await. */
  private track(work: Promise<void>): void {
    const tracked = work.finally(() => this.starting.delete(tracked));
    this.starting.add(tracked);
  }

  /**
   * Which executions in line go to which node (a free CPU on one that meets the constraints, or,
   * with none free, a prepared launch there while the driver keeps fewer than it may, or in place
   * of one behind them in line), and why the others wait; for each claim, the nodes of this hub it
   * must not run on (a queueing cluster places it itself). This hub's prepared launches take the
   * free CPUs first; with `fair`, free CPUs go instead one at a time to whichever prepared launch
   * or execution in line goes first (fair-share.ts), within the cap. What it takes out of the
   * prepared lists is out of them from now on. That an execution waits for a CPU is noted only
   * with `noteWaiting` (the tick's round, each second): most such waits are shorter, and each note
   * rewrites the execution's row.
   */
  private decide(
    pending: readonly PendingExecution[],
    nodes: readonly NodeRoom[],
    noteWaiting: boolean,
    fair?: FairShare,
    held: HeldFound = { toPrepare: [], released: new Set() },
  ): Decision {
    // Held launches whose dependency succeeded meanwhile take free CPUs as any prepared launch.
    for (const launches of this.prepared.values()) for (const launch of launches) if (held.released.has(launch.execution.id)) launch.after = undefined;
    const claims: { id: string; nodeId: string; prepared: boolean; event?: TaskEvent }[] = [];
    const excluded = new Map<string, string[]>();
    const notes: { id: string; event: TaskEvent }[] = [];
    const released: PreparedLaunch[] = [];
    const displaced: PreparedLaunch[] = [];
    const heldClaims = new Map<string, string>();
    const used = new Map(nodes.map((node) => [node.id, node.used]));
    const room = (node: NodeRoom, cpu: number) => (used.get(node.id) as number) + cpu <= node.cpu;
    const note = (execution: PendingExecution, event: TaskEvent) => {
      if (!repeats(execution.lastEvent, event)) notes.push({ id: execution.id, event });
    };
    const fittingOf = new Map(
      [...pending, ...held.toPrepare].map((execution) => [execution.id, nodes.filter((node) => !unmetConstraint(factsOf(node), execution.constraints))]),
    );
    const claim = (execution: PendingExecution, node: NodeRoom, prepared: boolean, why = `Waiting for a free CPU on ${node.name}`) => {
      claims.push({
        id: execution.id,
        nodeId: node.id,
        prepared,
        ...(prepared && { event: taskEvent('Queued', `${why}, its launch prepared`) }),
      });
      const fittingNames = new Set((fittingOf.get(execution.id) ?? []).map((candidate) => candidate.name));
      excluded.set(
        execution.id,
        [...this.ownNodes.keys()].filter((name) => !fittingNames.has(name)),
      );
    };
    const release = (launch: PreparedLaunch, node: NodeRoom) => {
      // Out of its node's list (shareOut took it out of the view it was given).
      const launches = this.prepared.get(node.id) ?? [];
      if (launches.includes(launch)) launches.splice(launches.indexOf(launch), 1);
      used.set(node.id, (used.get(node.id) as number) + launch.execution.reservedCpu);
      claims.push({ id: launch.execution.id, nodeId: node.id, prepared: false });
      released.push(launch);
    };
    const placed = new Set<string>();
    // Held launches take no free CPU: theirs is the one their dependency frees (see heardExit).
    const releasable = new Map([...this.prepared].map(([nodeId, launches]) => [nodeId, launches.filter((launch) => !launch.after)]));
    if (fair)
      shareOut(
        fair,
        nodes,
        releasable,
        pending,
        (execution) => fittingOf.get(execution.id) ?? [],
        room,
        release,
        (execution, node) => {
          used.set(node.id, (used.get(node.id) as number) + execution.reservedCpu);
          placed.add(execution.id);
          claim(execution, node, false);
        },
      );
    else
      for (const node of nodes) {
        const launches = releasable.get(node.id) ?? [];
        while (launches.length > 0 && room(node, launches[0].execution.reservedCpu)) release(launches.shift() as PreparedLaunch, node);
      }
    const preparing = new Map<string, number>();
    const mayPrepare = (node: NodeRoom) => (this.prepared.get(node.id)?.length ?? 0) + (preparing.get(node.id) ?? 0) < (this.driver.preparesPerNode ?? 0);
    const before = (a: PendingExecution, b: ClaimedExecution) => (fair ? fair.compare(a, b) : ahead(a, b)) < 0;
    for (const execution of pending) {
      if (placed.has(execution.id)) continue;
      const fitting = fittingOf.get(execution.id) ?? [];
      if (fitting.length === 0) {
        const event = this.placementFailure(execution, nodes);
        if (!repeats(execution.lastEvent, event)) this.metrics.placementFailed();
        note(execution, event);
        continue;
      }
      // A queueing cluster (Slurm) is given everything some node can run; it waits for room itself.
      // With fair share, what could start has started above: the rest waits, prepared if it may be.
      let node = this.driver.queues ? fitting[0] : fair ? undefined : fitting.find((candidate) => room(candidate, execution.reservedCpu));
      let prepared = false;
      if (!node && (this.driver.preparesPerNode ?? 0) > 0) {
        node = fitting.find(mayPrepare);
        // Those prepared are the first in line: one ahead of the last of them takes its place.
        node ??= fitting.find((candidate) => {
          const last = this.prepared.get(candidate.id)?.at(-1);
          return last !== undefined && before(execution, last.execution);
        });
        if (node && !mayPrepare(node)) displaced.push(this.prepared.get(node.id)?.pop() as PreparedLaunch);
        prepared = node !== undefined;
      }
      if (!node) {
        // Noted at once when the last look failed: it is placeable again, which is announced.
        if (noteWaiting || execution.lastEvent?.type === 'PlacementFailed')
          note(execution, taskEvent('Queued', `Waiting for a free CPU on ${fitting.map((candidate) => candidate.name).join(', ')}`));
        continue;
      }
      if (prepared) preparing.set(node.id, (preparing.get(node.id) ?? 0) + 1);
      else used.set(node.id, (used.get(node.id) as number) + execution.reservedCpu);
      claim(execution, node, prepared);
    }
    // Held executions whose dependency this hub runs: prepared on its node, where its end hands them its CPUs.
    for (const execution of held.toPrepare) {
      const node = (fittingOf.get(execution.id) ?? []).find((candidate) => candidate.id === execution.afterNodeId);
      if (!node || !mayPrepare(node)) continue;
      preparing.set(node.id, (preparing.get(node.id) ?? 0) + 1);
      claim(execution, node, true, `Waiting for job ${execution.heldBy} to succeed on ${node.name}`);
      heldClaims.set(execution.id, execution.heldBy);
    }
    const capacity = this.driver.preparesPerNode ?? 0;
    const full = !this.driver.queues && nodes.length > 0 && nodes.every((node) => !room(node, 1));
    const worst = nodes.map((node) => (capacity === 0 ? Infinity : (this.prepared.get(node.id)?.at(-1)?.execution.priority ?? -Infinity)));
    const roomLeft = this.driver.queues || nodes.some((node) => room(node, 1) || mayPrepare(node));
    const moreInLine = pending.length >= PLACE_BATCH && (roomLeft || notes.some((noted) => noted.event.type === 'PlacementFailed'));
    const fullFor = fair?.soleOwnerOn(nodes, pending, this.prepared);
    return {
      claims,
      notes,
      excluded,
      released,
      displaced,
      held: heldClaims,
      moreInLine,
      ...(full && { fullBelow: Math.min(...worst), ...(fullFor && { fullFor }) }),
    };
  }

  private placementFailure(execution: PendingExecution, nodes: readonly NodeRoom[]): TaskEvent {
    if (nodes.length === 0) return taskEvent('PlacementFailed', 'No node takes work now (all are down, draining or not workers)');
    const unmet = nodes.map((node) => `${node.name}: ${describeConstraint(unmetConstraint(factsOf(node), execution.constraints) as never)}`);
    return taskEvent('PlacementFailed', `No node meets the execution profile's constraints (${unmet.join('; ')})`, { unmet: unmet.join('; ') });
  }

  /** Starts a claimed execution and records it started (or submitted), in one statement; one stopped meanwhile is killed again. */
  private async start(execution: ClaimedExecution, nodeName: string, excludedNodes: string[]): Promise<void> {
    let driverRef: string;
    const slot = this.driver.queues ? undefined : this.follows(execution);
    try {
      driverRef = await this.driver.start(launchOf(execution, nodeName, excludedNodes));
    } catch (error) {
      this.unfollow(execution.id, slot);
      return this.failedToStart(execution, error as Error);
    }
    await this.recordStart(execution, nodeName, driverRef, new Date(), slot);
  }

  /** Prepares a launch claimed for the next in line; a launch that cannot be prepared fails its execution. */
  private prepare(execution: ClaimedExecution, nodeName: string, excludedNodes: string[], after?: string): PreparedLaunch {
    const ready = (async () => {
      try {
        return await (this.driver.prepare as NonNullable<ClusterDriver['prepare']>)(launchOf(execution, nodeName, excludedNodes));
      } catch (error) {
        this.takePrepared(execution.id);
        await this.isolated(execution.id, () => this.failedToStart(execution, error as Error));
        return undefined;
      }
    })();
    return { execution, nodeName, ready, ...(after && { after }) };
  }

  /** Starts a prepared launch's task in the slot it was given, and records it started. */
  private async release(launch: PreparedLaunch): Promise<void> {
    const { execution, nodeName } = launch;
    const driverRef = await launch.ready;
    if (driverRef === undefined) return;
    const slot = this.follows(execution);
    let startedAt: Date | undefined;
    try {
      startedAt = await (this.driver.release as NonNullable<ClusterDriver['release']>)(execution.id);
    } catch (error) {
      this.unfollow(execution.id, slot);
      await this.stops.stopQuietly({ executionId: execution.id, driverRef, executionDir: execution.executionDir });
      return this.failedToStart(execution, error as Error);
    }
    await this.recordStart(execution, nodeName, driverRef, startedAt, slot);
  }

  /** Lets go of a prepared launch and puts its execution back in line (unless it was stopped meanwhile). */
  private async letGo(launch: PreparedLaunch): Promise<void> {
    if ((await launch.ready) === undefined) return;
    await this.isolated(launch.execution.id, async () => {
      await (this.driver.abandon as NonNullable<ClusterDriver['abandon']>)(launch.execution.id);
      await this.cluster.requeue(this.hub, [launch.execution.id]);
    });
  }

  /** Lets go of this hub's prepared launch of an execution that was stopped. */
  private async dropPrepared(executionId: string): Promise<void> {
    const launch = this.takePrepared(executionId);
    if (launch && (await launch.ready) !== undefined) await (this.driver.abandon as NonNullable<ClusterDriver['abandon']>)(executionId);
  }

  /** Puts a prepared launch in its node's list, in line order. */
  private keepPrepared(launch: PreparedLaunch): void {
    const launches = this.prepared.get(launch.execution.nodeId) ?? [];
    const at = launches.findIndex((other) => ahead(launch.execution, other.execution) < 0);
    launches.splice(at < 0 ? launches.length : at, 0, launch);
    this.prepared.set(launch.execution.nodeId, launches);
  }

  /** Takes a prepared launch out of its node's list. */
  private takePrepared(executionId: string): PreparedLaunch | undefined {
    for (const launches of this.prepared.values()) {
      const at = launches.findIndex((launch) => launch.execution.id === executionId);
      if (at >= 0) return launches.splice(at, 1)[0];
    }
    return undefined;
  }

  /**
   * An execution ended, as its driver heard. One this hub started hands its CPUs to the first
   * launch prepared on its node, at once: with its end, in one statement, when the driver told how
   * it ended; else before the follow reads and records its end. A prepared launch that ended before
   * its slot (its launch failed) is recorded started, as any launch is, and its end settled by the
   * follow.
   */
  private heardExit(executionId: string, ended?: Ended): void {
    const early = this.takePrepared(executionId);
    if (early) {
      this.track(early.ready.then((driverRef) => (driverRef === undefined ? undefined : this.recordStart(early.execution, early.nodeName, driverRef))));
      return;
    }
    const slot = this.followed.get(executionId);
    // Not followed (stopped meanwhile): the follow looks at whatever there is left to record.
    if (!slot) return this.wake(true);
    slot.endHeard = true;
    if (this.stopped) return;
    const launches = this.prepared.get(slot.nodeId) ?? [];
    // One held on this execution's job goes first when it ended well (told by the driver, so the statement that records it checks it); else the first not held.
    const succeeded = ended?.state === 'completed' && ended.exitCode === 0 && !ended.limit;
    const dependent = succeeded ? launches.find((launch) => launch.after === slot.execution.jobId) : undefined;
    const first = slot.handedOver || this.startsHeld !== undefined ? undefined : (dependent ?? launches.find((launch) => !launch.after));
    const next = first && first.execution.reservedCpu <= slot.cpu ? launches.splice(launches.indexOf(first), 1)[0] : undefined;
    if (ended) {
      slot.ending = true;
      return this.track(this.recordEnd(executionId, slot, ended, next));
    }
    if (!next) return;
    const handedOver = this.cluster.handOver(this.hub, executionId, next.execution.id, this.fairShare.cap).catch((error: unknown) => {
      this.logger.error({ err: error, executionId }, 'Could not hand an ended execution’s CPUs to a prepared launch');
      return false;
    });
    slot.handedOver = handedOver;
    this.track(
      handedOver.then(async (handed) => {
        if (handed) return this.release(next);
        // The ended one was stopped (its CPUs may be another's by now), or the prepared one, or its owner may not take them: placement decides.
        this.keepPrepared(next);
        this.wake();
      }),
    );
  }

  /**
   * Records the end the driver told of an execution this hub follows, once its start is recorded,
   * and hands its CPUs to `next` in the same statement, then releases it. When there is no next, or
   * it was not handed the CPUs (it was stopped), placement decides who takes them.
   */
  private async recordEnd(executionId: string, slot: Followed, ended: Ended, next?: PreparedLaunch): Promise<void> {
    // An end heard before its launch was answered (a task that exits at once: both come in one
    // read of the launcher) waits for the start to be deferred, not for the deferral to run out.
    await slot.startKnown;
    // A start not written yet is written with the end.
    const deferred = slot.deferredStart;
    slot.deferredStart = undefined;
    deferred?.take();
    const recorded = deferred ?? ((await slot.startRecorded) ? slot.recorded : undefined);
    const expected = deferred ? 'pending' : 'running';
    let written = false;
    let handed = false;
    if (recorded) {
      const taskState = structuredClone(recorded.taskState);
      endTask(taskState, undefined, ended.state, ended.exitCode, endEventOf(ended), ended.finishedAt);
      const news = this.announcements.news(
        ...(deferred ? [this.announcements.started(slot.execution, deferred.taskState)] : []),
        this.announcements.ended(slot.execution, ended.state, ended.exitCode, taskState),
      );
      const change = { status: ended.state, nodeId: slot.nodeId, driverRef: recorded.driverRef, exitCode: ended.exitCode, taskState, notices: news.notices };
      try {
        if (next) ({ written, handed } = await this.cluster.endAndHandOver(this.hub, executionId, expected, change, next.execution.id, this.fairShare.cap));
        else written = await this.cluster.transition(executionId, expected, this.hub, change);
        if (written) news.publish();
      } catch (error) {
        this.logger.error({ err: error, executionId }, 'Could not record the end of an execution; the follow reads it again');
        slot.ending = false;
        if (next) this.keepPrepared(next);
        // Its start is written on its own, so that the follow finds it.
        if (deferred) await this.writeStart(deferred.execution, deferred.nodeName, deferred.driverRef, deferred.startedAt, deferred.taskState, slot);
        return this.wake(true);
      }
      if (deferred) {
        slot.settleStart(written);
        if (written) this.metrics.started(deferred.nodeName, deferred.execution.created, deferred.startedAt);
      }
    }
    // Not written: stopped meanwhile, which freed its CPUs and recorded its end.
    this.unfollow(executionId, slot);
    if (written) this.metrics.ended(ended.state);
    if (next && handed) {
      // Those prepared are refilled before they run out, as the follow does.
      if (this.preparedFewerThan(0.5)) this.wake();
      return this.release(next);
    }
    if (next) this.keepPrepared(next);
    this.wake();
  }

  /** Notes the CPUs of an execution whose task is about to start, from before it starts: a short task's end may come before its start is recorded. */
  private follows(execution: ClaimedExecution): Followed {
    let recordedAs: (recorded: boolean) => void = () => undefined;
    let knowStart: () => void = () => undefined;
    const startRecorded = new Promise<boolean>((resolve) => (recordedAs = resolve));
    const startKnown = new Promise<void>((resolve) => (knowStart = resolve));
    const settleStart = (recorded: boolean) => {
      knowStart();
      recordedAs(recorded);
    };
    // What its announcements name, not its task (which may be large), for as long as it runs.
    const { id, jobId, ownerId, workloadKey } = execution;
    const slot: Followed = {
      execution: { id, jobId, ownerId, workloadKey },
      nodeId: execution.nodeId,
      cpu: execution.reservedCpu,
      startRecorded,
      settleStart,
      startKnown,
      knowStart,
    };
    this.followed.set(execution.id, slot);
    return slot;
  }

  /** Forgets an execution; a start not recorded by now never will be. */
  private unfollow(executionId: string, slot: Followed | undefined): void {
    slot?.settleStart(false);
    if (this.followed.get(executionId) === slot) this.followed.delete(executionId);
  }

  /** Records a launch that the driver could not start (or prepare, or release) failed, and places again. */
  private async failedToStart(execution: ClaimedExecution, error: Error): Promise<void> {
    this.metrics.driverFailed('start');
    const taskState = structuredClone(execution.taskState);
    endTask(taskState, undefined, 'failed', null, taskEvent('DriverFailure', `The ${this.driver.name} driver could not start it: ${error.message}`));
    const news = this.announcements.news(this.announcements.ended(execution, 'failed', null, taskState));
    if (
      await this.cluster.transition(execution.id, 'pending', this.hub, {
        status: 'failed',
        nodeId: execution.nodeId,
        driverRef: null,
        exitCode: null,
        taskState,
        notices: news.notices,
      })
    ) {
      news.publish();
      this.metrics.ended('failed');
      this.wake();
    }
  }

  /**
   * Records a launched execution started (or submitted; at `startedAt` when the driver knows), in
   * one statement; one stopped meanwhile is killed again. A start whose end the driver will tell is
   * written START_RECORD_AFTER_MS later, or with its end when that comes first.
   */
  private async recordStart(execution: ClaimedExecution, nodeName: string, driverRef: string, startedAt = new Date(), slot?: Followed): Promise<void> {
    const taskState = structuredClone(execution.taskState);
    if (this.driver.queues) taskState.events.push(taskEvent('Submitted', `Submitted to ${this.driver.name} as ${driverRef}`, { ref: driverRef }));
    else markRunning(taskState, nodeName, startedAt);
    if (slot && !this.driver.queues && this.driver.onExit) {
      // A moment later, unless its end, told meanwhile, takes it (see recordEnd).
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, START_RECORD_AFTER_MS);
        const take = () => {
          clearTimeout(timer);
          resolve();
        };
        slot.deferredStart = { execution, nodeName, driverRef, startedAt, taskState, take };
        slot.knowStart();
      });
      if (slot.deferredStart === undefined) return;
      slot.deferredStart = undefined;
    }
    await this.writeStart(execution, nodeName, driverRef, startedAt, taskState, slot);
  }

  /** Writes a start (see recordStart). */
  private async writeStart(
    execution: ClaimedExecution,
    nodeName: string,
    driverRef: string,
    startedAt: Date,
    taskState: TaskState,
    slot?: Followed,
  ): Promise<void> {
    const status = this.driver.queues ? 'pending' : 'running';
    // Submitted to a queueing cluster is not started: the follow announces that.
    const news = status === 'running' ? this.announcements.news(this.announcements.started(execution, taskState)) : undefined;
    let recorded = false;
    try {
      recorded = await this.cluster.transition(execution.id, 'pending', this.hub, {
        status,
        nodeId: execution.nodeId,
        driverRef,
        exitCode: null,
        taskState,
        notices: news?.notices,
      });
      if (recorded) news?.publish();
      if (recorded && slot) slot.recorded = { driverRef, taskState };
    } finally {
      slot?.settleStart(recorded);
    }
    // Stopped while it was being started: nothing will follow it, so it must not run on.
    if (!recorded) {
      this.unfollow(execution.id, slot);
      await this.stops.stopQuietly({ executionId: execution.id, driverRef, executionDir: execution.executionDir });
    } else if (status === 'running') {
      this.metrics.started(nodeName, execution.created, startedAt);
      // A short task's end may have been heard, and looked for, before its start was recorded: look again.
      if (!slot || (slot.endHeard && !slot.ending)) this.wake(true);
    }
  }

  /** Asks the driver how this hub's started (or submitted) executions stand, and records what changed; whether any ended and freed its CPUs. */
  private async follow(): Promise<boolean> {
    const listed = await this.cluster.started(this.hub);
    // Those no longer this hub's to follow (stopped by another hub, or ended) hand nothing on.
    const following = new Set(listed.map((execution) => execution.id));
    for (const [id, followed] of this.followed) if (followed.recorded && !following.has(id)) this.followed.delete(id);
    // Those whose end the driver told are being recorded already.
    const started = listed.filter((execution) => !this.followed.get(execution.id)?.ending);
    if (started.length === 0) return false;
    let outcomes: Map<string, Outcome>;
    try {
      outcomes = await this.driver.outcomes(
        started.map((execution) => ({ executionId: execution.id, driverRef: execution.driverRef, executionDir: execution.executionDir })),
      );
    } catch (error) {
      this.metrics.driverFailed('outcomes');
      throw error;
    }
    let freed = false;
    for (const execution of started)
      await this.isolated(execution.id, async () => {
        if (await this.settle(execution, outcomes.get(execution.id))) freed = true;
      });
    return freed;
  }

  /** Records what became of one started execution, if this hub still follows it and it is as it was read; whether it ended and freed its CPUs (not handed on). */
  private async settle(execution: StartedExecution, outcome: Outcome | undefined): Promise<boolean> {
    if (!outcome || outcome.state === 'queued' || (outcome.state === 'running' && execution.status === 'running')) return false;
    const taskState = structuredClone(execution.taskState);
    let nodeId = execution.nodeId;
    const now = new Date();
    if (execution.status === 'pending' && (outcome.state === 'running' || outcome.node)) {
      // Running, or it ran and ended between two looks (a short job on a queueing cluster): it did start.
      nodeId = (outcome.node && this.ownNodes.get(outcome.node)) ?? nodeId;
      markRunning(taskState, outcome.node ?? 'its node', now);
    }
    const started = taskState.startedAt !== execution.taskState.startedAt ? [this.announcements.started(execution, taskState)] : [];
    if (outcome.state === 'running') {
      const news = this.announcements.news(...started);
      if (
        await this.cluster.transition(execution.id, 'pending', this.hub, {
          status: 'running',
          nodeId,
          driverRef: execution.driverRef,
          exitCode: null,
          taskState,
          notices: news.notices,
        })
      ) {
        news.publish();
        const submitted = execution.taskState.events.find((event) => event.type === 'Received')?.time;
        this.metrics.started(outcome.node ?? '', submitted ? new Date(submitted) : now, now);
      }
      return false;
    }
    const exitCode = 'exitCode' in outcome ? outcome.exitCode : null;
    // Its CPUs are recorded handed on before it is recorded ended, so that its node never looks emptier than it is.
    const handed = (await this.followed.get(execution.id)?.handedOver) ?? false;
    this.followed.delete(execution.id);
    endTask(taskState, undefined, outcome.state, exitCode, endEventOf(outcome), 'finishedAt' in outcome ? outcome.finishedAt : undefined);
    const news = this.announcements.news(...started, this.announcements.ended(execution, outcome.state, exitCode, taskState));
    const written = await this.cluster.transition(execution.id, execution.status, this.hub, {
      status: outcome.state,
      nodeId,
      driverRef: execution.driverRef,
      exitCode,
      taskState,
      notices: news.notices,
    });
    if (written) {
      news.publish();
      this.metrics.ended(outcome.state);
    }
    return written && !handed;
  }

  /** Runs one execution's step so that a failure there is logged and leaves the others to go on. */
  private async isolated(executionId: string, step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (error) {
      this.logger.error({ err: error, executionId }, 'Cluster scheduling failed for one execution; retrying at the next event or tick');
    }
  }
}

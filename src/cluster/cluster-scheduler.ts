import { join } from 'node:path';
import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import type { Logger } from 'pino';
import { HubConfig } from '../common/config/hub-config.js';
import { StartupError } from '../common/errors/startup-error.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import { describeConstraint, unmetConstraint, type NodeFacts } from '../execution-profiles/node-constraints.js';
import { ClusterRepository, taskEvent, type PendingExecution, type StartedExecution } from './cluster.repository.js';
import { removeExecutionDir } from './drivers/execution-dir.js';
import { CLUSTER_DRIVER, type ClusterDriver, type Outcome, type Tracked } from './drivers/cluster-driver.js';
import type { ClusterJob } from './entities/cluster-job.entity.js';
import type { ClusterNode } from './entities/cluster-node.entity.js';
import type { JobExecution, TaskEvent } from './entities/job-execution.entity.js';

const TICK_MS = 1000;
const NODE_SYNC_EVERY = 10;
const PLACE_BATCH = 100;
const PRUNE_INTERVAL_MS = 3600 * 1000;
const PRUNE_BATCH = 500;
/** What the hub passes to every execution from its own environment; nothing else of it (its settings, secrets) leaks to jobs. */
const INHERITED_VARIABLES = ['PATH', 'LANG', 'LC_ALL', 'TZ'];

/** A node as constraints see it: `node.attr.os` and `node.os` agree, as the node detail shows `os` among its attributes. */
function factsOf(node: ClusterNode): NodeFacts {
  return { name: node.name, os: node.os, labels: node.labels, attributes: { ...node.attributes, os: node.os } };
}

/** Whether an event says what the last one said (a placement that keeps failing is one event, not one per tick). */
function repeats(last: TaskEvent | null | undefined, event: TaskEvent): boolean {
  return last?.type === event.type && last.message === event.message;
}

/**
 * Places pending executions on nodes and follows them to their end, in the background of every
 * hub: each tick it places what waits (best priority first) on a node of its driver that meets
 * the job's constraints and has a free CPU, and asks the driver how running executions stand.
 * A claim in the database keeps two hubs from starting the same execution. At start it gives back
 * claims it never started and settles executions that ended (or were lost) while it was down.
 */
@Injectable()
export class ClusterScheduler implements OnApplicationBootstrap, OnApplicationShutdown {
  /** The nodes this hub's driver reaches, by name. */
  private ownNodes = new Map<string, string>();
  private ticks = 0;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private readonly logger: Logger;

  constructor(
    private readonly cluster: ClusterRepository,
    @Inject(CLUSTER_DRIVER) private readonly driver: ClusterDriver,
    private readonly config: HubConfig,
    logger: HubLogger,
  ) {
    this.logger = logger.for('cluster');
    driver.onChange(() => this.wake());
  }

  /** An execution's directory: its working directory (`work/`), its logs and its exit code. */
  executionDir(executionId: string): string {
    return join(this.config.sharedDir, 'executions', executionId);
  }

  async onApplicationBootstrap(): Promise<void> {
    try {
      await this.syncNodes();
    } catch (error) {
      throw new StartupError(`The ${this.driver.name} cluster driver cannot reach its cluster: ${(error as Error).message}`);
    }
    await this.cluster.releaseClaims([...this.ownNodes.values()]);
    await this.follow();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  /** Runs a tick soon, or once more after the one under way. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.tick().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.wake();
      }
    });
  }

  @Interval('cluster-tick', TICK_MS)
  tickOnSchedule(): void {
    this.wake();
  }

  /** Kills what a job runs and ends its executions (failed, with an event), which makes it dead. */
  async stopJob(job: ClusterJob, reason: string): Promise<void> {
    for (const execution of await this.cluster.unfinishedOf(job.id)) {
      // As the locked row has it: the execution may have started since the list was read.
      let driverRef = null as string | null;
      await this.cluster.updateExecution(execution.id, (current) => {
        if (current.status !== 'pending' && current.status !== 'running') return false;
        driverRef = current.driverRef;
        this.end(current, 'failed', null, taskEvent('Killed', reason));
        return true;
      });
      if (driverRef !== null) await this.stopQuietly({ executionId: execution.id, driverRef, executionDir: execution.executionDir });
    }
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

  private async tick(): Promise<void> {
    try {
      if (++this.ticks % NODE_SYNC_EVERY === 0) await this.syncNodes();
      // What ended first, so that the CPUs it frees are used in the same tick.
      await this.follow();
      await this.place();
    } catch (error) {
      this.logger.error({ err: error }, 'Cluster scheduling failed; retrying at the next tick');
    }
  }

  private async syncNodes(): Promise<void> {
    const reported = await this.driver.nodes();
    await this.cluster.syncNodes(reported);
    const nodes = await this.cluster.nodesNamed(reported.map((node) => node.name));
    this.ownNodes = new Map(nodes.map((node) => [node.name, node.id]));
  }

  /** Starts what waits, where it fits. */
  private async place(): Promise<void> {
    const pending = await this.cluster.pending(PLACE_BATCH);
    if (pending.length === 0) return;
    const nodes = (await this.cluster.schedulableNodes()).filter((node) => this.ownNodes.has(node.name));
    const used = await this.cluster.usedCpu();
    for (const execution of pending) await this.isolated(execution.id, () => this.placeOne(execution, nodes, used));
  }

  /** Places one pending execution, or notes why it waits. */
  private async placeOne(execution: PendingExecution, nodes: readonly ClusterNode[], used: Map<string, number>): Promise<void> {
    const fitting = nodes.filter((node) => !unmetConstraint(factsOf(node), execution.constraints));
    if (fitting.length === 0) return this.note(execution, this.placementFailure(execution, nodes));
    // A queueing cluster (Slurm) is given everything some node can run; it waits for room itself.
    const node = this.driver.queues ? fitting[0] : fitting.find((candidate) => (used.get(candidate.id) ?? 0) + execution.reservedCpu <= candidate.cpu);
    if (!node) return this.note(execution, taskEvent('Queued', `Waiting for a free CPU on ${fitting.map((candidate) => candidate.name).join(', ')}`));
    if (!(await this.cluster.claim(execution.id, node.id))) return;
    used.set(node.id, (used.get(node.id) ?? 0) + execution.reservedCpu);
    const fittingNames = new Set(fitting.map((candidate) => candidate.name));
    await this.start(
      execution,
      node,
      [...this.ownNodes.keys()].filter((name) => !fittingNames.has(name)),
    );
  }

  private placementFailure(execution: PendingExecution, nodes: readonly ClusterNode[]): TaskEvent {
    if (nodes.length === 0) return taskEvent('PlacementFailed', 'No node takes work now (all are down, draining or not workers)');
    const unmet = nodes.map((node) => `${node.name}: ${describeConstraint(unmetConstraint(factsOf(node), execution.constraints) as never)}`);
    return taskEvent('PlacementFailed', `No node meets the execution profile's constraints (${unmet.join('; ')})`, { unmet: unmet.join('; ') });
  }

  /** Adds an event to a waiting task unless it repeats the last: checked on the batch's view first, to write nothing when nothing changed, then under the row lock. */
  private async note(execution: PendingExecution, event: TaskEvent): Promise<void> {
    if (repeats(execution.lastEvent, event)) return;
    await this.cluster.updateExecution(execution.id, (current) => {
      if (current.status !== 'pending' || repeats(current.taskState.events.at(-1), event)) return false;
      current.taskState.events.push(event);
      return true;
    });
  }

  private async start(execution: PendingExecution, node: ClusterNode, excludedNodes: string[]): Promise<void> {
    const task = await this.cluster.taskOf(execution.jobId);
    const inherited = Object.fromEntries(
      INHERITED_VARIABLES.filter((name) => process.env[name] !== undefined).map((name) => [name, process.env[name] as string]),
    );
    const env = {
      ...inherited,
      ...task.environment,
      ...Object.fromEntries(task.envVars.map(({ name, value }) => [name, value])),
      HOME: join(execution.executionDir, 'work'),
      HUB_JOB_ID: execution.jobId,
      HUB_EXECUTION_ID: execution.id,
      HUB_TASK_NAME: task.name,
    };
    try {
      if (task.identity === undefined) throw new Error('it was submitted before jobs ran as their users; submit it again');
      const driverRef = await this.driver.start({
        executionId: execution.id,
        nodeName: node.name,
        command: task.command,
        args: task.args,
        env,
        identity: task.identity,
        limits: task.limits ?? {},
        executionDir: execution.executionDir,
        cpu: execution.reservedCpu,
        memory: execution.reservedMemory,
        constraints: task.constraints,
        excludedNodes,
      });
      let recorded = false;
      await this.cluster.updateExecution(execution.id, (current) => {
        if (current.status !== 'pending') return false;
        recorded = true;
        current.driverRef = driverRef;
        if (this.driver.queues) current.taskState.events.push(taskEvent('Submitted', `Submitted to ${this.driver.name} as ${driverRef}`, { ref: driverRef }));
        else this.markRunning(current, node);
        return true;
      });
      // Stopped while it was being started: nothing will follow it, so it must not run on.
      if (!recorded) await this.stopQuietly({ executionId: execution.id, driverRef, executionDir: execution.executionDir });
    } catch (error) {
      await this.cluster.updateExecution(execution.id, (current) => {
        if (current.status !== 'pending') return false;
        this.end(current, 'failed', null, taskEvent('DriverFailure', `The ${this.driver.name} driver could not start it: ${(error as Error).message}`));
        return true;
      });
    }
  }

  /** Asks the driver how this hub's started (or submitted) executions stand, and records what changed. */
  private async follow(): Promise<void> {
    const started = await this.cluster.started([...this.ownNodes.values()]);
    if (started.length === 0) return;
    const outcomes = await this.driver.outcomes(
      started.map((execution) => ({ executionId: execution.id, driverRef: execution.driverRef, executionDir: execution.executionDir })),
    );
    for (const execution of started) await this.isolated(execution.id, () => this.settle(execution, outcomes.get(execution.id)));
  }

  /** Records what became of one started execution. */
  private async settle(execution: StartedExecution, outcome: Outcome | undefined): Promise<void> {
    if (!outcome || outcome.state === 'queued' || (outcome.state === 'running' && execution.status === 'running')) return;
    await this.cluster.updateExecution(execution.id, (current) => {
      if (current.status !== 'pending' && current.status !== 'running') return false;
      if (outcome.state !== 'running') {
        // It ran and ended between two looks (a short job on a queueing cluster): it did start.
        if (current.status === 'pending' && outcome.node)
          this.markRunning(current, { id: this.ownNodes.get(outcome.node) ?? current.nodeId, name: outcome.node });
        this.end(
          current,
          outcome.state,
          'exitCode' in outcome ? outcome.exitCode : null,
          this.eventOf(outcome),
          'finishedAt' in outcome ? outcome.finishedAt : undefined,
        );
        return true;
      }
      if (current.status === 'running') return false;
      this.markRunning(current, { id: (outcome.node && this.ownNodes.get(outcome.node)) ?? current.nodeId, name: outcome.node ?? 'its node' });
      return true;
    });
  }

  /** Kills what runs of an execution already ended in the hub's eyes; a driver's failure to is logged, not the caller's problem. */
  private async stopQuietly(tracked: Tracked): Promise<void> {
    try {
      await this.driver.stop(tracked);
    } catch (error) {
      this.logger.error({ err: error, executionId: tracked.executionId }, 'The cluster driver could not stop an execution');
    }
  }

  /** Runs one execution's step so that a failure there is logged and leaves the others to go on. */
  private async isolated(executionId: string, step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (error) {
      this.logger.error({ err: error, executionId }, 'Cluster scheduling failed for one execution; retrying at the next tick');
    }
  }

  private markRunning(execution: JobExecution, node: { id: string | null; name: string }): void {
    execution.status = 'running';
    execution.nodeId = node.id;
    execution.taskState.status = 'running';
    execution.taskState.startedAt = new Date().toISOString();
    execution.taskState.events.push(taskEvent('Started', `Started on ${node.name}`, { node: node.name }));
  }

  private eventOf(outcome: Exclude<Outcome, { state: 'running' | 'queued' }>): TaskEvent {
    if (outcome.state === 'lost') return taskEvent('Lost', outcome.message);
    if ('limit' in outcome && outcome.limit) return taskEvent('LimitExceeded', outcome.message, { limit: outcome.limit, exitCode: String(outcome.exitCode) });
    return taskEvent('Terminated', outcome.message, { exitCode: String(outcome.exitCode) });
  }

  /** Ends an execution's task, at `finishedAt` when the driver knows (it may have ended while the hub was down), else now. */
  private end(execution: JobExecution, status: 'completed' | 'failed' | 'lost', exitCode: number | null, event: TaskEvent, finishedAt?: string): void {
    execution.status = status;
    execution.exitCode = exitCode;
    execution.taskState.status = 'dead';
    execution.taskState.failed = status !== 'completed';
    const ended = finishedAt ?? new Date().toISOString();
    // A fast task may write its exit code before the hub has recorded its start: it did not end before it began.
    const started = execution.taskState.startedAt;
    execution.taskState.finishedAt = started && Date.parse(started) > Date.parse(ended) ? started : ended;
    execution.taskState.events.push(event);
  }
}

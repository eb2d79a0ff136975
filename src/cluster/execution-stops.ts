import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { announceChange, type ChangeFeed } from '../common/database/change-feed.js';
import type { ClusterMetrics } from '../common/metrics/cluster-metrics.js';
import { taskEvent, type ClusterRepository } from './cluster.repository.js';
import type { ClusterDriver, Tracked } from './drivers/cluster-driver.js';
import type { ClusterJob } from './entities/cluster-job.entity.js';
import type { ExecutionAnnouncements, News } from './execution-announcements.js';
import type { TaskEvent } from './entities/job-execution.entity.js';
import { endTask } from './task-state.js';

/** Announced to ask the hub that follows an execution on a node no other shares to kill it. */
const STOP_NOTICE = 'cluster_stop';

/** In what state a stop may end an execution (see ExecutionStops.stopExecution). */
export type StoppableIn = 'any' | 'running' | 'notStarted';

/**
 * What a stop needs of the scheduler: its hub, its nodes, and what it keeps of an execution in
 * memory. Handed over as closures, so that this state stays the scheduler's own.
 */
export interface StoppingScheduler {
  /** This hub's number once it runs. */
  hub(): number | undefined;
  /** Whether this hub's driver reaches the node. */
  reaches(nodeId: string): boolean;
  /** Forgets that the hub follows the execution: the stop freed its CPUs, so its end hands nothing on. */
  forget(executionId: string): void;
  /** Lets go of this hub's prepared launch of the execution. */
  dropPrepared(executionId: string): Promise<void>;
  /** Places again: a stop frees CPUs, or a place among those prepared. */
  wake(): void;
}

/**
 * The stops of executions, for the scheduler (a job stopped, its owner revoked, the disk reserve):
 * an execution is ended under its row lock, whichever hub runs it, and what runs of it is killed
 * by the hub whose driver reaches its node, or, through the database, by the hub that follows it.
 */
export class ExecutionStops {
  constructor(
    private readonly scheduler: StoppingScheduler,
    private readonly cluster: ClusterRepository,
    private readonly driver: ClusterDriver,
    private readonly metrics: ClusterMetrics,
    private readonly dataSource: DataSource,
    changes: ChangeFeed,
    private readonly announcements: ExecutionAnnouncements,
    private readonly logger: Logger,
  ) {
    changes.subscribe(STOP_NOTICE, (change) => {
      if (change !== 'reset' && change.id) void this.stopFollowed(change.id);
    });
  }

  /**
   * Kills what a job runs and ends its executions (failed, with an event), which makes it dead;
   * with `revoked` (its owner was deactivated or deleted), only those not started yet, with a
   * `Revoked` event: what runs keeps running.
   */
  async stopJob(job: Pick<ClusterJob, 'id'>, reason: string, revoked = false): Promise<void> {
    const event = taskEvent(revoked ? 'Revoked' : 'Killed', reason);
    for (const execution of await this.cluster.unfinishedOf(job.id)) await this.stopExecution(execution, event, revoked ? 'notStarted' : 'any');
  }

  /**
   * Ends an execution failed with `event` under its row lock, and kills what runs of it; whether
   * this call ended it. `which` says in what state it may be ended: pending or running (`any`),
   * only `running`, or only `notStarted` (pending and never launched).
   */
  async stopExecution(execution: { id: string; executionDir: string }, event: TaskEvent, which: StoppableIn = 'any'): Promise<boolean> {
    // As the locked row has it: the execution may have started since the list was read.
    let target: { driverRef: string; hub: number | null; nodeId: string | null } | undefined;
    let preparedBy: number | undefined;
    let ended = false;
    let news: News | undefined;
    await this.cluster.updateExecution(
      execution.id,
      (current) => {
        if (current.status !== 'pending' && current.status !== 'running') return false;
        if (which === 'running' && current.status !== 'running') return false;
        if (which === 'notStarted' && (current.status !== 'pending' || current.driverRef !== null)) return false;
        if (current.driverRef !== null) target = { driverRef: current.driverRef, hub: current.hub, nodeId: current.nodeId };
        else if (current.prepared && current.hub !== null) preparedBy = current.hub;
        endTask(current.taskState, current, 'failed', null, event);
        ended = true;
        return true;
      },
      (current, workloadKey) =>
        (news = this.announcements.news(this.announcements.ended({ ...current, workloadKey }, 'failed', null, current.taskState))).notices,
    );
    if (which === 'notStarted' && !ended) return false;
    if (ended) {
      news?.publish();
      this.metrics.ended(which === 'running' ? 'failed' : 'stopped');
      // Its CPUs (or its place among those prepared) are free now.
      this.scheduler.wake();
    }
    this.scheduler.forget(execution.id);
    // A prepared launch is let go of by the hub that prepared it.
    if (preparedBy === this.scheduler.hub()) await this.scheduler.dropPrepared(execution.id);
    else if (preparedBy !== undefined) await this.askToStop(execution.id);
    if (!target) return ended;
    const tracked = { executionId: execution.id, driverRef: target.driverRef, executionDir: execution.executionDir };
    // This hub's driver reaches the node (its own execution, or one on a node it shares); else the hub that follows it is asked to.
    if (target.hub === this.scheduler.hub() || (target.nodeId !== null && this.scheduler.reaches(target.nodeId))) await this.stopQuietly(tracked);
    else await this.askToStop(execution.id);
    return ended;
  }

  /** Kills what runs of an execution already ended in the hub's eyes; a driver's failure to is logged, not the caller's problem. */
  async stopQuietly(tracked: Tracked): Promise<void> {
    try {
      await this.driver.stop(tracked);
    } catch (error) {
      this.metrics.driverFailed('stop');
      this.logger.error({ err: error, executionId: tracked.executionId }, 'The cluster driver could not stop an execution');
    }
  }

  /** Asks, through the database, the hub that follows (or prepared) an execution to stop what runs of it. */
  private async askToStop(executionId: string): Promise<void> {
    await announceChange(this.dataSource, { table: STOP_NOTICE, id: executionId });
  }

  /** Kills, when this hub follows it, an execution another hub ended (a stop asked there). */
  private async stopFollowed(executionId: string): Promise<void> {
    try {
      await this.scheduler.dropPrepared(executionId);
      // Its CPUs were freed by the stop: its end hands nothing on.
      this.scheduler.forget(executionId);
      const target = await this.cluster.stopTarget(executionId);
      if (target?.driverRef && target.hub === this.scheduler.hub())
        await this.stopQuietly({ executionId, driverRef: target.driverRef, executionDir: target.executionDir });
    } catch (error) {
      this.logger.error({ err: error, executionId }, 'Could not stop an execution another hub asked this one to stop');
    }
  }
}

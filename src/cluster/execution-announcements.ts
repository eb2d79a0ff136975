import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { ChangeFeed, type RowChange } from '../common/database/change-feed.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import type { Placement } from './cluster.repository.js';
import type { TaskEvent, TaskState } from './entities/job-execution.entity.js';

/** A change of an execution, as the engines built on the cluster see it (api-map §9, "Execution changes are announced"). */
export interface ExecutionChange {
  readonly kind: 'started' | 'ended' | 'placementFailed' | 'placeable';
  readonly jobId: string;
  readonly executionId: string;
  /** The job's owner; empty once that user was deleted. */
  readonly ownerId: string;
  /** The job's workload key (see Workload.key), when it has one. */
  readonly workloadKey?: string;
  /** started: when the task's own process started (taskStates.<task>.startedAt), ISO. */
  readonly startedAt?: string;
  /** ended: */
  readonly status?: 'completed' | 'failed' | 'lost';
  readonly exitCode?: number | null;
  readonly finishedAt?: string;
  /** ended / placementFailed: the event the task recorded (Terminated, LimitExceeded, Lost, DriverFailure, a stop's event, PlacementFailed) and its message. */
  readonly eventType?: string;
  readonly message?: string;
}

export type ExecutionChangeListener = (change: ExecutionChange | 'reconnected') => void;

/** What the rows the cluster already reads of an execution carry that its announcement names: nothing more is read to announce. */
export interface AnnouncedExecution {
  readonly id: string;
  readonly jobId: string;
  readonly ownerId: string | null;
  readonly workloadKey?: string | null;
}

/**
 * Changes recorded by one write: `notices` go into the write's own transaction (pg_notify, which
 * PostgreSQL delivers to the other hubs at its commit, and never if it rolls back); `publish`
 * tells this process's listeners once the write has committed.
 */
export interface News {
  readonly notices: readonly string[];
  publish(): void;
}

/** The change feed's "table" of announcements (channel hub_changes, see ChangeFeed). */
const TABLE = 'cluster_execution_change';
/** NOTIFY refuses payloads of 8000 bytes or more: a long message is cut well below. */
const MAX_NOTICE_BYTES = 7000;
/** What an announcement keeps of a message (a PlacementFailed lists every node's unmet constraint). */
const MAX_MESSAGE_CHARS = 2000;

const NO_NEWS: News = { notices: [], publish: () => undefined };

function base(execution: AnnouncedExecution): Pick<ExecutionChange, 'jobId' | 'executionId' | 'ownerId' | 'workloadKey'> {
  return {
    jobId: execution.jobId,
    executionId: execution.id,
    ownerId: execution.ownerId ?? '',
    ...(execution.workloadKey !== undefined && execution.workloadKey !== null && { workloadKey: execution.workloadKey }),
  };
}

function cut(message: string, chars: number): string {
  return message.length <= chars ? message : `${message.slice(0, Math.max(0, chars - 1))}…`;
}

function eventOf(event: TaskEvent | undefined): Pick<ExecutionChange, 'eventType' | 'message'> {
  return event ? { eventType: event.type, message: cut(event.message, MAX_MESSAGE_CHARS) } : {};
}

/**
 * Announces each change of an execution (started, ended, placement failed, placeable again) once
 * the transaction that records it has committed: to listeners in this process, and through the
 * change feed to every other hub, where the same listeners hear it. The pipeline engine (and the
 * sessions' and libraries') reacts to these rather than polling the cluster; when its feed was
 * interrupted it hears `reconnected` and reads the database again, since what was announced
 * meanwhile is lost. A hub hears its own notices on the feed too: those carry its origin and are
 * dropped, as its listeners have heard them already.
 *
 * Every record of a change carries its notices in the statement it already runs (see
 * ClusterRepository.transition), built from rows the scheduler has in hand: announcing adds no
 * statement to the job path.
 */
@Injectable()
export class ExecutionAnnouncements {
  /** This process's, so that it drops its own notices when the feed brings them back. */
  private readonly origin = randomUUID();
  private readonly listeners = new Set<ExecutionChangeListener>();
  private readonly logger: Logger;

  constructor(changes: ChangeFeed, logger: HubLogger) {
    this.logger = logger.for('cluster');
    changes.subscribe(TABLE, (notice) => {
      if (notice === 'reset') return;
      const { origin, change } = notice as RowChange & { origin?: string; change?: ExecutionChange };
      if (origin !== this.origin && change) this.deliver(change);
    });
    changes.onReconnect(() => this.deliver('reconnected'));
  }

  /** Calls `listener` with each change of an execution from now on, in any hub; answers what unsubscribes it. */
  subscribe(listener: ExecutionChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The news of `changes`, for the write that records them. */
  news(...changes: readonly ExecutionChange[]): News {
    if (changes.length === 0) return NO_NEWS;
    return {
      notices: changes.map((change) => this.noticeOf(change)),
      // Soon rather than now: a listener's work never runs inside the scheduler's step.
      publish: () => queueMicrotask(() => changes.forEach((change) => this.deliver(change))),
    };
  }

  started(execution: AnnouncedExecution, taskState: TaskState): ExecutionChange {
    return { kind: 'started', ...base(execution), ...(taskState.startedAt && { startedAt: taskState.startedAt }) };
  }

  /** An end, as `taskState` records it once ended (its last event is the end's). */
  ended(execution: AnnouncedExecution, status: 'completed' | 'failed' | 'lost', exitCode: number | null, taskState: TaskState): ExecutionChange {
    return {
      kind: 'ended',
      ...base(execution),
      status,
      exitCode,
      ...(taskState.finishedAt && { finishedAt: taskState.finishedAt }),
      ...eventOf(taskState.events.at(-1)),
    };
  }

  /**
   * What a placement round records: each PlacementFailed it notes, and each execution whose last
   * look failed that it claims or notes waiting for a CPU (placeable again).
   */
  ofPlacement(pending: readonly (AnnouncedExecution & { readonly lastEvent: TaskEvent | null })[], placement: Placement): News {
    const byId = new Map(pending.map((execution) => [execution.id, execution]));
    const changes: ExecutionChange[] = [];
    const placeable = (id: string) => {
      const execution = byId.get(id);
      if (execution?.lastEvent?.type === 'PlacementFailed') changes.push({ kind: 'placeable', ...base(execution) });
    };
    for (const { id, event } of placement.notes) {
      const execution = byId.get(id);
      if (event.type === 'PlacementFailed') {
        if (execution) changes.push({ kind: 'placementFailed', ...base(execution), ...eventOf(event) });
      } else placeable(id);
    }
    for (const claim of placement.claims) placeable(claim.id);
    return this.news(...changes);
  }

  private noticeOf(change: ExecutionChange): string {
    let message = change.message;
    for (;;) {
      const notice = JSON.stringify({ table: TABLE, origin: this.origin, change: message === undefined ? change : { ...change, message } });
      const over = Buffer.byteLength(notice) - MAX_NOTICE_BYTES;
      // Each character cut takes a byte or more off (ids are UUIDs and workload keys short: see ClusterService.run).
      if (over <= 0 || !message) return notice;
      message = message.length > over + 8 ? cut(message, message.length - over - 8) : '';
    }
  }

  private deliver(change: ExecutionChange | 'reconnected'): void {
    for (const listener of this.listeners)
      try {
        listener(change);
      } catch (error) {
        this.logger.error({ err: error, change }, 'A listener to execution changes failed');
      }
  }
}

import { taskEvent } from './cluster.repository.js';
import type { Outcome } from './drivers/cluster-driver.js';
import type { TaskEvent, TaskState } from './entities/job-execution.entity.js';

/** Records a task started on a node. */
export function markRunning(taskState: TaskState, nodeName: string, startedAt: Date): void {
  taskState.status = 'running';
  taskState.startedAt = startedAt.toISOString();
  taskState.events.push(taskEvent('Started', `Started on ${nodeName}`, { node: nodeName }));
}

/** The event a task's end records, as the driver told it. */
export function endEventOf(outcome: Exclude<Outcome, { state: 'running' | 'queued' }>): TaskEvent {
  if (outcome.state === 'lost') return taskEvent('Lost', outcome.message);
  if ('limit' in outcome && outcome.limit) return taskEvent('LimitExceeded', outcome.message, { limit: outcome.limit, exitCode: String(outcome.exitCode) });
  return taskEvent('Terminated', outcome.message, { exitCode: String(outcome.exitCode) });
}

/**
 * Ends a task, at `finishedAt` when the driver knows (it may have ended while the hub was down),
 * else now; with `execution`, its status and exit code too. The scheduler's record of an end and a
 * stop (execution-stops.ts) both end a task through it, so that the two read alike.
 */
export function endTask(
  taskState: TaskState,
  execution: { status: string; exitCode: number | null } | undefined,
  status: 'completed' | 'failed' | 'lost',
  exitCode: number | null,
  event: TaskEvent,
  finishedAt?: string,
): void {
  if (execution) {
    execution.status = status;
    execution.exitCode = exitCode;
  }
  taskState.status = 'dead';
  taskState.failed = status !== 'completed';
  const ended = finishedAt ?? new Date().toISOString();
  // A fast task may write its exit code before the hub has recorded its start: it did not end before it began.
  const started = taskState.startedAt;
  taskState.finishedAt = started && Date.parse(started) > Date.parse(ended) ? started : ended;
  taskState.events.push(event);
}

/**
 * Dependent jobs (docs/cluster.md "Dependent jobs"; Slurm's `afterok`): a job submitted with
 * `dependsOn` another job of the same owner has its execution held (`held_by`): pending, counted
 * against the owner's active jobs, out of the placement line, until an execution of the job it
 * depends on completes with exit code 0; it is then placed as any other. When that job ends
 * otherwise (failed, lost, stopped; or it is gone), the held execution is ended, never run, with a
 * `DependencyFailed` event, which makes its job dead.
 *
 * Whether an execution is held is read, not written: placement asks whether its dependency has
 * succeeded (NOT_HELD), so no write at the dependency's end can miss a dependent submitted while
 * that end was being recorded. The hub that runs the dependency prepares a held execution's launch
 * on the same node while it runs (HELD_TO_PREPARE), and hands it the dependency's CPUs when it ends
 * well, in the statement that records that end (ClusterRepository.endAndHandOver): the next step
 * of a chain starts in the time of a write to its gate. Ending dependents is this file's: on every
 * hub, an announced end that is no success ends those held on it (each under its row lock, so
 * exactly once); a sweep at the scheduler's upkeep ends those whose dependency ended while no hub
 * heard it (a hub killed between the two).
 */
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { ConflictError, InvalidInputError } from '../common/errors/hub-errors.js';
import type { ExecutionAnnouncements, ExecutionChange } from './execution-announcements.js';
import type { StoppableIn } from './execution-stops.js';
import { taskEvent, type TaskEvent } from './entities/job-execution.entity.js';

/** Whether execution `x` ended well: completed, exit code 0, its task ended by its own exit (not past a limit). */
const endedWell = (x: string) => `${x}.status = 'completed' AND ${x}.exit_code = 0 AND ${x}.task_state->'events'->-1->>'type' = 'Terminated'`;

/** Whether an execution of job `job` ended well: what releases those held on it. */
const succeeded = (job: string) => `EXISTS (SELECT 1 FROM job_executions dep WHERE dep.job_id = ${job} AND ${endedWell('dep')})`;

/** Of the executions a statement's CTE `e` ended, the jobs of those that ended well (END_AND_HAND_OVER hands their CPUs to one held on them). */
export const ENDED_WELL_IN_E = `SELECT e.job_id FROM e WHERE ${endedWell('e')}`;

/** Whether the execution whose `held_by` is `column` (qualified: the check reads job_executions itself) may take a CPU as far as its dependency goes: it has none, or it succeeded. */
export const released = (column: string) => `(${column} IS NULL OR ${succeeded(column)})`;

/** Whether execution `e` may be placed as far as its dependency goes. */
export const NOT_HELD = released('e.held_by');

/**
 * Held executions this hub may prepare now, each with the node its dependency was claimed for by
 * this hub (`hub`, on `nodeIds`, an SQL array of its nodes): their launches wait at their gates on
 * that node, to take its CPUs when the dependency ends well. Locked as the line is, so that no
 * other hub claims them meanwhile. Values are written into the text (the placement round sends
 * several statements at once): `hub` an integer, `nodeIds` checked by the caller.
 */
export function heldToPrepareStatement(columns: string, ownerActive: string, limit: number, hub: number, nodeIds: string): string {
  return `SELECT ${columns}, e.held_by AS "heldBy", dep.node_id AS "afterNodeId" FROM job_executions e JOIN cluster_jobs j ON j.id = e.job_id
    CROSS JOIN LATERAL (
      SELECT d.node_id FROM job_executions d
      WHERE d.job_id = e.held_by AND d.status IN ('pending', 'running') AND d.hub = ${hub} AND d.node_id = ANY(${nodeIds}) LIMIT 1
    ) AS dep
    WHERE e.held_by IS NOT NULL AND e.status = 'pending' AND e.node_id IS NULL AND ${ownerActive}
    ORDER BY e.priority DESC, e.created, e.id
    LIMIT ${limit} FOR UPDATE OF e SKIP LOCKED`;
}

/** Of this hub's prepared held launches (`ids`, an SQL array checked by the caller), those whose dependency has succeeded meanwhile. */
export function releasedStatement(ids: string): string {
  return `SELECT e.id FROM job_executions e WHERE e.id = ANY(${ids}) AND e.status = 'pending' AND ${succeeded('e.held_by')}`;
}

/** What a held execution to end needs to be stopped. */
interface HeldExecution {
  readonly id: string;
  readonly executionDir: string;
  readonly heldBy: string;
}

/** How many held executions one sweep ends at the most (the next sweep takes the rest). */
const SWEEP_BATCH = 100;

/** The dependency of a job about to be submitted, as its submission must treat it. */
export type Dependency = 'held' | 'succeeded';

/** The event of a submission held on a job. */
export function heldEvent(jobId: string): TaskEvent {
  return taskEvent('Held', `Waiting for job ${jobId} to succeed (it depends on it)`, { dependsOn: jobId });
}

/**
 * Ends held executions whose dependency did not succeed: when an end is announced (in any hub),
 * and in a sweep. `stop` is the scheduler's (ExecutionStops.stopExecution): it ends an execution
 * under its row lock, lets go of a launch prepared for it wherever it is, and announces its end,
 * which ends those held on it in turn.
 */
export class DependentJobs {
  private unsubscribe?: () => void;

  constructor(
    private readonly dataSource: DataSource,
    private readonly announcements: ExecutionAnnouncements,
    private readonly stop: (execution: { id: string; executionDir: string }, event: TaskEvent, which: StoppableIn) => Promise<boolean>,
    /** Told of a dependency that succeeded: a launch this hub holds on it may go. */
    private readonly succeededJob: (jobId: string) => void,
    private readonly logger: Logger,
  ) {}

  listen(): void {
    this.unsubscribe = this.announcements.subscribe((change) => {
      if (change === 'reconnected' || change.kind !== 'ended') return;
      if (change.status === 'completed' && change.exitCode === 0 && change.eventType === 'Terminated') this.succeededJob(change.jobId);
      else void this.endHeldOn(change);
    });
  }

  close(): void {
    this.unsubscribe?.();
  }

  /**
   * How a submission depending on `jobId` for `ownerId` is treated: held, or not held at all as
   * that job has succeeded already. Refused when there is no such job of that owner (400), or it
   * has ended otherwise (409): nothing would ever release it.
   */
  async dependencyOf(jobId: string, ownerId: string): Promise<Dependency> {
    const rows: { ownerId: string | null; status: string; succeeded: boolean }[] = await this.dataSource.query(
      `SELECT j.owner_id AS "ownerId", j.status, ${succeeded('j.id')} AS succeeded FROM cluster_jobs j WHERE j.id = $1`,
      [jobId],
    );
    const job = rows[0];
    if (!job || job.ownerId !== ownerId) throw InvalidInputError.at('dependsOn', `No job ${jobId} of the same owner exists to depend on`);
    if (job.succeeded) return 'succeeded';
    if (job.status === 'dead') throw new ConflictError(`Job ${jobId} has ended without success: a job depending on it would never run`);
    return 'held';
  }

  /** Ends the executions held on the job whose end (no success) was announced. */
  private async endHeldOn(change: ExecutionChange): Promise<void> {
    try {
      const held: HeldExecution[] = await this.dataSource.query(
        `SELECT e.id, e.execution_dir AS "executionDir", e.held_by AS "heldBy" FROM job_executions e
         WHERE e.held_by = $1 AND e.status = 'pending' AND e.driver_ref IS NULL`,
        [change.jobId],
      );
      await this.end(
        held,
        `job ${change.jobId} ended ${change.status ?? 'failed'}${change.exitCode !== undefined && change.exitCode !== null ? ` (exit code ${change.exitCode})` : ''}`,
      );
    } catch (error) {
      this.logger.error({ err: error, jobId: change.jobId }, 'Could not end the executions held on a job that failed; the sweep will');
    }
  }

  /** Ends held executions whose dependency has ended without success or is gone, which no announcement ended (see the file's comment). */
  async sweep(): Promise<void> {
    const held: HeldExecution[] = await this.dataSource.query(
      `SELECT e.id, e.execution_dir AS "executionDir", e.held_by AS "heldBy" FROM job_executions e LEFT JOIN cluster_jobs d ON d.id = e.held_by
       WHERE e.held_by IS NOT NULL AND e.status = 'pending' AND e.driver_ref IS NULL
         AND (d.id IS NULL OR (d.status = 'dead' AND NOT ${succeeded('d.id')}))
       LIMIT ${SWEEP_BATCH}`,
    );
    await this.end(held, 'the job it depends on ended without success');
  }

  private async end(held: readonly HeldExecution[], why: string): Promise<void> {
    await Promise.all(
      held.map((execution) =>
        this.stop(
          execution,
          taskEvent('DependencyFailed', `Not run: ${why}, and this job depends on it (afterok)`, { dependsOn: execution.heldBy }),
          'notStarted',
        ),
      ),
    );
  }
}

import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { HubConfig } from '../common/config/hub-config.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../common/errors/hub-errors.js';
import { ClusterScheduler } from './cluster-scheduler.js';
import { overQuota, taskEvent } from './cluster.repository.js';
import { ClusterJob } from './entities/cluster-job.entity.js';
import { pendingTaskState } from './entities/job-execution.entity.js';

/** A job as a retry reads it, under its row lock. */
interface Retried {
  readonly status: string;
  readonly ownerId: string | null;
  readonly priority: number;
  readonly attempts: number;
  readonly reservedCpu: number;
  readonly reservedMemory: number;
  readonly taskName: string;
}

/**
 * Attempts (api-map §9): a job that ended runs again as a new execution of the same job, so that
 * its attempts stay one job, listed by the executions query, and announced under its id. A retry
 * names the attempt it asks for: an engine that crashed after asking asks again and gets the
 * attempt it asked for, not another. An attempt is work its owner waits for as a new job is, and
 * counts against the same quota.
 */
@Injectable()
export class Attempts {
  constructor(
    private readonly dataSource: DataSource,
    private readonly scheduler: ClusterScheduler,
    private readonly config: HubConfig,
  ) {}

  /**
   * Adds attempt `attempt` (1-based: 2 is the first retry) to an ended job and puts the job back to
   * `pending`, in one transaction under the job's row lock, then places it at once. Nothing is added
   * when the job has that many executions already. 409 when the job has not ended, or when the
   * attempt before the one asked for was never made; 429 (TooManyRequestsError) when its owner has
   * as many active jobs as they may.
   */
  async retry(jobId: string, attempt: number): Promise<ClusterJob> {
    if (!Number.isSafeInteger(attempt) || attempt < 2) throw InvalidInputError.at('attempt', 'A retry asks for attempt 2 or later');
    const maxActive = this.config.maxActiveJobsPerUser;
    const { job, added } = await this.dataSource.transaction(async (manager) => {
      const rows: Retried[] = await manager.query(
        `SELECT j.status, j.owner_id AS "ownerId", j.priority, x.attempts, x.reserved_cpu AS "reservedCpu", x.reserved_memory AS "reservedMemory", x.task_name AS "taskName"
         FROM cluster_jobs j
         CROSS JOIN LATERAL (SELECT count(*) OVER ()::int AS attempts, e.reserved_cpu, e.reserved_memory, e.task_name FROM job_executions e
                             WHERE e.job_id = j.id ORDER BY e.created DESC, e.id DESC LIMIT 1) AS x
         WHERE j.id = $1 FOR UPDATE OF j`,
        [jobId],
      );
      const found = rows[0];
      if (!found) throw new NotFoundError(`Job ${jobId} not found`);
      const read = () => manager.getRepository(ClusterJob).findOneByOrFail({ id: jobId });
      if (found.attempts >= attempt) return { job: await read(), added: false };
      if (found.status !== 'dead') throw new ConflictError(`Job ${jobId} has not ended (it is ${found.status}): only an ended job is retried`);
      if (found.attempts < attempt - 1) throw new ConflictError(`Job ${jobId} has ${found.attempts} attempts: attempt ${attempt} would skip one`);
      if (found.ownerId === null) throw new ConflictError(`Job ${jobId} belonged to a user since deleted: it is not retried`);
      const counted: unknown[] = await manager.query(
        `INSERT INTO cluster_active_jobs AS a (owner_id, active) VALUES ($1, 1)
         ON CONFLICT (owner_id) DO UPDATE SET active = a.active + 1 WHERE $2::integer <= 0 OR a.active < $2
         RETURNING a.active`,
        [found.ownerId, maxActive],
      );
      if (counted.length === 0) throw overQuota(maxActive);
      const executionId = randomUUID();
      const taskState = pendingTaskState([taskEvent('Received', `Attempt ${attempt} received by the hub`, { attempt: String(attempt) })]);
      await manager.query(
        `INSERT INTO job_executions (id, job_id, status, task_name, task_state, reserved_cpu, reserved_memory, execution_dir, priority, created, modified)
         VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, now(), now())`,
        [executionId, jobId, found.taskName, taskState, found.reservedCpu, found.reservedMemory, this.scheduler.executionDir(executionId), found.priority],
      );
      await manager.query(`UPDATE cluster_jobs SET status = 'pending', finished_time = NULL, modified = now() WHERE id = $1`, [jobId]);
      // Delivered at commit: the other hubs place it at once too.
      await manager.query(`SELECT pg_notify('hub_changes', $1)`, [this.scheduler.queueNotice()]);
      return { job: await read(), added: true };
    });
    // Placed in this call's own turn, as a submission is.
    if (added) this.scheduler.submitted(job.priority, job.ownerId as string);
    return job;
  }
}

import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The job path's own columns and indexes: an execution carries its job's priority (fixed at
 * submission) so that the next in line is read from one index however long the queue, and the
 * number of the hub that claimed it, which alone starts, follows and settles it. Hubs number
 * themselves from a sequence; one holding its number's advisory lock is alive.
 */
export class ClusterJobPath1795354000000 implements MigrationInterface {
  name = 'ClusterJobPath1795354000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "job_executions" ADD "priority" integer NOT NULL DEFAULT 50`);
    await queryRunner.query(`UPDATE "job_executions" e SET "priority" = j."priority" FROM "cluster_jobs" j WHERE j."id" = e."job_id"`);
    await queryRunner.query(`ALTER TABLE "job_executions" ADD "hub" integer`);
    await queryRunner.query(`CREATE SEQUENCE "cluster_hub_numbers" AS integer CYCLE`);
    // The order the scheduler takes waiting executions in: those no node could run at the last look after the others, then by priority and age.
    await queryRunner.query(`DROP INDEX "job_executions_pending_idx"`);
    await queryRunner.query(
      `CREATE INDEX "job_executions_pending_idx" ON "job_executions" ((coalesce(task_state->'events'->-1->>'type' = 'PlacementFailed', false)), "priority" DESC, "created", "id") WHERE "status" = 'pending' AND "node_id" IS NULL`,
    );
    // The CPUs taken on a node, and what a hub follows: only unfinished executions, however many have finished.
    await queryRunner.query(`CREATE INDEX "job_executions_active_node_idx" ON "job_executions" ("node_id") WHERE "status" IN ('pending', 'running')`);
    await queryRunner.query(`CREATE INDEX "job_executions_active_hub_idx" ON "job_executions" ("hub") WHERE "status" IN ('pending', 'running')`);
    // A user's active jobs, counted at each submission (HUB_MAX_ACTIVE_JOBS_PER_USER) without reading the finished ones.
    await queryRunner.query(`CREATE INDEX "cluster_jobs_active_owner_idx" ON "cluster_jobs" ("owner_id") WHERE "status" <> 'dead'`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "cluster_jobs_active_owner_idx"`);
    await queryRunner.query(`DROP INDEX "job_executions_active_hub_idx"`);
    await queryRunner.query(`DROP INDEX "job_executions_active_node_idx"`);
    await queryRunner.query(`DROP INDEX "job_executions_pending_idx"`);
    await queryRunner.query(`CREATE INDEX "job_executions_pending_idx" ON "job_executions" ("created") WHERE "status" = 'pending' AND "node_id" IS NULL`);
    await queryRunner.query(`DROP SEQUENCE "cluster_hub_numbers"`);
    await queryRunner.query(`ALTER TABLE "job_executions" DROP COLUMN "hub"`);
    await queryRunner.query(`ALTER TABLE "job_executions" DROP COLUMN "priority"`);
  }
}

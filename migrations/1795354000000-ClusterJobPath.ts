import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The job path's own columns and indexes: an execution carries its job's priority (fixed at
 * submission) so that the next in line is read from one index however long the queue, and the
 * number of the hub that claimed it, which alone starts, follows and settles it. Hubs number
 * themselves from a sequence; one holding its number's advisory lock is alive. Each user's count
 * of active jobs is kept rather than counted.
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
    // Each user's active (pending or running) jobs, kept by the submission and the transition that ends a job, so
    // that HUB_MAX_ACTIVE_JOBS_PER_USER is checked in the submission's own statement however many jobs wait.
    await queryRunner.query(
      `CREATE TABLE "cluster_active_jobs" ("owner_id" uuid NOT NULL, "active" integer NOT NULL, CONSTRAINT "cluster_active_jobs_pkey" PRIMARY KEY ("owner_id"), CONSTRAINT "cluster_active_jobs_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "users"("id") ON DELETE CASCADE)`,
    );
    await queryRunner.query(
      `INSERT INTO "cluster_active_jobs" ("owner_id", "active") SELECT "owner_id", count(*) FROM "cluster_jobs" WHERE "status" <> 'dead' AND "owner_id" IS NOT NULL GROUP BY "owner_id"`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "cluster_active_jobs"`);
    await queryRunner.query(`DROP INDEX "job_executions_active_hub_idx"`);
    await queryRunner.query(`DROP INDEX "job_executions_active_node_idx"`);
    await queryRunner.query(`DROP INDEX "job_executions_pending_idx"`);
    await queryRunner.query(`CREATE INDEX "job_executions_pending_idx" ON "job_executions" ("created") WHERE "status" = 'pending' AND "node_id" IS NULL`);
    await queryRunner.query(`DROP SEQUENCE "cluster_hub_numbers"`);
    await queryRunner.query(`ALTER TABLE "job_executions" DROP COLUMN "hub"`);
    await queryRunner.query(`ALTER TABLE "job_executions" DROP COLUMN "priority"`);
  }
}

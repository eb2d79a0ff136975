import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A workload's key (api-map §9, "what the cluster gives the workloads built on it"): an area that
 * submits a workload under a key it derives (a pipeline node's run, name and so on) gets the job
 * that key already names rather than a second one, after a crash or when two hubs race; the unique
 * index decides. Jobs without a key (those submitted through the API) are not in it.
 */
export class WorkloadKeys1795440000000 implements MigrationInterface {
  name = 'WorkloadKeys1795440000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "cluster_jobs" ADD "workload_key" text`);
    await queryRunner.query(`CREATE UNIQUE INDEX "cluster_jobs_workload_key_key" ON "cluster_jobs" ("workload_key") WHERE "workload_key" IS NOT NULL`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "cluster_jobs_workload_key_key"`);
    await queryRunner.query(`ALTER TABLE "cluster_jobs" DROP COLUMN "workload_key"`);
  }
}

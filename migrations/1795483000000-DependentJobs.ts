import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Dependent jobs (docs/cluster.md "Dependent jobs"): an execution may be held until a job it
 * depends on succeeds (`held_by`, that job's id; Slurm's afterok). It stays pending, out of the
 * placement line, until an execution of that job completes with exit code 0; it is ended, never
 * run, when that job ends otherwise. Held executions are few at any time: a partial index finds
 * those waiting on a job (at its end, and when placement prepares them).
 */
export class DependentJobs1795483000000 implements MigrationInterface {
  name = 'DependentJobs1795483000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "job_executions" ADD "held_by" uuid`);
    await queryRunner.query(`CREATE INDEX "job_executions_held_by_idx" ON "job_executions" ("held_by") WHERE "held_by" IS NOT NULL AND "status" = 'pending'`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "job_executions_held_by_idx"`);
    await queryRunner.query(`ALTER TABLE "job_executions" DROP COLUMN "held_by"`);
  }
}

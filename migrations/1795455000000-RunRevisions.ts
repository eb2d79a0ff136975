import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A run's revision: raised by every write of its nodes (each under the run's row lock), so that the
 * hub advancing a run keeps its nodes in memory between passes and reads them again only when
 * another hub (or another path) wrote in between, instead of reading every node on every pass.
 */
export class RunRevisions1795455000000 implements MigrationInterface {
  name = 'RunRevisions1795455000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "pipeline_runs" ADD "revision" integer NOT NULL DEFAULT 0`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "pipeline_runs" DROP COLUMN "revision"`);
  }
}

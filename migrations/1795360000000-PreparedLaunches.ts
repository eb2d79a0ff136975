import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An execution claimed for a node may be `prepared`: its launch set up ahead of a slot, waiting for
 * one. It takes no CPU of its node in placement until it is released into a slot (or goes back in
 * line), and its hub alone may release it.
 */
export class PreparedLaunches1795360000000 implements MigrationInterface {
  name = 'PreparedLaunches1795360000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE job_executions ADD COLUMN prepared boolean NOT NULL DEFAULT false');
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE job_executions DROP COLUMN prepared');
  }
}

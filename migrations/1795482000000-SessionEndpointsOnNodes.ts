import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A session's endpoint may be unknown until its launch says it (issue 29): on Slurm the job's own
 * launch picks the port on the node it lands on, and the hub learns `host:port` from the execution's
 * directory. A Ready session always has one: the proxy forwards to it.
 */
export class SessionEndpointsOnNodes1795482000000 implements MigrationInterface {
  name = 'SessionEndpointsOnNodes1795482000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "link_sessions" ALTER COLUMN "host" DROP NOT NULL, ALTER COLUMN "port" DROP NOT NULL`);
    await queryRunner.query(
      `ALTER TABLE "link_sessions" ADD CONSTRAINT "link_sessions_ready_endpoint_check" CHECK ("status" <> 'Ready' OR ("host" IS NOT NULL AND "port" IS NOT NULL))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "link_sessions" DROP CONSTRAINT "link_sessions_ready_endpoint_check"`);
    await queryRunner.query(`DELETE FROM "link_sessions" WHERE "host" IS NULL OR "port" IS NULL`);
    await queryRunner.query(`ALTER TABLE "link_sessions" ALTER COLUMN "host" SET NOT NULL, ALTER COLUMN "port" SET NOT NULL`);
  }
}

import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The uids the hub allocated to hub users for their jobs (from HUB_JOB_UID_BASE up). A uid is
 * never given twice: a row stays when its user is deleted (user_id null), and uids an account
 * turned out to hold are kept with no user.
 */
export class JobUids1795350000000 implements MigrationInterface {
  name = 'JobUids1795350000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "job_uids" ("uid" integer NOT NULL, "user_id" uuid, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "job_uids_pkey" PRIMARY KEY ("uid"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "job_uids_user_id_key" ON "job_uids" ("user_id")`);
    await queryRunner.query(
      `ALTER TABLE "job_uids" ADD CONSTRAINT "job_uids_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "job_uids"`);
  }
}

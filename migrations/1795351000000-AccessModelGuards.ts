import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The access model's guards (issue 13): a per-user token version that every token carries, so
 * that a password change, a reset or a deactivation revokes the tokens issued before it;
 * `unix_user_name` unique (jobs run as that account, so two users must never share it); and
 * failed logins counted per client address as well as per user name.
 *
 * A database that already holds two users with one unix user name keeps it on the oldest and
 * clears it on the others (their jobs then run as a uid the hub allocates), rather than refusing
 * to start: sharing the account was the flaw.
 */
export class AccessModelGuards1795351000000 implements MigrationInterface {
  name = 'AccessModelGuards1795351000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "users" ADD "token_version" integer NOT NULL DEFAULT 0`);
    await queryRunner.query(
      `UPDATE "users" SET "unix_user_name" = NULL WHERE "id" IN (
         SELECT "id" FROM (SELECT "id", row_number() OVER (PARTITION BY "unix_user_name" ORDER BY "created", "id") AS "rank" FROM "users" WHERE "unix_user_name" IS NOT NULL) AS "ranked"
         WHERE "rank" > 1)`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "users_unix_user_name_key" ON "users" ("unix_user_name")`);
    await queryRunner.query(
      `CREATE TABLE "login_address_failures" ("address" text NOT NULL, "failed_at" TIMESTAMP WITH TIME ZONE array NOT NULL, "locked_until" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "login_address_failures_pkey" PRIMARY KEY ("address"))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "login_address_failures"`);
    await queryRunner.query(`DROP INDEX "users_unix_user_name_key"`);
    await queryRunner.query(`ALTER TABLE "users" DROP COLUMN "token_version"`);
  }
}

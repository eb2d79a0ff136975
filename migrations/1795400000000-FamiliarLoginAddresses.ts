import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Smart lockout (issue 25, api-map §1): the addresses (IPv4, or IPv6 /64) from which each user
 * logged in successfully, and a failure count per user name and address kind — `network` '' for
 * every address unfamiliar to the user, one count per familiar address — so that failures from
 * elsewhere never lock a user out where they usually log in.
 */
export class FamiliarLoginAddresses1795400000000 implements MigrationInterface {
  name = 'FamiliarLoginAddresses1795400000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "login_familiar_addresses" ("user_id" uuid NOT NULL, "network" text NOT NULL, "last_success" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "login_familiar_addresses_pkey" PRIMARY KEY ("user_id", "network"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "login_familiar_addresses" ADD CONSTRAINT "login_familiar_addresses_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`ALTER TABLE "login_failures" ADD "network" text NOT NULL DEFAULT ''`);
    await queryRunner.query(`ALTER TABLE "login_failures" DROP CONSTRAINT "PK_8a86481fad69118be0d86a24f8f"`);
    await queryRunner.query(`ALTER TABLE "login_failures" ADD CONSTRAINT "login_failures_pkey" PRIMARY KEY ("name_key", "network")`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DELETE FROM "login_failures" WHERE "network" <> ''`);
    await queryRunner.query(`ALTER TABLE "login_failures" DROP CONSTRAINT "login_failures_pkey"`);
    await queryRunner.query(`ALTER TABLE "login_failures" DROP COLUMN "network"`);
    await queryRunner.query(`ALTER TABLE "login_failures" ADD CONSTRAINT "PK_8a86481fad69118be0d86a24f8f" PRIMARY KEY ("name_key")`);
    await queryRunner.query(`DROP TABLE "login_familiar_addresses"`);
  }
}

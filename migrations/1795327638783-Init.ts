import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Users (the identity core) and namespaces, with the `default` namespace of a fresh hub. */
export class Init1795327638783 implements MigrationInterface {
  name = 'Init1795327638783';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // Trigram indexes serve the case-insensitive CO/SW/ST list filters; pg_trgm is a trusted
    // extension, so the database owner may create it. fastupdate is off: lists are read far more
    // often than names are written, and a pending list would be scanned by every search.
    await queryRunner.query(`CREATE EXTENSION IF NOT EXISTS pg_trgm`);

    await queryRunner.query(
      `CREATE TABLE "users" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "user_name" text NOT NULL, "display_name" text, "email" text, "active" boolean NOT NULL DEFAULT true, "system" boolean NOT NULL DEFAULT false, "external_id" text, "unix_home_directory" text, "unix_user_name" text, "user_principal_name" text, "invitation_pending" boolean NOT NULL DEFAULT false, "invitation_expiry" TIMESTAMP(3) WITH TIME ZONE, "password_hash" text, "version" integer NOT NULL, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "modified" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_a3ffb1c0c8416b9fc6f907b7433" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "users_user_name_lower_key" ON "users" (lower("user_name"))`);

    await queryRunner.query(
      `CREATE TABLE "namespaces" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "name" text NOT NULL, "description" text, "is_default" boolean NOT NULL DEFAULT false, "version" integer NOT NULL, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "modified" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_35c142e0f0de70165cc1a74b2cb" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "namespaces_name_lower_key" ON "namespaces" (lower("name"))`);
    await queryRunner.query(`CREATE INDEX "namespaces_name_trgm_idx" ON "namespaces" USING gin ("name" gin_trgm_ops) WITH (fastupdate = off)`);
    await queryRunner.query(`CREATE UNIQUE INDEX "namespaces_one_default_key" ON "namespaces" ("is_default") WHERE "is_default"`);
    await queryRunner.query(`CREATE INDEX "namespaces_modified_idx" ON "namespaces" ("modified", "id")`);
    await queryRunner.query(`CREATE INDEX "namespaces_created_idx" ON "namespaces" ("created", "id")`);

    await queryRunner.query(
      `INSERT INTO "namespaces" ("name", "description", "is_default", "version") VALUES ('default', 'The namespace of a fresh hub', true, 1)`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "namespaces"`);
    await queryRunner.query(`DROP TABLE "users"`);
  }
}

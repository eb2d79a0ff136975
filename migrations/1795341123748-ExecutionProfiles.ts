import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Execution profiles and their namespace bindings, and the `Standard` profile of a fresh hub,
 * bound as the default of the `default` namespace. At most one profile is the hub's default, and
 * at most one binding per namespace is its default (partial unique indexes); profiles and
 * namespaces cannot be deleted while bound (foreign keys, ON DELETE RESTRICT).
 */
export class ExecutionProfiles1795341123748 implements MigrationInterface {
  name = 'ExecutionProfiles1795341123748';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "execution_profiles" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "name" text NOT NULL, "description" text, "is_default" boolean NOT NULL DEFAULT false, "environment" jsonb NOT NULL DEFAULT '{}', "constraints" jsonb NOT NULL DEFAULT '[]', "properties" jsonb NOT NULL DEFAULT '{}', "version" integer NOT NULL, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "modified" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_34efa63b87634d8806d2d107460" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "execution_profiles_name_lower_key" ON "execution_profiles" (lower("name"))`);
    await queryRunner.query(`CREATE INDEX "execution_profiles_name_trgm_idx" ON "execution_profiles" USING gin ("name" gin_trgm_ops) WITH (fastupdate = off)`);
    await queryRunner.query(`CREATE UNIQUE INDEX "execution_profiles_one_default_key" ON "execution_profiles" ("is_default") WHERE "is_default"`);
    await queryRunner.query(`CREATE INDEX "execution_profiles_modified_idx" ON "execution_profiles" ("modified", "id")`);
    await queryRunner.query(`CREATE INDEX "execution_profiles_created_idx" ON "execution_profiles" ("created", "id")`);

    await queryRunner.query(
      `CREATE TABLE "execution_profile_bindings" ("id" uuid NOT NULL, "execution_profile_id" uuid NOT NULL, "namespace_id" uuid NOT NULL, "is_default" boolean NOT NULL DEFAULT false, "version" integer NOT NULL, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "modified" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "execution_profile_bindings_pkey" PRIMARY KEY ("id"))`,
    );
    // Also the index of the profile foreign key.
    await queryRunner.query(
      `CREATE UNIQUE INDEX "execution_profile_bindings_unique_key" ON "execution_profile_bindings" ("execution_profile_id", "namespace_id")`,
    );
    await queryRunner.query(`CREATE INDEX "execution_profile_bindings_namespace_id_idx" ON "execution_profile_bindings" ("namespace_id")`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "execution_profile_bindings_one_default_key" ON "execution_profile_bindings" ("namespace_id") WHERE "is_default"`,
    );
    await queryRunner.query(
      `ALTER TABLE "execution_profile_bindings" ADD CONSTRAINT "execution_profile_bindings_profile_id_fkey" FOREIGN KEY ("execution_profile_id") REFERENCES "execution_profiles"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "execution_profile_bindings" ADD CONSTRAINT "execution_profile_bindings_namespace_id_fkey" FOREIGN KEY ("namespace_id") REFERENCES "namespaces"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );

    await queryRunner.query(
      `INSERT INTO "execution_profiles" ("name", "description", "is_default", "version") VALUES ('Standard', 'The profile of a fresh hub: no constraints, no extra environment', true, 1)`,
    );
    await queryRunner.query(
      `INSERT INTO "execution_profile_bindings" ("id", "execution_profile_id", "namespace_id", "is_default", "version")
       SELECT gen_random_uuid(), p.id, n.id, true, 1 FROM "execution_profiles" p, "namespaces" n WHERE p.name = 'Standard' AND n.name = 'default'`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "execution_profile_bindings"`);
    await queryRunner.query(`DROP TABLE "execution_profiles"`);
  }
}

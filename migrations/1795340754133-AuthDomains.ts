import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Auth domains and credentials. A domain's namespace is a foreign key (ON DELETE RESTRICT); a
 * credential goes with its domain (CASCADE) and, by a trigger, with its principal (a user or a
 * group: two tables). Ranks are unique per domain through a deferrable constraint, so that a
 * renumbering may pass through duplicates inside its transaction.
 */
export class AuthDomains1795340754133 implements MigrationInterface {
  name = 'AuthDomains1795340754133';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "auth_domains" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "namespace_id" uuid NOT NULL, "name" text NOT NULL, "description" text, "allow_personal_credentials" boolean NOT NULL DEFAULT false, "version" integer NOT NULL, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "modified" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_fe654527206da1c68b7a95564f8" PRIMARY KEY ("id"))`,
    );
    // Also the index of the namespace foreign key.
    await queryRunner.query(`CREATE UNIQUE INDEX "auth_domains_name_lower_key" ON "auth_domains" ("namespace_id", lower("name"))`);
    await queryRunner.query(`CREATE INDEX "auth_domains_name_trgm_idx" ON "auth_domains" USING gin ("name" gin_trgm_ops) WITH (fastupdate = off)`);
    await queryRunner.query(`CREATE INDEX "auth_domains_modified_idx" ON "auth_domains" ("modified", "id")`);
    await queryRunner.query(`CREATE INDEX "auth_domains_created_idx" ON "auth_domains" ("created", "id")`);
    await queryRunner.query(
      `ALTER TABLE "auth_domains" ADD CONSTRAINT "auth_domains_namespace_id_fkey" FOREIGN KEY ("namespace_id") REFERENCES "namespaces"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );

    await queryRunner.query(
      `CREATE TABLE "credentials" ("id" uuid NOT NULL, "auth_domain_id" uuid NOT NULL, "principal_id" uuid NOT NULL, "principal_type" text NOT NULL, "disabled" boolean NOT NULL DEFAULT false, "label" text NOT NULL, "type" text NOT NULL, "rank" bigint NOT NULL, "vault_path" text, "sealed_data" bytea, "version" integer NOT NULL, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "modified" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "credentials_domain_rank_key" UNIQUE ("auth_domain_id", "rank") DEFERRABLE INITIALLY IMMEDIATE, CONSTRAINT "PK_1e38bc43be6697cdda548ad27a6" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "credentials_modified_idx" ON "credentials" ("modified", "id")`);
    await queryRunner.query(`CREATE INDEX "credentials_created_idx" ON "credentials" ("created", "id")`);
    await queryRunner.query(`CREATE INDEX "credentials_principal_id_idx" ON "credentials" ("principal_id")`);
    // Resolve: a caller's and their groups' credentials in a domain, best rank first.
    await queryRunner.query(`CREATE INDEX "credentials_resolve_idx" ON "credentials" ("auth_domain_id", "principal_id", "rank")`);
    await queryRunner.query(
      `ALTER TABLE "credentials" ADD CONSTRAINT "credentials_auth_domain_id_fkey" FOREIGN KEY ("auth_domain_id") REFERENCES "auth_domains"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );

    await queryRunner.query(`
      CREATE FUNCTION hub_delete_principal_credentials() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM credentials WHERE principal_id = OLD.id;
        RETURN NULL;
      END
      $$`);
    for (const table of ['users', 'groups']) {
      await queryRunner.query(
        `CREATE TRIGGER "${table}_delete_credentials" AFTER DELETE ON "${table}" FOR EACH ROW EXECUTE FUNCTION hub_delete_principal_credentials()`,
      );
    }
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['users', 'groups']) await queryRunner.query(`DROP TRIGGER "${table}_delete_credentials" ON "${table}"`);
    await queryRunner.query(`DROP FUNCTION hub_delete_principal_credentials()`);
    await queryRunner.query(`DROP TABLE "credentials"`);
    await queryRunner.query(`DROP TABLE "auth_domains"`);
  }
}

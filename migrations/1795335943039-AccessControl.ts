import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Roles, role bindings and the audit. A binding's principal is a user or a group (two tables),
 * so triggers delete the bindings of a deleted principal; its namespace is a foreign key
 * (ON DELETE RESTRICT), null meaning every namespace. Changes to roles and bindings are
 * announced on hub_changes, so every hub drops the permissions it cached.
 */
export class AccessControl1795335943039 implements MigrationInterface {
  name = 'AccessControl1795335943039';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "roles" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "name" text NOT NULL, "description" text, "permissions" jsonb NOT NULL DEFAULT '[]', "system" boolean NOT NULL DEFAULT false, "version" integer NOT NULL, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "modified" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_c1433d71a4838793a49dcad46ab" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "roles_name_lower_key" ON "roles" (lower("name"))`);
    await queryRunner.query(`CREATE INDEX "roles_name_trgm_idx" ON "roles" USING gin ("name" gin_trgm_ops) WITH (fastupdate = off)`);
    await queryRunner.query(`CREATE INDEX "roles_modified_idx" ON "roles" ("modified", "id")`);
    await queryRunner.query(`CREATE INDEX "roles_created_idx" ON "roles" ("created", "id")`);

    await queryRunner.query(
      `CREATE TABLE "role_bindings" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "role_id" uuid NOT NULL, "principal_id" uuid NOT NULL, "principal_type" text NOT NULL, "namespace_id" uuid, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_75acd622be13220fadd56bfdfbe" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "role_bindings_unique_key" ON "role_bindings" ("role_id", "principal_id", coalesce("namespace_id", '00000000-0000-0000-0000-000000000000'::uuid))`,
    );
    await queryRunner.query(`CREATE INDEX "role_bindings_created_idx" ON "role_bindings" ("created", "id")`);
    await queryRunner.query(`CREATE INDEX "role_bindings_principal_id_idx" ON "role_bindings" ("principal_id")`);
    await queryRunner.query(`CREATE INDEX "role_bindings_namespace_id_idx" ON "role_bindings" ("namespace_id")`);
    await queryRunner.query(
      `ALTER TABLE "role_bindings" ADD CONSTRAINT "FK_028338e4591fbcd462540ed00a2" FOREIGN KEY ("role_id") REFERENCES "roles"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "role_bindings" ADD CONSTRAINT "role_bindings_namespace_id_fkey" FOREIGN KEY ("namespace_id") REFERENCES "namespaces"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );

    await queryRunner.query(
      `CREATE TABLE "audit_records" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "when" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "object" text NOT NULL, "namespace" text NOT NULL, "action" text NOT NULL, "user_id" uuid NOT NULL, "groups" uuid array NOT NULL, "decision" text NOT NULL, "purpose" text NOT NULL, CONSTRAINT "PK_f903ebdf175f062be69747b0f18" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "audit_records_when_idx" ON "audit_records" ("when", "id")`);
    await queryRunner.query(`CREATE INDEX "audit_records_user_id_idx" ON "audit_records" ("user_id", "when")`);
    // Denials are few among many Allows, and the first thing an operator asks for.
    await queryRunner.query(`CREATE INDEX "audit_records_decision_idx" ON "audit_records" ("decision", "when")`);
    await queryRunner.query(`CREATE INDEX "audit_records_object_idx" ON "audit_records" ("object", "id")`);
    await queryRunner.query(`CREATE INDEX "audit_records_object_trgm_idx" ON "audit_records" USING gin ("object" gin_trgm_ops)`);

    await queryRunner.query(`
      CREATE FUNCTION hub_delete_principal_bindings() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM role_bindings WHERE principal_id = OLD.id;
        RETURN NULL;
      END
      $$`);
    for (const table of ['users', 'groups']) {
      await queryRunner.query(
        `CREATE TRIGGER "${table}_delete_bindings" AFTER DELETE ON "${table}" FOR EACH ROW EXECUTE FUNCTION hub_delete_principal_bindings()`,
      );
    }
    for (const table of ['roles', 'role_bindings']) {
      await queryRunner.query(
        `CREATE TRIGGER "${table}_notify_change" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "${table}" FOR EACH STATEMENT EXECUTE FUNCTION hub_notify_table_change()`,
      );
    }
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "users_delete_bindings" ON "users"`);
    await queryRunner.query(`DROP TRIGGER "groups_delete_bindings" ON "groups"`);
    await queryRunner.query(`DROP FUNCTION hub_delete_principal_bindings()`);
    await queryRunner.query(`DROP TABLE "audit_records"`);
    await queryRunner.query(`DROP TABLE "role_bindings"`);
    await queryRunner.query(`DROP TABLE "roles"`);
  }
}

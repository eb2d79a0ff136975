import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Groups and their nesting, invitations, login throttling, and the indexes of the user and
 * group lists. Membership changes are announced on hub_changes, once per statement (callers
 * carry their transitive groups, so a cache drops them all).
 */
export class Identity1795333874460 implements MigrationInterface {
  name = 'Identity1795333874460';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "groups" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "name" text NOT NULL, "external_id" text, "system" boolean NOT NULL DEFAULT false, "version" integer NOT NULL, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "modified" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_659d1483316afb28afd3a90646e" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "groups_name_lower_key" ON "groups" (lower("name"))`);
    await queryRunner.query(`CREATE UNIQUE INDEX "groups_external_id_key" ON "groups" ("external_id")`);
    await queryRunner.query(`CREATE INDEX "groups_name_trgm_idx" ON "groups" USING gin ("name" gin_trgm_ops) WITH (fastupdate = off)`);
    await queryRunner.query(`CREATE INDEX "groups_modified_idx" ON "groups" ("modified", "id")`);
    await queryRunner.query(`CREATE INDEX "groups_created_idx" ON "groups" ("created", "id")`);

    await queryRunner.query(
      `CREATE TABLE "group_user_members" ("group_id" uuid NOT NULL, "user_id" uuid NOT NULL, CONSTRAINT "PK_c7a1abd7ab134674b4bc27f7878" PRIMARY KEY ("group_id", "user_id"))`,
    );
    await queryRunner.query(`CREATE INDEX "group_user_members_user_id_idx" ON "group_user_members" ("user_id")`);
    await queryRunner.query(
      `ALTER TABLE "group_user_members" ADD CONSTRAINT "FK_37495c90cc6b7b61abb68de4b22" FOREIGN KEY ("group_id") REFERENCES "groups"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "group_user_members" ADD CONSTRAINT "FK_d5fc3b6feef2b438f105e238fec" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `CREATE TABLE "group_group_members" ("group_id" uuid NOT NULL, "member_group_id" uuid NOT NULL, CONSTRAINT "PK_82fc497581f60a7e392376bdae8" PRIMARY KEY ("group_id", "member_group_id"))`,
    );
    await queryRunner.query(`CREATE INDEX "group_group_members_member_group_id_idx" ON "group_group_members" ("member_group_id")`);
    await queryRunner.query(
      `ALTER TABLE "group_group_members" ADD CONSTRAINT "FK_472b785162e224c8bd314abc9d0" FOREIGN KEY ("group_id") REFERENCES "groups"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "group_group_members" ADD CONSTRAINT "FK_678aaa28e520440b4e17463a5f9" FOREIGN KEY ("member_group_id") REFERENCES "groups"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );

    await queryRunner.query(
      `CREATE TABLE "user_invitations" ("user_id" uuid NOT NULL, "token_hash" bytea NOT NULL, CONSTRAINT "UQ_26608b452c35698c0512c05ffd1" UNIQUE ("token_hash"), CONSTRAINT "PK_5b449d2aa47c4f912482e1d8f03" PRIMARY KEY ("user_id"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "user_invitations" ADD CONSTRAINT "FK_5b449d2aa47c4f912482e1d8f03" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `CREATE TABLE "login_failures" ("name_key" text NOT NULL, "failed_at" TIMESTAMP WITH TIME ZONE array NOT NULL, "locked_until" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_8a86481fad69118be0d86a24f8f" PRIMARY KEY ("name_key"))`,
    );

    await queryRunner.query(`CREATE UNIQUE INDEX "users_external_id_key" ON "users" ("external_id")`);
    await queryRunner.query(`CREATE INDEX "users_user_name_trgm_idx" ON "users" USING gin ("user_name" gin_trgm_ops) WITH (fastupdate = off)`);
    await queryRunner.query(`CREATE INDEX "users_display_name_trgm_idx" ON "users" USING gin ("display_name" gin_trgm_ops) WITH (fastupdate = off)`);
    await queryRunner.query(`CREATE INDEX "users_email_trgm_idx" ON "users" USING gin ("email" gin_trgm_ops) WITH (fastupdate = off)`);
    await queryRunner.query(`CREATE INDEX "users_display_name_lower_idx" ON "users" (lower("display_name"))`);
    // The principals list shows a user's display name, or its user name when it has none.
    await queryRunner.query(`CREATE INDEX "users_principal_name_lower_idx" ON "users" (lower(coalesce(nullif("display_name", ''), "user_name")))`);
    await queryRunner.query(
      `CREATE INDEX "users_principal_name_trgm_idx" ON "users" USING gin ((coalesce(nullif("display_name", ''), "user_name")) gin_trgm_ops) WITH (fastupdate = off)`,
    );
    await queryRunner.query(`CREATE INDEX "users_modified_idx" ON "users" ("modified", "id")`);
    await queryRunner.query(`CREATE INDEX "users_created_idx" ON "users" ("created", "id")`);

    await queryRunner.query(`
      CREATE FUNCTION hub_notify_table_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('hub_changes', json_build_object('table', TG_TABLE_NAME)::text);
        RETURN NULL;
      END
      $$`);
    for (const table of ['group_user_members', 'group_group_members']) {
      await queryRunner.query(
        `CREATE TRIGGER "${table}_notify_change" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "${table}" FOR EACH STATEMENT EXECUTE FUNCTION hub_notify_table_change()`,
      );
    }
    await queryRunner.query(`CREATE TRIGGER "groups_notify_change" AFTER UPDATE OR DELETE ON "groups" FOR EACH ROW EXECUTE FUNCTION hub_notify_change()`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "login_failures"`);
    await queryRunner.query(`DROP TABLE "user_invitations"`);
    await queryRunner.query(`DROP TABLE "group_group_members"`);
    await queryRunner.query(`DROP TABLE "group_user_members"`);
    await queryRunner.query(`DROP TABLE "groups"`);
    await queryRunner.query(`DROP FUNCTION hub_notify_table_change()`);
    for (const index of [
      'users_external_id_key',
      'users_user_name_trgm_idx',
      'users_display_name_trgm_idx',
      'users_email_trgm_idx',
      'users_display_name_lower_idx',
      'users_modified_idx',
      'users_created_idx',
    ]) {
      await queryRunner.query(`DROP INDEX "${index}"`);
    }
  }
}

import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Pipeline entries: pipelines and folders in one table (issue 27). A folder holds entries through
 * `folder_id` (RESTRICT: a folder that holds entries is not deleted), an entry lives in a namespace
 * (RESTRICT, as every area's). Names are unique per namespace and folder ignoring case, the top
 * level keyed by the nil id (PostgreSQL 13 has no NULLS NOT DISTINCT). `total` of the list comes
 * from counts per namespace and type kept by statement triggers, as the cluster's lists' do.
 */
export class PipelineEntries1795430000000 implements MigrationInterface {
  name = 'PipelineEntries1795430000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "pipeline_entries" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "namespace_id" uuid NOT NULL, "type" text NOT NULL, "name" text NOT NULL, "folder_id" uuid, "folder_path" text NOT NULL, "spec" jsonb, "version" integer NOT NULL, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "modified" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "pipeline_entries_type_check" CHECK ("type" IN ('Pipeline', 'Folder')), CONSTRAINT "pipeline_entries_folder_spec_check" CHECK ("type" = 'Pipeline' OR "spec" IS NULL), CONSTRAINT "PK_835e60d4a0d87280e0bff5c4c8a" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "pipeline_entries_name_key" ON "pipeline_entries" ("namespace_id", (coalesce("folder_id", '00000000-0000-0000-0000-000000000000'::uuid)), lower("name"))`,
    );
    // Names sort and match by prefix lower-cased, byte by byte: one btree index serves both; a folder's entries and a path's by name alike.
    await queryRunner.query(`CREATE INDEX "pipeline_entries_name_lower_idx" ON "pipeline_entries" ((lower("name") COLLATE "C"), "id")`);
    await queryRunner.query(`CREATE INDEX "pipeline_entries_name_trgm_idx" ON "pipeline_entries" USING gin ("name" gin_trgm_ops) WITH (fastupdate = off)`);
    // Also the index of the folder foreign key.
    await queryRunner.query(`CREATE INDEX "pipeline_entries_folder_name_idx" ON "pipeline_entries" ("folder_id", (lower("name") COLLATE "C"), "id")`);
    await queryRunner.query(`CREATE INDEX "pipeline_entries_folder_path_name_idx" ON "pipeline_entries" ("folder_path", (lower("name") COLLATE "C"), "id")`);
    // A caller narrowed to namespaces lists through these (and the namespace foreign key uses the first).
    await queryRunner.query(`CREATE INDEX "pipeline_entries_namespace_name_idx" ON "pipeline_entries" ("namespace_id", (lower("name") COLLATE "C"), "id")`);
    await queryRunner.query(`CREATE INDEX "pipeline_entries_namespace_created_idx" ON "pipeline_entries" ("namespace_id", "created", "id")`);
    await queryRunner.query(`CREATE INDEX "pipeline_entries_created_idx" ON "pipeline_entries" ("created", "id")`);
    await queryRunner.query(`CREATE INDEX "pipeline_entries_modified_idx" ON "pipeline_entries" ("modified", "id")`);
    await queryRunner.query(
      `ALTER TABLE "pipeline_entries" ADD CONSTRAINT "pipeline_entries_namespace_id_fkey" FOREIGN KEY ("namespace_id") REFERENCES "namespaces"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "pipeline_entries" ADD CONSTRAINT "pipeline_entries_folder_id_fkey" FOREIGN KEY ("folder_id") REFERENCES "pipeline_entries"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );

    await queryRunner.query(`CREATE TABLE "pipeline_entry_counts" ("namespace_id" uuid NOT NULL, "type" text NOT NULL, "n" bigint NOT NULL)`);
    await queryRunner.query(`CREATE INDEX "pipeline_entry_counts_key_idx" ON "pipeline_entry_counts" ("namespace_id", "type") INCLUDE ("n")`);
    // One row per key and statement: +rows inserted, -rows deleted, both for an update that moves a row between keys.
    await queryRunner.query(`
      CREATE FUNCTION "pipeline_entry_counts_change"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO pipeline_entry_counts (namespace_id, type, n) SELECT namespace_id, type, count(*) FROM new_rows GROUP BY namespace_id, type;
        ELSIF TG_OP = 'DELETE' THEN
          INSERT INTO pipeline_entry_counts (namespace_id, type, n) SELECT namespace_id, type, -count(*) FROM old_rows GROUP BY namespace_id, type;
        ELSIF TG_OP = 'UPDATE' THEN
          INSERT INTO pipeline_entry_counts (namespace_id, type, n)
          SELECT namespace_id, type, sum(n) FROM (SELECT namespace_id, type, 1 AS n FROM new_rows UNION ALL SELECT namespace_id, type, -1 AS n FROM old_rows) d
          GROUP BY namespace_id, type HAVING sum(n) <> 0;
        ELSE
          DELETE FROM pipeline_entry_counts;
        END IF;
        RETURN NULL;
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER "pipeline_entry_counts_insert" AFTER INSERT ON "pipeline_entries" REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "pipeline_entry_counts_change"()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER "pipeline_entry_counts_update" AFTER UPDATE ON "pipeline_entries" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "pipeline_entry_counts_change"()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER "pipeline_entry_counts_delete" AFTER DELETE ON "pipeline_entries" REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "pipeline_entry_counts_change"()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER "pipeline_entry_counts_truncate" AFTER TRUNCATE ON "pipeline_entries" FOR EACH STATEMENT EXECUTE FUNCTION "pipeline_entry_counts_change"()`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const event of ['insert', 'update', 'delete', 'truncate'])
      await queryRunner.query(`DROP TRIGGER "pipeline_entry_counts_${event}" ON "pipeline_entries"`);
    await queryRunner.query(`DROP FUNCTION "pipeline_entry_counts_change"()`);
    await queryRunner.query(`DROP TABLE "pipeline_entry_counts"`);
    await queryRunner.query(`DROP TABLE "pipeline_entries"`);
  }
}

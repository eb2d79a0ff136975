import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Published libraries of datasets (issue 30): definitions (what a library reads, in a namespace),
 * published libraries (a definition served by a pool of workers; at most one per definition, and a
 * published definition cannot be deleted: the foreign key RESTRICTs), their workers (one row per
 * index of the pool, each the `service` job it runs now, with its endpoint, so that any hub relays
 * to it and a restarted hub follows it), and asynchronous operations (their results kept in the
 * database until their reap time, so that any hub answers for them). Lists stay small (a few per
 * namespace); the definitions' name, creation and modification orders have their indexes all the same.
 */
export class Libraries1795480000000 implements MigrationInterface {
  name = 'Libraries1795480000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "library_definitions" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "namespace_id" uuid NOT NULL, "name" text NOT NULL, "engine" text NOT NULL, "path" text, "options" jsonb NOT NULL DEFAULT '{}', "version" integer NOT NULL DEFAULT 1, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "modified" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "library_definitions_engine_check" CHECK ("engine" IN ('csv', 'parquet', 'json', 'duckdb', 'sas7bdat', 'postgres')), CONSTRAINT "library_definitions_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "library_definitions" ADD CONSTRAINT "library_definitions_namespace_id_fkey" FOREIGN KEY ("namespace_id") REFERENCES "namespaces"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "library_definitions_name_key" ON "library_definitions" ("namespace_id", "name")`);
    await queryRunner.query(`CREATE INDEX "library_definitions_name_idx" ON "library_definitions" ("name", "id")`);
    await queryRunner.query(`CREATE INDEX "library_definitions_created_idx" ON "library_definitions" ("created", "id")`);
    await queryRunner.query(`CREATE INDEX "library_definitions_modified_idx" ON "library_definitions" ("modified", "id")`);

    await queryRunner.query(
      `CREATE TABLE "published_libraries" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "definition_id" uuid NOT NULL, "execution_profile_id" uuid NOT NULL, "workers" integer NOT NULL, "publisher_id" uuid NOT NULL, "publisher_name" text NOT NULL, "failed_worker_count" integer NOT NULL DEFAULT 0, "start_time" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "published_libraries_workers_check" CHECK ("workers" > 0), CONSTRAINT "published_libraries_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "published_libraries" ADD CONSTRAINT "published_libraries_definition_id_fkey" FOREIGN KEY ("definition_id") REFERENCES "library_definitions"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "published_libraries" ADD CONSTRAINT "published_libraries_publisher_id_fkey" FOREIGN KEY ("publisher_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    // A definition is published at most once at a time.
    await queryRunner.query(`CREATE UNIQUE INDEX "published_libraries_definition_key" ON "published_libraries" ("definition_id")`);
    await queryRunner.query(`CREATE INDEX "published_libraries_publisher_idx" ON "published_libraries" ("publisher_id")`);

    await queryRunner.query(
      `CREATE TABLE "library_workers" ("published_library_id" uuid NOT NULL, "worker_index" integer NOT NULL, "generation" integer NOT NULL DEFAULT 0, "state" text NOT NULL DEFAULT 'starting', "job_id" uuid, "host" text, "port" integer, "secret" text, "start_time" TIMESTAMP(3) WITH TIME ZONE, "retry_at" TIMESTAMP(3) WITH TIME ZONE, "refused" boolean NOT NULL DEFAULT false, "message" text, CONSTRAINT "library_workers_state_check" CHECK ("state" IN ('starting', 'ready', 'failed', 'stopped')), CONSTRAINT "library_workers_pkey" PRIMARY KEY ("published_library_id", "worker_index"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "library_workers" ADD CONSTRAINT "library_workers_published_library_id_fkey" FOREIGN KEY ("published_library_id") REFERENCES "published_libraries"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "library_workers_job_key" ON "library_workers" ("job_id")`);
    // What the retry pass looks for: workers whose replacement the quota refused.
    await queryRunner.query(`CREATE INDEX "library_workers_failed_idx" ON "library_workers" ("retry_at") WHERE "state" = 'failed'`);

    await queryRunner.query(
      `CREATE TABLE "library_operations" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "published_library_id" uuid NOT NULL, "state" text NOT NULL DEFAULT 'queued', "method" text NOT NULL, "parameters" jsonb NOT NULL, "result" jsonb, "error" jsonb, "events" jsonb NOT NULL DEFAULT '[]', "start_time" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "reap_time" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "library_operations_state_check" CHECK ("state" IN ('queued', 'running', 'completed', 'failed', 'cancelled')), CONSTRAINT "library_operations_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "library_operations" ADD CONSTRAINT "library_operations_published_library_id_fkey" FOREIGN KEY ("published_library_id") REFERENCES "published_libraries"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`CREATE INDEX "library_operations_library_idx" ON "library_operations" ("published_library_id", "start_time", "id")`);
    await queryRunner.query(`CREATE INDEX "library_operations_reap_idx" ON "library_operations" ("reap_time") WHERE "reap_time" IS NOT NULL`);
    // Every hub caches published libraries and their ready workers for the requests it relays; a
    // change of either (or of a definition) reaches every hub's cache through the change feed.
    await queryRunner.query(
      `CREATE TRIGGER published_libraries_notify_change AFTER UPDATE OR DELETE ON "published_libraries" FOR EACH ROW EXECUTE FUNCTION hub_notify_change()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER library_definitions_notify_change AFTER UPDATE OR DELETE ON "library_definitions" FOR EACH ROW EXECUTE FUNCTION hub_notify_change()`,
    );
    await queryRunner.query(`
      CREATE FUNCTION library_workers_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('hub_changes', json_build_object('table', 'library_workers',
          'id', CASE WHEN TG_OP = 'DELETE' THEN OLD.published_library_id ELSE NEW.published_library_id END)::text);
        RETURN NULL;
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER library_workers_notify_change AFTER INSERT OR UPDATE OR DELETE ON "library_workers" FOR EACH ROW EXECUTE FUNCTION library_workers_notify_change()`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "library_operations"`);
    await queryRunner.query(`DROP TRIGGER library_workers_notify_change ON "library_workers"`);
    await queryRunner.query(`DROP FUNCTION library_workers_notify_change()`);
    await queryRunner.query(`DROP TABLE "library_workers"`);
    await queryRunner.query(`DROP TABLE "published_libraries"`);
    await queryRunner.query(`DROP TABLE "library_definitions"`);
  }
}

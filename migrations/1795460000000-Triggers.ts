import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Triggers (issue 28): Cron and File triggers of a pipeline, their firings and the files a File
 * trigger has seen. A trigger is deleted with its pipeline, its firings and seen files with it
 * (CASCADE). `next_due` is the next instant the trigger is due (a cron due time or a poll
 * instant), null while disabled: hubs claim due triggers with `FOR UPDATE SKIP LOCKED` through
 * the partial index, and each firing is unique on its claim key (api-map §7): Cron on (trigger,
 * due time), Arrival on (trigger, path, size, mtime), Existence on (trigger, poll instant, path),
 * so that a due time fires once whatever the number of hubs. Every change of a trigger is
 * announced on hub_changes, so that each hub's timer learns of due times set through another.
 */
export class Triggers1795460000000 implements MigrationInterface {
  name = 'Triggers1795460000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "pipeline_triggers" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "pipeline_id" uuid NOT NULL, "owner_id" uuid NOT NULL, "owner_name" text NOT NULL, "type" text NOT NULL, "disabled" boolean NOT NULL, "spec" jsonb NOT NULL, "execution_profile_id" uuid NOT NULL, "enabled_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "next_due" TIMESTAMP(3) WITH TIME ZONE, "last_triggered" TIMESTAMP(3) WITH TIME ZONE, "version" integer NOT NULL, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "modified" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "pipeline_triggers_type_check" CHECK ("type" IN ('Cron', 'File')), CONSTRAINT "PK_5d1f3b7a9c2e4a6b8d0f1c3e5a7b9d2f" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "pipeline_triggers" ADD CONSTRAINT "pipeline_triggers_pipeline_id_fkey" FOREIGN KEY ("pipeline_id") REFERENCES "pipeline_entries"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    // A pipeline's triggers, oldest first by default; also the index of the pipeline foreign key.
    await queryRunner.query(`CREATE INDEX "pipeline_triggers_pipeline_created_idx" ON "pipeline_triggers" ("pipeline_id", "created", "id")`);
    await queryRunner.query(`CREATE INDEX "pipeline_triggers_pipeline_modified_idx" ON "pipeline_triggers" ("pipeline_id", "modified", "id")`);
    // What is due, and the earliest due time a hub sleeps until: enabled triggers only.
    await queryRunner.query(`CREATE INDEX "pipeline_triggers_due_idx" ON "pipeline_triggers" ("next_due") WHERE "next_due" IS NOT NULL`);
    await queryRunner.query(`
      CREATE FUNCTION "pipeline_triggers_notify"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('hub_changes', json_build_object('table', 'pipeline_triggers')::text);
        RETURN NULL;
      END $$`);
    // Once per statement: a hub reads the earliest due time again, whichever triggers changed.
    await queryRunner.query(
      `CREATE TRIGGER "pipeline_triggers_notify_change" AFTER INSERT OR UPDATE OR DELETE ON "pipeline_triggers" FOR EACH STATEMENT EXECUTE FUNCTION "pipeline_triggers_notify"()`,
    );

    await queryRunner.query(
      `CREATE TABLE "pipeline_trigger_firings" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "trigger_id" uuid NOT NULL, "trigger_time" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "kind" text NOT NULL, "path" text, "size" bigint, "mtime" TIMESTAMP(3) WITH TIME ZONE, "state" text NOT NULL, "run_id" uuid, "error" text, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "pipeline_trigger_firings_kind_check" CHECK ("kind" IN ('Cron', 'Arrival', 'Existence')), CONSTRAINT "pipeline_trigger_firings_state_check" CHECK (("state" = 'Success' AND "run_id" IS NOT NULL AND "error" IS NULL) OR ("state" = 'Failed' AND "run_id" IS NULL AND "error" <> '')), CONSTRAINT "PK_8a2c4e6b0d1f3a5c7e9b2d4f6a8c0e1b" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "pipeline_trigger_firings" ADD CONSTRAINT "pipeline_trigger_firings_trigger_id_fkey" FOREIGN KEY ("trigger_id") REFERENCES "pipeline_triggers"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    // The claim keys (api-map §7).
    await queryRunner.query(
      `CREATE UNIQUE INDEX "pipeline_trigger_firings_cron_key" ON "pipeline_trigger_firings" ("trigger_id", "trigger_time") WHERE "kind" = 'Cron'`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "pipeline_trigger_firings_arrival_key" ON "pipeline_trigger_firings" ("trigger_id", "path", "size", "mtime") WHERE "kind" = 'Arrival'`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "pipeline_trigger_firings_existence_key" ON "pipeline_trigger_firings" ("trigger_id", "trigger_time", "path") WHERE "kind" = 'Existence'`,
    );
    // The lists: a trigger's firings by time (also the foreign key's index), all firings by time, and by trigger.
    await queryRunner.query(`CREATE INDEX "pipeline_trigger_firings_trigger_time_idx" ON "pipeline_trigger_firings" ("trigger_id", "trigger_time", "id")`);
    await queryRunner.query(`CREATE INDEX "pipeline_trigger_firings_time_idx" ON "pipeline_trigger_firings" ("trigger_time", "id")`);
    await queryRunner.query(`CREATE INDEX "pipeline_trigger_firings_trigger_idx" ON "pipeline_trigger_firings" ("trigger_id", "id")`);

    // The version of each file a File trigger has seen (taken as seen when the trigger was created or enabled): never pruned, so that an arrival is never repeated.
    await queryRunner.query(
      `CREATE TABLE "pipeline_trigger_seen_files" ("trigger_id" uuid NOT NULL, "path" text NOT NULL, "size" bigint NOT NULL, "mtime" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_3c5e7a9b1d2f4a6c8e0b3d5f7a9c1e2d" PRIMARY KEY ("trigger_id", "path"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "pipeline_trigger_seen_files" ADD CONSTRAINT "pipeline_trigger_seen_files_trigger_id_fkey" FOREIGN KEY ("trigger_id") REFERENCES "pipeline_triggers"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "pipeline_trigger_seen_files"`);
    await queryRunner.query(`DROP TABLE "pipeline_trigger_firings"`);
    await queryRunner.query(`DROP TRIGGER "pipeline_triggers_notify_change" ON "pipeline_triggers"`);
    await queryRunner.query(`DROP FUNCTION "pipeline_triggers_notify"()`);
    await queryRunner.query(`DROP TABLE "pipeline_triggers"`);
  }
}

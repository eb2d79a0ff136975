import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Pipeline runs (issue 27): a run, its nodes and their results. A run keeps a copy of the spec it
 * was started with and lives in a namespace (RESTRICT, as every area's); its pipeline may be deleted
 * meanwhile (no key). Its nodes are rows of their own, each advanced under the run's row lock, so
 * that one hub at a time moves a run on. `active` runs (Queued, Executing) are found by a partial
 * index when a hub reconciles. Results name the files the hub copied into its store.
 */
export class PipelineRuns1795450000000 implements MigrationInterface {
  name = 'PipelineRuns1795450000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "pipeline_runs" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "namespace_id" uuid NOT NULL, "pipeline_id" uuid, "owner_id" uuid NOT NULL, "owner_name" text NOT NULL, "execution_profile_id" uuid NOT NULL, "spec" jsonb NOT NULL, "entry_point" text, "environment" jsonb NOT NULL DEFAULT '[]', "state" text NOT NULL DEFAULT 'Queued', "cancelled" boolean NOT NULL DEFAULT false, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "started_at" TIMESTAMP(3) WITH TIME ZONE, "finished_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "pipeline_runs_state_check" CHECK ("state" IN ('Queued', 'Executing', 'Succeeded', 'Failed', 'Cancelled')), CONSTRAINT "PK_7e3c1a9f5b2d4c8e9a6f0b1d2c3e4f5a" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "pipeline_runs" ADD CONSTRAINT "pipeline_runs_namespace_id_fkey" FOREIGN KEY ("namespace_id") REFERENCES "namespaces"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    // Newest first is the default order; a caller narrowed to namespaces or seeing their own runs walks the index led by those.
    await queryRunner.query(`CREATE INDEX "pipeline_runs_created_idx" ON "pipeline_runs" ("created", "id")`);
    await queryRunner.query(`CREATE INDEX "pipeline_runs_namespace_created_idx" ON "pipeline_runs" ("namespace_id", "created", "id")`);
    await queryRunner.query(`CREATE INDEX "pipeline_runs_owner_created_idx" ON "pipeline_runs" ("owner_id", "created", "id")`);
    await queryRunner.query(`CREATE INDEX "pipeline_runs_pipeline_created_idx" ON "pipeline_runs" ("pipeline_id", "created", "id")`);
    await queryRunner.query(`CREATE INDEX "pipeline_runs_state_created_idx" ON "pipeline_runs" ("state", "created", "id")`);
    await queryRunner.query(`CREATE INDEX "pipeline_runs_started_idx" ON "pipeline_runs" ("started_at", "id")`);
    await queryRunner.query(`CREATE INDEX "pipeline_runs_finished_idx" ON "pipeline_runs" ("finished_at", "id")`);
    await queryRunner.query(`CREATE INDEX "pipeline_runs_active_idx" ON "pipeline_runs" ("id") WHERE "state" IN ('Queued', 'Executing')`);

    await queryRunner.query(
      `CREATE TABLE "pipeline_run_nodes" ("run_id" uuid NOT NULL, "name" text NOT NULL, "position" integer NOT NULL, "state" text NOT NULL DEFAULT 'Waiting', "outcome" text, "ready" boolean NOT NULL DEFAULT false, "attempt" integer NOT NULL DEFAULT 0, "job_id" uuid, "execution_id" uuid, "exit_code" integer, "started_at" TIMESTAMP(3) WITH TIME ZONE, "finished_at" TIMESTAMP(3) WITH TIME ZONE, "retry_at" TIMESTAMP(3) WITH TIME ZONE, "deadline" TIMESTAMP(3) WITH TIME ZONE, "timed_out" integer, "over_quota" boolean NOT NULL DEFAULT false, "logs_stored" boolean NOT NULL DEFAULT false, "events" jsonb NOT NULL DEFAULT '[]', CONSTRAINT "pipeline_run_nodes_state_check" CHECK ("state" IN ('Waiting', 'Running', 'Succeeded', 'Failed', 'Skipped', 'Cancelled')), CONSTRAINT "PK_2b8d4f6a1c3e5a7b9d0f2e4c6a8b0d1f" PRIMARY KEY ("run_id", "name"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "pipeline_run_nodes" ADD CONSTRAINT "pipeline_run_nodes_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "pipeline_runs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "pipeline_run_nodes_job_key" ON "pipeline_run_nodes" ("job_id")`);
    // The nodes waiting for their owner's quota, looked up whenever one of the owner's jobs ends: few, often none.
    await queryRunner.query(`CREATE INDEX "pipeline_run_nodes_over_quota_idx" ON "pipeline_run_nodes" ("run_id") WHERE "over_quota"`);

    await queryRunner.query(
      `CREATE TABLE "pipeline_results" ("run_id" uuid NOT NULL, "node" text NOT NULL, "name" text NOT NULL, "content_type" text NOT NULL, "size" bigint NOT NULL, "key" text NOT NULL, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_9c1e3a5b7d9f0b2d4f6a8c0e2a4c6e8b" PRIMARY KEY ("run_id", "node", "name"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "pipeline_results" ADD CONSTRAINT "pipeline_results_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "pipeline_runs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "pipeline_results"`);
    await queryRunner.query(`DROP TABLE "pipeline_run_nodes"`);
    await queryRunner.query(`DROP TABLE "pipeline_runs"`);
  }
}

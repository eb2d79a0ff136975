import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Link sessions (issue 29): configurations (what a session runs; the built-in `files` is written by
 * the hub at each start) and sessions, each a `service` cluster job (unique job_id). A session keeps
 * its endpoint's port and secret and its access token, so that a restarted hub or another replica
 * proxies to it. The reaper finds live sessions through partial indexes (heartbeat due, death clock,
 * start deadline) and the retention prune ended ones by finished_time; the list's filters and sorts
 * each have an index led by their column, ending in start_time and id (the default order).
 */
export class LinkSessions1795470000001 implements MigrationInterface {
  name = 'LinkSessions1795470000001';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "link_session_configurations" ("name" text NOT NULL, "description" text, "command" text NOT NULL, "args" jsonb NOT NULL DEFAULT '[]', "env_vars" jsonb NOT NULL DEFAULT '[]', "readiness" jsonb NOT NULL, "execution_profile_id" uuid, "namespace" text NOT NULL DEFAULT 'default', "max_lifetime_seconds" integer NOT NULL DEFAULT 86400, "start_timeout_seconds" integer NOT NULL DEFAULT 60, "built_in" boolean NOT NULL DEFAULT false, "version" integer NOT NULL DEFAULT 1, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "modified" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "link_session_configurations_pkey" PRIMARY KEY ("name"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "link_sessions" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "owner_id" uuid NOT NULL, "owner_name" text NOT NULL, "configuration_name" text NOT NULL, "client_session_id" text, "client_description" text, "status" text NOT NULL DEFAULT 'Pending', "job_id" uuid, "host" text NOT NULL, "port" integer NOT NULL, "secret" text NOT NULL, "access_token" text NOT NULL, "readiness" jsonb NOT NULL, "start_timeout_seconds" integer NOT NULL, "start_time" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "ready_time" TIMESTAMP(3) WITH TIME ZONE, "finished_time" TIMESTAMP(3) WITH TIME ZONE, "death_clock" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "start_deadline" TIMESTAMP(3) WITH TIME ZONE, "last_heartbeat_time" TIMESTAMP(3) WITH TIME ZONE, "next_expected_heartbeat" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "events" jsonb NOT NULL DEFAULT '[]', CONSTRAINT "link_sessions_status_check" CHECK ("status" IN ('Pending', 'Ready', 'Failed', 'Terminated', 'Blocked')), CONSTRAINT "link_sessions_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "link_sessions" ADD CONSTRAINT "link_sessions_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "link_sessions_job_key" ON "link_sessions" ("job_id")`);
    await queryRunner.query(`CREATE INDEX "link_sessions_start_time_idx" ON "link_sessions" ("start_time", "id")`);
    await queryRunner.query(`CREATE INDEX "link_sessions_owner_start_time_idx" ON "link_sessions" ("owner_id", "start_time", "id")`);
    await queryRunner.query(`CREATE INDEX "link_sessions_configuration_start_time_idx" ON "link_sessions" ("configuration_name", "start_time", "id")`);
    await queryRunner.query(`CREATE INDEX "link_sessions_configuration_idx" ON "link_sessions" ("configuration_name", "id")`);
    await queryRunner.query(`CREATE INDEX "link_sessions_status_start_time_idx" ON "link_sessions" ("status", "start_time", "id")`);
    await queryRunner.query(`CREATE INDEX "link_sessions_death_clock_idx" ON "link_sessions" ("death_clock", "id")`);
    // What the reaper looks for, among live sessions only (few, whatever the table holds).
    await queryRunner.query(
      `CREATE INDEX "link_sessions_heartbeat_due_idx" ON "link_sessions" ("next_expected_heartbeat") WHERE "status" IN ('Pending', 'Ready', 'Blocked')`,
    );
    await queryRunner.query(
      `CREATE INDEX "link_sessions_live_death_clock_idx" ON "link_sessions" ("death_clock") WHERE "status" IN ('Pending', 'Ready', 'Blocked')`,
    );
    await queryRunner.query(`CREATE INDEX "link_sessions_start_deadline_idx" ON "link_sessions" ("start_deadline") WHERE "status" = 'Pending'`);
    await queryRunner.query(`CREATE INDEX "link_sessions_finished_idx" ON "link_sessions" ("finished_time") WHERE "finished_time" IS NOT NULL`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "link_sessions"`);
    await queryRunner.query(`DROP TABLE "link_session_configurations"`);
  }
}

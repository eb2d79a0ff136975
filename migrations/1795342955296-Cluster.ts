import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The cluster: nodes as the driver reports them, jobs (in a namespace, under an execution
 * profile, both ON DELETE RESTRICT; their owner set to null when the user goes) and their
 * executions (deleted with their job).
 */
export class Cluster1795342955296 implements MigrationInterface {
  name = 'Cluster1795342955296';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "cluster_jobs" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "name" text NOT NULL, "status" text NOT NULL, "type" text NOT NULL, "priority" integer NOT NULL, "namespace_id" uuid NOT NULL, "execution_profile_id" uuid NOT NULL, "owner_id" uuid, "task" jsonb NOT NULL, "properties" jsonb NOT NULL DEFAULT '{}', "submit_time" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "finished_time" TIMESTAMP(3) WITH TIME ZONE, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "modified" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_d2325eb7b87fb455525b7c0f007" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "cluster_jobs_execution_profile_id_idx" ON "cluster_jobs" ("execution_profile_id")`);
    await queryRunner.query(`CREATE INDEX "cluster_jobs_namespace_id_idx" ON "cluster_jobs" ("namespace_id")`);
    await queryRunner.query(`CREATE INDEX "cluster_jobs_owner_id_idx" ON "cluster_jobs" ("owner_id")`);
    await queryRunner.query(`CREATE INDEX "cluster_jobs_submit_time_idx" ON "cluster_jobs" ("submit_time", "id")`);
    await queryRunner.query(
      `CREATE TABLE "cluster_nodes" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "name" text NOT NULL, "hostname" text NOT NULL, "address" text NOT NULL, "type" text NOT NULL, "is_worker" boolean NOT NULL, "is_server" boolean NOT NULL, "status" text NOT NULL, "draining" boolean NOT NULL DEFAULT false, "labels" text array NOT NULL DEFAULT '{}', "os" text NOT NULL, "attributes" jsonb NOT NULL DEFAULT '{}', "cpu" integer NOT NULL, "memory" integer NOT NULL, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "modified" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_3104b3d10d622c69938f1c432b9" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "cluster_nodes_name_key" ON "cluster_nodes" ("name")`);
    await queryRunner.query(
      `CREATE TABLE "job_executions" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "job_id" uuid NOT NULL, "node_id" uuid, "status" text NOT NULL, "task_name" text NOT NULL, "task_state" jsonb NOT NULL, "reserved_cpu" integer NOT NULL, "reserved_memory" integer NOT NULL, "driver_ref" text, "exit_code" integer, "execution_dir" text NOT NULL, "created" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "modified" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_8065e5e94f2131484c1af3c8553" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "job_executions_created_idx" ON "job_executions" ("created", "id")`);
    await queryRunner.query(`CREATE INDEX "job_executions_node_id_idx" ON "job_executions" ("node_id")`);
    await queryRunner.query(`CREATE INDEX "job_executions_job_id_idx" ON "job_executions" ("job_id")`);
    await queryRunner.query(
      `ALTER TABLE "cluster_jobs" ADD CONSTRAINT "cluster_jobs_namespace_id_fkey" FOREIGN KEY ("namespace_id") REFERENCES "namespaces"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "cluster_jobs" ADD CONSTRAINT "cluster_jobs_execution_profile_id_fkey" FOREIGN KEY ("execution_profile_id") REFERENCES "execution_profiles"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "cluster_jobs" ADD CONSTRAINT "cluster_jobs_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "job_executions" ADD CONSTRAINT "job_executions_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "cluster_jobs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "job_executions" ADD CONSTRAINT "job_executions_node_id_fkey" FOREIGN KEY ("node_id") REFERENCES "cluster_nodes"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    // What the scheduler looks for at every tick, and what the retention prune deletes.
    await queryRunner.query(`CREATE INDEX "job_executions_pending_idx" ON "job_executions" ("created") WHERE "status" = 'pending' AND "node_id" IS NULL`);
    await queryRunner.query(`CREATE INDEX "cluster_jobs_finished_idx" ON "cluster_jobs" ("finished_time") WHERE "status" = 'dead'`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "job_executions"`);
    await queryRunner.query(`DROP TABLE "cluster_jobs"`);
    await queryRunner.query(`DROP TABLE "cluster_nodes"`);
  }
}

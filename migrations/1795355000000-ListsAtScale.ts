import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Lists that stay fast at a million jobs and executions (docs/api-conventions.md "Lists at scale").
 *
 * - An index behind every filter and sort the cluster lists allow, each ending in `id` (the
 *   lists' tie-breaker) so that a page is read in index order; those led by the namespace and the
 *   owner serve lists narrowed by access. They replace the single-column indexes they start with.
 * - Audit records matched by an object's prefix through a btree range, not a trigram guess.
 * - Partial indexes on the rare side of the user and group flags lists filter on.
 * - Executions carry their job's namespace and owner (set on insert from the job; the owner set to
 *   null with the user, as the job's is), so that access narrows them through an index rather than
 *   through a join.
 * - `total` without a scan: counts per namespace, owner, status (and type) kept by statement
 *   triggers as rows of deltas, which never lock against each other; the hub sums them and folds
 *   them together now and then (ListCounts).
 */
export class ListsAtScale1795355000000 implements MigrationInterface {
  name = 'ListsAtScale1795355000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // Jobs.
    await queryRunner.query(`DROP INDEX "cluster_jobs_namespace_id_idx"`);
    await queryRunner.query(`DROP INDEX "cluster_jobs_owner_id_idx"`);
    await queryRunner.query(`CREATE INDEX "cluster_jobs_namespace_submit_time_idx" ON "cluster_jobs" ("namespace_id", "submit_time", "id")`);
    await queryRunner.query(`CREATE INDEX "cluster_jobs_owner_submit_time_idx" ON "cluster_jobs" ("owner_id", "submit_time", "id")`);
    // The indexes of the sorts carry the namespace and the owner, so that a list narrowed by access
    // finds its page's keys in the index alone (an index-only scan that filters as it goes); the
    // name's also carries the name, as PostgreSQL reads no column out of an expression key.
    await queryRunner.query(`DROP INDEX "cluster_jobs_submit_time_idx"`);
    const scoped = 'INCLUDE ("namespace_id", "owner_id")';
    await queryRunner.query(`CREATE INDEX "cluster_jobs_submit_time_idx" ON "cluster_jobs" ("submit_time", "id") ${scoped}`);
    await queryRunner.query(`CREATE INDEX "cluster_jobs_status_submit_time_idx" ON "cluster_jobs" ("status", "submit_time", "id") ${scoped}`);
    await queryRunner.query(`CREATE INDEX "cluster_jobs_status_idx" ON "cluster_jobs" ("status", "id") ${scoped}`);
    await queryRunner.query(`CREATE INDEX "cluster_jobs_type_idx" ON "cluster_jobs" ("type", "id") ${scoped}`);
    await queryRunner.query(
      `CREATE INDEX "cluster_jobs_name_lower_idx" ON "cluster_jobs" ((lower("name") COLLATE "C"), "id") INCLUDE ("namespace_id", "owner_id", "name")`,
    );
    await queryRunner.query(`CREATE INDEX "cluster_jobs_name_trgm_idx" ON "cluster_jobs" USING gin ("name" gin_trgm_ops) WITH (fastupdate = off)`);

    // Executions.
    await queryRunner.query(`ALTER TABLE "job_executions" ADD "namespace_id" uuid, ADD "owner_id" uuid`);
    await queryRunner.query(
      `UPDATE "job_executions" e SET "namespace_id" = j."namespace_id", "owner_id" = j."owner_id" FROM "cluster_jobs" j WHERE j."id" = e."job_id"`,
    );
    await queryRunner.query(`ALTER TABLE "job_executions" ALTER "namespace_id" SET NOT NULL`);
    await queryRunner.query(
      `ALTER TABLE "job_executions" ADD CONSTRAINT "job_executions_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`
      CREATE FUNCTION "job_executions_from_job"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        SELECT j.namespace_id, j.owner_id INTO NEW.namespace_id, NEW.owner_id FROM cluster_jobs j WHERE j.id = NEW.job_id;
        RETURN NEW;
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER "job_executions_from_job" BEFORE INSERT ON "job_executions" FOR EACH ROW EXECUTE FUNCTION "job_executions_from_job"()`,
    );
    await queryRunner.query(`DROP INDEX "job_executions_node_id_idx"`);
    // A job list's task summaries (its executions per status) read from the index alone.
    await queryRunner.query(`DROP INDEX "job_executions_job_id_idx"`);
    await queryRunner.query(`CREATE INDEX "job_executions_job_status_idx" ON "job_executions" ("job_id", "status")`);
    await queryRunner.query(`CREATE INDEX "job_executions_node_created_idx" ON "job_executions" ("node_id", "created", "id")`);
    await queryRunner.query(`CREATE INDEX "job_executions_namespace_created_idx" ON "job_executions" ("namespace_id", "created", "id")`);
    await queryRunner.query(`CREATE INDEX "job_executions_owner_created_idx" ON "job_executions" ("owner_id", "created", "id")`);
    await queryRunner.query(`CREATE INDEX "job_executions_status_created_idx" ON "job_executions" ("status", "created", "id")`);
    await queryRunner.query(`CREATE INDEX "job_executions_modified_idx" ON "job_executions" ("modified", "id")`);

    // Flags whose rare side a list filters on: a small partial index finds those few.
    await queryRunner.query(`CREATE INDEX "users_system_idx" ON "users" (lower("user_name"), "id") WHERE "system"`);
    await queryRunner.query(`CREATE INDEX "users_inactive_idx" ON "users" (lower("user_name"), "id") WHERE NOT "active"`);
    await queryRunner.query(`CREATE INDEX "users_invitation_pending_idx" ON "users" (lower("user_name"), "id") WHERE "invitation_pending"`);
    await queryRunner.query(`CREATE INDEX "groups_system_idx" ON "groups" (lower("name"), "id") WHERE "system"`);

    // Audit records by an object's prefix: a range of this index, as the cluster job names'.
    await queryRunner.query(`CREATE INDEX "audit_records_object_prefix_idx" ON "audit_records" ((lower("object") COLLATE "C"), "id")`);

    // Counts.
    await queryRunner.query(
      `CREATE TABLE "cluster_job_counts" ("namespace_id" uuid NOT NULL, "owner_id" uuid, "status" text NOT NULL, "type" text NOT NULL, "n" bigint NOT NULL)`,
    );
    await queryRunner.query(`CREATE INDEX "cluster_job_counts_key_idx" ON "cluster_job_counts" ("namespace_id", "status", "type", "owner_id") INCLUDE ("n")`);
    await queryRunner.query(`CREATE TABLE "job_execution_counts" ("namespace_id" uuid NOT NULL, "owner_id" uuid, "status" text NOT NULL, "n" bigint NOT NULL)`);
    await queryRunner.query(`CREATE INDEX "job_execution_counts_key_idx" ON "job_execution_counts" ("namespace_id", "status", "owner_id") INCLUDE ("n")`);
    for (const [table, counts, key] of [
      ['cluster_jobs', 'cluster_job_counts', 'namespace_id, owner_id, status, type'],
      ['job_executions', 'job_execution_counts', 'namespace_id, owner_id, status'],
    ]) {
      // One row per key and statement: +rows inserted, -rows deleted, both for an update that moves a row between keys.
      await queryRunner.query(`
        CREATE FUNCTION "${counts}_change"() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF TG_OP = 'INSERT' THEN
            INSERT INTO ${counts} (${key}, n) SELECT ${key}, count(*) FROM new_rows GROUP BY ${key};
          ELSIF TG_OP = 'DELETE' THEN
            INSERT INTO ${counts} (${key}, n) SELECT ${key}, -count(*) FROM old_rows GROUP BY ${key};
          ELSIF TG_OP = 'UPDATE' THEN
            INSERT INTO ${counts} (${key}, n)
            SELECT ${key}, sum(n) FROM (SELECT ${key}, 1 AS n FROM new_rows UNION ALL SELECT ${key}, -1 AS n FROM old_rows) d
            GROUP BY ${key} HAVING sum(n) <> 0;
          ELSE
            DELETE FROM ${counts};
          END IF;
          RETURN NULL;
        END $$`);
      await queryRunner.query(
        `CREATE TRIGGER "${counts}_insert" AFTER INSERT ON "${table}" REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "${counts}_change"()`,
      );
      await queryRunner.query(
        `CREATE TRIGGER "${counts}_update" AFTER UPDATE ON "${table}" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "${counts}_change"()`,
      );
      await queryRunner.query(
        `CREATE TRIGGER "${counts}_delete" AFTER DELETE ON "${table}" REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "${counts}_change"()`,
      );
      await queryRunner.query(`CREATE TRIGGER "${counts}_truncate" AFTER TRUNCATE ON "${table}" FOR EACH STATEMENT EXECUTE FUNCTION "${counts}_change"()`);
      await queryRunner.query(`INSERT INTO "${counts}" (${key}, n) SELECT ${key}, count(*) FROM "${table}" GROUP BY ${key}`);
    }
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const [table, counts] of [
      ['cluster_jobs', 'cluster_job_counts'],
      ['job_executions', 'job_execution_counts'],
    ]) {
      for (const event of ['insert', 'update', 'delete', 'truncate']) await queryRunner.query(`DROP TRIGGER "${counts}_${event}" ON "${table}"`);
      await queryRunner.query(`DROP FUNCTION "${counts}_change"()`);
      await queryRunner.query(`DROP TABLE "${counts}"`);
    }
    await queryRunner.query(`DROP TRIGGER "job_executions_from_job" ON "job_executions"`);
    await queryRunner.query(`DROP FUNCTION "job_executions_from_job"()`);
    for (const index of [
      'audit_records_object_prefix_idx',
      'groups_system_idx',
      'users_invitation_pending_idx',
      'users_inactive_idx',
      'users_system_idx',
      'job_executions_modified_idx',
      'job_executions_status_created_idx',
      'job_executions_owner_created_idx',
      'job_executions_namespace_created_idx',
      'job_executions_node_created_idx',
      'cluster_jobs_name_trgm_idx',
      'cluster_jobs_name_lower_idx',
      'cluster_jobs_type_idx',
      'cluster_jobs_status_idx',
      'cluster_jobs_status_submit_time_idx',
      'cluster_jobs_owner_submit_time_idx',
      'cluster_jobs_namespace_submit_time_idx',
    ])
      await queryRunner.query(`DROP INDEX "${index}"`);
    await queryRunner.query(`ALTER TABLE "job_executions" DROP CONSTRAINT "job_executions_owner_id_fkey"`);
    await queryRunner.query(`ALTER TABLE "job_executions" DROP COLUMN "owner_id", DROP COLUMN "namespace_id"`);
    await queryRunner.query(`DROP INDEX "job_executions_job_status_idx"`);
    await queryRunner.query(`CREATE INDEX "job_executions_job_id_idx" ON "job_executions" ("job_id")`);
    await queryRunner.query(`CREATE INDEX "job_executions_node_id_idx" ON "job_executions" ("node_id")`);
    await queryRunner.query(`CREATE INDEX "cluster_jobs_owner_id_idx" ON "cluster_jobs" ("owner_id")`);
    await queryRunner.query(`DROP INDEX "cluster_jobs_submit_time_idx"`);
    await queryRunner.query(`CREATE INDEX "cluster_jobs_submit_time_idx" ON "cluster_jobs" ("submit_time", "id")`);
    await queryRunner.query(`CREATE INDEX "cluster_jobs_namespace_id_idx" ON "cluster_jobs" ("namespace_id")`);
  }
}

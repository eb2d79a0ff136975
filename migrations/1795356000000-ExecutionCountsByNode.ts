import type { MigrationInterface, QueryRunner } from 'typeorm';

const KEY = 'node_id, namespace_id, owner_id, status';

/**
 * `total` of the executions on a node without counting them (docs/api-conventions.md "Lists at
 * scale"): counts per node, namespace, owner and status, kept as the other counts are (statement
 * triggers add a row of deltas per key; ListCounts folds them). A list filtered by node counted a
 * quarter of a million index entries at a million executions on four nodes. A table of its own, as
 * the node would multiply job_execution_counts' rows, which every other execution list sums.
 */
export class ExecutionCountsByNode1795356000000 implements MigrationInterface {
  name = 'ExecutionCountsByNode1795356000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "job_execution_node_counts" ("node_id" uuid, "namespace_id" uuid NOT NULL, "owner_id" uuid, "status" text NOT NULL, "n" bigint NOT NULL)`,
    );
    await queryRunner.query(
      `CREATE INDEX "job_execution_node_counts_key_idx" ON "job_execution_node_counts" ("node_id", "status", "namespace_id", "owner_id") INCLUDE ("n")`,
    );
    // One row per key and statement: +rows inserted, -rows deleted, both for an update that moves a row between keys.
    await queryRunner.query(`
      CREATE FUNCTION "job_execution_node_counts_change"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO job_execution_node_counts (${KEY}, n) SELECT ${KEY}, count(*) FROM new_rows GROUP BY ${KEY};
        ELSIF TG_OP = 'DELETE' THEN
          INSERT INTO job_execution_node_counts (${KEY}, n) SELECT ${KEY}, -count(*) FROM old_rows GROUP BY ${KEY};
        ELSIF TG_OP = 'UPDATE' THEN
          INSERT INTO job_execution_node_counts (${KEY}, n)
          SELECT ${KEY}, sum(n) FROM (SELECT ${KEY}, 1 AS n FROM new_rows UNION ALL SELECT ${KEY}, -1 AS n FROM old_rows) d
          GROUP BY ${KEY} HAVING sum(n) <> 0;
        ELSE
          DELETE FROM job_execution_node_counts;
        END IF;
        RETURN NULL;
      END $$`);
    for (const [event, transitions] of [
      ['insert', 'REFERENCING NEW TABLE AS new_rows'],
      ['update', 'REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows'],
      ['delete', 'REFERENCING OLD TABLE AS old_rows'],
      ['truncate', ''],
    ]) {
      await queryRunner.query(
        `CREATE TRIGGER "job_execution_node_counts_${event}" AFTER ${event.toUpperCase()} ON "job_executions" ${transitions} FOR EACH STATEMENT EXECUTE FUNCTION "job_execution_node_counts_change"()`,
      );
    }
    await queryRunner.query(`INSERT INTO "job_execution_node_counts" (${KEY}, n) SELECT ${KEY}, count(*) FROM "job_executions" GROUP BY ${KEY}`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const event of ['insert', 'update', 'delete', 'truncate'])
      await queryRunner.query(`DROP TRIGGER "job_execution_node_counts_${event}" ON "job_executions"`);
    await queryRunner.query(`DROP FUNCTION "job_execution_node_counts_change"()`);
    await queryRunner.query(`DROP TABLE "job_execution_node_counts"`);
  }
}

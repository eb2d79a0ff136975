import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Fair share between users (docs/cluster.md "Fair share"): what waits is read per owner, in each
 * owner's own order, from one index; the executions that hold a slot (claimed to start, or running)
 * are counted per owner and node from another. `cluster_may_take_slot` is the check of the hand-off
 * of a freed slot to a prepared launch (src/cluster/fair-share.ts): the owner is active, their
 * batch executions on the node stay within the cap, and no other owner with work waiting (in
 * line, or prepared by any hub) holds fewer slots. With a cap in force it takes the owner's advisory lock first (the class of
 * USER_LOCK_CLASS, 0x48555553) and counts after it: a function's statements each read what was
 * committed when they began, where one statement would count from before the lock.
 */
/** The hand-off's check as this migration made it (FairShareHandOverProbe replaces it, and puts it back when reverted). */
export const MAY_TAKE_SLOT = `
  CREATE OR REPLACE FUNCTION cluster_may_take_slot(next_id uuid, freed_id uuid, cap_setting integer) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
  DECLARE
    the_owner uuid;
    the_node uuid;
    the_type text;
    the_cap integer;
    held integer;
  BEGIN
    SELECT e.owner_id, e.node_id, j.type, CASE WHEN cap_setting IS NOT NULL THEN cap_setting WHEN n.cpu >= 2 THEN n.cpu - 1 ELSE 0 END
      INTO the_owner, the_node, the_type, the_cap
      FROM job_executions e JOIN cluster_jobs j ON j.id = e.job_id JOIN cluster_nodes n ON n.id = e.node_id WHERE e.id = next_id;
    IF the_owner IS NULL OR NOT EXISTS (SELECT 1 FROM users u WHERE u.id = the_owner AND u.active) THEN
      RETURN false;
    END IF;
    IF the_cap > 0 AND the_type = 'batch' THEN
      PERFORM pg_advisory_xact_lock(${0x4855_5553}, hashtext(the_owner::text));
      IF (SELECT count(*) FROM job_executions e JOIN cluster_jobs j ON j.id = e.job_id
          WHERE e.owner_id = the_owner AND e.node_id = the_node AND e.status IN ('pending', 'running') AND NOT e.prepared
            AND e.id <> freed_id AND j.type = 'batch') >= the_cap THEN
        RETURN false;
      END IF;
    END IF;
    SELECT count(*) INTO held FROM job_executions e
      WHERE e.owner_id = the_owner AND e.status IN ('pending', 'running') AND e.node_id IS NOT NULL AND NOT e.prepared AND e.id <> freed_id;
    RETURN NOT EXISTS (
      SELECT 1 FROM cluster_active_jobs a JOIN users u ON u.id = a.owner_id AND u.active
      WHERE a.active > 0 AND a.owner_id <> the_owner
        AND EXISTS (SELECT 1 FROM job_executions w WHERE w.owner_id = a.owner_id AND w.status = 'pending' AND w.driver_ref IS NULL AND (w.node_id IS NULL OR w.prepared))
        AND (SELECT count(*) FROM job_executions h
             WHERE h.owner_id = a.owner_id AND h.status IN ('pending', 'running') AND h.node_id IS NOT NULL AND NOT h.prepared AND h.id <> freed_id) < held);
  END $$`;

export class FairShare1795410000000 implements MigrationInterface {
  name = 'FairShare1795410000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "job_executions_owner_line_idx" ON "job_executions" ("owner_id", (coalesce(task_state->'events'->-1->>'type' = 'PlacementFailed', false)), "priority" DESC, "created", "id") WHERE "status" = 'pending' AND "driver_ref" IS NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "job_executions_holding_idx" ON "job_executions" ("owner_id", "node_id") WHERE "status" IN ('pending', 'running') AND "node_id" IS NOT NULL AND NOT "prepared"`,
    );
    await queryRunner.query(MAY_TAKE_SLOT);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION cluster_may_take_slot(uuid, uuid, integer)`);
    await queryRunner.query(`DROP INDEX "job_executions_holding_idx"`);
    await queryRunner.query(`DROP INDEX "job_executions_owner_line_idx"`);
  }
}

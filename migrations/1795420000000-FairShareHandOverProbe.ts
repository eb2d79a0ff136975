import type { MigrationInterface, QueryRunner } from 'typeorm';
import { MAY_TAKE_SLOT as FIRST_MAY_TAKE_SLOT } from './1795410000000-FairShare.js';

/**
 * The hand-off's check (`cluster_may_take_slot`, src/cluster/fair-share.ts) probes each other
 * owner's line by its index, one row at most. As FairShare wrote it, "has work waiting" was an
 * EXISTS that PostgreSQL planned inside the function as a hash over every pending execution:
 * 5 to 10 ms a hand-off with 10,000 waiting (the job-path benchmark's freed slot to the next
 * start went from 4 to 13 ms), against 0.1 ms now.
 */
const MAY_TAKE_SLOT = `
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
        AND (SELECT true FROM job_executions w
             WHERE w.owner_id = a.owner_id AND w.status = 'pending' AND w.driver_ref IS NULL AND (w.node_id IS NULL OR w.prepared) LIMIT 1)
        AND (SELECT count(*) FROM job_executions h
             WHERE h.owner_id = a.owner_id AND h.status IN ('pending', 'running') AND h.node_id IS NOT NULL AND NOT h.prepared AND h.id <> freed_id) < held);
  END $$`;

export class FairShareHandOverProbe1795420000000 implements MigrationInterface {
  name = 'FairShareHandOverProbe1795420000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(MAY_TAKE_SLOT);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(FIRST_MAY_TAKE_SLOT);
  }
}

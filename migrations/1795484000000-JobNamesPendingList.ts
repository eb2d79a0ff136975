import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The trigram index on a job's name takes new entries through a small pending list.
 *
 * The other trigram indexes are built with `fastupdate = off` (Init): their names are written
 * rarely and read by every search. A job's name is never written after its insert, but every
 * change of its status is an update that touches indexed columns, which PostgreSQL never makes a
 * HOT update: each one inserts all of the name's trigrams into this index again, one entry at a
 * time. That cost 80–100 µs of every status change (2,000 single-row updates: 131–150 µs each
 * with the index as it was, 46–55 µs without it), two or three times a job. Through a pending list
 * the keys are appended to it in one write and moved into the index in bulk once it passes 64 kB
 * (42–50 µs an update): a search reads at most those 64 kB (about 8 pages, a hundred names) besides
 * the index, and VACUUM empties the list too.
 */
export class JobNamesPendingList1795484000000 implements MigrationInterface {
  name = 'JobNamesPendingList1795484000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER INDEX "cluster_jobs_name_trgm_idx" SET (fastupdate = on, gin_pending_list_limit = 64)`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER INDEX "cluster_jobs_name_trgm_idx" SET (fastupdate = off)`);
    await queryRunner.query(`ALTER INDEX "cluster_jobs_name_trgm_idx" RESET (gin_pending_list_limit)`);
    // Turning the list off leaves what it holds: moved into the index now, as the index expects.
    await queryRunner.query(`SELECT gin_clean_pending_list('cluster_jobs_name_trgm_idx'::regclass)`);
  }
}

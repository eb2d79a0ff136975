import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Namespaces, execution profiles and their bindings join the rows a hub process may cache (see
 * ChangeNotifications): a submission reads all three, and now reads them from memory. Every
 * update or delete is announced on hub_changes, whoever makes it.
 */
export class SubmissionCaches1795358000000 implements MigrationInterface {
  name = 'SubmissionCaches1795358000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    for (const table of TABLES)
      await queryRunner.query(`CREATE TRIGGER "${table}_notify_change" AFTER UPDATE OR DELETE ON "${table}" FOR EACH ROW EXECUTE FUNCTION hub_notify_change()`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of TABLES) await queryRunner.query(`DROP TRIGGER "${table}_notify_change" ON "${table}"`);
  }
}

const TABLES = ['namespaces', 'execution_profiles', 'execution_profile_bindings'];

import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every update or delete of a row a hub process may cache is announced on the channel
 * hub_changes (delivered at commit), whoever makes it: this replica, another one, or an operator
 * with psql. Hub processes drop what they cached of that row.
 */
export class ChangeNotifications1795330000000 implements MigrationInterface {
  name = 'ChangeNotifications1795330000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION hub_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('hub_changes', json_build_object('table', TG_TABLE_NAME, 'id', OLD.id)::text);
        RETURN NULL;
      END
      $$`);
    await queryRunner.query(`CREATE TRIGGER users_notify_change AFTER UPDATE OR DELETE ON "users" FOR EACH ROW EXECUTE FUNCTION hub_notify_change()`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER users_notify_change ON "users"`);
    await queryRunner.query(`DROP FUNCTION hub_notify_change()`);
  }
}

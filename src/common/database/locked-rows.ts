import type { DataSource, EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';

function lockById<E extends ObjectLiteral>(manager: EntityManager, entity: EntityTarget<E>, id: string): Promise<E | null> {
  return manager.getRepository(entity).createQueryBuilder('row').setLock('pessimistic_write').where('row.id = :id', { id }).getOne();
}

/**
 * Changes one row under a row lock: `decide` sees the current state (to check `If-Match`, to
 * apply a patch, to make related changes with `manager`) and returns the properties to change,
 * all in one transaction. Null when there is no such row.
 */
export function updateLocked<E extends ObjectLiteral>(
  dataSource: DataSource,
  entity: EntityTarget<E>,
  id: string,
  decide: (current: E, manager: EntityManager) => Promise<Partial<E>> | Partial<E>,
): Promise<E | null> {
  return dataSource.transaction(async (manager) => {
    const current = await lockById(manager, entity, id);
    if (!current) return null;
    const changes = await decide(current, manager);
    return manager.save(entity, Object.assign(current, changes));
  });
}

/** Deletes one row under a row lock once `check` (If-Match, what still refers to it) passes; null when there is none. */
export function deleteLocked<E extends ObjectLiteral>(
  dataSource: DataSource,
  entity: EntityTarget<E>,
  id: string,
  check: (current: E, manager: EntityManager) => Promise<void> | void,
): Promise<E | null> {
  return dataSource.transaction(async (manager) => {
    const current = await lockById(manager, entity, id);
    if (!current) return null;
    await check(current, manager);
    await manager.delete(entity, { id });
    return current;
  });
}

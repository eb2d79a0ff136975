import type { DataSource, EntityManager, EntityTarget, FindOptionsWhere, ObjectLiteral } from 'typeorm';
import { ConflictError } from '../errors/hub-errors.js';

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

const STALE = Symbol('stale');
const PREPARE_ATTEMPTS = 3;

/**
 * Changes one row with a change prepared outside any transaction: `prepare` sees the current
 * state and may query freely (other services, other pooled connections), since nothing is held
 * while it runs. The commit locks the row and applies the change only if the row's version is
 * still the one it was prepared from; otherwise it prepares again, and after a few tries answers
 * 409. Use it instead of {@link updateLocked} whenever preparing a change queries anything: a
 * transaction that waits for a second connection while others wait for its lock can exhaust the
 * pool. Null when there is no such row.
 */
export async function updatePrepared<E extends ObjectLiteral & { version: number }>(
  dataSource: DataSource,
  entity: EntityTarget<E>,
  id: string,
  prepare: (current: E) => Promise<Partial<E>> | Partial<E>,
): Promise<E | null> {
  for (let attempt = 1; ; attempt += 1) {
    const current = await dataSource.getRepository(entity).findOneBy({ id } as unknown as FindOptionsWhere<E>);
    if (!current) return null;
    const changes = await prepare(current);
    const saved = await dataSource.transaction(async (manager) => {
      const locked = await lockById(manager, entity, id);
      if (!locked) return null;
      if (locked.version !== current.version) return STALE;
      return manager.save(entity, Object.assign(locked, changes));
    });
    if (saved !== STALE) return saved;
    if (attempt === PREPARE_ATTEMPTS) throw new ConflictError('The resource kept changing while this request was applied; retry');
  }
}

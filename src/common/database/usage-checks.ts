import type { EntityManager } from 'typeorm';

/**
 * How one area tells that another area's entity is still in use by its own: run in the
 * transaction deleting the entity, after its row is locked.
 */
export interface UsageCheck {
  /** What is counted, plural: "auth domains". */
  readonly holds: string;
  count(id: string, manager: EntityManager): Promise<number>;
}

/** What still uses an entity, in words ("2 auth domains"), one item per check that counts any. */
export async function usesOf(checks: readonly UsageCheck[], id: string, manager: EntityManager): Promise<string[]> {
  const uses: string[] = [];
  // One after another: they share the transaction's one connection.
  for (const check of checks) {
    const count = await check.count(id, manager);
    if (count > 0) uses.push(`${count} ${check.holds}`);
  }
  return uses;
}

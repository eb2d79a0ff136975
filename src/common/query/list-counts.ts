import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { LIST_QUERIES } from './list-query.js';

/** How often the counts' deltas are folded together: a busy minute adds a few thousand rows at most. */
const FOLD_INTERVAL_MS = 60_000;

/** Held while folding a table, so that hubs sharing a database fold it once at a time. */
const FOLD_LOCK = 7_236_267_218_633_830_417n;

/**
 * Keeps the counts lists read `total` from small. Triggers add a row of deltas per statement and
 * key (so that writers never wait on each other); folding replaces a table's rows by one per key,
 * in one statement, which readers see whole or not at all: a sum is the same before and after.
 */
@Injectable()
export class ListCounts {
  constructor(private readonly dataSource: DataSource) {}

  /** The counts tables of every list that declares one. */
  static tables(): string[] {
    return [...new Set([...LIST_QUERIES].flatMap((spec) => (spec.counts ?? []).map((counts) => counts.table)))];
  }

  @Interval('list-counts-fold', FOLD_INTERVAL_MS)
  async foldAll(): Promise<void> {
    for (const table of ListCounts.tables()) await this.fold(table);
  }

  /** Folds one table's deltas into a row per key (dropping keys that count nothing); false when another hub is at it. */
  async fold(table: string): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      const [{ locked }]: { locked: boolean }[] = await manager.query('SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS locked', [
        Number(FOLD_LOCK % 2_147_483_647n),
        table,
      ]);
      if (!locked) return false;
      const columns: { name: string }[] = await manager.query(
        `SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 AND column_name <> 'n' ORDER BY ordinal_position`,
        [table],
      );
      const key = columns.map((column) => `"${column.name}"`).join(', ');
      await manager.query(
        `WITH gone AS (DELETE FROM "${table}" RETURNING *)
         INSERT INTO "${table}" (${key}, n) SELECT ${key}, sum(n) FROM gone GROUP BY ${key} HAVING sum(n) <> 0`,
      );
      return true;
    });
  }
}

// Running queries in the worker's one DuckDB instance: a few connections (DuckDB runs one query per
// connection at a time, and a slow distinct-values scan must not hold up a page of records), each
// with its prepared statements kept by SQL text, and every query abortable: an aborted signal
// interrupts the connection running it.
import type { DuckDBConnection, DuckDBInstance, DuckDBMaterializedResult, DuckDBPreparedStatement, DuckDBValue, DuckDBVector } from '@duckdb/node-api';

/** Statements kept per connection: a page of records is a handful of distinct SQL texts per dataset. */
const STATEMENTS_KEPT = 128;

export class QueryCancelledError extends Error {
  constructor() {
    super('The query was cancelled');
  }
}

interface Slot {
  readonly connection: DuckDBConnection;
  readonly statements: Map<string, DuckDBPreparedStatement>;
}

export class Queries {
  private readonly idle: Slot[] = [];
  private readonly waiting: ((slot: Slot) => void)[] = [];

  private constructor(slots: Slot[]) {
    this.idle.push(...slots);
  }

  static async open(instance: DuckDBInstance, connections: number): Promise<Queries> {
    const slots: Slot[] = [];
    for (let i = 0; i < connections; i++) slots.push({ connection: await instance.connect(), statements: new Map() });
    return new Queries(slots);
  }

  /**
   * The rows of `sql` with `params`, each an array of values in column order; rejects with
   * QueryCancelledError once `signal` aborts. Every query of the worker selects its columns through
   * selectExpression (types.ts): DOUBLE, integers of at most 32 bits, VARCHAR or BOOLEAN, whose
   * DuckDB values are JavaScript's numbers, strings and booleans already. So the rows are read as
   * DuckDB gives them (getRows), not through getRowsJS's converter, which costs twice as much per
   * value and would turn nothing here into anything else.
   */
  async rows(sql: string, params: readonly unknown[], signal?: AbortSignal): Promise<unknown[][]> {
    if (signal?.aborted) throw new QueryCancelledError();
    const slot = await this.acquire();
    const interrupt = () => slot.connection.interrupt();
    signal?.addEventListener('abort', interrupt);
    try {
      let statement = slot.statements.get(sql);
      if (!statement) {
        statement = await slot.connection.prepare(sql);
        if (slot.statements.size >= STATEMENTS_KEPT) {
          const oldest = slot.statements.keys().next().value as string;
          slot.statements.get(oldest)?.destroySync();
          slot.statements.delete(oldest);
        }
        slot.statements.set(sql, statement);
      } else {
        // Most recently used last: the oldest is the one evicted.
        slot.statements.delete(sql);
        slot.statements.set(sql, statement);
      }
      if (params.length > 0) statement.bind(params as DuckDBValue[]);
      else statement.clearBindings();
      // The result is materialised once the statement has run: its chunks are read here at once,
      // not fetched one by one, each fetch (the last one empty) a trip through libuv's threads.
      const result = await statement.run();
      if (signal?.aborted) throw new QueryCancelledError();
      return rowsOf(result);
    } catch (error) {
      if (signal?.aborted) throw new QueryCancelledError();
      throw error;
    } finally {
      signal?.removeEventListener('abort', interrupt);
      this.release(slot);
    }
  }

  private acquire(): Promise<Slot> {
    const slot = this.idle.pop();
    if (slot) return Promise.resolve(slot);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(slot: Slot): void {
    const next = this.waiting.shift();
    if (next) next(slot);
    else this.idle.push(slot);
  }
}

/**
 * A materialised result's rows, each an array of values in column order: the values DuckDB's
 * getRows gives, read a column at a time. getRows asks the native chunk for its column count once
 * per row and goes through a callback per value; here each chunk's size, column count and vectors
 * are asked once (a third less of the worker's time converting a page of 1,000 rows).
 */
export function rowsOf(result: DuckDBMaterializedResult): unknown[][] {
  const rows: unknown[][] = [];
  const chunks = result.chunkCount;
  for (let c = 0; c < chunks; c++) {
    const chunk = result.getChunk(c);
    const size = chunk.rowCount;
    const columns = chunk.columnCount;
    const vectors: DuckDBVector[] = [];
    for (let column = 0; column < columns; column++) vectors.push(chunk.getColumnVector(column));
    for (let index = 0; index < size; index++) {
      const row: unknown[] = [];
      for (let column = 0; column < columns; column++) row.push(vectors[column].getItem(index));
      rows.push(row);
    }
  }
  return rows;
}

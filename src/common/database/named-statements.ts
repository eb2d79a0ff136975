import type pg from 'pg';
import { QueryFailedError, type DataSource } from 'typeorm';

/**
 * A statement the hub runs on every job (a submission, a start, an end): run under its name,
 * PostgreSQL parses and plans it once per pooled connection and then only binds and executes it,
 * which halves its cost there. It goes to the pool directly, past TypeORM's query runner (and its
 * query logging), so it is for single statements outside a transaction; its failures are
 * TypeORM's, as any other query's, for the problem filter.
 */
export interface NamedStatement {
  readonly name: string;
  readonly text: string;
}

export async function runNamed<Row>(
  dataSource: DataSource,
  statement: NamedStatement,
  values: readonly unknown[],
): Promise<pg.QueryResult<Row & pg.QueryResultRow>> {
  const pool = (dataSource.driver as unknown as { master: pg.Pool }).master;
  try {
    return await pool.query<Row & pg.QueryResultRow>({ name: statement.name, text: statement.text, values: [...values] });
  } catch (error) {
    throw new QueryFailedError(statement.text, [...values], error as Error);
  }
}

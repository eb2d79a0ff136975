import { createHash } from 'node:crypto';
import type pg from 'pg';
import { QueryFailedError, QueryRunnerAlreadyReleasedError, type DataSource, type EntityManager } from 'typeorm';

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

const poolOf = (dataSource: DataSource) => (dataSource.driver as unknown as { master: pg.Pool }).master;

export function runNamed<Row>(dataSource: DataSource, statement: NamedStatement, values: readonly unknown[]): Promise<pg.QueryResult<Row & pg.QueryResultRow>> {
  return runNamedOn<Row>(poolOf(dataSource), statement, values);
}

/** A named statement on a pool (a connection of its own) or on one connection, its failure as TypeORM's. */
async function runNamedOn<Row>(
  queryable: pg.Pool | pg.ClientBase,
  statement: NamedStatement,
  values: readonly unknown[],
): Promise<pg.QueryResult<Row & pg.QueryResultRow>> {
  try {
    return await queryable.query<Row & pg.QueryResultRow>({ name: statement.name, text: statement.text, values: [...values] });
  } catch (error) {
    throw new QueryFailedError(statement.text, [...values], error as Error);
  }
}

const textHashes = new Map<string, string>();

/**
 * A statement's name on a connection: `prefix` and a hash of its text, so the same on every
 * connection and every hub, and never the same for two texts.
 */
export function statementName(prefix: string, text: string): string {
  let hash = textHashes.get(text);
  if (hash === undefined) {
    hash = createHash('sha256').update(text).digest('hex').slice(0, 24);
    // Texts with values written in may vary: the memo stays small, and a name made again is the same.
    if (textHashes.size >= 4096) textHashes.clear();
    textHashes.set(text, hash);
  }
  return `${prefix}${hash}`;
}

/**
 * `manager.query(text, values)` for a statement the hub runs for every node of every pipeline (a
 * pass's lock and writes), as a named statement on the connection the manager queries on (its
 * transaction's, or a pooled one), named after its text: planned by PostgreSQL a few times on each
 * connection, then no more. Its rows (for an UPDATE without RETURNING, none), its failures as
 * TypeORM's. Only for texts of a fixed few shapes: each is kept on every connection it reaches.
 */
export async function queryKept<Row>(manager: EntityManager, text: string, values: readonly unknown[]): Promise<Row[]> {
  const statement = { name: statementName('hub_named_', text), text };
  const runner = manager.queryRunner;
  if (!runner) return (await runNamed<Row>(manager.connection, statement, values)).rows;
  // As manager.query: a transaction that has ended is not quietly left for a pooled connection.
  if (runner.isReleased) throw new QueryRunnerAlreadyReleasedError();
  return (await runNamedOn<Row>((await runner.connect()) as pg.PoolClient, statement, values)).rows;
}

/**
 * Runs one statement on a pooled connection as TypeORM's `dataSource.query` does, with its outcomes
 * (the rows; a failed statement as a QueryFailedError, for the problem filter; a connection refused
 * or not given in time as it is, a busy pool's 503), but with pg's callback given as the query is
 * made, and its connection given back as pg-pool's `pool.query` does (closed after a failure). TypeORM calls `client.query(text, values)`, whose promise pg makes by setting the callback
 * of a query already built, and every row such a query returns outlives the young generation:
 * in a loop of 3,000 namespace pages (50 rows) 16 KB a query was promoted to the old one, against
 * 0.03 KB with the callback given to the query's constructor, the rest alike. For the lists, the
 * hub's most frequent reads, that was nearly all it promoted: longer scavenges, and a mark-compact
 * every few seconds under load (docs/api-conventions.md, "Where the rest went").
 */
export async function runStatement<Row>(dataSource: DataSource, text: string, values: unknown[]): Promise<Row[]> {
  const client = await poolOf(dataSource).connect();
  return new Promise<Row[]>((resolve, reject) => {
    let settled = false;
    // A connection that failed goes back to the pool as broken, to be closed, as pg-pool's own
    // `pool.query` gives it back: after a statement's error it may be one the server is ending.
    const lost = (error: Error) => {
      if (settled) return;
      settled = true;
      client.release(error);
      reject(new QueryFailedError(text, values, error));
    };
    client.once('error', lost);
    client.query<Row & pg.QueryResultRow>(text, values, (error, result) => {
      client.removeListener('error', lost);
      if (settled) return;
      settled = true;
      client.release(error ?? undefined);
      if (error) reject(new QueryFailedError(text, values, error));
      else resolve(result.rows);
    });
  });
}

// PostgreSQL libraries: the members are the tables and views of one schema (options.schema, default
// `public`). DuckDB's postgres scanner is an extension this build lacks (and nothing is downloaded at
// run time), so rows are read with `pg`: a dataset is copied into the worker's in-memory DuckDB when
// first asked for, and again once the copy is older than options.refreshSeconds (default 60), after
// which filters, order and distinct values run in DuckDB exactly as for files. The connection comes
// from the hub by POST /connection after the worker starts (never in its environment) and never
// appears in a reply or a log line.
import type { DuckDBConnection } from '@duckdb/node-api';
import pg from 'pg';
import { type Dataset, datasetOf, type DeclaredColumn, type Member, NotAMemberError, Serial } from './library.js';
import { identifier } from './sql.js';

/** Rows fetched from PostgreSQL at a time while copying a table. */
const FETCH_ROWS = 10_000;
const DEFAULT_REFRESH_SECONDS = 60;

/** PostgreSQL's type → the DuckDB type its text is cast to; anything not listed stays text. */
const TYPES: Record<string, string> = {
  smallint: 'DOUBLE',
  integer: 'DOUBLE',
  bigint: 'DOUBLE',
  numeric: 'DOUBLE',
  real: 'DOUBLE',
  'double precision': 'DOUBLE',
  date: 'DATE',
  'timestamp without time zone': 'TIMESTAMP',
  'timestamp with time zone': 'TIMESTAMPTZ',
  boolean: 'BOOLEAN',
};

/** Why a connection could not be made, without anything the credential holds. */
export class ConnectionRefusedError extends Error {}

export class PostgresLibrary {
  private pool?: pg.Pool;
  private schema: string;
  private readonly refreshMs: number;
  private readonly copies = new Map<string, { readonly at: number; readonly dataset: Promise<Dataset> }>();
  private readonly serial = new Serial();
  /** Each member's DuckDB table: a refresh replaces it in place (a query under way keeps reading the copy it began with). */
  private readonly tables = new Map<string, string>();

  constructor(
    options: Record<string, unknown>,
    private readonly connection: DuckDBConnection,
  ) {
    this.schema = typeof options.schema === 'string' && options.schema !== '' ? options.schema : 'public';
    const refresh = options.refreshSeconds;
    this.refreshMs = (typeof refresh === 'number' && refresh >= 0 ? refresh : DEFAULT_REFRESH_SECONDS) * 1000;
  }

  get connected(): boolean {
    return this.pool !== undefined;
  }

  /**
   * Takes the connection and checks it works: a credential's data as the hub resolved it, either
   * `connectionString` or pg's fields (`host`, `port`, `user` or `username`, `password`, `database`
   * or `dbname`, `ssl`; credentials hold strings, so `port` and `ssl` may come as text), and
   * `schema` when the hub names it (else options.schema). Other keys are ignored.
   */
  async connect(body: Record<string, unknown>): Promise<void> {
    const text = (...keys: string[]) => keys.map((key) => body[key]).find((value): value is string => typeof value === 'string' && value !== '');
    const port = body.port === undefined || body.port === '' ? undefined : Number(body.port);
    const ssl = body.ssl === true || (typeof body.ssl === 'string' && ['true', 'require', '1'].includes(body.ssl.toLowerCase()));
    const config: pg.PoolConfig = {
      connectionString: text('connectionString'),
      host: text('host'),
      port: port !== undefined && Number.isInteger(port) ? port : undefined,
      user: text('user', 'username'),
      password: text('password'),
      database: text('database', 'dbname'),
      ...(ssl ? { ssl: true } : {}),
    };
    if (!config.connectionString && !config.host && !config.user)
      throw new ConnectionRefusedError('The connection needs connectionString, or host, user, password and database');
    const schema = text('schema');
    if (schema) this.schema = schema;
    const pool = new pg.Pool({ ...config, max: 2, idleTimeoutMillis: 30_000, application_name: 'hub-library-worker' });
    // An idle client's error (the server restarted) must not end the worker; the next query reconnects.
    pool.on('error', () => undefined);
    try {
      await pool.query('SELECT 1');
    } catch (error) {
      await pool.end().catch(() => undefined);
      const code = (error as { code?: string }).code;
      throw new ConnectionRefusedError(`PostgreSQL refused the connection${code ? ` (${code})` : ''}`);
    }
    const previous = this.pool;
    this.pool = pool;
    this.copies.clear();
    await previous?.end().catch(() => undefined);
  }

  async listMembers(): Promise<readonly Member[]> {
    const { rows } = await this.client().query<{ name: string; type: string }>(
      `SELECT table_name AS name, table_type AS type FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`,
      [this.schema],
    );
    return rows.map((row) => ({ name: row.name, type: row.type === 'VIEW' ? 'VIEW' : 'DATA' }));
  }

  dataset(name: string): Promise<Dataset> {
    return this.serial.run(async () => {
      const cached = this.copies.get(name);
      if (cached && Date.now() - cached.at < this.refreshMs) return cached.dataset;
      const member = (await this.listMembers()).find((candidate) => candidate.name === name);
      if (!member) throw new NotAMemberError(`${name} is not a dataset of this library`);
      const dataset = this.copy(member);
      this.copies.set(name, { at: Date.now(), dataset });
      dataset.catch(() => this.copies.get(name)?.dataset === dataset && this.copies.delete(name));
      return dataset;
    });
  }

  private client(): pg.Pool {
    if (!this.pool) throw new Error('The worker has no connection yet');
    return this.pool;
  }

  /** Copies the member's rows into a new DuckDB table, every value read as text and cast once in DuckDB. */
  private async copy(member: Member): Promise<Dataset> {
    const { rows: columnRows } = await this.client().query<{ name: string; type: string }>(
      `SELECT column_name AS name, data_type AS type FROM information_schema.columns
        WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
      [this.schema, member.name],
    );
    const declared: DeclaredColumn[] = columnRows.map((column) => ({ name: column.name, duckType: TYPES[column.type] ?? 'VARCHAR' }));
    const table = this.tables.get(member.name) ?? `pg_${this.tables.size + 1}`;
    this.tables.set(member.name, table);
    const staging = `${table}_staging`;
    await this.connection.run(`CREATE OR REPLACE TABLE ${identifier(staging)} (${declared.map((c) => `${identifier(c.name)} VARCHAR`).join(', ')})`);
    const appender = await this.connection.createAppender(staging);
    const client = await this.client().connect();
    try {
      await client.query('BEGIN READ ONLY');
      await client.query(
        `DECLARE copy NO SCROLL CURSOR FOR SELECT ${declared.map((c) => `${identifier(c.name)}::text`).join(', ')} FROM ${identifier(this.schema)}.${identifier(member.name)}`,
      );
      for (;;) {
        const batch = await client.query<string[]>({ text: `FETCH ${FETCH_ROWS} FROM copy`, rowMode: 'array' });
        for (const row of batch.rows) {
          for (const value of row) {
            if (value === null) appender.appendNull();
            else appender.appendVarchar(value);
          }
          appender.endRow();
        }
        if (batch.rows.length < FETCH_ROWS) break;
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
      appender.closeSync();
    }
    const casts = declared.map((c) =>
      c.duckType === 'VARCHAR' ? identifier(c.name) : `TRY_CAST(${identifier(c.name)} AS ${c.duckType}) AS ${identifier(c.name)}`,
    );
    await this.connection.run(`CREATE OR REPLACE TABLE ${identifier(table)} AS SELECT ${casts.join(', ')} FROM ${identifier(staging)}`);
    await this.connection.run(`DROP TABLE ${identifier(staging)}`);
    const copiedAt = new Date().toISOString();
    return datasetOf(this.connection, {
      name: member.name,
      type: member.type,
      engine: 'postgres',
      source: identifier(table),
      declared,
      extra: { created: copiedAt, lastModified: copiedAt },
    });
  }
}

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource, QueryFailedError } from 'typeorm';
import { runStatement } from '../../src/common/database/named-statements.js';
import { poolBusy } from '../../src/common/errors/problem.filter.js';
import { SERVER_URL_VARIABLE } from '../support/test-database.js';

/**
 * The lists' statements go to the pool past TypeORM's query runner (runStatement): their outcomes
 * must stay TypeORM's, which the problem filter turns into replies. One pooled connection, so that
 * a connection not given back, or given back broken, shows in the next statement.
 */
describe('a statement run on the pool directly', () => {
  let dataSource: DataSource;

  beforeAll(async () => {
    dataSource = new DataSource({ type: 'postgres', url: process.env[SERVER_URL_VARIABLE], extra: { max: 1, connectionTimeoutMillis: 2_000 } });
    await dataSource.initialize();
  });

  afterAll(async () => {
    await dataSource.destroy();
  });

  it('gives its rows, its values bound', async () => {
    await expect(runStatement(dataSource, 'SELECT $1::int + 1 AS n, $2::text AS name', [41, 'x'])).resolves.toEqual([{ n: 42, name: 'x' }]);
  });

  it("fails as a QueryFailedError carrying PostgreSQL's code, and gives its connection back", async () => {
    const error = await runStatement(dataSource, 'SELECT $1::int AS n', ['not a number']).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(QueryFailedError);
    expect((error as QueryFailedError<Error & { code: string }>).driverError.code).toBe('22P02');
    await expect(runStatement(dataSource, 'SELECT 1 AS n', [])).resolves.toEqual([{ n: 1 }]);
  });

  it('gives a connection lost during the statement back as broken: the next statement gets a new one', async () => {
    const error = await runStatement(dataSource, 'SELECT pg_terminate_backend(pg_backend_pid())', []).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(QueryFailedError);
    await expect(runStatement(dataSource, 'SELECT 1 AS n', [])).resolves.toEqual([{ n: 1 }]);
  });

  it("fails with the pool's own error, unwrapped, when no connection is free in time (a 503)", async () => {
    const held = await (dataSource.driver as unknown as { master: { connect(): Promise<{ release(): void }> } }).master.connect();
    try {
      const error = await runStatement(dataSource, 'SELECT 1 AS n', []).catch((failure: unknown) => failure);
      expect(error).not.toBeInstanceOf(QueryFailedError);
      expect(poolBusy(error)).toBe(true);
    } finally {
      held.release();
    }
  });
});

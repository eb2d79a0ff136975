import { describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { QueryFailedError } from 'typeorm';
import { poolBusy } from '../../src/common/errors/problem.filter.js';
import { SERVER_URL_VARIABLE } from '../support/test-database.js';

/**
 * A pool that stays busy past its wait is answered 503, never 500 (problem.filter.ts). pg-pool
 * tells it only by its message: this takes the error from a real pool whose one connection is
 * held, so that a pg upgrade that rewords it fails here.
 */
describe('a database pool busy past its wait', () => {
  it('fails a connect with the error the problem filter answers 503', async () => {
    const pool = new pg.Pool({ connectionString: process.env[SERVER_URL_VARIABLE], max: 1, connectionTimeoutMillis: 100 });
    const held = await pool.connect();
    try {
      const error = await pool.connect().then(
        (client) => {
          client.release();
          return undefined;
        },
        (failure: unknown) => failure,
      );
      expect(error).toBeInstanceOf(Error);
      expect(poolBusy(error)).toBe(true);
      // As runNamed wraps it (a job's submission, a cluster transition).
      expect(poolBusy(new QueryFailedError('SELECT 1', [], error as Error))).toBe(true);
    } finally {
      held.release();
      await pool.end();
    }
  });

  it('is told apart from other connection failures', () => {
    expect(poolBusy(new Error('Connection terminated due to connection timeout'))).toBe(false);
    expect(poolBusy('timeout exceeded when trying to connect')).toBe(false);
    expect(poolBusy(new QueryFailedError('SELECT 1', [], new Error('duplicate key value violates unique constraint')))).toBe(false);
  });
});

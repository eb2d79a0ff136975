import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type pg from 'pg';
import { DataSource, QueryFailedError, QueryRunnerAlreadyReleasedError } from 'typeorm';
import { KeptPlans } from '../../src/common/database/kept-plans.js';
import { queryKept } from '../../src/common/database/named-statements.js';
import { SERVER_URL_VARIABLE } from '../support/test-database.js';

/**
 * Statements kept planned on their connection: the placement round's batches (KeptPlans, PREPARE
 * and EXECUTE in one simple query) and the pipeline engine's statements (queryKept, the extended
 * protocol's named statements). What the connection holds is read from pg_prepared_statements.
 */
describe('statements kept planned on their connection', () => {
  let dataSource: DataSource;
  let client: pg.PoolClient;

  const batch = async (plans: KeptPlans, statements: string[]) => {
    const prelude = plans.prelude();
    const results = (await client.query([...prelude, ...statements].join(';\n'))) as unknown as pg.QueryResult | pg.QueryResult[];
    return { prelude, results: (Array.isArray(results) ? results : [results]).slice(prelude.length) };
  };
  const keptOnServer = async (prefix: string) =>
    (await client.query<{ name: string }>('SELECT name FROM pg_prepared_statements WHERE starts_with(name, $1) ORDER BY name', [prefix])).rows.map(
      (row) => row.name,
    );

  beforeAll(async () => {
    dataSource = new DataSource({ type: 'postgres', url: process.env[SERVER_URL_VARIABLE], extra: { max: 1, connectionTimeoutMillis: 2_000 } });
    await dataSource.initialize();
    client = await (dataSource.driver as unknown as { master: pg.Pool }).master.connect();
  });

  afterAll(async () => {
    client.release();
    await dataSource.destroy();
  });

  describe('KeptPlans', () => {
    it('prepares a text the first time it reaches the connection, and only executes it after', async () => {
      const text = "SELECT 'kept once' AS said, 1 + 1 AS n";
      const once = new KeptPlans(client);
      const first = await batch(once, [once.execute(text)]);
      expect(first.prelude).toEqual([expect.stringMatching(/^PREPARE hub_kept_[0-9a-f]{24} AS SELECT 'kept once'/)]);
      expect(first.results.map((result) => result.rows)).toEqual([[{ said: 'kept once', n: 2 }]]);
      const plans = new KeptPlans(client);
      const again = await batch(plans, ['BEGIN', plans.execute(text), 'COMMIT']);
      expect(again.prelude).toEqual([]);
      expect(again.results[1].rows).toEqual([{ said: 'kept once', n: 2 }]);
      expect(await keptOnServer('hub_kept_')).toHaveLength(1);
    });

    it('executes a text with parameters with the values given, under one kept statement', async () => {
      const text = 'SELECT count(*)::int AS n, min(x) AS least FROM unnest($1::int[]) AS x';
      let plans = new KeptPlans(client);
      const one = await batch(plans, [plans.execute(text, ['ARRAY[3,4,5]::int[]'])]);
      plans = new KeptPlans(client);
      const two = await batch(plans, [plans.execute(text, ['ARRAY[9]::int[]'])]);
      expect(one.results[0].rows).toEqual([{ n: 3, least: 3 }]);
      expect(two.prelude).toEqual([]);
      expect(two.results[0].rows).toEqual([{ n: 1, least: 9 }]);
    });

    it('keeps 64 statements on a connection at the most, letting the one used longest ago go (never one the batch runs)', async () => {
      await client.query('DEALLOCATE ALL');
      await new KeptPlans(client).resync();
      const texts = Array.from({ length: 65 }, (_, index) => `SELECT ${index} AS kept_number`);
      for (const text of texts) {
        const plans = new KeptPlans(client);
        await batch(plans, [plans.execute(text)]);
      }
      expect(await keptOnServer('hub_kept_')).toHaveLength(64);
      // The second text, now used longest ago, is used in a batch that also brings a new one:
      // the one let go is the third, not the one the batch runs.
      const plans = new KeptPlans(client);
      const statements = [plans.execute(texts[1]), plans.execute(texts[0])];
      const prelude = plans.prelude();
      expect(prelude).toEqual([expect.stringMatching(/^DEALLOCATE hub_kept_/), expect.stringMatching(/^PREPARE hub_kept_/)]);
      const results = (await client.query([...prelude, ...statements].join(';\n'))) as unknown as pg.QueryResult[];
      expect(results.slice(prelude.length).map((result) => result.rows)).toEqual([[{ kept_number: 1 }], [{ kept_number: 0 }]]);
      const kept = await keptOnServer('hub_kept_');
      expect(kept).toHaveLength(64);
      const third = new KeptPlans(client);
      third.execute(texts[2]);
      expect(third.prelude()).toEqual([expect.stringMatching(/^DEALLOCATE hub_kept_/), expect.stringMatching(/^PREPARE hub_kept_/)]);
    });

    it('reads what the connection keeps after a batch failed, so that the next batch neither prepares twice nor executes what is gone', async () => {
      await client.query('DEALLOCATE ALL');
      const plans = new KeptPlans(client);
      await plans.resync();
      const text = "SELECT 'after a failure' AS said";
      // The PREPARE ahead of the failure stays, though the transaction is rolled back.
      const failed = await batch(plans, ['BEGIN', plans.execute(text), 'SELECT 1 / 0']).catch((error: unknown) => error);
      expect(failed).toBeInstanceOf(Error);
      await client.query('ROLLBACK');
      await plans.resync();
      let next = new KeptPlans(client);
      expect((await batch(next, [next.execute(text)])).results[0].rows).toEqual([{ said: 'after a failure' }]);
      // Gone behind its back: the EXECUTE fails, and after a resync it is prepared again.
      await client.query('DEALLOCATE ALL');
      next = new KeptPlans(client);
      await expect(batch(next, [next.execute(text)])).rejects.toThrow(/does not exist/);
      await next.resync();
      next = new KeptPlans(client);
      const prepared = await batch(next, [next.execute(text)]);
      expect(prepared.prelude).toHaveLength(1);
      expect(prepared.results[0].rows).toEqual([{ said: 'after a failure' }]);
    });
  });

  describe('queryKept', () => {
    it("runs in a transaction on the transaction's connection, as a named statement, and gives the rows", async () => {
      client.release();
      try {
        await dataSource.transaction(async (manager) => {
          await manager.query('CREATE TEMPORARY TABLE kept_rows (n int) ON COMMIT DROP');
          await manager.query('INSERT INTO kept_rows VALUES (1), (2), (3)');
          // A row only this transaction sees: the statement ran on its connection.
          await expect(queryKept(manager, 'SELECT sum(n)::int AS total FROM kept_rows WHERE n >= $1', [2])).resolves.toEqual([{ total: 5 }]);
          await expect(queryKept(manager, 'SELECT sum(n)::int AS total FROM kept_rows WHERE n >= $1', [1])).resolves.toEqual([{ total: 6 }]);
          const named: { name: string }[] = await manager.query("SELECT name FROM pg_prepared_statements WHERE starts_with(name, 'hub_named_')");
          expect(named.length).toBeGreaterThanOrEqual(1);
        });
      } finally {
        client = await (dataSource.driver as unknown as { master: pg.Pool }).master.connect();
      }
    });

    it('refuses, as manager.query does, a manager whose transaction has ended', async () => {
      client.release();
      try {
        const ended = await dataSource.transaction((manager) => Promise.resolve(manager));
        await expect(queryKept(ended, 'SELECT 1 AS n', [])).rejects.toBeInstanceOf(QueryRunnerAlreadyReleasedError);
      } finally {
        client = await (dataSource.driver as unknown as { master: pg.Pool }).master.connect();
      }
    });

    it('runs outside a transaction on a pooled connection', async () => {
      client.release();
      try {
        await expect(queryKept(dataSource.manager, 'SELECT $1::int * 2 AS n', [21])).resolves.toEqual([{ n: 42 }]);
      } finally {
        client = await (dataSource.driver as unknown as { master: pg.Pool }).master.connect();
      }
    });

    it("fails as a QueryFailedError carrying PostgreSQL's code, in a transaction or not", async () => {
      client.release();
      try {
        const outside = await queryKept(dataSource.manager, 'SELECT $1::int AS n', ['not a number']).catch((failure: unknown) => failure);
        expect(outside).toBeInstanceOf(QueryFailedError);
        expect((outside as QueryFailedError<Error & { code: string }>).driverError.code).toBe('22P02');
        const inside = await dataSource
          .transaction((manager) => queryKept(manager, 'SELECT $1::int AS n', ['still not a number']))
          .catch((failure: unknown) => failure);
        expect(inside).toBeInstanceOf(QueryFailedError);
        expect((inside as QueryFailedError<Error & { code: string }>).driverError.code).toBe('22P02');
      } finally {
        client = await (dataSource.driver as unknown as { master: pg.Pool }).master.connect();
      }
    });
  });
});

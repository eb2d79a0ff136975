import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from '@jest/globals';
import { rowsOf } from './queries.js';

describe('rowsOf', () => {
  it('reads the rows DuckDB’s getRows reads, over several chunks, missing values and every type the worker selects', async () => {
    const connection = await (await DuckDBInstance.create(':memory:')).connect();
    try {
      // 5,000 rows: three chunks of at most 2,048; every seventh value missing; long and short (inlined) text.
      const sql = `SELECT range::INTEGER AS i, CASE WHEN range % 7 = 0 THEN NULL ELSE range / 3 END::DOUBLE AS d,
          CASE WHEN range % 7 = 1 THEN NULL ELSE repeat('é', (range % 20)::INTEGER) END AS s, range % 2 = 0 AS b
        FROM range(5000) ORDER BY range`;
      const rows = rowsOf(await (await connection.prepare(sql)).run());
      const expected: unknown[][] = [];
      const result = await (await connection.prepare(sql)).run();
      for (let i = 0; i < result.chunkCount; i++) expected.push(...result.getChunk(i).getRows());
      expect(result.chunkCount).toBeGreaterThan(2);
      expect(rows).toHaveLength(5000);
      expect(rows).toEqual(expected);
      expect(rows[7]).toEqual([7, null, 'ééééééé', false]);
    } finally {
      connection.closeSync();
    }
  });
});

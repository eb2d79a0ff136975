import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { rowsOf } from './queries.js';

describe('rowsOf', () => {
  let connection: DuckDBConnection;
  beforeAll(async () => {
    connection = await (await DuckDBInstance.create(':memory:')).connect();
  });
  afterAll(() => connection.closeSync());

  /** What DuckDB's own getRows reads from the same query's result. */
  async function getRows(sql: string): Promise<unknown[][]> {
    const result = await (await connection.prepare(sql)).run();
    const rows: unknown[][] = [];
    for (let i = 0; i < result.chunkCount; i++) rows.push(...result.getChunk(i).getRows());
    return rows;
  }

  it('reads the rows DuckDB’s getRows reads, over several chunks, missing values and every type the worker selects', async () => {
    // 5,000 rows: three chunks of at most 2,048; every seventh value missing, in every column.
    const missing = (expression: string, shift: number) => `CASE WHEN (range + ${shift}) % 7 = 0 THEN NULL ELSE ${expression} END`;
    const sql = `SELECT ${missing('range::INTEGER', 0)} AS i, ${missing('range / 3', 1)}::DOUBLE AS d, ${missing("repeat('é', (range % 20)::INTEGER)", 2)} AS s,
        ${missing('range % 2 = 0', 3)} AS b, ${missing('(range / 4)::FLOAT', 4)} AS f, ${missing('(range % 60000)::SMALLINT', 5)}::SMALLINT AS si,
        ${missing('(range % 200 - 100)::TINYINT', 6)} AS ti, ${missing('range::UINTEGER * 1000', 0)} AS ui, ${missing('(range % 65000)::USMALLINT', 1)} AS us,
        ${missing('(range % 250)::UTINYINT', 2)} AS ut, ${missing("'code-' || (range % 1000)", 3)} AS ascii, ${missing("repeat('x', (range % 30)::INTEGER)", 4)} AS ascii_any_length
      FROM range(5000) ORDER BY range`;
    const rows = rowsOf(await (await connection.prepare(sql)).run());
    const expected = await getRows(sql);
    expect(expected).toHaveLength(5000);
    expect(rows).toEqual(expected);
    expect(rows[7]).toEqual([null, 7 / 3, 'ééééééé', false, 1.75, 7, -93, null, 7, 7, 'code-7', 'xxxxxxx']);
    expect(rows[1]).toEqual([1, 1 / 3, 'é', false, 0.25, 1, null, 1000, 1, 1, 'code-1', 'x']);
  });

  it('reads text of every length and alphabet as it is, the empty text included', async () => {
    const texts = ['', 'a', 'twelve bytes', 'thirteen byte', 'é', 'ééééé', 'éééééé', 'ééééééé', '日本', '🙂🙂🙂', 'x'.repeat(100), 'ascii then é'];
    const sql = `SELECT * FROM (VALUES ${texts.map((text, i) => `(${i}, '${text}')`).join(', ')}) AS t(i, text) ORDER BY i`;
    const rows = rowsOf(await (await connection.prepare(sql)).run());
    expect(rows.map((row) => row[1])).toEqual(texts);
  });

  it('reads constant columns, and an empty result as no rows', async () => {
    const sql = `SELECT 'same text' AS t, 42 AS n, NULL::VARCHAR AS missing, range::DOUBLE AS d FROM range(3000)`;
    const rows = rowsOf(await (await connection.prepare(sql)).run());
    expect(rows).toEqual(await getRows(sql));
    expect(rows[2999]).toEqual(['same text', 42, null, 2999]);
    expect(rowsOf(await (await connection.prepare('SELECT 1 AS n WHERE false')).run())).toEqual([]);
  });

  it('reads a type the worker never selects as getRows does', async () => {
    const sql = `SELECT range AS big, DATE '2020-01-01' + range::INTEGER AS day, CASE WHEN range = 1 THEN NULL ELSE [range] END AS list FROM range(3) ORDER BY range`;
    expect(rowsOf(await (await connection.prepare(sql)).run())).toEqual(await getRows(sql));
  });
});

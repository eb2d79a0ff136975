import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { compileFilter, FilterError, type FilterField, MAX_FILTER_DEPTH, MAX_FILTER_LENGTH } from './where-filter.js';

/**
 * Every clause of the WHERE grammar (api-map §5), compiled and run by DuckDB on a small table with
 * missing values, so that each case is checked by the rows it selects, not by the SQL text alone.
 */
const FIELDS: readonly FilterField[] = [
  { name: 'id', type: 'number' },
  { name: 'name', type: 'string' },
  { name: 'score', type: 'number' },
  { name: 'day', type: 'date' },
  { name: 'ts', type: 'datetime' },
  { name: 'flag', type: 'boolean' },
];

const ROWS = [
  [1, 'Ann', 9.5, '2020-01-01', '2020-01-01 10:00:00', true],
  [2, 'bob', 7, '2020-01-15', '2020-01-15 00:00:00', false],
  [3, "O'Brien", -3.25, '2020-02-29', '2020-02-29 12:30:00', true],
  [4, 'a%b', 0, null, null, null],
  [5, 'a_b', null, '2021-06-30', '2021-06-30 23:59:59', false],
  [6, null, 100, '2019-12-31', null, true],
  [7, 'Zoë', 50, '2020-03-01', null, false],
  [8, 'say "hi"', 1.5, '2020-01-01', null, true],
  [9, 'ann', 9.5, '2020-01-02', null, false],
  [10, 'back\\slash', 2, '2020-05-05', null, true],
];

let connection: DuckDBConnection;

beforeAll(async () => {
  const instance = await DuckDBInstance.create(':memory:');
  connection = await instance.connect();
  await connection.run('CREATE TABLE t (id BIGINT, name VARCHAR, score DOUBLE, day DATE, ts TIMESTAMP, flag BOOLEAN)');
  for (const row of ROWS) await connection.run('INSERT INTO t VALUES ($1, $2, $3, $4::DATE, $5::TIMESTAMP, $6)', row);
});

afterAll(() => connection.closeSync());

/** The ids the filter selects, ascending. */
async function ids(filter: string): Promise<number[]> {
  const { sql, params } = compileFilter(filter, FIELDS);
  const reader = await connection.runAndReadAll(`SELECT id FROM t WHERE ${sql} ORDER BY id`, params as DuckDBValue[]);
  return reader.getRowsJS().map(([id]) => Number(id));
}

function refusal(filter: string, fields: readonly FilterField[] = FIELDS): FilterError {
  try {
    compileFilter(filter, fields);
  } catch (error) {
    if (error instanceof FilterError) return error;
    throw error;
  }
  throw new Error(`${filter} was accepted`);
}

const ALL = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
const except = (...left: number[]) => ALL.filter((id) => !left.includes(id));

describe('compileFilter: clauses, by the rows they select', () => {
  it.each([
    ['id = 1', [1]],
    ['id eq 1', [1]],
    ['ID EQ 1', [1]],
    ['id ^= 1', except(1)],
    ['id ~= 1', except(1)],
    ['id ne 1', except(1)],
    ['score < 2', [3, 4, 8]],
    ['score lt 2', [3, 4, 8]],
    ['score <= 2', [3, 4, 8, 10]],
    ['score le 2', [3, 4, 8, 10]],
    ['score > 9.5', [6, 7]],
    ['score gt 9.5', [6, 7]],
    ['score >= 9.5', [1, 6, 7, 9]],
    ['score GE 9.5', [1, 6, 7, 9]],
    ['score = -3.25', [3]],
    ['score > -4', except(5)],
    ['score = 1.50', [8]],
    ['score = .5', []],
    ['score > 1e1', [6, 7]],
    // A missing value is never equal, so `ne` (which is `not =`) holds for it.
    ['score ne 9.5', except(1, 9)],
    ['id < score', [1, 2, 6, 7, 9]],
  ])('comparison %s', async (filter, expected) => {
    expect(await ids(filter)).toEqual(expected);
  });

  it.each([
    ["name = 'Ann'", [1]],
    ['name = "Ann"', [1]],
    ["name = 'ann'", [9]],
    ["name = 'O''Brien'", [3]],
    ['name = "say ""hi"""', [8]],
    ["name = 'Zoë'", [7]],
    ["name = 'back\\slash'", [10]],
    ["name > 'Z'", [2, 4, 5, 7, 8, 9, 10]],
  ])('strings %s (case-sensitive, quotes doubled)', async (filter, expected) => {
    expect(await ids(filter)).toEqual(expected);
  });

  it.each([
    ["name in ('Ann', 'bob')", [1, 2]],
    ['id IN (1, 3, 5)', [1, 3, 5]],
    ["name not in ('Ann', 'bob')", except(1, 2)],
    ['score between 0 and 7', [2, 4, 8, 10]],
    ['score not between 0 and 7', [1, 3, 5, 6, 7, 9]],
    ["day between '01JAN2020'd and '15JAN2020'd", [1, 2, 8, 9]],
    ["name contains 'nn'", [1, 9]],
    ["name ? 'nn'", [1, 9]],
    ["name contains '%'", [4]],
    ["name contains '_'", [5]],
    ["name not contains 'a'", [1, 2, 3, 6, 7]],
    ["name like 'a%'", [4, 5, 9]],
    ["name like 'a_b'", [4, 5]],
    ["name like 'back\\slash'", [10]],
    ["name not like 'a%'", except(4, 5, 9)],
    ['day is missing', [4]],
    ['day is null', [4]],
    ['name IS MISSING', [6]],
    ['score is not missing', except(5)],
    ['ts is not null', [1, 2, 3, 5]],
  ])('%s', async (filter, expected) => {
    expect(await ids(filter)).toEqual(expected);
  });

  it.each([
    ["day = '01JAN2020'd", [1, 8]],
    ["day >= '29feb2020'D", [3, 5, 7, 10]],
    ["day < '01JAN2020'd", [6]],
    ['day = "1jan2020"d', [1, 8]],
    ["ts > '01JAN2020:10:00:00'dt", [2, 3, 5]],
    ["ts >= '15JAN2020'd", [2, 3, 5]],
    ["ts = '30JUN2021:23:59:59'DT", [5]],
  ])('dates %s', async (filter, expected) => {
    expect(await ids(filter)).toEqual(expected);
  });

  it.each([
    ['flag', [1, 3, 6, 8, 10]],
    ['flag = true', [1, 3, 6, 8, 10]],
    ['flag = FALSE', [2, 5, 7, 9]],
    // Negation is two-valued: a missing flag is not true, so `not flag` holds for it.
    ['not flag', [2, 4, 5, 7, 9]],
  ])('booleans %s', async (filter, expected) => {
    expect(await ids(filter)).toEqual(expected);
  });

  it.each([
    ['id = 1 or id = 2 and score > 100', [1]],
    ['(id = 1 or id = 2) and score > 8', [1]],
    ['not id = 1 and id < 3', [2]],
    ['not (id = 1 and id < 3)', except(1)],
    ['not not id = 1', [1]],
    ['id = 1 OR id = 2', [1, 2]],
    ['id=1 or(id=2)', [1, 2]],
    ['((((id = 3))))', [3]],
    ["'id'n = 1", [1]],
    ['  id\n=\t1  ', [1]],
  ])('precedence and layout %s', async (filter, expected) => {
    expect(await ids(filter)).toEqual(expected);
  });
});

describe('compileFilter: what reaches SQL', () => {
  it('passes values only as parameters, typed, numbered from firstParam', () => {
    const { sql, params } = compileFilter("id = 1 and name = 'x''; drop table t; --' and score > 1.5", FIELDS, 3);
    expect(sql).toBe('("id" = $3::BIGINT AND "name" = $4::VARCHAR AND "score" > $5::DOUBLE)');
    expect(params).toEqual([1, "x'; drop table t; --", 1.5]);
  });

  it('quotes field names from the field list, matched whatever their case', () => {
    const fields: FilterField[] = [
      { name: 'We"ird', type: 'number' },
      { name: 'order', type: 'number' },
      { name: 'notes', type: 'string' },
      { name: 'Android', type: 'string' },
    ];
    expect(compileFilter("'we\"ird'n = 1 and order = 2 or notes = 'a' or android = \"b\"", fields).sql).toBe(
      '(("We""ird" = $1::BIGINT AND "order" = $2::BIGINT) OR "notes" = $3::VARCHAR OR "Android" = $4::VARCHAR)',
    );
  });

  it('prefers the exact name of two fields that differ only in case', () => {
    const fields: FilterField[] = [
      { name: 'A', type: 'number' },
      { name: 'a', type: 'string' },
    ];
    expect(compileFilter("a = 'x' and A = 1", fields).sql).toBe('("a" = $1::VARCHAR AND "A" = $2::BIGINT)');
  });

  it('leaves the data intact whatever a value holds', async () => {
    expect(await ids("name = 'x''; drop table t; --'")).toEqual([]);
    expect(await ids("name = '' or 1=1")).toEqual(ALL);
    expect(await ids('id > 0')).toEqual(ALL);
  });
});

describe('compileFilter: refusals', () => {
  it.each([
    ['x = 1', '"x"', 1],
    ['id = 1 and bogus > 2', '"bogus"', 12],
  ])('names a field that is not one: %s', (filter, named, column) => {
    const error = refusal(filter);
    expect(error.message).toContain(named);
    expect(error.message).toContain('not a field');
    expect(error.message).toContain(`at column ${column}`);
    expect(error.position).toBe(column);
  });

  it.each([
    ['id = 1; drop table t', 7],
    ["name = '' or 1=1 --", 18],
    ['id = 1 -- comment', 8],
    ['id = 1 /* comment */', 8],
    ['id in (select id from t)', 8],
    ["upper(name) = 'A'", 6],
    ['id = ', 6],
    ['id = 1 and', 11],
    ['(id = 1', 8],
    ['id = 1)', 7],
    ["name = 'open", 8],
    ['id == 1', 5],
    ['id = 1 and and id = 2', 12],
    ['id in ()', 8],
    ['5abc = id', 1],
    ['name = @x', 8],
    ['id = 1 ; ', 8],
  ])('a parse error carries its position: %s', (filter, column) => {
    const error = refusal(filter);
    expect(error.position).toBe(column);
    expect(error.message).toContain(`at column ${column}`);
  });

  it.each([
    ["day = '30FEB2020'd", 'not a date', 7],
    ["day = '29FEB2021'd", 'not a date', 7],
    ["day = '01XYZ2020'd", 'not a date', 7],
    ["day = '00JAN2020'd", 'not a date', 7],
    ["ts = '01JAN2020:24:00'dt", 'not a time', 6],
  ])('an impossible date literal is a parse error: %s', (filter, message, column) => {
    const error = refusal(filter);
    expect(error.message).toContain(message);
    expect(error.position).toBe(column);
  });

  it('accepts 29 February of a leap year', async () => {
    expect(await ids("day = '29FEB2020'd")).toEqual([3]);
  });

  it.each([
    ["id = 'abc'", 'needs a number'],
    ['name = 1', 'needs a string'],
    ["day = '2020-01-01'", 'needs a date'],
    ['name contains 1', 'needs a string'],
    ["score like 'a%'", 'needs a string'],
    ['flag = 1', 'needs a boolean'],
    ["id in (1, 'b')", 'needs a number'],
    ["score between 1 and 'z'", 'needs a number'],
    ['id', 'Expected a condition'],
    ["'abc'", 'Expected a condition'],
    ['id = 1e999', 'out of range'],
  ])('a type that does not fit is refused: %s', (filter, message) => {
    expect(refusal(filter).message).toContain(message);
  });

  it('refuses an empty filter', () => {
    expect(refusal('   ').message).toContain('empty');
  });

  it('bounds length and depth without exhausting the stack', () => {
    const long = `${'id = 1 or '.repeat(MAX_FILTER_LENGTH / 10)}id = 2`;
    expect(refusal(long).message).toContain(`longer than ${MAX_FILTER_LENGTH}`);
    const deep = `${'('.repeat(4000)}id = 1${')'.repeat(4000)}`;
    expect(refusal(deep).message).toContain('nests deeper');
    expect(refusal(`${'not '.repeat(2000)}flag`).message).toContain('nests deeper');
    // Parentheses inside quotes are data, not nesting.
    expect(compileFilter(`name = '${'('.repeat(500)}'`, FIELDS).params).toEqual(['('.repeat(500)]);
    expect(compileFilter(`${'('.repeat(MAX_FILTER_DEPTH - 1)}id = 1${')'.repeat(MAX_FILTER_DEPTH - 1)}`, FIELDS).sql).toBe('"id" = $1::BIGINT');
  });

  it('takes a long flat filter within the bound', async () => {
    const filter = Array.from({ length: 400 }, (_, i) => `id = ${i}`).join(' or ');
    expect(await ids(filter)).toEqual(ALL);
  });
});

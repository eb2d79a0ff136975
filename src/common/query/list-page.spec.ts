import { describe, expect, it } from '@jest/globals';
import { DataSource, EntitySchema } from 'typeorm';
import { fetchListPage, fetchListRows, fetchListSlice, observeListQueries, whereFilters } from './list-page.js';
import { defineListQuery, parseListQuery } from './list-query.js';
import type { RawQuery } from './query-values.js';

/** A list operation over `things t` with one field of every type. */
const SPEC = defineListQuery({
  filters: {
    name: { column: 't.name', type: 'string', operators: ['EQ', 'IN', 'CO', 'SW', 'ST', 'PR'] },
    _id: { column: 't.id', type: 'uuid', operators: ['EQ', 'IN', 'PR'] },
    enabled: { column: 't.enabled', type: 'boolean', operators: ['EQ'] },
    status: { column: 't.status', type: ['active', 'retired'], operators: ['EQ', 'IN'] },
    _created: { column: 't.created', type: 'datetime', operators: ['LT', 'GT', 'PR'] },
    tags: { column: 't.tags', type: 'string[]', operators: ['ALL', 'ANY', 'PR'] },
  },
  sorts: { name: 't.name' },
  defaultSort: 'name',
  tieBreaker: 't.id',
  small: 'a test list',
});

const UUID = '123e4567-e89b-12d3-a456-426614174000';
const HOSTILE = "x'; DROP TABLE t; --";
const SELECT = 'SELECT t.id FROM "things" "t"';

/** Never connected: the driver only turns query builders into SQL. */
const dataSource = new DataSource({ type: 'postgres' });

/**
 * A builder's connection whose pool answers each statement with `answer(text)` instead of running
 * it: the lists run their statements on the pool's clients (runStatement).
 */
function answering(answer: (text: string) => unknown[]): unknown {
  const client = {
    once: () => client,
    removeListener: () => client,
    release: () => undefined,
    query: (text: string, _values: unknown[], callback: (error: Error | null, result: { rows: unknown[] }) => void) => callback(null, { rows: answer(text) }),
  };
  return { driver: { master: { connect: () => Promise.resolve(client) } } };
}

/** The SQL and bound parameters that a query string's filters add to a plain select. */
function sqlOf(raw: RawQuery): { sql: string; parameters: unknown[] } {
  const query = parseListQuery(SPEC, raw);
  const qb = dataSource.createQueryBuilder().select('t.id').from('things', 't');
  const [sql, parameters] = whereFilters(qb, query.filters).getQueryAndParameters();
  return { sql, parameters: parameters as unknown[] };
}

/** The same, for the WHERE clause alone. */
function whereOf(raw: RawQuery): { where: string; parameters: unknown[] } {
  const { sql, parameters } = sqlOf(raw);
  expect(sql.startsWith(`${SELECT} WHERE `)).toBe(true);
  return { where: sql.slice(`${SELECT} WHERE `.length), parameters };
}

describe('whereFilters', () => {
  it('adds no WHERE clause and no parameters without filters', () => {
    expect(sqlOf({ sort: 'name' })).toEqual({ sql: SELECT, parameters: [] });
  });

  it('returns the query builder it was given', () => {
    const qb = dataSource.createQueryBuilder().select('t.id').from('things', 't');
    expect(whereFilters(qb, parseListQuery(SPEC, { 'filter[name][EQ]': 'a' }).filters)).toBe(qb);
  });

  describe('SQL per operator', () => {
    it.each([
      ['EQ on a string', { 'filter[name][EQ]': 'analytics' }, 't.name = $1', ['analytics']],
      ['EQ on a UUID, lower-cased', { 'filter[_id][EQ]': UUID.toUpperCase() }, 't.id = $1', [UUID]],
      ['EQ true on a boolean', { 'filter[enabled][EQ]': 'true' }, 't.enabled = $1', [true]],
      ['EQ false on a boolean', { 'filter[enabled][EQ]': 'false' }, 't.enabled = $1', [false]],
      ['EQ on an enumeration', { 'filter[status][EQ]': 'retired' }, 't.status = $1', ['retired']],
      ['IN on a string, as one array', { 'filter[name][IN]': ['a,b', 'c'] }, 't.name = ANY($1)', [['a', 'b', 'c']]],
      ['IN on a UUID', { 'filter[_id][IN]': UUID }, 't.id = ANY($1)', [[UUID]]],
      ['IN on an enumeration', { 'filter[status][IN]': 'active,retired' }, 't.status = ANY($1)', [['active', 'retired']]],
      ['CO', { 'filter[name][CO]': 'lyt' }, "t.name ILIKE $1 ESCAPE '\\'", ['%lyt%']],
      ['SW', { 'filter[name][SW]': 'ana' }, "t.name ILIKE $1 ESCAPE '\\'", ['ana%']],
      ['ST', { 'filter[name][ST]': 'ana' }, "t.name ILIKE $1 ESCAPE '\\'", ['ana%']],
      ['LT', { 'filter[_created][LT]': '2026-11-22T10:15:30.123456 02:00' }, 't.created < CAST($1 AS timestamptz)', ['2026-11-22T10:15:30.123456+02:00']],
      ['GT', { 'filter[_created][GT]': '2026-11-22T10:15:30.123456789Z' }, 't.created > CAST($1 AS timestamptz)', ['2026-11-22T10:15:30.123456789Z']],
      ['ALL', { 'filter[tags][ALL]': 'gpu,eu' }, 't.tags @> CAST($1 AS text[])', [['gpu', 'eu']]],
      ['ANY', { 'filter[tags][ANY]': ['gpu', 'eu'] }, 't.tags && CAST($1 AS text[])', [['gpu', 'eu']]],
    ])('%s', (_what, raw: RawQuery, where, parameters) => {
      expect(whereOf(raw)).toEqual({ where, parameters });
    });
  });

  describe('a prefix column', () => {
    const PREFIXED = defineListQuery({
      filters: { name: { column: 't.name', type: 'string', operators: ['CO', 'SW', 'ST'], prefixColumn: 'lower(t.name) COLLATE "C"' } },
      sorts: { name: 'lower(t.name) COLLATE "C"' },
      defaultSort: 'name',
      tieBreaker: 't.id',
      small: 'a test list',
    });

    function prefixedWhere(raw: RawQuery): [string, unknown[]] {
      const qb = dataSource.createQueryBuilder().select('t.id').from('things', 't');
      const [sql, parameters] = whereFilters(qb, parseListQuery(PREFIXED, raw).filters).getQueryAndParameters();
      return [sql.slice(`${SELECT} WHERE `.length), parameters];
    }

    it.each(['SW', 'ST'])('matches %s as a lower-cased LIKE on it, escaped, so that its btree index serves the prefix', (operator) => {
      expect(prefixedWhere({ [`filter[name][${operator}]`]: 'Bulk_1' })).toEqual([`lower(t.name) COLLATE "C" LIKE lower($1) ESCAPE '\\'`, ['Bulk\\_1%']]);
    });

    it('matches CO on the column itself, case-blind, as without one', () => {
      expect(prefixedWhere({ 'filter[name][CO]': 'Bulk' })).toEqual([`t.name ILIKE $1 ESCAPE '\\'`, ['%Bulk%']]);
    });
  });

  describe('PR', () => {
    it.each([
      ['a string field present', 'name', 'true', "(t.name IS NOT NULL AND t.name <> '')"],
      ['a string field absent', 'name', 'false', "(t.name IS NULL OR t.name = '')"],
      ['a string array field present', 'tags', 'true', 'cardinality(t.tags) > 0'],
      ['a string array field absent', 'tags', 'false', '(t.tags IS NULL OR cardinality(t.tags) = 0)'],
      ['a UUID field present', '_id', 'true', 't.id IS NOT NULL'],
      ['a UUID field absent', '_id', 'false', 't.id IS NULL'],
      ['a date-time field present', '_created', 'true', 't.created IS NOT NULL'],
      ['a date-time field absent', '_created', 'false', 't.created IS NULL'],
    ])('checks %s, binding nothing', (_what, field, raw, where) => {
      expect(whereOf({ [`filter[${field}][PR]`]: raw })).toEqual({ where, parameters: [] });
    });
  });

  describe('LIKE patterns', () => {
    it.each([
      ['CO', String.raw`%100\%\_done\\now%`],
      ['SW', String.raw`100\%\_done\\now%`],
      ['ST', String.raw`100\%\_done\\now%`],
    ])('%s escapes %, _ and \\ in the value', (operator, pattern) => {
      expect(whereOf({ [`filter[name][${operator}]`]: String.raw`100%_done\now` })).toEqual({ where: "t.name ILIKE $1 ESCAPE '\\'", parameters: [pattern] });
    });

    it('escapes every occurrence, including runs of wildcards', () => {
      expect(whereOf({ 'filter[name][CO]': '%%__\\\\' }).parameters).toEqual(['%\\%\\%\\_\\_\\\\\\\\%']);
    });

    it('leaves other characters, quotes included, as they are', () => {
      expect(whereOf({ 'filter[name][SW]': "O'Brien [x] *" }).parameters).toEqual(["O'Brien [x] *%"]);
    });
  });

  describe('bound values', () => {
    it.each([
      ['EQ', { 'filter[name][EQ]': HOSTILE }, [HOSTILE]],
      ['IN', { 'filter[name][IN]': [HOSTILE, 'b'] }, [[HOSTILE, 'b']]],
      ['CO', { 'filter[name][CO]': HOSTILE }, [`%${HOSTILE}%`]],
      ['SW', { 'filter[name][SW]': HOSTILE }, [`${HOSTILE}%`]],
      ['ST', { 'filter[name][ST]': HOSTILE }, [`${HOSTILE}%`]],
      ['ALL', { 'filter[tags][ALL]': HOSTILE }, [[HOSTILE]]],
      ['ANY', { 'filter[tags][ANY]': HOSTILE }, [[HOSTILE]]],
    ])('%s keeps a hostile value out of the SQL text', (_what, raw: RawQuery, parameters) => {
      const { sql, parameters: bound } = sqlOf(raw);
      expect(bound).toEqual(parameters);
      expect(sql).not.toContain('DROP');
      expect(sql).not.toContain(HOSTILE);
      expect(sql).toMatch(/\$1/);
    });

    it('does not read a value that looks like a parameter name as one', () => {
      expect(whereOf({ 'filter[name][EQ]': ':filter_1', 'filter[name][CO]': ':filter_0' })).toEqual({
        where: "t.name = $1 AND t.name ILIKE $2 ESCAPE '\\'",
        parameters: [':filter_1', '%:filter\\_0%'],
      });
    });

    it('numbers the parameters of several filters in order, skipping filters that bind nothing', () => {
      expect(
        whereOf({
          'filter[name][PR]': 'true',
          'filter[_id][IN]': UUID,
          'filter[_created][GT]': '2026-01-01T00:00:00Z',
          'filter[_created][LT]': '2027-01-01T00:00:00Z',
          'filter[tags][PR]': 'false',
          'filter[enabled][EQ]': 'true',
        }),
      ).toEqual({
        where:
          "(t.name IS NOT NULL AND t.name <> '') AND t.id = ANY($1) AND t.created > CAST($2 AS timestamptz) AND t.created < CAST($3 AS timestamptz)" +
          ' AND (t.tags IS NULL OR cardinality(t.tags) = 0) AND t.enabled = $4',
        parameters: [[UUID], '2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z', true],
      });
    });

    it('adds to a WHERE the query builder already has', () => {
      const qb = dataSource.createQueryBuilder().select('t.id').from('things', 't').where('t.owner = :owner', { owner: 'me' });
      const [sql, parameters] = whereFilters(qb, parseListQuery(SPEC, { 'filter[name][EQ]': HOSTILE }).filters).getQueryAndParameters();
      expect(sql).toBe(`${SELECT} WHERE t.owner = $1 AND t.name = $2`);
      expect(parameters).toEqual(['me', HOSTILE]);
    });
  });
});

describe('fetchListRows and fetchListPage over a derived table', () => {
  /** Captures the SQL a fetch runs instead of running it, answering its counts with `count` and its pages with `rows`. */
  function capture(rows: unknown[], count: string): { sql: string[]; qb: ReturnType<typeof derived> } {
    const sql: string[] = [];
    const qb = derived();
    Object.defineProperty(qb, 'connection', { value: answering((text) => (sql.push(text), text.startsWith('SELECT COUNT(*)') ? [{ count }] : rows)) });
    return { sql, qb };
  }
  const COUNT = /^SELECT COUNT\(\*\) AS "count" FROM \(SELECT [^()]*\) "item"$/;

  function derived() {
    return dataSource.createQueryBuilder().from<{ name: string }>(`(SELECT 'a' AS "name", 'x' AS "kind")`, 'item');
  }

  const UNPAGED = defineListQuery({
    filters: { kind: { column: 'item."kind"', type: 'string', operators: ['EQ'] } },
    sorts: { name: 'lower(item."name")' },
    defaultSort: 'name',
    tieBreaker: 'item."name"',
    small: 'a test list',
    paged: false,
  });

  it('selects every column of the derived table, filtered and sorted, without a limit', async () => {
    const { sql, qb } = capture([], '0');
    await fetchListRows(qb, parseListQuery(UNPAGED, { 'filter[kind][EQ]': 'x' }));
    expect(sql).toHaveLength(1);
    expect(sql[0]).toMatch(/^SELECT "item"\.\* FROM \(SELECT .*\) "item" WHERE item\."kind" = \$1 ORDER BY lower\(item\."name"\) ASC, item\."name" ASC$/);
  });

  it('pages a derived table with its count at once: a limited select and a count, each a statement', async () => {
    const { sql, qb } = capture([{ name: 'a', kind: 'x' }], '7');
    const page = await fetchListPage(qb, parseListQuery({ ...UNPAGED, paged: undefined }, { 'page[limit]': '5', sort: '-name' }));
    expect(sql).toHaveLength(2);
    expect(sql.find((text) => !COUNT.test(text))).toMatch(
      /^SELECT "item"\.\* FROM \(SELECT .*\) "item" ORDER BY lower\(item\."name"\) DESC, item\."name" DESC LIMIT 5 OFFSET 0$/,
    );
    expect(sql.filter((text) => COUNT.test(text))).toHaveLength(1);
    expect(page).toEqual({ items: [{ name: 'a', kind: 'x' }], totalCount: 7 });
  });

  it('counts an empty page as any other: none on the first, all there are past the last', async () => {
    const first = capture([], '0');
    expect(await fetchListPage(first.qb, parseListQuery({ ...UNPAGED, paged: undefined }, {}))).toEqual({ items: [], totalCount: 0 });
    const past = capture([], '3');
    expect(await fetchListPage(past.qb, parseListQuery({ ...UNPAGED, paged: undefined }, { 'page[offset]': '100' }))).toEqual({ items: [], totalCount: 3 });
    expect(past.sql).toHaveLength(2);
  });

  it('selects only the columns its items need, and extra expressions, in the page but not in the count', async () => {
    const { sql, qb } = capture([], '0');
    await fetchListPage(qb, parseListQuery({ ...UNPAGED, paged: undefined }, {}), { columns: ['name'], extra: { shown: 'upper(item."kind")' } });
    expect(sql.find((text) => !COUNT.test(text))).toMatch(
      /^SELECT "item"\."name" AS "name", upper\(item\."kind"\) AS "shown" FROM \(SELECT .*\) "item" ORDER BY /,
    );
    expect(sql.filter((text) => COUNT.test(text))).toHaveLength(1);
  });
});

describe('how a shallow page is read (the cheapest plan, as its list declares)', () => {
  /** A table of records that grows (an audit log's shape), with an index for each sort. */
  const RECORDS = new EntitySchema<{ id: string; when: Date; object: string }>({
    name: 'Record',
    tableName: 'records',
    columns: { id: { type: 'uuid', primary: true }, when: { type: 'timestamptz' }, object: { type: 'text' } },
  });
  const GROWING = defineListQuery({
    filters: {
      object: { column: 'record.object', type: 'string', operators: ['EQ', 'SW'] },
      when: { column: 'record."when"', type: 'datetime', operators: ['LT', 'GT'] },
    },
    sorts: { object: 'record.object', when: 'record."when"' },
    defaultSort: '-when',
    tieBreaker: 'record.id',
    indexes: {
      sorts: { object: 'records_object_idx', when: 'records_when_idx' },
      filters: { object: 'records_object_idx', when: 'records_when_idx' },
      ordered: [
        { filter: 'when', operators: ['LT', 'GT'], sorts: ['when'] },
        { filter: 'object', operators: ['EQ'], sorts: ['object'] },
      ],
    },
  });
  const SMALL = defineListQuery({ ...GROWING, indexes: undefined, small: 'a test list' });

  /** The entity's metadata, built without connecting, so that its builders know their key. */
  const entities = new DataSource({ type: 'postgres', entities: [RECORDS] });
  const built = (entities as unknown as { buildMetadatas(): Promise<void> }).buildMetadatas();

  /** Each page statement a fetch runs and how it says it reads it (counts have no `read`). */
  async function reads(fetch: (qb: ReturnType<typeof records>) => Promise<unknown>): Promise<{ sql: string; read?: string }[]> {
    await built;
    const pages: { sql: string; read?: string }[] = [];
    observeListQueries((sql, _parameters, read) => read !== undefined && pages.push({ sql, read }));
    try {
      await fetch(records());
    } finally {
      observeListQueries(undefined);
    }
    return pages;
  }

  function records() {
    const qb = entities.getRepository(RECORDS).createQueryBuilder('record');
    Object.defineProperty(qb, 'connection', { value: answering(() => [{ count: '0' }]) });
    return qb;
  }

  it.each([
    ['a growing list unfiltered, along the sort index', GROWING, {}, "sorted: unfiltered, along the sort's index"],
    ['a growing list by a filter its sort index serves in order', GROWING, { 'filter[when][GT]': '2026-01-01T00:00:00Z' }, 'sorted: its filters'],
    ['a growing list by a filter no sort index serves in order', GROWING, { 'filter[object][SW]': 'cluster/' }, 'by keys'],
    ['a growing list by an equality leading the sort index', GROWING, { 'filter[object][EQ]': 'cluster', sort: 'object' }, 'sorted: its filters'],
    ['a growing list by that equality, sorted otherwise', GROWING, { 'filter[object][EQ]': 'cluster' }, 'by keys'],
    ['a small list, whatever it is filtered by', SMALL, { 'filter[object][SW]': 'cluster/' }, 'sorted: a small list'],
  ])('%s', async (_what, spec, raw: RawQuery, expected) => {
    for (const fetch of [fetchListPage, fetchListSlice]) {
      const [page] = await reads((qb) => fetch(qb, parseListQuery(spec, raw)));
      expect(page.read?.startsWith(expected)).toBe(true);
      if (expected === 'by keys')
        expect(page.sql).toMatch(
          /WHERE "record"\."id" = ANY\(ARRAY\(SELECT "record"\."id" AS "key" FROM "records" "record" WHERE .* LIMIT 100 OFFSET 0\)\) ORDER BY [^)]*$/,
        );
      else {
        expect(page.sql).not.toContain('ARRAY(');
        expect(page.sql).toMatch(/ FROM "records" "record" .*ORDER BY .* LIMIT 100 OFFSET 0$/);
      }
    }
  });

  it('reads every shallow page of a growing list sorted where it declares its keys no cheaper to find than its rows', async () => {
    const SORTED = defineListQuery({ ...GROWING, indexes: { ...GROWING.indexes, sortedShallow: 'its keys cost what its rows do' } });
    for (const fetch of [fetchListPage, fetchListSlice]) {
      const [page] = await reads((qb) => fetch(qb, parseListQuery(SORTED, { 'filter[object][SW]': 'cluster/' })));
      expect(page.read).toBe('sorted: its keys cost what its rows do');
      expect(page.sql).not.toContain('ARRAY(');
    }
    const [deep] = await reads((qb) => fetchListSlice(qb, parseListQuery(SORTED, { 'page[offset]': '10000' })));
    expect(deep.read).toBe('by keys: an offset of 10000 or more, from the start');
  });

  it('reads a page from an offset of 10,000 by its keys, small list or not', async () => {
    for (const spec of [GROWING, SMALL]) {
      const [page] = await reads((qb) => fetchListSlice(qb, parseListQuery(spec, { 'page[offset]': '10000' })));
      expect(page.read).toBe('by keys: an offset of 10000 or more, from the start');
    }
  });

  it('says an unpaged list reads every matching row, sorted', async () => {
    const [page] = await reads((qb) => fetchListRows(qb, parseListQuery({ ...SMALL, paged: false }, {})));
    expect(page.read).toBe('sorted: unpaged, every matching row');
  });
});

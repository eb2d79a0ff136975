import { describe, expect, it } from '@jest/globals';
import { InvalidInputError, type FieldError } from '../errors/hub-errors.js';
import {
  DEFAULT_PAGE_LIMIT,
  defineListQuery,
  invalidQuery,
  LIST_QUERIES,
  MAX_PAGE_LIMIT,
  parseListQuery,
  type ListQuery,
  type ListQuerySpec,
} from './list-query.js';
import type { RawQuery } from './query-values.js';

const STATUSES = ['active', 'retired'] as const;

/** A list operation over `thing` with one field of every type. */
const SPEC = defineListQuery({
  filters: {
    name: { column: 'thing.name', type: 'string', operators: ['EQ', 'IN', 'CO', 'SW', 'ST', 'PR'] },
    _id: { column: 'thing.id', type: 'uuid', operators: ['EQ', 'IN', 'PR'] },
    enabled: { column: 'thing.enabled', type: 'boolean', operators: ['EQ'] },
    status: { column: 'thing.status', type: STATUSES, operators: ['EQ', 'IN'] },
    _created: { column: 'thing.created', type: 'datetime', operators: ['LT', 'GT', 'PR'] },
    tags: { column: 'thing.tags', type: 'string[]', operators: ['ALL', 'ANY', 'PR'] },
    note: { column: 'thing.note', type: 'string', operators: ['CO'] },
  },
  sorts: { name: 'lower(thing.name)', _created: 'thing.created' },
  defaultSort: 'name',
  tieBreaker: 'thing.id',
  small: 'a test list',
  projection: ['_id', 'name', 'tags'],
});

const FIELD_LIST = 'name, _id, enabled, status, _created, tags, note';
const SORT_LIST = 'name, -name, _created, -_created';
const DATE_TIME_MESSAGE = 'must be an ISO 8601 date-time with a time zone, e.g. 2026-11-22T10:15:30.123Z';
const UUID = '123e4567-e89b-12d3-a456-426614174000';
const OTHER_UUID = 'f47ac10b-58cc-4372-a567-0e02b2c3d479';

/** The same operation without projection, filters on a single field. */
const PLAIN_SPEC = defineListQuery({
  filters: { name: { column: 'plain.name', type: 'string', operators: ['EQ'] } },
  sorts: { name: 'plain.name' },
  defaultSort: 'name',
  tieBreaker: 'plain.id',
  small: 'a test list',
});

/** Parses a query that must be refused and returns the error. */
function rejectionOf(raw: RawQuery, spec: ListQuerySpec = SPEC): InvalidInputError {
  let result: ListQuery;
  try {
    result = parseListQuery(spec, raw);
  } catch (error) {
    if (error instanceof InvalidInputError) return error;
    throw error;
  }
  throw new Error(`expected the query to be refused, got ${JSON.stringify(result)}`);
}

function errorsOf(raw: RawQuery, spec: ListQuerySpec = SPEC): readonly FieldError[] {
  return rejectionOf(raw, spec).errors ?? [];
}

/** The one filter of a query that must parse. */
function onlyFilter(raw: RawQuery) {
  const { filters } = parseListQuery(SPEC, raw);
  expect(filters).toHaveLength(1);
  return filters[0];
}

describe('defineListQuery', () => {
  it('returns the spec it was given', () => {
    const spec: ListQuerySpec = { filters: {}, sorts: { name: 'x.name' }, defaultSort: 'name', tieBreaker: 'x.id', small: 'a test list' };
    expect(defineListQuery(spec)).toBe(spec);
  });

  it.each([
    ['a string', 'string', ['EQ', 'IN', 'CO', 'SW', 'ST', 'PR']],
    ['a UUID', 'uuid', ['EQ', 'IN', 'PR']],
    ['a boolean', 'boolean', ['EQ']],
    ['a date-time', 'datetime', ['LT', 'GT', 'PR']],
    ['a string array', 'string[]', ['ALL', 'ANY', 'PR']],
    ['an enumeration', STATUSES, ['EQ', 'IN']],
  ] as const)('accepts every operator that fits %s field', (_what, type, operators) => {
    const spec: ListQuerySpec = {
      filters: { f: { column: 'x.f', type, operators } },
      sorts: { f: 'x.f' },
      defaultSort: 'f',
      tieBreaker: 'x.id',
      small: 'a test list',
    };
    expect(defineListQuery(spec)).toBe(spec);
  });

  it('accepts a descending default sort on an allowed key', () => {
    expect(() =>
      defineListQuery({ filters: {}, sorts: { created: 'x.created' }, defaultSort: '-created', tieBreaker: 'x.id', small: 'a test list' }),
    ).not.toThrow();
  });

  it.each([
    ['a string', 'string', ['EQ', 'LT', 'GT', 'ALL', 'ANY'], 'LT, GT, ALL, ANY'],
    ['a UUID', 'uuid', ['CO', 'SW', 'ST', 'LT', 'GT', 'ALL', 'ANY'], 'CO, SW, ST, LT, GT, ALL, ANY'],
    ['a boolean', 'boolean', ['EQ', 'IN', 'PR', 'CO'], 'IN, PR, CO'],
    ['a date-time', 'datetime', ['EQ', 'IN', 'CO', 'LT'], 'EQ, IN, CO'],
    ['a string array', 'string[]', ['EQ', 'IN', 'CO', 'ALL'], 'EQ, IN, CO'],
    ['an enumeration', STATUSES, ['PR', 'CO', 'SW', 'ST', 'LT', 'GT', 'ALL', 'ANY', 'EQ'], 'PR, CO, SW, ST, LT, GT, ALL, ANY'],
  ] as const)('throws for operators that do not fit %s field, naming each', (_what, type, operators, wrong) => {
    const spec: ListQuerySpec = {
      filters: { f: { column: 'x.f', type, operators } },
      sorts: { f: 'x.f' },
      defaultSort: 'f',
      tieBreaker: 'x.id',
      small: 'a test list',
    };
    expect(() => defineListQuery(spec)).toThrow(new Error(`List filter f: operators ${wrong} do not fit its type`));
  });

  it.each(['size', '-size', 'Name', ''])('throws for the default sort "%s", which is not an allowed sort', (defaultSort) => {
    const spec: ListQuerySpec = { filters: {}, sorts: { name: 'x.name' }, defaultSort, tieBreaker: 'x.id', small: 'a test list' };
    expect(() => defineListQuery(spec)).toThrow(new Error(`Default sort ${defaultSort} is not an allowed sort`));
  });

  // parseSort looks sorts up with Object.hasOwn; the check here must not accept inherited names.
  it.each(['toString', '-constructor'])('throws for the default sort "%s", which only Object.prototype has', (defaultSort) => {
    const spec: ListQuerySpec = { filters: {}, sorts: { name: 'x.name' }, defaultSort, tieBreaker: 'x.id', small: 'a test list' };
    expect(() => defineListQuery(spec)).toThrow(new Error(`Default sort ${defaultSort} is not an allowed sort`));
  });
});

describe('defineListQuery: the indexes behind a list', () => {
  const BASE = {
    filters: {
      name: { column: 'x.name', type: 'string', operators: ['EQ'] },
      mine: { type: 'boolean', operators: ['EQ'] },
    },
    sorts: { name: 'x.name', created: 'x.created' },
    defaultSort: 'name',
    tieBreaker: 'x.id',
  } as const satisfies ListQuerySpec;

  it('throws for a list that declares neither its indexes nor why it stays small', () => {
    expect(() => defineListQuery({ ...BASE })).toThrow(new Error('List query over x.id: declares neither its indexes nor why it stays small'));
  });

  it('accepts a small list without indexes, and registers every list it accepts', () => {
    const spec = defineListQuery({ ...BASE, small: 'a handful' });
    expect(LIST_QUERIES.has(spec)).toBe(true);
  });

  it('accepts an index, the indexes of a union or a reason for each sort and each filter with a column', () => {
    const spec = defineListQuery({
      ...BASE,
      indexes: { sorts: { name: 'x_name_idx', created: ['x_created_idx', 'y_created_idx'] }, filters: { name: { unindexed: 'few rows per value' } } },
    });
    expect(LIST_QUERIES.has(spec)).toBe(true);
  });

  it('names every sort and filter left without an index, and every declaration for a key the list lacks', () => {
    expect(() => defineListQuery({ ...BASE, indexes: { sorts: { name: 'x_name_idx', size: 'x_size_idx' }, filters: {} } })).toThrow(
      new Error('List query over x.id: declares no index for sort created; declares an index for unknown sort size; declares no index for filter name'),
    );
  });

  it('asks nothing of a filter the operation applies itself', () => {
    expect(() => defineListQuery({ ...BASE, indexes: { sorts: { name: 'a', created: 'b' }, filters: { name: 'c', mine: 'd' } } })).toThrow(
      new Error('List query over x.id: declares an index for unknown filter mine'),
    );
  });

  it('names an ordered filter without an index declaration, or ordered by a sort the list lacks', () => {
    const indexes = { sorts: { name: 'a', created: 'b' }, filters: { name: 'c' } };
    expect(() => defineListQuery({ ...BASE, indexes: { ...indexes, ordered: [{ filter: 'mine', operators: ['EQ'], sorts: ['size'] }] } })).toThrow(
      new Error('List query over x.id: declares an ordered filter mine it has no index for; declares mine ordered by unknown sort size'),
    );
  });
});

describe('parseListQuery: how a shallow page is read', () => {
  const GROWING = defineListQuery({
    filters: {
      name: { column: 'x.name', type: 'string', operators: ['EQ', 'CO'] },
      created: { column: 'x.created', type: 'datetime', operators: ['LT', 'GT'] },
      mine: { type: 'boolean', operators: ['EQ'] },
    },
    sorts: { name: 'x.name', created: 'x.created' },
    defaultSort: 'name',
    tieBreaker: 'x.id',
    indexes: {
      sorts: { name: 'x_name_idx', created: 'x_created_idx' },
      filters: { name: ['x_name_idx', 'x_name_trgm_idx'], created: 'x_created_idx' },
      ordered: [
        { filter: 'name', operators: ['EQ'], sorts: ['name', 'created'] },
        { filter: 'created', operators: ['LT', 'GT'], sorts: ['created'] },
      ],
    },
  });

  it('marks a list that declares its indexes as growing, a small one not', () => {
    expect(parseListQuery(GROWING, {}).growing).toBe(true);
    expect(parseListQuery(SPEC, {}).growing).toBe(false);
  });

  it.each([
    ['no filter', {}, []],
    ['an equality that leads the sort index', { 'filter[name][EQ]': 'a' }, []],
    ['an equality that leads the index of another sort', { 'filter[name][EQ]': 'a', sort: '-created' }, []],
    ['a range of the sort column', { 'filter[created][GT]': '2026-01-01T00:00:00Z', sort: 'created' }, []],
    ['a CO match, which no sort index serves in its order', { 'filter[name][CO]': 'a' }, ['name']],
    ['a range of another column than the sort', { 'filter[created][GT]': '2026-01-01T00:00:00Z' }, ['created']],
    ['two unordered conditions on one field, named once', { 'filter[name][CO]': 'a', 'filter[created][LT]': '2026-01-01T00:00:00Z' }, ['name', 'created']],
    ['a filter the operation applies itself', { 'filter[mine][EQ]': 'true' }, []],
  ])('finds the filters the sort index does not serve in order: %s', (_what, raw: RawQuery, unordered) => {
    expect(parseListQuery(GROWING, raw).unordered).toEqual(unordered);
  });
});

describe('parseListQuery defaults', () => {
  it('reads an empty query as the first page of 100 in the default sort, unfiltered and unprojected', () => {
    expect(parseListQuery(SPEC, {})).toEqual({
      filters: [],
      growing: false,
      unordered: [],
      offset: 0,
      limit: 100,
      sort: { key: 'name', column: 'lower(thing.name)', descending: false, tieBreaker: 'thing.id' },
      projection: undefined,
    });
    expect(DEFAULT_PAGE_LIMIT).toBe(100);
    expect(MAX_PAGE_LIMIT).toBe(1000);
  });

  it('reads a descending default sort', () => {
    const spec = defineListQuery({
      filters: {},
      sorts: { name: 'x.name', _created: 'x.created' },
      defaultSort: '-_created',
      tieBreaker: 'x.id',
      small: 'a test list',
    });
    expect(parseListQuery(spec, {}).sort).toEqual({ key: '_created', column: 'x.created', descending: true, tieBreaker: 'x.id' });
  });

  it('skips parameters whose value is undefined', () => {
    expect(parseListQuery(SPEC, { foo: undefined, 'filter[name][EQ]': undefined, sort: undefined, 'page[limit]': undefined })).toEqual(
      parseListQuery(SPEC, {}),
    );
  });
});

describe('parseListQuery filters: EQ', () => {
  it('takes a string as given, spaces and all', () => {
    expect(onlyFilter({ 'filter[name][EQ]': ' Analytics, 2026 ' })).toEqual({
      field: 'name',
      operator: 'EQ',
      spec: SPEC.filters.name,
      value: ' Analytics, 2026 ',
    });
  });

  it('takes the empty string on a string field', () => {
    expect(onlyFilter({ 'filter[name][EQ]': '' }).value).toBe('');
  });

  it('takes a string of exactly 1024 characters', () => {
    expect(onlyFilter({ 'filter[name][EQ]': 'x'.repeat(1024) }).value).toBe('x'.repeat(1024));
  });

  it('lower-cases a UUID', () => {
    expect(onlyFilter({ 'filter[_id][EQ]': UUID.toUpperCase() })).toEqual({ field: '_id', operator: 'EQ', spec: SPEC.filters._id, value: UUID });
  });

  it.each([
    ['true', true],
    ['false', false],
  ])('reads the boolean %s', (raw, value) => {
    expect(onlyFilter({ 'filter[enabled][EQ]': raw })).toEqual({ field: 'enabled', operator: 'EQ', spec: SPEC.filters.enabled, value });
  });

  it.each(STATUSES)('takes the enumeration value %s', (status) => {
    expect(onlyFilter({ 'filter[status][EQ]': status })).toEqual({ field: 'status', operator: 'EQ', spec: SPEC.filters.status, value: status });
  });
});

describe('parseListQuery filters: IN', () => {
  it('splits a comma-separated list', () => {
    expect(onlyFilter({ 'filter[name][IN]': 'a,b,c' })).toEqual({ field: 'name', operator: 'IN', spec: SPEC.filters.name, value: ['a', 'b', 'c'] });
  });

  it('takes a repeated parameter', () => {
    expect(onlyFilter({ 'filter[name][IN]': ['a', 'b'] }).value).toEqual(['a', 'b']);
  });

  it('takes a repeated parameter mixed with comma-separated values', () => {
    expect(onlyFilter({ 'filter[name][IN]': ['a,b', 'c'] }).value).toEqual(['a', 'b', 'c']);
  });

  it('takes a single value as a one-item list', () => {
    expect(onlyFilter({ 'filter[name][IN]': 'a' }).value).toEqual(['a']);
  });

  it('validates and lower-cases every UUID', () => {
    expect(onlyFilter({ 'filter[_id][IN]': [UUID.toUpperCase(), OTHER_UUID] }).value).toEqual([UUID, OTHER_UUID]);
  });

  it('takes enumeration values', () => {
    expect(onlyFilter({ 'filter[status][IN]': 'retired,active' }).value).toEqual(['retired', 'active']);
  });

  it('takes exactly 1000 values', () => {
    const values = Array.from({ length: 1000 }, (_, i) => `v${i}`);
    expect(onlyFilter({ 'filter[name][IN]': values.join(',') }).value).toEqual(values);
  });
});

describe('parseListQuery filters: CO, SW, ST', () => {
  it.each(['CO', 'SW', 'ST'] as const)('%s takes the string as given, wildcards and all', (operator) => {
    expect(onlyFilter({ [`filter[name][${operator}]`]: '50%_off\\' })).toEqual({ field: 'name', operator, spec: SPEC.filters.name, value: '50%_off\\' });
  });
});

describe('parseListQuery filters: PR', () => {
  it.each([
    ['name', 'true', true],
    ['name', 'false', false],
    ['_id', 'true', true],
    ['_id', 'false', false],
    ['_created', 'true', true],
    ['_created', 'false', false],
    ['tags', 'true', true],
    ['tags', 'false', false],
  ] as const)('on %s reads %s', (field, raw, value) => {
    expect(onlyFilter({ [`filter[${field}][PR]`]: raw })).toEqual({ field, operator: 'PR', spec: SPEC.filters[field], value });
  });
});

describe('parseListQuery filters: LT, GT', () => {
  it.each([
    ['2026-11-22T10:15:30Z', '2026-11-22T10:15:30Z'],
    ['2026-11-22T10:15:30.123456Z', '2026-11-22T10:15:30.123456Z'],
    ['2026-11-22T10:15:30.123456789+02:00', '2026-11-22T10:15:30.123456789+02:00'],
    ['2026-11-22T10:15:30.1-05:30', '2026-11-22T10:15:30.1-05:30'],
    ['2026-11-22T10:15:30.000001 01:00', '2026-11-22T10:15:30.000001+01:00'],
    ['2026-11-22t10:15:30z', '2026-11-22T10:15:30Z'],
  ])('keeps %s exactly', (raw, value) => {
    expect(onlyFilter({ 'filter[_created][LT]': raw })).toEqual({ field: '_created', operator: 'LT', spec: SPEC.filters._created, value });
    expect(onlyFilter({ 'filter[_created][GT]': raw })).toEqual({ field: '_created', operator: 'GT', spec: SPEC.filters._created, value });
  });

  it('keeps both bounds of a range, in the order given', () => {
    const { filters } = parseListQuery(SPEC, { 'filter[_created][GT]': '2026-01-01T00:00:00Z', 'filter[_created][LT]': '2027-01-01T00:00:00Z' });
    expect(filters.map(({ operator, value }) => [operator, value])).toEqual([
      ['GT', '2026-01-01T00:00:00Z'],
      ['LT', '2027-01-01T00:00:00Z'],
    ]);
  });
});

describe('parseListQuery filters: ALL, ANY', () => {
  it.each(['ALL', 'ANY'] as const)('%s takes comma-separated and repeated values', (operator) => {
    expect(onlyFilter({ [`filter[tags][${operator}]`]: ['gpu,fast', 'eu'] })).toEqual({
      field: 'tags',
      operator,
      spec: SPEC.filters.tags,
      value: ['gpu', 'fast', 'eu'],
    });
  });
});

describe('parseListQuery filters together', () => {
  it('keeps every filter in the order of the query', () => {
    const { filters } = parseListQuery(SPEC, {
      'filter[name][SW]': 'an',
      'filter[enabled][EQ]': 'true',
      'filter[tags][ANY]': 'gpu',
      'page[limit]': '10',
    });
    expect(filters.map(({ field, operator, value }) => ({ field, operator, value }))).toEqual([
      { field: 'name', operator: 'SW', value: 'an' },
      { field: 'enabled', operator: 'EQ', value: true },
      { field: 'tags', operator: 'ANY', value: ['gpu'] },
    ]);
  });
});

describe('parseListQuery malformed filters', () => {
  it('refuses an unknown field, listing the fields the operation filters on', () => {
    expect(errorsOf({ 'filter[size][EQ]': '1' })).toEqual([
      { path: 'filter[size][EQ]', message: `names an unknown field "size"; this operation filters on ${FIELD_LIST}` },
    ]);
  });

  it('does not take inherited property names for fields', () => {
    expect(errorsOf({ 'filter[constructor][EQ]': '1' })).toEqual([
      { path: 'filter[constructor][EQ]', message: `names an unknown field "constructor"; this operation filters on ${FIELD_LIST}` },
    ]);
  });

  it('refuses any filter on an operation that takes none', () => {
    const spec = defineListQuery({ filters: {}, sorts: { name: 'x.name' }, defaultSort: 'name', tieBreaker: 'x.id', small: 'a test list' });
    expect(errorsOf({ 'filter[name][EQ]': 'a' }, spec)).toEqual([{ path: 'filter[name][EQ]', message: 'is not accepted: this operation takes no filters' }]);
  });

  it.each([
    ['filter[note][EQ]', 'note', 'CO'],
    ['filter[_id][CO]', '_id', 'EQ, IN, PR'],
    ['filter[name][LT]', 'name', 'EQ, IN, CO, SW, ST, PR'],
    ['filter[enabled][PR]', 'enabled', 'EQ'],
    ['filter[enabled][IN]', 'enabled', 'EQ'],
    ['filter[status][CO]', 'status', 'EQ, IN'],
    ['filter[_created][EQ]', '_created', 'LT, GT, PR'],
    ['filter[tags][EQ]', 'tags', 'ALL, ANY, PR'],
    ['filter[tags][IN]', 'tags', 'ALL, ANY, PR'],
  ])('refuses %s, an operator the field does not take', (parameter, field, allowed) => {
    const operator = /\]\[(\w+)\]$/.exec(parameter)?.[1];
    expect(errorsOf({ [parameter]: 'x' })).toEqual([{ path: parameter, message: `uses operator "${operator}", which ${field} does not take; use ${allowed}` }]);
  });

  it.each(['XX', 'eq', 'NE', 'EQ '])('refuses the unknown operator "%s"', (operator) => {
    const parameter = `filter[name][${operator}]`;
    expect(errorsOf({ [parameter]: 'a' })).toEqual([
      { path: parameter, message: `uses operator "${operator}", which name does not take; use EQ, IN, CO, SW, ST, PR` },
    ]);
  });

  it.each([
    'filter',
    'filter[name]',
    'filter[name][EQ][x]',
    'filter[]',
    'filter[][EQ]',
    'filter[name][]',
    'filter[name]EQ',
    'filter[na]me][EQ]',
    'filter[name][EQ]x',
  ])('refuses the malformed parameter %s', (parameter) => {
    expect(errorsOf({ [parameter]: 'a' })).toEqual([{ path: parameter, message: 'must be shaped filter[<field>][<operator>]' }]);
  });

  it.each([
    ['filter[name][EQ]', ['a', 'b']],
    ['filter[name][CO]', ['a', 'b']],
    ['filter[name][SW]', ['a', 'b']],
    ['filter[name][ST]', ['a', 'b']],
    ['filter[name][PR]', ['true', 'true']],
    ['filter[_id][EQ]', [UUID, UUID]],
    ['filter[enabled][EQ]', ['true', 'false']],
    ['filter[status][EQ]', ['active', 'retired']],
    ['filter[_created][LT]', ['2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z']],
    ['filter[_created][GT]', ['2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z']],
  ])('refuses %s given more than once', (parameter, values) => {
    expect(errorsOf({ [parameter]: values })).toEqual([{ path: parameter, message: 'is given more than once' }]);
  });

  it.each(['filter[name][IN]', 'filter[_id][IN]', 'filter[status][IN]', 'filter[tags][ALL]', 'filter[tags][ANY]'])('refuses an empty %s list', (parameter) => {
    expect(errorsOf({ [parameter]: '' })).toEqual([{ path: parameter, message: 'needs at least one value' }]);
  });

  it.each(['filter[name][IN]', 'filter[tags][ALL]', 'filter[tags][ANY]'])('refuses more than 1000 values for %s, comma-separated or repeated', (parameter) => {
    const values = Array.from({ length: 1001 }, (_, i) => `v${i}`);
    expect(errorsOf({ [parameter]: values.join(',') })).toEqual([{ path: parameter, message: 'takes at most 1000 values' }]);
    expect(errorsOf({ [parameter]: values })).toEqual([{ path: parameter, message: 'takes at most 1000 values' }]);
    expect(errorsOf({ [parameter]: [values.slice(0, 500).join(','), ...values.slice(500)] })).toEqual([
      { path: parameter, message: 'takes at most 1000 values' },
    ]);
  });

  it.each(['TRUE', 'False', '1', '0', 'yes', ''])('refuses the boolean "%s"', (raw) => {
    expect(errorsOf({ 'filter[enabled][EQ]': raw })).toEqual([{ path: 'filter[enabled][EQ]', message: 'must be true or false' }]);
  });

  it.each(['maybe', 'TRUE', ''])('refuses PR "%s"', (raw) => {
    expect(errorsOf({ 'filter[name][PR]': raw })).toEqual([{ path: 'filter[name][PR]', message: 'must be true or false' }]);
  });

  it.each(['not-a-uuid', UUID.replaceAll('-', ''), `${UUID}0`, ''])('refuses the UUID "%s"', (raw) => {
    expect(errorsOf({ 'filter[_id][EQ]': raw })).toEqual([{ path: 'filter[_id][EQ]', message: 'must be a UUID' }]);
  });

  it('refuses an IN list with one bad UUID, quoting it', () => {
    expect(errorsOf({ 'filter[_id][IN]': [UUID, `${OTHER_UUID},nope`] })).toEqual([{ path: 'filter[_id][IN]', message: 'value "nope" must be a UUID' }]);
  });

  it('refuses an IN list with an empty UUID item', () => {
    expect(errorsOf({ 'filter[_id][IN]': `${UUID},` })).toEqual([{ path: 'filter[_id][IN]', message: 'value "" must be a UUID' }]);
  });

  it.each(['gone', 'Active', ''])('refuses the enumeration value "%s", listing the allowed ones', (raw) => {
    expect(errorsOf({ 'filter[status][EQ]': raw })).toEqual([{ path: 'filter[status][EQ]', message: 'must be one of active, retired' }]);
  });

  it('refuses an IN list with a value outside the enumeration, quoting it', () => {
    expect(errorsOf({ 'filter[status][IN]': 'active,gone' })).toEqual([{ path: 'filter[status][IN]', message: 'value "gone" must be one of active, retired' }]);
  });

  it.each([
    ['no zone', '2026-11-22T10:15:30'],
    ['a date alone', '2026-11-22'],
    ['an impossible date', '2026-02-30T00:00:00Z'],
    ['hour 24', '2026-11-22T24:00:00Z'],
    ['a bad offset', '2026-11-22T10:15:30+24:00'],
    ['an offset without a colon', '2026-11-22T10:15:30+0200'],
    ['a word', 'yesterday'],
    ['nothing', ''],
  ])('refuses a date-time with %s, for LT and GT', (_what, raw) => {
    expect(errorsOf({ 'filter[_created][LT]': raw })).toEqual([{ path: 'filter[_created][LT]', message: DATE_TIME_MESSAGE }]);
    expect(errorsOf({ 'filter[_created][GT]': raw })).toEqual([{ path: 'filter[_created][GT]', message: DATE_TIME_MESSAGE }]);
  });

  it.each(['CO', 'SW', 'ST'])('refuses an empty %s value', (operator) => {
    const parameter = `filter[name][${operator}]`;
    expect(errorsOf({ [parameter]: '' })).toEqual([{ path: parameter, message: 'must not be empty' }]);
  });

  it.each(['EQ', 'CO', 'SW', 'ST'])('refuses a %s value over 1024 characters', (operator) => {
    const parameter = `filter[name][${operator}]`;
    expect(errorsOf({ [parameter]: 'x'.repeat(1025) })).toEqual([{ path: parameter, message: 'must be at most 1024 characters' }]);
  });

  it.each(['filter[name][EQ]', 'filter[name][CO]', 'filter[name][SW]', 'filter[name][ST]'])('refuses a NUL character in %s', (parameter) => {
    expect(errorsOf({ [parameter]: 'a\0b' })).toEqual([{ path: parameter, message: 'must not contain NUL characters' }]);
  });

  it.each(['filter[name][IN]', 'filter[tags][ALL]', 'filter[tags][ANY]'])('refuses a %s item with a NUL character, quoting it', (parameter) => {
    expect(errorsOf({ [parameter]: ['ok', 'a\0'] })).toEqual([{ path: parameter, message: 'value "a\0" must not contain NUL characters' }]);
  });

  it('refuses a date-time over 1024 characters for its length', () => {
    expect(errorsOf({ 'filter[_created][GT]': `2026-11-22T10:15:30.1${'0'.repeat(1004)}Z` })).toEqual([
      { path: 'filter[_created][GT]', message: 'must be at most 1024 characters' },
    ]);
  });

  it.each(['filter[name][IN]', 'filter[tags][ALL]', 'filter[tags][ANY]'])('refuses a %s item over 1024 characters, quoting it', (parameter) => {
    const long = 'y'.repeat(1025);
    expect(errorsOf({ [parameter]: `ok,${long}` })).toEqual([{ path: parameter, message: `value "${long}" must be at most 1024 characters` }]);
  });
});

describe('parseListQuery paging', () => {
  it.each([
    ['0', 0],
    ['25', 25],
    ['007', 7],
    ['2147483647', 2147483647],
  ])('reads page[offset] %s', (raw, offset) => {
    expect(parseListQuery(SPEC, { 'page[offset]': raw }).offset).toBe(offset);
  });

  it.each([
    ['1', 1],
    ['50', 50],
    ['1000', 1000],
  ])('reads page[limit] %s', (raw, limit) => {
    expect(parseListQuery(SPEC, { 'page[limit]': raw }).limit).toBe(limit);
  });

  it.each(['-1', '1.5', '1.0', 'abc', '', ' 1', '+1', '1e3', '0x10', '2147483648', '99999999999'])('refuses page[offset] "%s"', (raw) => {
    expect(errorsOf({ 'page[offset]': raw })).toEqual([{ path: 'page[offset]', message: 'must be an integer from 0 to 2147483647' }]);
  });

  it.each(['0', '1001', '-5', '2.0', '2.5', 'ten', '', '10000000000'])('refuses page[limit] "%s"', (raw) => {
    expect(errorsOf({ 'page[limit]': raw })).toEqual([{ path: 'page[limit]', message: 'must be an integer from 1 to 1000' }]);
  });

  it.each(['page[offset]', 'page[limit]'])('refuses %s given more than once', (parameter) => {
    expect(errorsOf({ [parameter]: ['1', '2'] })).toEqual([{ path: parameter, message: 'is given more than once' }]);
  });
});

describe('parseListQuery sort', () => {
  it.each([
    ['name', { key: 'name', column: 'lower(thing.name)', descending: false, tieBreaker: 'thing.id' }],
    ['-name', { key: 'name', column: 'lower(thing.name)', descending: true, tieBreaker: 'thing.id' }],
    ['_created', { key: '_created', column: 'thing.created', descending: false, tieBreaker: 'thing.id' }],
    ['-_created', { key: '_created', column: 'thing.created', descending: true, tieBreaker: 'thing.id' }],
  ])('reads sort=%s with the tie-breaker', (raw, sort) => {
    expect(parseListQuery(SPEC, { sort: raw }).sort).toEqual(sort);
  });

  it.each(['size', '-size', '--name', '+name', 'Name', '', '-', 'toString', 'name ', 'note'])('refuses the sort "%s", listing the allowed ones', (raw) => {
    expect(errorsOf({ sort: raw })).toEqual([{ path: 'sort', message: `must be one of ${SORT_LIST}` }]);
  });

  it('refuses two comma-separated sort keys', () => {
    expect(errorsOf({ sort: 'name,-_created' })).toEqual([{ path: 'sort', message: `takes one value: ${SORT_LIST}` }]);
  });

  it('refuses a repeated sort parameter', () => {
    expect(errorsOf({ sort: ['name', '_created'] })).toEqual([{ path: 'sort', message: `takes one value: ${SORT_LIST}` }]);
  });
});

describe('parseListQuery projection', () => {
  it('reads fields as an include projection', () => {
    const { projection } = parseListQuery(SPEC, { fields: 'name,tags' });
    expect(projection?.mode).toBe('include');
    expect([...(projection?.fields ?? [])]).toEqual(['name', 'tags']);
  });

  it('reads excludeFields as an exclude projection', () => {
    const { projection } = parseListQuery(SPEC, { excludeFields: ['tags', '_id'] });
    expect(projection?.mode).toBe('exclude');
    expect([...(projection?.fields ?? [])]).toEqual(['tags', '_id']);
  });

  it('refuses fields and excludeFields together', () => {
    expect(errorsOf({ fields: 'name', excludeFields: 'tags' })).toEqual([{ path: 'excludeFields', message: 'cannot be combined with fields' }]);
  });

  it('refuses an unknown field, listing the allowed ones', () => {
    expect(errorsOf({ fields: 'name,secret' })).toEqual([{ path: 'fields', message: 'names unknown field secret; allowed: _id, name, tags' }]);
  });

  it('refuses an empty field list', () => {
    expect(errorsOf({ excludeFields: '' })).toEqual([{ path: 'excludeFields', message: 'needs at least one field; allowed: _id, name, tags' }]);
  });

  it('refuses projection on an operation without it, once per parameter', () => {
    expect(errorsOf({ fields: 'name' }, PLAIN_SPEC)).toEqual([{ path: 'fields', message: 'is not a parameter of this operation' }]);
    expect(errorsOf({ excludeFields: 'name' }, PLAIN_SPEC)).toEqual([{ path: 'excludeFields', message: 'is not a parameter of this operation' }]);
  });
});

describe('parseListQuery unknown parameters', () => {
  it.each(['foo', 'page', 'page[size]', 'limit', 'offset', 'Sort', 'filters[name][EQ]', 'filterx', 'fields[]'])('refuses %s', (parameter) => {
    expect(errorsOf({ [parameter]: '1' })).toEqual([{ path: parameter, message: 'is not a parameter of this operation' }]);
  });

  it('refuses an unknown parameter given more than once just once', () => {
    expect(errorsOf({ foo: ['1', '2'] })).toEqual([{ path: 'foo', message: 'is not a parameter of this operation' }]);
  });
});

describe('parseListQuery error reporting', () => {
  it('reports one problem as an InvalidInputError naming the parameter', () => {
    const error = rejectionOf({ foo: '1' });
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.status).toBe(400);
    expect(error.message).toBe('Invalid query parameter: foo is not a parameter of this operation');
    expect(error.errors).toEqual([{ path: 'foo', message: 'is not a parameter of this operation' }]);
  });

  it('reports every problem of a request at once, in one error', () => {
    const error = rejectionOf({
      'filter[size][EQ]': '1',
      'filter[name][EQ]': 'fine',
      'filter[_id][EQ]': 'bad',
      'filter[_created][GT]': '2026-02-30T00:00:00Z',
      foo: '1',
      'page[offset]': '-1',
      'page[limit]': '0',
      sort: 'size',
      fields: 'secret',
    });
    const expected: FieldError[] = [
      { path: 'filter[size][EQ]', message: `names an unknown field "size"; this operation filters on ${FIELD_LIST}` },
      { path: 'filter[_id][EQ]', message: 'must be a UUID' },
      { path: 'filter[_created][GT]', message: DATE_TIME_MESSAGE },
      { path: 'foo', message: 'is not a parameter of this operation' },
      { path: 'page[offset]', message: 'must be an integer from 0 to 2147483647' },
      { path: 'page[limit]', message: 'must be an integer from 1 to 1000' },
      { path: 'sort', message: `must be one of ${SORT_LIST}` },
      { path: 'fields', message: 'names unknown field secret; allowed: _id, name, tags' },
    ];
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.errors).toEqual(expected);
    expect(error.message).toBe(`Invalid query parameters: ${expected.map((e) => `${e.path} ${e.message}`).join('; ')}`);
  });

  it('refuses the whole query when any parameter is bad, even with good filters', () => {
    expect(errorsOf({ 'filter[name][EQ]': 'fine', 'filter[enabled][EQ]': 'yes' })).toEqual([{ path: 'filter[enabled][EQ]', message: 'must be true or false' }]);
  });
});

describe('invalidQuery', () => {
  it('builds a 400 InvalidInputError with a singular message for one problem', () => {
    const errors: FieldError[] = [{ path: 'sort', message: 'must be one of name' }];
    const error = invalidQuery(errors);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.status).toBe(400);
    expect(error.message).toBe('Invalid query parameter: sort must be one of name');
    expect(error.errors).toEqual(errors);
  });

  it('lists every problem, separated by semicolons, with a plural message', () => {
    const errors: FieldError[] = [
      { path: 'foo', message: 'is not a parameter of this operation' },
      { path: 'page[limit]', message: 'must be an integer from 1 to 1000' },
    ];
    const error = invalidQuery(errors);
    expect(error.message).toBe('Invalid query parameters: foo is not a parameter of this operation; page[limit] must be an integer from 1 to 1000');
    expect(error.errors).toEqual(errors);
  });
});

describe('parseListQuery on an unpaged list (paged: false)', () => {
  const UNPAGED = defineListQuery({
    filters: { kind: { column: 'item.kind', type: ['a', 'b'], operators: ['EQ'] } },
    sorts: { name: 'item.name' },
    defaultSort: 'name',
    tieBreaker: 'item.id',
    small: 'a test list',
    paged: false,
  });

  it('takes filters and applies the default sort', () => {
    const query = parseListQuery(UNPAGED, { 'filter[kind][EQ]': 'a' });
    expect(query.filters.map((f) => [f.field, f.operator, f.value])).toEqual([['kind', 'EQ', 'a']]);
    expect(query.sort).toMatchObject({ key: 'name', descending: false });
  });

  it.each(['page[offset]', 'page[limit]', 'sort'])('refuses %s as a parameter the operation does not take', (parameter) => {
    expect(() => parseListQuery(UNPAGED, { [parameter]: parameter === 'sort' ? 'name' : '1' })).toThrow(
      expect.objectContaining({ errors: [{ path: parameter, message: 'is not a parameter of this operation' }] }),
    );
  });
});

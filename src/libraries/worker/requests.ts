// What the worker answers, engine aside: records, filter validation and distinct values of a dataset,
// checked and turned into SQL here. Request bodies come from the hub, which has checked them already;
// they are checked again because the port is reachable by other jobs' code that may have the secret
// wrong but not the shape (and so that a hub bug is a 400 here, not a bad query).
import { compileFilter, FilterError } from '../where-filter.js';
import { formatValue } from './formats.js';
import type { Dataset } from './library.js';
import { identifier } from './sql.js';
import type { DatasetField } from './types.js';
import { selectExpression } from './types.js';

/** A reply other than 200: status and the JSON body `{msg, ...}`. */
export class Reply extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export const MAX_LIMIT = 100_000;
export const DEFAULT_LIMIT = 1000;

export interface RecordsRequest {
  readonly name: string;
  readonly filter?: string;
  readonly fields?: readonly string[];
  readonly orderby?: readonly string[];
  readonly formatted?: readonly string[];
  readonly limit?: number;
  readonly offset?: number;
}

/** Runs a query: SQL, its parameters; the rows in column order. */
export type Run = (sql: string, params: readonly unknown[]) => Promise<unknown[][]>;

function stringList(value: unknown, name: string): readonly string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) throw new Reply(400, `${name} must be an array of strings`);
  return value as string[];
}

function wholeNumber(value: unknown, name: string, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new Reply(400, `${name} must be a non-negative integer`);
  if (value > max) throw new Reply(400, `${name} must be at most ${max}`);
  return value;
}

/** The dataset's field named `name`: exactly, else whatever its case (as filters match names); 400 naming it otherwise. */
function fieldIndex(dataset: Dataset, name: string, what: string): number {
  let index = dataset.fields.findIndex((field) => field.name === name);
  if (index < 0) index = dataset.fields.findIndex((field) => field.name.toLowerCase() === name.toLowerCase());
  if (index < 0) throw new Reply(400, `${what}: "${name}" is not a field of ${dataset.name}`);
  return index;
}

/** A compiled filter: the WHERE clause and the values it binds. */
interface Where {
  readonly sql: string;
  readonly params: readonly unknown[];
}
/** Filters compiled per dataset, kept as long as the dataset (a changed file is a new dataset). */
const compiledFilters = new WeakMap<Dataset, Map<string, Where>>();
/** Filters kept per dataset: a client pages through a few at a time. */
const FILTERS_KEPT = 256;
/** The longest filter kept: what is kept stays small (256 × 16 KiB per dataset at most), whatever the bodies. */
const LONGEST_FILTER_KEPT = 16 * 1024;

/**
 * The WHERE clause of `filter` (none for an empty one); 400 with the parser's message and position.
 * A filter asked again (the next page, the same page again) is not parsed again: parsing it took
 * 0.2 ms of the worker's 2 ms of JavaScript for a page of 1,000 rows (docs/libraries.md).
 */
export function whereClause(dataset: Dataset, filter: unknown, firstParam = 1): Where {
  if (filter === undefined || filter === null || (typeof filter === 'string' && filter.trim() === '')) return { sql: '', params: [] };
  if (typeof filter !== 'string') throw new Reply(400, 'filter must be a string');
  let kept = compiledFilters.get(dataset);
  const key = `${firstParam}:${filter}`;
  const known = kept?.get(key);
  if (known) return known;
  try {
    const compiled = compileFilter(filter, dataset.fields, firstParam);
    const where: Where = { sql: ` WHERE ${compiled.sql}`, params: Object.freeze(compiled.params) };
    if (filter.length > LONGEST_FILTER_KEPT) return where;
    if (!kept) compiledFilters.set(dataset, (kept = new Map<string, Where>()));
    if (kept.size >= FILTERS_KEPT) kept.delete(kept.keys().next().value as string);
    kept.set(key, where);
    return where;
  } catch (error) {
    if (error instanceof FilterError) throw new Reply(400, error.message, error.position === undefined ? {} : { position: error.position });
    throw error;
  }
}

/** `{fields, values}` of api-map §5: filter, then orderby, offset, limit; `formatted` fields as display strings. */
export async function records(dataset: Dataset, body: Record<string, unknown>, run: Run): Promise<{ fields: DatasetField[]; values: unknown[][] }> {
  const wanted = stringList(body.fields, 'fields');
  const indexes = wanted.length === 0 ? dataset.fields.map((_, index) => index) : wanted.map((name) => fieldIndex(dataset, name, 'fields'));
  const order = stringList(body.orderby, 'orderby').map((key) => {
    const descending = key.startsWith('-');
    const index = fieldIndex(dataset, descending ? key.slice(1) : key, 'orderby');
    return `${identifier(dataset.fields[index].name)}${descending ? ' DESC' : ' ASC'}`;
  });
  const formattedNames = stringList(body.formatted, 'formatted');
  const formatted = new Set(
    formattedNames.some((name) => name.toLowerCase() === 'all') ? indexes : formattedNames.map((name) => fieldIndex(dataset, name, 'formatted')),
  );
  const limit = wholeNumber(body.limit, 'limit', DEFAULT_LIMIT, MAX_LIMIT);
  const offset = wholeNumber(body.offset, 'offset', 0);
  const where = whereClause(dataset, body.filter);
  const columns = indexes.map((index) => selectExpression(dataset.fields[index].name, dataset.duckTypes[index]));
  const next = where.params.length + 1;
  const sql =
    `SELECT ${columns.join(', ')} FROM ${dataset.relation}${where.sql}` +
    `${order.length > 0 ? ` ORDER BY ${order.join(', ')}` : ''} LIMIT $${next}::BIGINT OFFSET $${next + 1}::BIGINT`;
  const rows = await run(sql, [...where.params, limit, offset]);
  if (formatted.size > 0) {
    const formatters = indexes.map((index) => (formatted.has(index) ? dataset.fields[index] : undefined));
    for (const row of rows) formatters.forEach((field, i) => field && (row[i] = formatValue(row[i] as string | number | boolean | null, field)));
  }
  return { fields: indexes.map((index) => dataset.fields[index]), values: rows };
}

/** `{ok: true}` or `{ok: false, msg}` for `filter` against the dataset's fields. */
export function validateFilter(dataset: Dataset, filter: unknown): { ok: true } | { ok: false; msg: string } {
  try {
    whereClause(dataset, filter);
    return { ok: true };
  } catch (error) {
    if (error instanceof Reply) return { ok: false, msg: error.message };
    throw error;
  }
}

/** The default and largest number of values a field's distinct values list. */
export const DEFAULT_MAX_VALUES = 1000;
export const MAX_MAX_VALUES = 100_000;

/** Per field: its distinct values ascending (missing last, once, as null), at most `maxValues`. */
export async function distinctValues(dataset: Dataset, body: Record<string, unknown>, run: Run): Promise<Record<string, unknown[]>> {
  const maxValues = wholeNumber(body.maxValues, 'maxValues', DEFAULT_MAX_VALUES, MAX_MAX_VALUES);
  const result: Record<string, unknown[]> = {};
  for (const [index, field] of dataset.fields.entries()) {
    const column = identifier(field.name);
    const value = selectExpression(field.name, dataset.duckTypes[index]);
    // Ordered by the column itself (numbers numerically, text by code point, dates in time, false before true); the value read out after.
    const rows = await run(`SELECT ${value} FROM (SELECT DISTINCT ${column} FROM ${dataset.relation}) ORDER BY ${column} ASC NULLS LAST LIMIT $1::BIGINT`, [
      maxValues,
    ]);
    result[field.name] = rows.map((row) => row[0]);
  }
  return result;
}

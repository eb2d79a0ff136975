// How the worker maps a DuckDB column to a field of api-map §5 and reads it out as a JSON value.
import type { FilterField } from '../where-filter.js';
import { identifier } from './sql.js';

export type FieldType = FilterField['type'];

/** A dataset's field as metadata and records describe it (api-map §5). */
export interface DatasetField {
  readonly name: string;
  readonly type: FieldType;
  readonly label: string;
  readonly length: number;
  readonly format: string;
}

const NUMBER_TYPES = new Set([
  'TINYINT',
  'SMALLINT',
  'INTEGER',
  'BIGINT',
  'HUGEINT',
  'UTINYINT',
  'USMALLINT',
  'UINTEGER',
  'UBIGINT',
  'UHUGEINT',
  'FLOAT',
  'DOUBLE',
  'DECIMAL',
]);
/** Integers JavaScript holds exactly: read as they are; wider ones and decimals are read as DOUBLE (a JSON number either way). */
const NARROW_NUMBERS = new Set(['TINYINT', 'SMALLINT', 'INTEGER', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'FLOAT', 'DOUBLE']);
const DATETIME_TYPES = new Set(['TIMESTAMP', 'TIMESTAMP_S', 'TIMESTAMP_MS', 'TIMESTAMP_NS', 'DATETIME']);
const ZONED_TYPES = new Set(['TIMESTAMP WITH TIME ZONE', 'TIMESTAMPTZ']);

/** The base name of a DuckDB type (`DECIMAL(10,2)` → `DECIMAL`). */
function baseType(duckType: string): string {
  const open = duckType.indexOf('(');
  return (open < 0 ? duckType : duckType.slice(0, open)).trim().toUpperCase();
}

/** The field type of a DuckDB column type: numbers, VARCHAR, DATE, TIMESTAMP and BOOLEAN as themselves, anything else as its text. */
export function fieldType(duckType: string): FieldType {
  const base = baseType(duckType);
  if (NUMBER_TYPES.has(base)) return 'number';
  if (base === 'DATE') return 'date';
  if (DATETIME_TYPES.has(base) || ZONED_TYPES.has(base)) return 'datetime';
  if (base === 'BOOLEAN' || base === 'BOOL') return 'boolean';
  return 'string';
}

/**
 * The SELECT expression that reads column `name` of DuckDB type `duckType` as the JSON value records
 * carry: numbers as DOUBLE (BIGINT included: JSON has one number), dates `YYYY-MM-DD`, date-times ISO
 * 8601 (`T`, and `Z` for a zoned one, in UTC), booleans as booleans, anything else as text. Converting
 * in SQL leaves the JavaScript side nothing to do per value but copy it.
 */
export function selectExpression(name: string, duckType: string): string {
  const column = identifier(name);
  const base = baseType(duckType);
  const type = fieldType(duckType);
  switch (type) {
    case 'number':
      return NARROW_NUMBERS.has(base) ? column : `CAST(${column} AS DOUBLE)`;
    case 'date':
      return `CAST(${column} AS VARCHAR)`;
    case 'datetime':
      return ZONED_TYPES.has(base)
        ? `replace(CAST(timezone('UTC', ${column}) AS VARCHAR), ' ', 'T') || 'Z'`
        : `replace(CAST(CAST(${column} AS TIMESTAMP) AS VARCHAR), ' ', 'T')`;
    case 'boolean':
      return column;
    case 'string':
      return base === 'VARCHAR' ? column : `CAST(${column} AS VARCHAR)`;
  }
}

/**
 * The expression a filter sees for a column: the column itself when its type is one a filter
 * compares as is; text otherwise (a TIME or a LIST is a string to the filter, as to records).
 */
export function filterExpression(name: string, duckType: string): string {
  const column = identifier(name);
  const type = fieldType(duckType);
  return type === 'string' && baseType(duckType) !== 'VARCHAR' ? `CAST(${column} AS VARCHAR)` : column;
}

/** Whether a filter can use the column as it is (then no view needs to re-express it). */
export function filterReadsColumnAsIs(duckType: string): boolean {
  return fieldType(duckType) !== 'string' || baseType(duckType) === 'VARCHAR';
}

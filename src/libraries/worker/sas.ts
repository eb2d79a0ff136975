// SAS7BDAT members: DuckDB cannot read them, so the `sas7bdat` package (a maintained pure reader
// with one native helper, fs-ext) parses the file once per version and its rows are appended to an
// in-memory DuckDB table, which every query then reads like any other relation.
import type { DuckDBConnection } from '@duckdb/node-api';
import SAS7BDAT from 'sas7bdat';
import { identifier } from './sql.js';

interface SasColumn {
  readonly name: string | Buffer;
  readonly label: string | Buffer;
  readonly format: string;
  readonly type: 'number' | 'string';
  readonly length: number;
}
interface SasReader {
  columns: SasColumn[];
  properties: Record<string, unknown>;
  create_read_stream(): NodeJS.ReadableStream;
}
type SasConstructor = new (file: string, options: Record<string, unknown>) => SasReader;

/** SAS date and date-time formats (by name, width and decimals aside): such a number is a date, or a date-time. */
const DATE_FORMATS = new Set(['YYMMDD', 'MMDDYY', 'DDMMYY', 'DATE', 'JULIAN', 'MONYY', 'WEEKDATE', 'E8601DA', 'YYMMDDN', 'WORDDATE']);
const DATETIME_FORMATS = new Set(['DATETIME', 'E8601DT', 'DATEAMPM']);
const TIME_FORMATS = new Set(['TIME', 'HHMM', 'E8601TM']);
/** SAS counts days and seconds from 1 January 1960. */
const SAS_EPOCH_MS = Date.UTC(1960, 0, 1);

/** The name of a format: `DATE9.` → `DATE`. */
function formatName(format: string): string {
  let end = 0;
  while (end < format.length && !(format[end] >= '0' && format[end] <= '9') && format[end] !== '.') end++;
  return format.slice(0, end).toUpperCase();
}

function columnType(column: SasColumn): string {
  if (column.type === 'string') return 'VARCHAR';
  const name = formatName(column.format);
  if (DATE_FORMATS.has(name)) return 'DATE';
  if (DATETIME_FORMATS.has(name)) return 'TIMESTAMP';
  // A time of day is text (HH:MM:SS), as any other type a field does not have.
  return TIME_FORMATS.has(name) ? 'TIME' : 'DOUBLE';
}

/**
 * A value as the staging table takes it: the reader converts the few formats it knows by their
 * exact name (`DATE`) to ISO text and leaves the rest (`DATE9.`) as numbers of days or seconds since
 * 1960, which are converted here; a blank string is SAS's missing value.
 */
function stagingValue(value: string | number | null | undefined, duckType: string): number | string | null {
  if (value === null || value === undefined || (typeof value === 'number' && Number.isNaN(value))) return null;
  switch (duckType) {
    case 'DOUBLE':
      return Number(value);
    case 'DATE':
      return typeof value === 'number' ? new Date(SAS_EPOCH_MS + value * 86_400_000).toISOString().slice(0, 10) : String(value).slice(0, 10);
    case 'TIMESTAMP':
      return typeof value === 'number' ? new Date(SAS_EPOCH_MS + value * 1000).toISOString() : String(value);
    case 'TIME':
      return typeof value === 'number' ? new Date(value * 1000).toISOString().slice(11, 19) : String(value).slice(0, 8);
    default: {
      const text = String(value).replace(/[\0 ]+$/, '');
      return text === '' ? null : text;
    }
  }
}

export interface LoadedSas {
  readonly columns: readonly { name: string; duckType: string; label: string; length: number; format: string }[];
  readonly properties: Record<string, unknown>;
}

/** Reads `file` into the DuckDB table `table` (made here in the in-memory database, replaced if it exists, so that every connection reads it). */
export async function loadSas7bdat(connection: DuckDBConnection, file: string, table: string): Promise<LoadedSas> {
  const Reader = SAS7BDAT as SasConstructor;
  // The header row comes first (skipHeader false): by then the reader has parsed the columns.
  const reader = new Reader(file, { rowFormat: 'array', skipHeader: false });
  const rows = reader.create_read_stream()[Symbol.asyncIterator]() as AsyncIterator<unknown[]>;
  const header = await rows.next();
  const columns = header.done
    ? []
    : reader.columns.map((column) => ({
        name: String(column.name),
        duckType: columnType(column),
        label: String(column.label),
        length: column.length,
        format: column.format,
      }));
  // Dates and times go through a VARCHAR staging table and are cast once.
  const staging = `${table}_staging`;
  await connection.run(
    `CREATE OR REPLACE TABLE ${identifier(staging)} (${columns.map((c) => `${identifier(c.name)} ${c.duckType === 'DOUBLE' ? 'DOUBLE' : 'VARCHAR'}`).join(', ')})`,
  );
  const appender = await connection.createAppender(staging);
  try {
    for (let row = await rows.next(); !row.done; row = await rows.next()) {
      columns.forEach((column, index) => {
        const value = stagingValue(row.value[index] as string | number | null, column.duckType);
        if (value === null) appender.appendNull();
        else if (typeof value === 'number') appender.appendDouble(value);
        else appender.appendVarchar(value);
      });
      appender.endRow();
    }
  } finally {
    appender.closeSync();
  }
  const casts = columns.map((c) => {
    const column = identifier(c.name);
    if (c.duckType === 'DATE') return `CAST(${column} AS DATE) AS ${column}`;
    if (c.duckType === 'TIMESTAMP') return `CAST(replace(replace(${column}, 'T', ' '), 'Z', '') AS TIMESTAMP) AS ${column}`;
    if (c.duckType === 'TIME') return `CAST(${column} AS TIME) AS ${column}`;
    return column;
  });
  await connection.run(`CREATE OR REPLACE TABLE ${identifier(table)} AS SELECT ${casts.join(', ')} FROM ${identifier(staging)}`);
  await connection.run(`DROP TABLE ${identifier(staging)}`);
  return { columns, properties: reader.properties };
}

/** The metadata a SAS7BDAT file's header gives (§2.7). */
export function sasMetadata(properties: Record<string, unknown>): Record<string, unknown> {
  const text = (key: string) => (typeof properties[key] === 'string' ? properties[key].trim() : undefined);
  const metadata: Record<string, unknown> = {};
  const created = properties.date_created;
  const modified = properties.date_modified;
  if (typeof created === 'string' && created !== '') metadata.created = created;
  if (typeof modified === 'string' && modified !== '') metadata.lastModified = modified;
  if (text('compression')) metadata.compressionType = text('compression');
  if (text('encoding')) metadata.charEncoding = text('encoding');
  if (typeof properties.row_length === 'number') metadata.recordLength = properties.row_length;
  if (text('platform')) metadata.dataRepresentation = text('platform');
  return metadata;
}

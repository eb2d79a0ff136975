// SAS7BDAT members: DuckDB cannot read them, so the `sas7bdat` package (a maintained pure reader
// with one native helper, fs-ext) parses the file once per version and its rows are appended to an
// in-memory DuckDB table, which every query then reads like any other relation.
import type { DuckDBConnection } from '@duckdb/node-api';
import SAS7BDAT from 'sas7bdat';
import { identifier } from './sql.js';

interface SasColumn {
  readonly name: string;
  readonly label: string;
  readonly format: string;
  readonly type: 'number' | 'string';
  readonly length: number;
}
interface SasReader {
  columns: SasColumn[];
  properties: Record<string, unknown>;
  parse_header(): Promise<void>;
  create_read_stream(): NodeJS.ReadableStream;
}
type SasConstructor = new (file: string, options: Record<string, unknown>) => SasReader;

/** SAS formats the reader turns into dates and date-times (its own lists). */
const DATE_FORMATS = new Set(['YYMMDD', 'MMDDYY', 'DDMMYY', 'DATE', 'JULIAN', 'MONYY', 'WEEKDATE']);
const DATETIME_FORMATS = new Set(['DATETIME']);

function columnType(column: SasColumn): string {
  if (column.type === 'string') return 'VARCHAR';
  if (DATE_FORMATS.has(column.format)) return 'DATE';
  if (DATETIME_FORMATS.has(column.format)) return 'TIMESTAMP';
  // TIME-formatted numbers come out as text (HH:MM:SS.sss), as any other type a field does not have.
  return column.format === 'TIME' ? 'VARCHAR' : 'DOUBLE';
}

export interface LoadedSas {
  readonly columns: readonly { name: string; duckType: string; label: string; length: number; format: string }[];
  readonly properties: Record<string, unknown>;
}

/** Reads `file` into the DuckDB table `table` (made here in the in-memory database, replaced if it exists, so that every connection reads it). */
export async function loadSas7bdat(connection: DuckDBConnection, file: string, table: string): Promise<LoadedSas> {
  const Reader = SAS7BDAT as unknown as SasConstructor;
  const reader = new Reader(file, { rowFormat: 'array', skipHeader: true });
  await reader.parse_header();
  const columns = reader.columns.map((column) => ({
    name: column.name,
    duckType: columnType(column),
    label: column.label,
    length: column.length,
    format: column.format,
  }));
  // Dates and date-times arrive as ISO text: they go through a VARCHAR staging table and are cast once.
  const staging = `${table}_staging`;
  await connection.run(
    `CREATE OR REPLACE TABLE ${identifier(staging)} (${columns.map((c) => `${identifier(c.name)} ${c.duckType === 'DOUBLE' ? 'DOUBLE' : 'VARCHAR'}`).join(', ')})`,
  );
  const appender = await connection.createAppender(staging);
  try {
    for await (const row of reader.create_read_stream() as AsyncIterable<unknown[]>) {
      columns.forEach((column, index) => {
        const value = row[index];
        if (value === null || value === undefined || (typeof value === 'number' && Number.isNaN(value))) appender.appendNull();
        else if (column.duckType === 'DOUBLE') appender.appendDouble(Number(value));
        else appender.appendVarchar(String(value).replace(/\0+$/, ''));
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
    return column;
  });
  await connection.run(`CREATE OR REPLACE TABLE ${identifier(table)} AS SELECT ${casts.join(', ')} FROM ${identifier(staging)}`);
  await connection.run(`DROP TABLE ${identifier(staging)}`);
  return { columns, properties: reader.properties };
}

/** The metadata a SAS7BDAT file's header gives (§2.7). */
export function sasMetadata(properties: Record<string, unknown>): Record<string, unknown> {
  const text = (key: string) => (typeof properties[key] === 'string' ? (properties[key] as string).trim() : undefined);
  const metadata: Record<string, unknown> = {};
  const created = properties.date_created;
  const modified = properties.date_modified;
  if (typeof created === 'string' && created !== '') metadata.created = created;
  if (typeof modified === 'string' && modified !== '') metadata.lastModified = modified;
  if (text('compression')) metadata.compressionType = text('compression');
  if (text('encoding')) metadata.charEncoding = text('encoding');
  if (text('name')) metadata.label = text('name');
  if (typeof properties.row_length === 'number') metadata.recordLength = properties.row_length;
  if (text('platform')) metadata.dataRepresentation = text('platform');
  return metadata;
}

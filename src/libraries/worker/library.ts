// The library a worker serves: its members, each member's metadata and the SQL relation its records
// are read from, cached by the file's modification time and size (a changed file is read afresh, an
// unchanged one never twice). DuckDB reads CSV, Parquet, JSON and a DuckDB database itself; SAS7BDAT
// files are loaded into an in-memory table once (sas.ts); PostgreSQL has its own path (postgres.ts).
import { statSync } from 'node:fs';
import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { basename, extname, join, relative, sep } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { identifier, literal } from './sql.js';
import { loadSas7bdat, sasMetadata } from './sas.js';
import { type DatasetField, fieldType, filterReadsColumnAsIs, filterExpression } from './types.js';

export type Engine = 'csv' | 'parquet' | 'json' | 'duckdb' | 'sas7bdat' | 'postgres';
export const ENGINES: readonly Engine[] = ['csv', 'parquet', 'json', 'duckdb', 'sas7bdat', 'postgres'];
export type MemberType = 'DATA' | 'VIEW' | 'CATALOG';

export interface Member {
  readonly name: string;
  readonly type: MemberType;
}

/** A member of a file library: where it is and what it was when listed. */
interface FileMember extends Member {
  readonly file: string;
  readonly extension: string;
}

/** What a request needs of a dataset: its fields, the relation to read, and its metadata. */
export interface Dataset {
  readonly name: string;
  readonly fields: readonly DatasetField[];
  /** SQL for FROM: the data with every column as a filter compares it. */
  readonly relation: string;
  /** Each field's DuckDB type, in field order. */
  readonly duckTypes: readonly string[];
  readonly metadata: Record<string, unknown>;
}

/** The extensions of each file engine, in the order a name found twice is taken. */
const EXTENSIONS: Partial<Record<Engine, readonly string[]>> = {
  csv: ['.csv'],
  parquet: ['.parquet'],
  json: ['.json', '.jsonl', '.ndjson'],
  sas7bdat: ['.sas7bdat', '.sas7bcat'],
};

export class NotAMemberError extends Error {}

/** Runs tasks one after another: a metadata connection runs one statement at a time, and two requests for a new file read it once. */
export class Serial {
  private last: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.last.then(task, task);
    this.last = result.catch(() => undefined);
    return result;
  }
}

/** A column as its source declares it; what it does not declare is measured or defaulted. */
export interface DeclaredColumn {
  readonly name: string;
  readonly duckType: string;
  readonly label?: string;
  readonly length?: number;
  readonly format?: string;
}

/**
 * A dataset read from `source` (SQL for FROM): its fields, exact row count, the longest text of
 * each string column without a declared length (one pass for all of them), and its metadata.
 */
export async function datasetOf(
  connection: DuckDBConnection,
  of: { name: string; type: MemberType; engine: Engine; source: string; declared: readonly DeclaredColumn[]; extra: Record<string, unknown> },
): Promise<Dataset> {
  const { declared, source } = of;
  // Columns a filter cannot compare as they are (a TIME, a LIST) are presented as text.
  const relation = declared.every((column) => filterReadsColumnAsIs(column.duckType))
    ? source
    : `(SELECT ${declared.map((column) => `${filterExpression(column.name, column.duckType)} AS ${identifier(column.name)}`).join(', ')} FROM ${source})`;
  const measured = declared
    .map((column, index) => ({ column, index }))
    .filter(({ column }) => column.length === undefined && fieldType(column.duckType) === 'string');
  const reader = await connection.runAndReadAll(
    `SELECT count(*)${measured.map(({ column }) => `, max(strlen(CAST(${identifier(column.name)} AS VARCHAR)))`).join('')} FROM ${relation}`,
  );
  const [count, ...longest] = reader.getRowsJS()[0];
  const lengths = new Map(measured.map(({ index }, i) => [index, longest[i] === null ? null : Number(longest[i])]));
  const fields: DatasetField[] = declared.map((column, index) => {
    const type = fieldType(column.duckType);
    return {
      name: column.name,
      type,
      label: column.label ?? '',
      length: column.length ?? defaultLength(type, lengths.get(index) ?? null),
      format: column.format ?? '',
    };
  });
  // The relation presents string columns as VARCHAR (see above), so records read them as such.
  const duckTypes = declared.map((column) => (fieldType(column.duckType) === 'string' ? 'VARCHAR' : column.duckType));
  const metadata = { ...baseMetadata(of.name, of.engine, of.type, fields, Number(count)), ...of.extra };
  return { name: of.name, fields, relation, duckTypes, metadata };
}

/** The metadata fields of §2.7 every dataset has, whatever its engine; the engine's own go over them. */
function baseMetadata(name: string, engine: Engine, type: MemberType, fields: readonly DatasetField[], nobs: number): Record<string, unknown> {
  return {
    name,
    engine,
    created: null,
    lastModified: null,
    label: '',
    nobs,
    compressionType: 'NONE',
    type,
    charEncoding: 'utf-8',
    isPointobs: false,
    dataRepresentation: 'NATIVE',
    recordLength: fields.reduce((sum, field) => sum + field.length, 0),
    engineProperties: [],
    sort: [],
    sortOptions: {},
    indexes: [],
    fields,
  };
}

/** The length a field reports where its source declares none: 8 bytes for numbers and times (SAS's), 1 for a boolean, the longest value for text. */
function defaultLength(type: DatasetField['type'], longest: number | null): number {
  if (type === 'string') return longest ?? 0;
  return type === 'boolean' ? 1 : 8;
}

export class Library {
  private members?: { readonly key: string; readonly list: readonly (Member | FileMember)[] };
  private readonly datasets = new Map<string, { readonly key: string; readonly dataset: Promise<Dataset> }>();
  /** Each SAS7BDAT member's DuckDB table: a changed file replaces it in place, so old versions do not pile up in memory. */
  private readonly sasTables = new Map<string, string>();
  private readonly serial = new Serial();

  constructor(
    readonly engine: Engine,
    /** The library's directory (csv, parquet, json, sas7bdat), or its database file (duckdb), resolved. */
    readonly path: string,
    /** A connection for reading metadata; queries have their own. */
    private readonly connection: DuckDBConnection,
  ) {}

  /** The members: files with the engine's extensions directly in the directory, or the database's tables and views. */
  async listMembers(): Promise<readonly Member[]> {
    const list = await this.serial.run(() => (this.engine === 'duckdb' ? this.databaseMembers() : this.fileMembers()));
    return list.map((member) => ({ name: member.name, type: member.type }));
  }

  /** The dataset `name` (a DATA or VIEW member), read afresh only when its file changed. */
  dataset(name: string): Promise<Dataset> {
    return this.serial.run(() => this.currentDataset(name));
  }

  private async currentDataset(name: string): Promise<Dataset> {
    const members = this.engine === 'duckdb' ? await this.databaseMembers() : await this.fileMembers();
    const member = members.find((candidate) => candidate.name === name && candidate.type !== 'CATALOG');
    if (!member) throw new NotAMemberError(`${name} is not a dataset of this library`);
    const key = 'file' in member ? this.fileKey((member as FileMember).file) : (this.members?.key ?? '');
    const cached = this.datasets.get(name);
    if (cached && cached.key === key) return cached.dataset;
    const dataset = this.describe(member);
    this.datasets.set(name, { key, dataset });
    // A failed read is not kept: the next request tries again (the file may have been mid-write).
    dataset.catch(() => this.datasets.get(name)?.dataset === dataset && this.datasets.delete(name));
    return dataset;
  }

  // The two stats every request makes (the directory's, the file's) are synchronous: 1.5 µs each
  // against 47 µs of CPU through fs/promises and the thread pool (docs/libraries.md), and the
  // request waits for them either way (dataset lookups run one at a time, in `serial`).
  private fileKey(file: string): string {
    const info = statSync(file);
    return `${info.mtimeMs}:${info.size}:${info.ino}`;
  }

  private async fileMembers(): Promise<readonly FileMember[]> {
    const info = statSync(this.path);
    const key = `${info.mtimeMs}:${info.ino}`;
    if (this.members?.key === key) return this.members.list as FileMember[];
    const extensions = EXTENSIONS[this.engine] ?? [];
    const found = new Map<string, FileMember>();
    const entries = (await readdir(this.path, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const extension of extensions) {
      for (const entry of entries) {
        if (extname(entry.name).toLowerCase() !== extension) continue;
        const name = basename(entry.name, extname(entry.name));
        if (name === '' || found.has(name)) continue;
        const file = join(this.path, entry.name);
        // A link is followed only to a file inside the library: DuckDB would refuse the rest anyway, and a listing must not show what cannot be read.
        if (!(await this.insideLibrary(file))) continue;
        found.set(name, { name, type: extension === '.sas7bcat' ? 'CATALOG' : 'DATA', file, extension });
      }
    }
    const list = [...found.values()];
    this.members = { key, list };
    return list;
  }

  private async insideLibrary(file: string): Promise<boolean> {
    try {
      const link = await lstat(file);
      if (!link.isFile() && !link.isSymbolicLink()) return false;
      const target = await realpath(file);
      const inside = relative(this.path, target);
      return inside !== '' && !inside.startsWith(`..${sep}`) && inside !== '..' && !inside.includes(sep) && (await stat(target)).isFile();
    } catch {
      return false;
    }
  }

  private async databaseMembers(): Promise<readonly Member[]> {
    const key = this.fileKey(this.path);
    if (this.members?.key === key) return this.members.list;
    const reader = await this.connection.runAndReadAll(
      `SELECT table_schema, table_name, table_type FROM information_schema.tables
        WHERE table_catalog = current_database() ORDER BY table_schema, table_name`,
    );
    const list = (reader.getRowsJS() as [string, string, string][]).map(([schema, table, type]) => ({
      // Tables of `main` go by their name, others by `schema.table`.
      name: schema === 'main' ? table : `${schema}.${table}`,
      type: type === 'VIEW' ? ('VIEW' as const) : ('DATA' as const),
    }));
    this.members = { key, list };
    return list;
  }

  /** Reads a member's columns, counts its rows and measures its text, once per version of its file. */
  private async describe(member: Member | FileMember): Promise<Dataset> {
    let source: string;
    let extra: Record<string, unknown> = {};
    let declared: readonly DeclaredColumn[];
    if ('file' in member) {
      const info = await stat(member.file);
      extra = { created: new Date(info.birthtimeMs || info.ctimeMs).toISOString(), lastModified: info.mtime.toISOString() };
      if (this.engine === 'sas7bdat') {
        const table = this.sasTables.get(member.name) ?? `sas_${this.sasTables.size + 1}`;
        this.sasTables.set(member.name, table);
        const loaded = await loadSas7bdat(this.connection, member.file, table);
        source = identifier(table);
        declared = loaded.columns;
        extra = { ...extra, ...sasMetadata(loaded.properties) };
      } else {
        source = await this.fileSource(member);
        declared = await this.columnsOf(source);
      }
    } else {
      const dot = member.name.indexOf('.');
      source = dot < 0 ? identifier(member.name) : `${identifier(member.name.slice(0, dot))}.${identifier(member.name.slice(dot + 1))}`;
      declared = await this.columnsOf(source);
      const info = await stat(this.path);
      extra = { created: new Date(info.birthtimeMs || info.ctimeMs).toISOString(), lastModified: info.mtime.toISOString() };
    }
    return datasetOf(this.connection, { name: member.name, type: member.type, engine: this.engine, source, declared, extra });
  }

  private async columnsOf(source: string): Promise<{ name: string; duckType: string }[]> {
    const reader = await this.connection.runAndReadAll(`DESCRIBE SELECT * FROM ${source}`);
    return (reader.getRowsJS() as [string, string][]).map(([name, duckType]) => ({ name, duckType }));
  }

  /** The table function reading a member file, with its columns settled once so that no query guesses them again. */
  private async fileSource(member: FileMember): Promise<string> {
    const path = literal(member.file);
    switch (this.engine) {
      case 'parquet':
        return `read_parquet(${path})`;
      case 'json': {
        const format = member.extension === '.json' ? `format='array'` : `format='newline_delimited'`;
        const columns = await this.columnsOf(`read_json(${path}, ${format}, sample_size=-1)`);
        return `read_json(${path}, ${format}, auto_detect=false, columns={${columns.map((c) => `${literal(c.name)}: ${literal(c.duckType)}`).join(', ')}})`;
      }
      case 'csv':
        return this.csvSource(path);
      default:
        throw new Error(`${this.engine} has no files`);
    }
  }

  /**
   * CSV types as api-map §5 says: every value of a column read to decide it (sample_size=-1); a date
   * only as YYYY-MM-DD; numbers, date-times and booleans as DuckDB's sniffer finds them; anything
   * else (a time of day, say) is text. The dialect and the types found are then given explicitly.
   */
  private async csvSource(path: string): Promise<string> {
    const reader = await this.connection.runAndReadAll(
      `SELECT Delimiter, Quote, Escape, SkipRows, Columns, TimestampFormat FROM sniff_csv(${path}, sample_size=-1, header=true, dateformat='%Y-%m-%d')`,
    );
    const [delimiter, quote, escape, skip, columns, timestampFormat] = reader.getRowsJS()[0] as [
      string,
      string,
      string,
      number,
      { name: string; type: string }[],
      string | null,
    ];
    // The sniffer says `(empty)` for a file that quotes (or escapes) nothing.
    const option = (value: string) => literal(value === '(empty)' ? '' : value);
    const settled = columns.map((column) => {
      const type = fieldType(column.type);
      return `${literal(column.name)}: ${literal(type === 'string' ? 'VARCHAR' : column.type)}`;
    });
    const options = [
      'auto_detect=false',
      'header=true',
      `delim=${option(delimiter)}`,
      `quote=${option(quote)}`,
      `escape=${option(escape)}`,
      `skip=${Number(skip)}`,
      `dateformat='%Y-%m-%d'`,
      ...(timestampFormat ? [`timestampformat=${literal(timestampFormat)}`] : []),
      `columns={${settled.join(', ')}}`,
    ];
    return `read_csv(${path}, ${options.join(', ')})`;
  }
}

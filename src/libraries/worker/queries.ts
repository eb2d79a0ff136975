// Running queries in the worker's one DuckDB instance: a few connections (DuckDB runs one query per
// connection at a time, and a slow distinct-values scan must not hold up a page of records), each
// with its prepared statements kept by SQL text, and every query abortable: an aborted signal
// interrupts the connection running it.
import {
  DuckDBTypeId,
  type DuckDBConnection,
  type DuckDBDataChunk,
  type DuckDBInstance,
  type DuckDBMaterializedResult,
  type DuckDBPreparedStatement,
  type DuckDBValue,
} from '@duckdb/node-api';
import duckdb from '@duckdb/node-bindings';

/** Statements kept per connection: a page of records is a handful of distinct SQL texts per dataset. */
const STATEMENTS_KEPT = 128;

export class QueryCancelledError extends Error {
  constructor() {
    super('The query was cancelled');
  }
}

interface Slot {
  readonly connection: DuckDBConnection;
  readonly statements: Map<string, DuckDBPreparedStatement>;
}

export class Queries {
  private readonly idle: Slot[] = [];
  private readonly waiting: ((slot: Slot) => void)[] = [];

  private constructor(slots: Slot[]) {
    this.idle.push(...slots);
  }

  static async open(instance: DuckDBInstance, connections: number): Promise<Queries> {
    const slots: Slot[] = [];
    for (let i = 0; i < connections; i++) slots.push({ connection: await instance.connect(), statements: new Map() });
    return new Queries(slots);
  }

  /**
   * The rows of `sql` with `params`, each an array of values in column order; rejects with
   * QueryCancelledError once `signal` aborts. Every query of the worker selects its columns through
   * selectExpression (types.ts): DOUBLE, integers of at most 32 bits, VARCHAR or BOOLEAN, whose
   * DuckDB values are JavaScript's numbers, strings and booleans already. So the rows are read as
   * DuckDB gives them (getRows), not through getRowsJS's converter, which costs twice as much per
   * value and would turn nothing here into anything else.
   */
  async rows(sql: string, params: readonly unknown[], signal?: AbortSignal): Promise<unknown[][]> {
    if (signal?.aborted) throw new QueryCancelledError();
    const slot = await this.acquire();
    const interrupt = () => slot.connection.interrupt();
    signal?.addEventListener('abort', interrupt);
    try {
      let statement = slot.statements.get(sql);
      if (!statement) {
        statement = await slot.connection.prepare(sql);
        if (slot.statements.size >= STATEMENTS_KEPT) {
          const oldest = slot.statements.keys().next().value as string;
          slot.statements.get(oldest)?.destroySync();
          slot.statements.delete(oldest);
        }
        slot.statements.set(sql, statement);
      } else {
        // Most recently used last: the oldest is the one evicted.
        slot.statements.delete(sql);
        slot.statements.set(sql, statement);
      }
      if (params.length > 0) statement.bind(params as DuckDBValue[]);
      else statement.clearBindings();
      // The result is materialised once the statement has run: its chunks are read here at once,
      // not fetched one by one, each fetch (the last one empty) a trip through libuv's threads.
      const result = await statement.run();
      if (signal?.aborted) throw new QueryCancelledError();
      return rowsOf(result);
    } catch (error) {
      if (signal?.aborted) throw new QueryCancelledError();
      throw error;
    } finally {
      signal?.removeEventListener('abort', interrupt);
      this.release(slot);
    }
  }

  private acquire(): Promise<Slot> {
    const slot = this.idle.pop();
    if (slot) return Promise.resolve(slot);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(slot: Slot): void {
    const next = this.waiting.shift();
    if (next) next(slot);
    else this.idle.push(slot);
  }
}

/** A typed array's constructor: a view of a vector's numbers. */
interface NumberArray {
  new (buffer: ArrayBuffer, byteOffset: number, length: number): ArrayLike<number>;
  readonly BYTES_PER_ELEMENT: number;
}
/** Columns whose values are their data as a typed array reads it: the numbers the worker selects (types.ts). */
const NUMBER_ARRAYS = new Map<DuckDBTypeId, NumberArray>([
  [DuckDBTypeId.DOUBLE, Float64Array],
  [DuckDBTypeId.FLOAT, Float32Array],
  [DuckDBTypeId.INTEGER, Int32Array],
  [DuckDBTypeId.UINTEGER, Uint32Array],
  [DuckDBTypeId.SMALLINT, Int16Array],
  [DuckDBTypeId.USMALLINT, Uint16Array],
  [DuckDBTypeId.TINYINT, Int8Array],
  [DuckDBTypeId.UTINYINT, Uint8Array],
]);
/** A VARCHAR's entry in its vector: 16 bytes, its length first; up to 12 bytes are inlined after the length, longer text is pointed to. */
const STRING_ENTRY_BYTES = 16;
const INLINED_STRING_BYTES = 12;
const utf8 = new TextDecoder();

/** Bit `row` of a vector's validity mask (little-endian 64-bit words, one bit a row); no mask: every row is valid. */
function validityOf(vector: duckdb.Vector, rows: number): ((row: number) => boolean) | undefined {
  const mask = duckdb.vector_get_validity(vector, Math.ceil(rows / 64) * 8);
  if (!mask || mask.byteLength === 0) return undefined;
  return (row) => ((mask[row >> 3] >> (row & 7)) & 1) === 1;
}

/**
 * A VARCHAR vector's text: inlined text (most of what datasets hold: codes, names, the dates records
 * select as text) decoded from a Buffer over the copy of the vector's entries the bindings give, the
 * rest from where its entry points to (the chunk's own memory: read while the chunk is in use).
 */
function readText(vector: duckdb.Vector, rows: number, valid: ((row: number) => boolean) | undefined): (string | null)[] {
  const texts = new Array<string | null>(rows);
  const data = duckdb.vector_get_data(vector, rows * STRING_ENTRY_BYTES);
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  for (let row = 0; row < rows; row++) {
    // A missing value's entry is not text: its length and pointer are never read.
    if (valid && !valid(row)) {
      texts[row] = null;
      continue;
    }
    const at = row * STRING_ENTRY_BYTES;
    const length = bytes.readUInt32LE(at);
    texts[row] =
      length <= INLINED_STRING_BYTES
        ? bytes.toString('utf8', at + 4, at + 4 + length)
        : utf8.decode(duckdb.get_data_from_pointer(data.buffer as ArrayBuffer, data.byteOffset + at + 8, length));
  }
  return texts;
}

/** Reads value `index` of a chunk's column: its value, or null where the validity mask says it is missing. */
function columnReader(chunk: DuckDBDataChunk, column: number, type: DuckDBTypeId, size: number): (index: number) => unknown {
  const numbers = NUMBER_ARRAYS.get(type);
  if (!numbers && type !== DuckDBTypeId.BOOLEAN && type !== DuckDBTypeId.VARCHAR) {
    // A type the worker never selects: as getRows reads it (its vector tells missing values itself).
    const items = chunk.getColumnVector(column);
    return (index) => items.getItem(index);
  }
  const vector = duckdb.data_chunk_get_vector(chunk.chunk, column);
  const valid = validityOf(vector, size);
  if (type === DuckDBTypeId.VARCHAR) {
    const texts = readText(vector, size, valid);
    return (index) => texts[index];
  }
  let read: (index: number) => unknown;
  if (numbers) {
    const data = duckdb.vector_get_data(vector, size * numbers.BYTES_PER_ELEMENT);
    // The bindings' copy of the data, in a buffer of its own (never a SharedArrayBuffer).
    const items = new numbers(data.buffer as ArrayBuffer, data.byteOffset, size);
    read = (index) => items[index];
  } else {
    const data = duckdb.vector_get_data(vector, size);
    read = (index) => data[index] !== 0;
  }
  return valid ? (index) => (valid(index) ? read(index) : null) : read;
}

/**
 * A materialised result's rows, each an array of values in column order: the values DuckDB's
 * getRows gives. The columns are read from their vectors' data through DuckDB's C API, a column at
 * a time: numbers as typed arrays view them, booleans a byte each, text as readText reads it, and
 * missing values from the validity mask's bits. getRows instead builds an object per vector and
 * tests each value's validity with BigInt arithmetic: reading a page of 1,000 rows of four columns
 * and writing it as JSON takes about 0.1 ms less this way, 0.93–0.97 ms against 1.04–1.06
 * (docs/libraries.md). A type the worker never selects (types.ts) is still read as getRows reads it.
 */
export function rowsOf(result: DuckDBMaterializedResult): unknown[][] {
  const columns = result.columnCount;
  const types = Array.from({ length: columns }, (_, column) => result.columnTypeId(column));
  const rows: unknown[][] = [];
  for (let c = 0; c < result.chunkCount; c++) {
    const chunk = result.getChunk(c);
    const size = chunk.rowCount;
    const columnValues = Array.from({ length: columns }, (_, column) => columnReader(chunk, column, types[column], size));
    // Rows built by push are packed arrays, which JSON.stringify writes faster than arrays made at their length and filled.
    for (let index = 0; index < size; index++) {
      const row: unknown[] = [];
      for (let column = 0; column < columns; column++) row.push(columnValues[column](index));
      rows.push(row);
    }
  }
  return rows;
}

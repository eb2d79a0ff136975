import peggy from 'peggy';
import { WHERE_GRAMMAR } from './where-filter-grammar.js';

/**
 * The WHERE filters of published libraries (api-map §5): the text is parsed by the grammar in
 * where-filter-grammar.ts (Peggy, a maintained PEG parser generator: one readable grammar file, errors
 * with their position, no run-time dependency but itself), type-checked against the dataset's fields,
 * and compiled to DuckDB SQL whose values are only ever parameters and whose identifiers are only
 * the dataset's own field names, quoted. Plain TypeScript with no Nest import: the library worker
 * (src/libraries/worker) runs it too.
 */

export interface FilterField {
  readonly name: string;
  readonly type: 'number' | 'string' | 'date' | 'datetime' | 'boolean';
}

/** A filter that does not parse or does not fit the dataset; `position` is the 1-based column of the offending character. */
export class FilterError extends Error {
  constructor(
    message: string,
    readonly position?: number,
  ) {
    super(message);
    this.name = 'FilterError';
  }
}

/** The longest filter accepted: a filter is typed by a person; longer text is refused before it is parsed. */
export const MAX_FILTER_LENGTH = 10_000;
/** The deepest nesting of parentheses and `not` accepted, so that neither the parser nor the compiler can exhaust the stack. */
export const MAX_FILTER_DEPTH = 64;

type FilterType = FilterField['type'];
type Operand =
  | { kind: 'field'; name: string; at: number }
  | { kind: 'number'; value: number; at: number }
  | { kind: 'string'; value: string; at: number }
  | { kind: 'date'; value: string; at: number }
  | { kind: 'datetime'; value: string; at: number }
  | { kind: 'boolean'; value: boolean; at: number };
type Node =
  | { kind: 'or' | 'and'; items: Node[]; at: number }
  | { kind: 'not'; item: Node; at: number }
  | { kind: 'missing'; operand: Operand; negated: boolean; at: number }
  | { kind: 'in'; operand: Operand; values: Operand[]; negated: boolean; at: number }
  | { kind: 'between'; operand: Operand; low: Operand; high: Operand; negated: boolean; at: number }
  | { kind: 'contains'; operand: Operand; value: Operand; negated: boolean; at: number }
  | { kind: 'like'; operand: Operand; pattern: Operand; negated: boolean; at: number }
  | { kind: 'compare'; op: 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge'; left: Operand; right: Operand; at: number }
  | { kind: 'truth'; operand: Operand; at: number };

const parser = peggy.generate(WHERE_GRAMMAR, { output: 'parser' });

const COMPARISON_SQL = { eq: '=', lt: '<', le: '<=', gt: '>', ge: '>=' } as const;
/** The SQL type a parameter is cast to, so that DuckDB never guesses it from the value. */
const PARAMETER_CAST: Record<FilterType, string> = { number: 'DOUBLE', string: 'VARCHAR', date: 'DATE', datetime: 'TIMESTAMP', boolean: 'BOOLEAN' };

/** `name` as a DuckDB identifier. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

const at = (offset: number) => offset + 1;

/** Refuses text too long or too deeply parenthesised before the parser sees it (quotes are skipped: their parentheses are data). */
function checkBounds(text: string): void {
  if (text.length > MAX_FILTER_LENGTH) throw new FilterError(`The filter is longer than ${MAX_FILTER_LENGTH} characters`, MAX_FILTER_LENGTH + 1);
  let depth = 0;
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '(' && ++depth > MAX_FILTER_DEPTH)
      throw new FilterError(`The filter nests deeper than ${MAX_FILTER_DEPTH} levels at column ${at(i)}`, at(i));
    else if (c === ')') depth--;
  }
}

function parse(text: string): Node {
  checkBounds(text);
  try {
    return parser.parse(text) as Node;
  } catch (error) {
    if (error instanceof RangeError) throw new FilterError(`The filter nests deeper than ${MAX_FILTER_DEPTH} levels`);
    const location = (error as { location?: { start: { offset: number } } }).location;
    if (!location) throw error;
    const position = at(location.start.offset);
    throw new FilterError(`Invalid filter at column ${position}: ${(error as Error).message}`, position);
  }
}

/** Turns a parsed filter into SQL, checking each field and each operand's type on the way. */
class Compiler {
  readonly params: unknown[] = [];
  private readonly exact = new Map<string, FilterField>();
  private readonly folded = new Map<string, FilterField>();

  constructor(
    fields: readonly FilterField[],
    private readonly firstParam: number,
  ) {
    // A name matches its field whatever its case; of fields differing only in case, the exact one wins, else the first.
    for (const field of fields) {
      this.exact.set(field.name, field);
      if (!this.folded.has(field.name.toLowerCase())) this.folded.set(field.name.toLowerCase(), field);
    }
  }

  /** SQL that is true exactly when the filter holds; a missing value makes a condition false, never unknown (see `not`). */
  node(node: Node, depth: number): string {
    if (depth > MAX_FILTER_DEPTH) throw new FilterError(`The filter nests deeper than ${MAX_FILTER_DEPTH} levels at column ${at(node.at)}`, at(node.at));
    switch (node.kind) {
      case 'or':
      case 'and':
        return `(${node.items.map((item) => this.node(item, depth + 1)).join(node.kind === 'or' ? ' OR ' : ' AND ')})`;
      case 'not':
        return this.negate(this.node(node.item, depth + 1));
      case 'missing':
        return this.maybeNegated(`${this.operand(node.operand).sql} IS NULL`, node.negated);
      case 'in': {
        const operand = this.operand(node.operand);
        const values = node.values.map((value) => this.operand(value, operand.type, 'in'));
        return this.maybeNegated(`${operand.sql} IN (${values.map((value) => value.sql).join(', ')})`, node.negated);
      }
      case 'between': {
        const operand = this.operand(node.operand);
        const low = this.operand(node.low, operand.type, 'between');
        const high = this.operand(node.high, operand.type, 'between');
        return this.maybeNegated(`${operand.sql} BETWEEN ${low.sql} AND ${high.sql}`, node.negated);
      }
      case 'contains': {
        const operand = this.operand(node.operand, 'string', 'contains');
        const value = this.operand(node.value, 'string', 'contains');
        return this.maybeNegated(`contains(${operand.sql}, ${value.sql})`, node.negated);
      }
      case 'like': {
        const operand = this.operand(node.operand, 'string', 'like');
        const pattern = this.operand(node.pattern, 'string', 'like');
        // No escape character: `%` and `_` are the only special characters, a backslash is itself.
        return this.maybeNegated(`${operand.sql} LIKE ${pattern.sql} ESCAPE ''`, node.negated);
      }
      case 'compare': {
        const left = this.operand(node.left);
        const right = this.operand(node.right, left.type, node.op);
        // `x ne v` is `not (x = v)`: true when x is missing, as every negation is.
        return node.op === 'ne' ? `(${left.sql} IS DISTINCT FROM ${right.sql})` : `${left.sql} ${COMPARISON_SQL[node.op]} ${right.sql}`;
      }
      case 'truth': {
        const operand = this.operand(node.operand);
        if (operand.type !== 'boolean') throw new FilterError(`Expected a condition at column ${at(node.at)}, found a ${operand.type} alone`, at(node.at));
        return `${operand.sql}`;
      }
    }
  }

  /** `not`: made two-valued first, so that `not (x = 1)` holds for a missing x (SQL would leave it unknown, and drop the row). */
  private negate(sql: string): string {
    return `(NOT coalesce(${sql}, false))`;
  }

  private maybeNegated(sql: string, negated: boolean): string {
    return negated ? this.negate(sql) : sql;
  }

  /** An operand's SQL and type; with `expected`, a type that cannot be compared with it is a FilterError naming `what`. */
  private operand(operand: Operand, expected?: FilterType, what?: string): { sql: string; type: FilterType } {
    let result: { sql: string; type: FilterType };
    if (operand.kind === 'field') {
      const field = this.exact.get(operand.name) ?? this.folded.get(operand.name.toLowerCase());
      if (!field) throw new FilterError(`"${operand.name}" at column ${at(operand.at)} is not a field of this dataset`, at(operand.at));
      result = { sql: quoteIdentifier(field.name), type: field.type };
    } else {
      if (operand.kind === 'number' && !Number.isFinite(operand.value))
        throw new FilterError(`The number at column ${at(operand.at)} is out of range`, at(operand.at));
      this.params.push(operand.value);
      // Whole numbers as BIGINT: an integer column is then compared as an integer (and its file statistics still prune).
      const cast = operand.kind === 'number' && Number.isSafeInteger(operand.value) ? 'BIGINT' : PARAMETER_CAST[operand.kind];
      result = { sql: `$${this.firstParam + this.params.length - 1}::${cast}`, type: operand.kind };
    }
    if (expected !== undefined && !comparable(expected, result.type)) {
      const subject = operand.kind === 'field' ? `field "${operand.name}" (${result.type})` : `a ${result.type} value`;
      throw new FilterError(`${what} at column ${at(operand.at)} needs a ${expected}, not ${subject}`, at(operand.at));
    }
    return result;
  }
}

/** Dates and date-times compare with each other (a date is its midnight); every other type only with itself. */
function comparable(a: FilterType, b: FilterType): boolean {
  const temporal = (type: FilterType) => type === 'date' || type === 'datetime';
  return a === b || (temporal(a) && temporal(b));
}

/** Parses and type-checks `text` against `fields`; returns DuckDB SQL for a WHERE clause with $1.. placeholders starting at `firstParam`. */
export function compileFilter(text: string, fields: readonly FilterField[], firstParam = 1): { sql: string; params: unknown[] } {
  if (text.trim() === '') throw new FilterError('The filter is empty', 1);
  const tree = parse(text);
  const compiler = new Compiler(fields, firstParam);
  let sql: string;
  try {
    sql = compiler.node(tree, 0);
  } catch (error) {
    if (error instanceof RangeError) throw new FilterError(`The filter nests deeper than ${MAX_FILTER_DEPTH} levels`);
    throw error;
  }
  return { sql, params: compiler.params };
}

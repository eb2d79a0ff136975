import { InvalidInputError, type FieldError } from '../errors/hub-errors.js';
import { parseProjection, type Projection } from './projection.js';
import { firstValue, isUuid, listValues, parseDateTime, Rejection, type RawQuery } from './query-values.js';

export const FILTER_OPERATORS = ['EQ', 'IN', 'CO', 'SW', 'ST', 'PR', 'LT', 'GT', 'ALL', 'ANY'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

/**
 * The value type of a filterable field: a string, a UUID, a boolean, a date-time, an array of
 * strings, or one of an enumeration (given as its values).
 */
export type FilterFieldType = 'string' | 'uuid' | 'boolean' | 'datetime' | 'string[]' | readonly string[];

/** Operators that make sense for each kind of field; a spec outside these is a programming error. */
const OPERATORS_BY_KIND: Record<string, readonly FilterOperator[]> = {
  string: ['EQ', 'IN', 'CO', 'SW', 'ST', 'PR'],
  uuid: ['EQ', 'IN', 'PR'],
  boolean: ['EQ'],
  datetime: ['LT', 'GT', 'PR'],
  'string[]': ['ALL', 'ANY', 'PR'],
  enum: ['EQ', 'IN'],
};

export interface FilterFieldSpec {
  /**
   * SQL expression over the list query's alias, e.g. `namespace.name`; absent for a filter the
   * operation applies itself (one that is not a column, such as "the caller may use it").
   */
  readonly column?: string;
  readonly type: FilterFieldType;
  readonly operators: readonly FilterOperator[];
  /** The operation needs this filter: a request without it is a 400 naming it. */
  readonly required?: true;
  /**
   * Also accepted as a plain query parameter of the field's name (`hasPermission=Use`), meaning
   * this operator: for filters the interface names without an operator.
   */
  readonly plain?: FilterOperator;
  /**
   * For SW and ST: the expression they match the lower-cased prefix against with LIKE, instead of
   * ILIKE on `column`, so that a btree index on it (in the "C" collation) serves them as a range,
   * e.g. `lower(job.name) COLLATE "C"`. The same expression in a sort is then served by that index too.
   */
  readonly prefixColumn?: string;
}

/** Why a filter needs no index of its own: what serves it instead, or why it cannot be. */
export interface Unindexed {
  readonly unindexed: string;
}

/**
 * The indexes behind a list that can grow large (docs/api-conventions.md "Lists at scale"): per sort
 * key, the index that returns rows in that order; per filter, the index that finds its matches, or
 * why it needs none. A spec checks every name against the database, and the committed plans show
 * them in use.
 */
export interface ListIndexes {
  readonly sorts: Readonly<Record<string, IndexUse>>;
  readonly filters: Readonly<Record<string, IndexUse>>;
  /**
   * Filters whose matches the index of a sort returns in that sort's order, with these operators:
   * a range of the sort's own column, or an equality on a column that leads the sort's index. A
   * shallow page of them is read along that index with a plain `ORDER BY … LIMIT`; any other
   * filter has its page found by its keys first (docs/api-conventions.md "Shallow pages").
   */
  readonly ordered?: readonly OrderedFilter[];
  /**
   * Why a shallow page of this list is always read sorted, however it is filtered or narrowed:
   * where no index holds both a filter's (or the scope's) column and the sort's, finding the
   * page's keys first walks the same index entries and table rows as the page does, and then
   * reads the page's rows a second time by key (the committed plans show it).
   */
  readonly sortedShallow?: string;
}

/** A filter a sort's index serves in its order (ListIndexes.ordered). */
export interface OrderedFilter {
  readonly filter: string;
  readonly operators: readonly FilterOperator[];
  readonly sorts: readonly string[];
}

/** An index by name, the indexes of each branch of a union, or why none is needed. */
export type IndexUse = string | readonly string[] | Unindexed;

/**
 * Counts kept by the database for `total` (docs/api-conventions.md "Lists at scale"): a table of
 * per-key deltas (column `n`), summed over the keys a request matches. `filters` maps the list's
 * filters that are key columns of the table (matched with EQ or IN) to those columns; a request
 * with any other filter counts its rows instead.
 */
export interface ListCounts {
  readonly table: string;
  readonly filters: Readonly<Record<string, string>>;
  /** The table's namespace and owner columns, which access narrows by; no owner for a list whose items have none (nobody lists them as their own). */
  readonly namespace: string;
  readonly owner?: string;
}

/**
 * Everything a list operation accepts, declared once: it drives parsing, the SQL and the OpenAPI
 * parameters of the operation.
 */
export interface ListQuerySpec {
  readonly filters: Readonly<Record<string, FilterFieldSpec>>;
  /** Sort key (as the API spells it) to SQL expression. */
  readonly sorts: Readonly<Record<string, string>>;
  readonly defaultSort: string;
  /** Unique column appended to every sort so that pages never overlap or skip. */
  readonly tieBreaker: string;
  /** Field names accepted by `fields`/`excludeFields`; absent means no projection. */
  readonly projection?: readonly string[];
  /**
   * False for an operation that answers a plain array in its default order (a group's members):
   * it takes filters only, and `page[...]` or `sort` is refused like any unknown parameter.
   */
  readonly paged?: false;
  /** The indexes behind its sorts and filters; required unless the list is `small`. */
  readonly indexes?: ListIndexes;
  /** Why the list stays small (a few hundred items at most), so that it needs no declared indexes. */
  readonly small?: string;
  /**
   * Counts kept for `total`, when counting rows would cost too much: the first table whose
   * filters are all a request has serves it (so the smallest first).
   */
  readonly counts?: readonly ListCounts[];
}

export type FilterValue = string | boolean | readonly string[];

export interface FilterCondition {
  readonly field: string;
  readonly operator: FilterOperator;
  readonly spec: FilterFieldSpec;
  readonly value: FilterValue;
}

export interface SortOrder {
  readonly key: string;
  readonly column: string;
  readonly descending: boolean;
  readonly tieBreaker: string;
}

export interface ListQuery {
  readonly filters: readonly FilterCondition[];
  /** The list can grow large (it declares its indexes) rather than stays small. */
  readonly growing: boolean;
  /** The fields of the request's filters whose matches the sort's index does not return in its order (ListIndexes.ordered). */
  readonly unordered: readonly string[];
  /** Why a shallow page is always read sorted (ListIndexes.sortedShallow). */
  readonly sortedShallow?: string;
  readonly offset: number;
  readonly limit: number;
  readonly sort: SortOrder;
  readonly projection?: Projection;
}

export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 1000;
const MAX_OFFSET = 2_147_483_647;
const MAX_LIST_VALUES = 1000;
const MAX_STRING_LENGTH = 1024;
const PAGED_PARAMETERS = ['page[offset]', 'page[limit]', 'sort', 'fields', 'excludeFields'];
const UNPAGED_PARAMETERS = ['fields', 'excludeFields'];
const FILTER_PARAMETER = /^filter\[([^\][]+)\]\[([^\][]+)\]$/;

function kindOf(type: FilterFieldType): string {
  return typeof type === 'string' ? type : 'enum';
}

/** Every list query defined, for the spec that checks their declared indexes against the database. */
export const LIST_QUERIES = new Set<ListQuerySpec>();

/** The sorts and filters a spec's index declaration leaves out or names wrongly, as sentences. */
function undeclared(spec: ListQuerySpec): string[] {
  const indexes = spec.indexes;
  if (!indexes) return spec.small ? [] : ['declares neither its indexes nor why it stays small'];
  const problems: string[] = [];
  const check = (what: string, allowed: readonly string[], declared: Record<string, unknown>) => {
    const missing = allowed.filter((key) => !Object.hasOwn(declared, key));
    const unknown = Object.keys(declared).filter((key) => !allowed.includes(key));
    if (missing.length > 0) problems.push(`declares no index for ${what} ${missing.join(', ')}`);
    if (unknown.length > 0) problems.push(`declares an index for unknown ${what} ${unknown.join(', ')}`);
  };
  check('sort', Object.keys(spec.sorts), indexes.sorts);
  for (const ordered of indexes.ordered ?? []) {
    if (!Object.hasOwn(indexes.filters, ordered.filter)) problems.push(`declares an ordered filter ${ordered.filter} it has no index for`);
    const unknown = ordered.sorts.filter((key) => !Object.hasOwn(spec.sorts, key));
    if (unknown.length > 0) problems.push(`declares ${ordered.filter} ordered by unknown sort ${unknown.join(', ')}`);
  }
  // Filters the operation applies itself (no column) are its own to make fast.
  check(
    'filter',
    Object.keys(spec.filters).filter((field) => spec.filters[field].column !== undefined),
    indexes.filters,
  );
  return problems;
}

/**
 * Checks a spec once, at module load, so that a typo in an allowlist fails fast, and so does a
 * list that grows without an index declared behind each of its sorts and filters.
 */
export function defineListQuery<T extends ListQuerySpec>(spec: T): T {
  for (const [field, filter] of Object.entries(spec.filters)) {
    const allowed = OPERATORS_BY_KIND[kindOf(filter.type)];
    const wrong = filter.operators.filter((op) => !allowed.includes(op));
    if (wrong.length > 0) throw new Error(`List filter ${field}: operators ${wrong.join(', ')} do not fit its type`);
  }
  const sortKey = spec.defaultSort.replace(/^-/, '');
  if (!Object.hasOwn(spec.sorts, sortKey)) throw new Error(`Default sort ${spec.defaultSort} is not an allowed sort`);
  const problems = undeclared(spec);
  if (problems.length > 0) throw new Error(`List query over ${spec.tieBreaker}: ${problems.join('; ')}`);
  LIST_QUERIES.add(spec);
  return spec;
}

function describeType(type: FilterFieldType): string {
  if (typeof type !== 'string') return `one of ${type.join(', ')}`;
  return { string: 'a string', uuid: 'a UUID', boolean: 'true or false', datetime: 'an ISO 8601 date-time', 'string[]': 'a string' }[type];
}

/** Parses one scalar value of a field's type. */
function parseScalar(type: FilterFieldType, raw: string): string | boolean | Rejection {
  if (raw.length > MAX_STRING_LENGTH) return new Rejection(`must be at most ${MAX_STRING_LENGTH} characters`);
  if (raw.includes('\0')) return new Rejection('must not contain NUL characters');
  if (typeof type !== 'string') return type.includes(raw) ? raw : new Rejection(`must be ${describeType(type)}`);
  switch (type) {
    case 'boolean':
      return raw === 'true' ? true : raw === 'false' ? false : new Rejection('must be true or false');
    case 'uuid':
      return isUuid(raw) ? raw.toLowerCase() : new Rejection('must be a UUID');
    case 'datetime':
      return parseDateTime(raw) ?? new Rejection('must be an ISO 8601 date-time with a time zone, e.g. 2026-11-22T10:15:30.123Z');
    default:
      return raw;
  }
}

function parseFilterValue(spec: FilterFieldSpec, operator: FilterOperator, raw: string | readonly string[]): FilterValue | Rejection {
  switch (operator) {
    case 'IN':
    case 'ALL':
    case 'ANY': {
      const values = listValues(raw);
      if (values.length === 0) return new Rejection('needs at least one value');
      if (values.length > MAX_LIST_VALUES) return new Rejection(`takes at most ${MAX_LIST_VALUES} values`);
      const itemType = spec.type === 'string[]' ? 'string' : spec.type;
      const parsed: string[] = [];
      for (const value of values) {
        const item = parseScalar(itemType, value);
        if (item instanceof Rejection) return new Rejection(`value "${value}" ${item.message}`);
        parsed.push(String(item));
      }
      return parsed;
    }
    case 'PR':
      return parseScalar('boolean', firstValue(raw));
    case 'LT':
    case 'GT':
      return parseScalar('datetime', firstValue(raw));
    case 'CO':
    case 'SW':
    case 'ST': {
      const value = firstValue(raw);
      return value === '' ? new Rejection('must not be empty') : parseScalar('string', value);
    }
    case 'EQ':
      return parseScalar(spec.type, firstValue(raw));
  }
}

const isList = (operator: FilterOperator) => operator === 'IN' || operator === 'ALL' || operator === 'ANY';

function parseFilter(spec: ListQuerySpec, parameter: string, raw: string | readonly string[], errors: FieldError[]): FilterCondition | undefined {
  const [, field, operator] = FILTER_PARAMETER.exec(parameter) ?? [];
  const fieldSpec = field !== undefined && Object.hasOwn(spec.filters, field) ? spec.filters[field] : undefined;
  if (!fieldSpec) {
    const allowed = Object.keys(spec.filters);
    const message =
      field === undefined
        ? 'must be shaped filter[<field>][<operator>]'
        : allowed.length
          ? `names an unknown field "${field}"; this operation filters on ${allowed.join(', ')}`
          : 'is not accepted: this operation takes no filters';
    errors.push({ path: parameter, message });
    return undefined;
  }
  if (!(fieldSpec.operators as readonly string[]).includes(operator)) {
    errors.push({ path: parameter, message: `uses operator "${operator}", which ${field} does not take; use ${fieldSpec.operators.join(', ')}` });
    return undefined;
  }
  const op = operator as FilterOperator;
  if (Array.isArray(raw) && !isList(op)) {
    errors.push({ path: parameter, message: 'is given more than once' });
    return undefined;
  }
  const value = parseFilterValue(fieldSpec, op, raw);
  if (value instanceof Rejection) {
    errors.push({ path: parameter, message: value.message });
    return undefined;
  }
  return { field, operator: op, spec: fieldSpec, value };
}

/** A non-negative integer query parameter (up to int64's safe range) from `min` to `max`, given once; undefined when absent or bad (then noted in `errors`). */
export function parseInteger(raw: unknown, parameter: string, min: number, max: number, errors: FieldError[]): number | undefined {
  if (raw === undefined) return undefined;
  if (Array.isArray(raw)) {
    errors.push({ path: parameter, message: 'is given more than once' });
    return undefined;
  }
  const value = typeof raw === 'string' && /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= min && value <= max)) {
    errors.push({ path: parameter, message: `must be an integer from ${min} to ${max}` });
    return undefined;
  }
  return value;
}

function sortOrder(spec: ListQuerySpec, value: string): SortOrder {
  const key = value.replace(/^-/, '');
  return { key, column: spec.sorts[key], descending: value.startsWith('-'), tieBreaker: spec.tieBreaker };
}

function parseSort(spec: ListQuerySpec, raw: string | readonly string[] | undefined, errors: FieldError[]): SortOrder {
  if (raw === undefined) return sortOrder(spec, spec.defaultSort);
  if (typeof raw === 'string' && Object.hasOwn(spec.sorts, raw.replace(/^-/, ''))) return sortOrder(spec, raw);
  // What a reply names, made only for one (every list request paid for it).
  const allowed = Object.keys(spec.sorts).flatMap((key) => [key, `-${key}`]);
  if (typeof raw !== 'string' || raw.includes(',')) errors.push({ path: 'sort', message: `takes one value: ${allowed.join(', ')}` });
  else errors.push({ path: 'sort', message: `must be one of ${allowed.join(', ')}` });
  return sortOrder(spec, spec.defaultSort);
}

/**
 * Turns a request's query string (as Fastify parses it: flat keys, repeated keys as arrays) into a
 * typed list query. Every unknown parameter, field or operator and every malformed value is
 * reported at once, each naming its parameter, in one {@link InvalidInputError}.
 */
export function parseListQuery(spec: ListQuerySpec, raw: RawQuery): ListQuery {
  const errors: FieldError[] = [];
  const filters: FilterCondition[] = [];
  for (const [parameter, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    if (parameter.startsWith('filter[') || parameter === 'filter') {
      const condition = parseFilter(spec, parameter, value, errors);
      if (condition) filters.push(condition);
    } else if (Object.hasOwn(spec.filters, parameter) && spec.filters[parameter].plain) {
      const condition = parseFilter(spec, `filter[${parameter}][${spec.filters[parameter].plain}]`, value, errors);
      if (condition) filters.push(condition);
    } else if (!(spec.paged === false ? UNPAGED_PARAMETERS : PAGED_PARAMETERS).includes(parameter)) {
      errors.push({ path: parameter, message: 'is not a parameter of this operation' });
    }
  }
  for (const [field, filter] of Object.entries(spec.filters)) {
    if (filter.required && !filters.some((condition) => condition.field === field) && !errors.some((error) => error.path.startsWith(`filter[${field}]`)))
      errors.push({ path: `filter[${field}][${filter.operators[0]}]`, message: 'is required by this operation' });
  }
  const offset = parseInteger(raw['page[offset]'], 'page[offset]', 0, MAX_OFFSET, errors) ?? 0;
  const limit = parseInteger(raw['page[limit]'], 'page[limit]', 1, MAX_PAGE_LIMIT, errors) ?? DEFAULT_PAGE_LIMIT;
  const sort = parseSort(spec, raw.sort, errors);
  const projection = parseProjection(spec.projection, raw, errors);
  if (errors.length > 0) throw invalidQuery(errors);
  const sortedShallow = spec.indexes?.sortedShallow;
  return {
    filters,
    growing: spec.indexes !== undefined,
    unordered: unorderedFilters(spec, filters, sort),
    ...(sortedShallow !== undefined && { sortedShallow }),
    offset,
    limit,
    sort,
    projection,
  };
}

/** The fields of these filters (with a column) whose matches the sort's index does not return in its order. */
function unorderedFilters(spec: ListQuerySpec, filters: readonly FilterCondition[], sort: SortOrder): string[] {
  const ordered = spec.indexes?.ordered ?? [];
  const inOrder = (condition: FilterCondition) =>
    ordered.some((entry) => entry.filter === condition.field && entry.operators.includes(condition.operator) && entry.sorts.includes(sort.key));
  return [...new Set(filters.filter((condition) => condition.spec.column !== undefined && !inOrder(condition)).map((condition) => condition.field))];
}

/** `page[offset]` and `page[limit]` alone, checked as a list's are, for an operation that takes them without being a list. */
export function parsePage(raw: RawQuery): { offset: number; limit: number } {
  const errors: FieldError[] = [];
  const offset = parseInteger(raw['page[offset]'], 'page[offset]', 0, MAX_OFFSET, errors) ?? 0;
  const limit = parseInteger(raw['page[limit]'], 'page[limit]', 1, MAX_PAGE_LIMIT, errors) ?? DEFAULT_PAGE_LIMIT;
  if (errors.length > 0) throw invalidQuery(errors);
  return { offset, limit };
}

/** The error for bad query parameters: the detail lists them all. */
export function invalidQuery(errors: readonly FieldError[]): InvalidInputError {
  const detail = errors.map((e) => `${e.path} ${e.message}`).join('; ');
  return new InvalidInputError(`Invalid query parameter${errors.length > 1 ? 's' : ''}: ${detail}`, errors);
}

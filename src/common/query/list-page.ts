import type { ObjectLiteral, SelectQueryBuilder, WhereExpressionBuilder } from 'typeorm';
import { runStatement } from '../database/named-statements.js';
import { builderShape, listStatement } from './list-statements.js';
import type { ItemDenials, NamespaceScope } from '../http/access-scope.js';
import type { FilterCondition, ListCounts, ListQuery } from './list-query.js';

/** One page of a list and the number of items matching its filters. */
export interface ListPage<T> {
  readonly items: T[];
  readonly totalCount: number;
}

function likePattern(value: string, operator: 'CO' | 'SW' | 'ST'): string {
  const escaped = value.replace(/[\\%_]/g, (c) => `\\${c}`);
  return operator === 'CO' ? `%${escaped}%` : `${escaped}%`;
}

function presence(condition: FilterCondition, column: string, present: boolean): string {
  switch (condition.spec.type) {
    case 'string':
      return present ? `(${column} IS NOT NULL AND ${column} <> '')` : `(${column} IS NULL OR ${column} = '')`;
    case 'string[]':
      return present ? `cardinality(${column}) > 0` : `(${column} IS NULL OR cardinality(${column}) = 0)`;
    default:
      return present ? `${column} IS NOT NULL` : `${column} IS NULL`;
  }
}

/** The SQL of one condition, its value bound as `:name`. */
function conditionSql(condition: FilterCondition, column: string, name: string): { sql: string; value?: unknown } {
  const { operator, value } = condition;
  switch (operator) {
    case 'EQ':
      return { sql: `${column} = :${name}`, value };
    case 'IN':
      return { sql: `${column} = ANY(:${name})`, value };
    case 'CO':
    case 'SW':
    case 'ST': {
      // A prefix on a prefix column is a range of its btree index; anything else is matched case-blind.
      const prefixColumn = operator === 'CO' ? undefined : condition.spec.prefixColumn;
      const sql = prefixColumn ? `${prefixColumn} LIKE lower(:${name}) ESCAPE '\\'` : `${column} ILIKE :${name} ESCAPE '\\'`;
      return { sql, value: likePattern(value as string, operator) };
    }
    case 'PR':
      return { sql: presence(condition, column, value as boolean) };
    case 'LT':
      return { sql: `${column} < CAST(:${name} AS timestamptz)`, value };
    case 'GT':
      return { sql: `${column} > CAST(:${name} AS timestamptz)`, value };
    case 'ALL':
      return { sql: `${column} @> CAST(:${name} AS text[])`, value };
    case 'ANY':
      return { sql: `${column} && CAST(:${name} AS text[])`, value };
  }
}

/**
 * Adds the filters of a list query to a query builder; every value is a bound parameter. Filters
 * without a column are the operation's own to apply.
 */
export function whereFilters<Q extends WhereExpressionBuilder>(qb: Q, filters: readonly FilterCondition[]): Q {
  filters.forEach((condition, index) => {
    const column = condition.spec.column;
    if (column === undefined) return;
    const name = `filter_${index}`;
    const { sql, value } = conditionSql(condition, column, name);
    qb.andWhere(sql, value === undefined ? {} : { [name]: value });
  });
  return qb;
}

/**
 * Selects each column of the builder's entity under its property name (or those `only` names); a
 * builder over a derived table (`from('(SELECT ...)', alias)`) names its columns itself, so all of
 * them are taken (or those `only` names). `extra` expressions are selected too, under their names.
 */
function selectRowColumns(qb: SelectQueryBuilder<ObjectLiteral>, only?: readonly string[], extra: Readonly<Record<string, string>> = {}): void {
  const alias = qb.expressionMap.mainAlias;
  // Escaped expressions, so that TypeORM takes them as SQL rather than as entity paths to expand.
  const column = (name: string) => `${qb.escape(qb.alias)}.${qb.escape(name)}`;
  if (!alias?.hasMetadata) {
    qb.select(only ? [] : [`${qb.escape(qb.alias)}.*`]);
    for (const name of only ?? []) qb.addSelect(column(name), name);
  } else {
    qb.select([]);
    for (const entityColumn of alias.metadata.columns.filter((candidate) => !only || only.includes(candidate.propertyName))) {
      if (entityColumn.transformer)
        throw new Error(`Lists return raw rows: ${entityColumn.entityMetadata.name}.${entityColumn.propertyName} has a transformer`);
      qb.addSelect(column(entityColumn.databaseName), entityColumn.propertyName);
    }
  }
  for (const [name, expression] of Object.entries(extra)) qb.addSelect(expression, name);
}

/**
 * The SQL of a `timestamptz` as `Date.prototype.toISOString` writes it (UTC, to the millisecond,
 * which is all the hub's `timestamp(3)` columns hold). A list reads the times its items show so:
 * a Date parsed from each row and formatted again cost the hub 3 µs a time.
 */
export function isoTime(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** Offsets from which a page is read by its keys alone, and from the nearer end of the list. */
const DEEP_OFFSET = 10_000;

/**
 * What a list runs, for a tool that records it (the committed list-query plans); none in the hub.
 * `read` says how a page statement reads its page and why (none for a count).
 */
export type ListQueryObserver = (sql: string, parameters: readonly unknown[], read?: string) => void;
let observer: ListQueryObserver | undefined;

export function observeListQueries(next: ListQueryObserver | undefined): void {
  observer = next;
}

/**
 * Runs a statement an operation makes of a list query's filters (a delete by filters) on a
 * connection, reported as the list machinery's own are, so that its plan is committed too.
 */
export function runListStatement<R>(connection: { query<T>(sql: string, parameters: unknown[]): Promise<T> }, sql: string, parameters: unknown[]): Promise<R> {
  observer?.(sql, parameters);
  return connection.query<R>(sql, parameters);
}

/** Runs SQL made from a list's builder on that builder's connection (a pooled one: see runStatement). */
function run<R extends unknown[]>(qb: SelectQueryBuilder<ObjectLiteral>, sql: string, parameters: unknown[], read?: string): Promise<R> {
  observer?.(sql, parameters, read);
  return runStatement(qb.connection, sql, parameters) as Promise<R>;
}

/**
 * Who a list is narrowed for, and where its rows say what narrows them: the namespaces of the
 * caller's access (without the items a Deny hides) and, when they see their own items wherever
 * these are, their id and the rows' owner column.
 */
export interface ListScope {
  readonly namespaces: NamespaceScope;
  readonly columns: ScopeColumns;
  readonly owner?: { readonly id: string; readonly column: string };
}

export interface PageOptions {
  /** Counts kept for `total` (the list spec's `counts`): the first by which every filter of a request is kept serves it. */
  readonly counts?: readonly ListCounts[];
  /** The caller's scope: the list narrows its rows to it (whereInScope, or whereInScopeOrOwned with an owner), and its counts alike. */
  readonly scope?: ListScope;
  /**
   * The properties of the entity (or columns of the derived table) its items need, when not all:
   * every column read costs time to parse in the hub, large ones most.
   */
  readonly columns?: readonly string[];
  /**
   * What items show of other tables: SQL expressions over the list's alias (correlated subqueries),
   * selected with the page's rows under these names; a list reads them in the statement of its page
   * rather than in one more round trip after it. Never part of the count.
   */
  readonly extra?: Readonly<Record<string, string>>;
}

/**
 * Runs a list query over a query builder on one flat entity or derived table (holding any scoping
 * `where` of its own): the filtered count and the sorted page. The builder makes the SQL, which runs
 * as plain SQL: executing through the builder (getMany, even getRawMany) cost more CPU than all the
 * rest of a list request in the hub's own code. Items are rows with each column under its property
 * name, not entity instances, as mappers only read properties (so column transformers are not
 * applied: list entities have none); `R` names what they hold when `columns` or `extra` make them
 * other than the entity. It runs on pooled connections, outside any transaction.
 *
 * `total` comes from kept counts when `options.counts` serves the request, else from counting the
 * matching rows (through the indexes the list declares). A shallow page is read as `shallowRead`
 * decides, and counted at the same time, by a statement of its own on another pooled connection
 * (see below). Any page from DEEP_OFFSET on is counted first, then read by its keys (an index-only
 * scan where the sort's index holds the filtered columns) from whichever end of the list is nearer,
 * which `total` tells.
 */
export async function fetchListPage<T extends ObjectLiteral, R extends ObjectLiteral = T>(
  qb: SelectQueryBuilder<T>,
  query: ListQuery,
  options: PageOptions = {},
): Promise<ListPage<R>> {
  const scope = options.scope;
  // A caller who sees their own items and some of whose items a Deny hides is counted from the rows before the scope (countMatching).
  const unscoped = scope?.owner && hidesItems(scope) ? whereFilters(qb.clone(), query.filters) : undefined;
  if (scope) narrow(qb, scope, scope.columns);
  whereFilters(qb, query.filters);
  const shallow = shallowRead(qb, query);
  if (query.offset < DEEP_OFFSET) {
    // The count and the page at once, each a statement of its own on a pooled connection, as a
    // plain handler sends them. As one statement (the count a scalar subquery of the page's) they
    // took one round trip, but PostgreSQL ran the two in turn in one backend: under load that
    // statement's time was twice either's at the median and three times at the 99th percentile,
    // and it set the list's tail (docs/api-conventions.md). The count is made first, as the page's
    // builder changes `qb`.
    const shape = unscoped ? undefined : listShape(qb, query, options, shallow.byKeys);
    const [countSql, countParameters] = listStatement(qb, shape && `count ${shape}`, () => countStatement(qb, query, options, unscoped));
    const [sql, parameters] = shallowPage(qb, query, options, shallow.byKeys, shape);
    const [items, totalCount] = await Promise.all([run<R[]>(qb, sql, parameters, shallow.why), runCount(qb, countSql, countParameters)]);
    return { items, totalCount };
  }
  const totalCount = await countMatching(qb, query, options, unscoped);
  const deep = `by keys: an offset of ${DEEP_OFFSET} or more, from the nearer end`;
  return { items: query.offset >= totalCount ? [] : await selectByKeys<R>(qb, query, options, totalCount, deep), totalCount };
}

/**
 * The shape of a shallow page's statements (list-statements.ts), which its page's and its count's
 * are made of with their kind before it: the builder's, with its conditions and narrowing, and what
 * the list machinery makes of the rest (how the page is read, its sort, offset and limit, its
 * columns, and how it is counted, which the filters, the kept counts and the scope's owner and
 * hidden items decide). Undefined when the builder has no shape.
 */
function listShape(qb: SelectQueryBuilder<ObjectLiteral>, query: ListQuery, options: PageOptions, byKeys: boolean): string | undefined {
  const builder = builderShape(qb);
  if (builder === undefined) return undefined;
  const filters = query.filters.map((condition) => [condition.field, condition.operator]);
  const scope = options.scope && { owner: options.scope.owner?.column, hidesItems: hidesItems(options.scope), columns: options.scope.columns };
  // The builder's shape last and as it is (not quoted again): it is most of the key.
  return `${JSON.stringify([byKeys, query.sort, query.offset, query.limit, filters, options.columns, options.extra, options.counts, scope])}${builder}`;
}

/** A shallow page's statement, read as `byKeys` says, its text kept by `shape` (the list's, see listShape). */
function shallowPage(
  qb: SelectQueryBuilder<ObjectLiteral>,
  query: ListQuery,
  options: PageOptions,
  byKeys: boolean,
  shape: string | undefined,
): [string, unknown[]] {
  return listStatement(qb, shape && `page ${shape}`, () => (byKeys ? pageByKeys(qb, query, options) : sortedPage(qb, query, true, options)));
}

/**
 * How a shallow page is read, and why. Finding a page's keys first pays only where walking the
 * sort's index could read far more rows than the page: on a growing list, a filter that index does
 * not serve in its order (a rare `CO` match would walk all of it), or a narrowing by access that
 * the indexes led by namespace and owner find in the index alone. Otherwise a plain
 * `ORDER BY … LIMIT` walks the sort's index and stops at the page: on a small list, a filtered
 * page by keys first was a hash semi-join over the whole table (1.8 ms against 0.41 for 10,000
 * namespaces), and an unfiltered one finds each row twice and sorts the page twice (10 ms of SQL
 * against 3.5 for 1,000 jobs).
 */
function shallowRead(qb: SelectQueryBuilder<ObjectLiteral>, query: ListQuery): { byKeys: boolean; why: string } {
  if (!query.growing) return { byKeys: false, why: 'sorted: a small list' };
  if (query.sortedShallow !== undefined) return { byKeys: false, why: `sorted: ${query.sortedShallow}` };
  if (qb.expressionMap.mainAlias?.hasMetadata !== true || qb.expressionMap.joinAttributes.length > 0)
    return { byKeys: false, why: 'sorted: a derived table or a join, whose rows have no key of their own to read them by' };
  if (query.unordered.length > 0) return { byKeys: true, why: `by keys: the sort's index does not serve ${query.unordered.join(', ')} in its order` };
  const filterWheres = query.filters.filter((condition) => condition.spec.column !== undefined).length;
  if (qb.expressionMap.wheres.length > filterWheres) return { byKeys: true, why: 'by keys: narrowed by access (or by the operation)' };
  return {
    byKeys: false,
    why: filterWheres > 0 ? "sorted: its filters are a prefix or a range of the sort's index" : "sorted: unfiltered, along the sort's index",
  };
}

/** Whether a Deny hides some items of a scope: counts are kept by namespace and owner, not by item, so that its count is made row by row. */
function hidesItems(scope: ListScope | undefined): boolean {
  return (scope?.namespaces.items?.hidden.length ?? 0) > 0;
}

/** Narrows a builder to a list's scope, its namespace (and item) columns those of `columns`. */
function narrow(qb: SelectQueryBuilder<ObjectLiteral>, scope: ListScope, columns: ScopeColumns, ownerColumn = scope.owner?.column): void {
  if (scope.owner && ownerColumn) whereInScopeOrOwned(qb, columns, scope.namespaces, ownerColumn, scope.owner.id);
  else whereInScope(qb, columns, scope.namespaces);
}

/**
 * The number of items matching a list query: summed from kept counts when they serve it, else
 * counted. A caller who sees their own items, some of whose items a Deny hides, is counted in two
 * disjoint parts, `unscoped` (the filtered rows) narrowed to each: what their scope leaves them,
 * and what they own besides. As one condition (scope OR owner), PostgreSQL counts through a bitmap
 * of two indexes and reads every row it finds from the table; as two, each part is counted in an
 * index alone where one holds its columns (jobs unfiltered: 3 times faster at 50,000 in the scope).
 */
async function countMatching(
  qb: SelectQueryBuilder<ObjectLiteral>,
  query: ListQuery,
  options: PageOptions,
  unscoped?: SelectQueryBuilder<ObjectLiteral>,
): Promise<number> {
  const [sql, parameters] = countStatement(qb, query, options, unscoped).getQueryAndParameters();
  return runCount(qb, sql, parameters);
}

/** Runs a count statement: its one value. */
async function runCount(qb: SelectQueryBuilder<ObjectLiteral>, sql: string, parameters: unknown[]): Promise<number> {
  const rows = await run<{ count: string }[]>(qb, sql, parameters);
  return Number(rows[0]?.count ?? 0);
}

/** The statement that counts the items matching a list query (countMatching), not yet run. */
function countStatement(
  qb: SelectQueryBuilder<ObjectLiteral>,
  query: ListQuery,
  options: PageOptions,
  unscoped?: SelectQueryBuilder<ObjectLiteral>,
): SelectQueryBuilder<ObjectLiteral> {
  const scope = options.scope;
  const counted = hidesItems(scope)
    ? undefined
    : options.counts?.find(
        (counts) =>
          // Counts without an owner column cannot count what a caller owns besides their scope.
          (counts.owner !== undefined || !scope?.owner) &&
          query.filters.every((condition) => Object.hasOwn(counts.filters, condition.field) && ['EQ', 'IN'].includes(condition.operator)),
      );
  // What the scope leaves the caller (the items a Deny hides aside), for a count in two parts.
  const visible = unscoped && scope?.owner ? scopeCondition(scope.columns, scope.namespaces) : undefined;
  let count: SelectQueryBuilder<ObjectLiteral>;
  if (counted) {
    count = qb.connection.createQueryBuilder().from(counted.table, 'counts').select('coalesce(sum(counts.n), 0)', 'count');
    const columns = query.filters.map((condition) => ({ ...condition, spec: { ...condition.spec, column: `counts.${counted.filters[condition.field]}` } }));
    whereFilters(count, columns);
    if (scope) narrow(count, scope, { namespace: `counts.${counted.namespace}` }, counted.owner && `counts.${counted.owner}`);
  } else if (visible && unscoped && scope?.owner) {
    const owned = unscoped
      .clone()
      .select('COUNT(*)')
      .andWhere(`${scope.owner.column} = :scopeOwner AND NOT coalesce(${visible.sql}, false)`, { ...visible.parameters, scopeOwner: scope.owner.id });
    count = unscoped.clone().andWhere(visible.sql, visible.parameters).select(`COUNT(*) + (${owned.getQuery()})`, 'count').setParameters(owned.getParameters());
  } else {
    count = qb.clone().select('COUNT(*)', 'count');
  }
  return count;
}

/** Orders a builder by a list query's sort, reversed or not, the tie-breaker last. */
function orderBy(qb: SelectQueryBuilder<ObjectLiteral>, query: ListQuery, reversed: boolean): void {
  const direction = query.sort.descending !== reversed ? 'DESC' : 'ASC';
  qb.orderBy(query.sort.column, direction).addOrderBy(query.sort.tieBreaker, direction);
}

/**
 * A page by its keys, then its rows by key, in the query's order. Given `total`, a page past the
 * middle of the list is read from its end, in the reverse order, at `total - offset - limit`. The
 * keys are an array (`= ANY(ARRAY(…))`), which PostgreSQL looks up in the primary key one by one;
 * as `IN (…)`, it could join them to the table, and over a table of thousands chose a hash
 * semi-join over all of its rows.
 */
function selectByKeys<R>(qb: SelectQueryBuilder<ObjectLiteral>, query: ListQuery, options: PageOptions, total: number | undefined, read: string): Promise<R[]> {
  const [sql, parameters] = pageByKeys(qb, query, options, total).getQueryAndParameters();
  return run<R[]>(qb, sql, parameters, read);
}

/** The builder of selectByKeys's statement. */
function pageByKeys(qb: SelectQueryBuilder<ObjectLiteral>, query: ListQuery, options: PageOptions, total?: number): SelectQueryBuilder<ObjectLiteral> {
  const reversed = total !== undefined && query.offset > total / 2;
  const keys = qb.clone().select(query.sort.tieBreaker, 'key');
  orderBy(keys, query, reversed);
  const end = Math.min(total ?? Infinity, query.offset + query.limit);
  keys.offset(reversed ? total - end : query.offset).limit(end - query.offset);
  const rows = qb.clone();
  rows.expressionMap.wheres = [];
  rows.where(`${query.sort.tieBreaker} = ANY(ARRAY(${keys.getQuery()}))`, keys.getParameters());
  selectRowColumns(rows, options.columns, options.extra);
  orderBy(rows, query, false);
  return rows;
}

/** Runs an unpaged list query (`paged: false`): every matching row, in the query's sort order. */
export function fetchListRows<T extends ObjectLiteral>(qb: SelectQueryBuilder<T>, query: ListQuery): Promise<T[]> {
  return selectSorted<T>(whereFilters(qb, query.filters), query, false, {}, 'sorted: unpaged, every matching row');
}

/**
 * Runs a list query that pages but does not count (a list answered as a plain array): the page
 * of matching rows, in the query's sort order. A page from DEEP_OFFSET on is read by its keys
 * first, as fetchListPage reads one, but always from the start, as there is no `total` to tell
 * the nearer end (an offset of 900,000 in a million runs: 230 ms against 690 read whole); a
 * shallow one as `shallowRead` decides, as for fetchListPage.
 */
export function fetchListSlice<T extends ObjectLiteral, R extends ObjectLiteral = T>(
  qb: SelectQueryBuilder<T>,
  query: ListQuery,
  options: Pick<PageOptions, 'columns' | 'extra'> = {},
): Promise<R[]> {
  whereFilters(qb, query.filters);
  if (query.offset >= DEEP_OFFSET) return selectByKeys<R>(qb, query, options, undefined, `by keys: an offset of ${DEEP_OFFSET} or more, from the start`);
  const shallow = shallowRead(qb, query);
  const [sql, parameters] = shallowPage(qb, query, options, shallow.byKeys, listShape(qb, query, options, shallow.byKeys));
  return run<R[]>(qb, sql, parameters, shallow.why);
}

/** Selects the rows of a filtered builder in the query's order (a stable one: the tie-breaker last), one page of them or all. */
function selectSorted<R>(qb: SelectQueryBuilder<ObjectLiteral>, query: ListQuery, paged: boolean, options: PageOptions, read: string): Promise<R[]> {
  const [sql, parameters] = sortedPage(qb, query, paged, options).getQueryAndParameters();
  return run<R[]>(qb, sql, parameters, read);
}

/** Finishes `qb` as selectSorted's statement. */
function sortedPage(qb: SelectQueryBuilder<ObjectLiteral>, query: ListQuery, paged: boolean, options: PageOptions): SelectQueryBuilder<ObjectLiteral> {
  selectRowColumns(qb, options.columns, options.extra);
  orderBy(qb, query, false);
  if (paged) qb.offset(query.offset).limit(query.limit);
  return qb;
}

/**
 * Where a list's items say their namespace (a namespace id, null meaning `*`) and their id; kept
 * counts have no item column, and serve only scopes that hide no item.
 */
export interface ScopeColumns {
  readonly namespace: string;
  readonly item?: string;
}

/** The SQL that hides the items an item-level Deny covers (api-map §6: a list shows what single reads show). */
function hiddenCondition(
  column: Partial<ScopeColumns> & { readonly item: string },
  items: ItemDenials,
): { sql: string; parameters: Record<string, unknown> } | undefined {
  if (items.hidden.length === 0) return undefined;
  const parameters: Record<string, unknown> = { scopeItemPrefix: items.prefix };
  const hidden = items.hidden.map((rule, index) => {
    // Items outside namespaces (no namespace column) are decided in `*`, where only Denies bound in `*` apply.
    if (rule.namespaceId !== null && column.namespace === undefined) return 'FALSE';
    // coalesce: an item of `*` (a null namespace) is not in the Deny's namespace, and must not make the whole condition null.
    const where = rule.namespaceId === null ? [] : [`coalesce(${column.namespace} = :scopeHiddenNamespace${index}, false)`];
    if (rule.namespaceId !== null) parameters[`scopeHiddenNamespace${index}`] = rule.namespaceId;
    if (rule.ids) {
      where.push(`CAST(${column.item} AS text) = ANY(:scopeHiddenIds${index})`);
      parameters[`scopeHiddenIds${index}`] = rule.ids;
    } else if (rule.pattern !== undefined) {
      where.push(`(CAST(:scopeItemPrefix AS text) || CAST(${column.item} AS text)) ~ :scopeHiddenPattern${index}`);
      parameters[`scopeHiddenPattern${index}`] = rule.pattern;
    }
    return where.length > 0 ? `(${where.join(' AND ')})` : 'TRUE';
  });
  return { sql: `NOT (${hidden.join(' OR ')})`, parameters };
}

/** The condition of a namespace scope and its parameters; none when the scope is everything. */
function scopeCondition(column: ScopeColumns, scope: NamespaceScope): { sql: string; parameters: Record<string, unknown> } | undefined {
  const namespaces = scope.all
    ? scope.except.length > 0
      ? { sql: `(${column.namespace} IS NULL OR ${column.namespace} <> ALL(:scopeExcept))`, parameters: { scopeExcept: scope.except } }
      : undefined
    : { sql: `${column.namespace} = ANY(:scopeOnly)`, parameters: { scopeOnly: scope.only } };
  if (scope.items && scope.items.hidden.length > 0 && column.item === undefined) throw new Error('A scope that hides items needs the column of their ids');
  const hidden = scope.items && column.item !== undefined ? hiddenCondition({ ...column, item: column.item }, scope.items) : undefined;
  if (!namespaces || !hidden) return namespaces ?? hidden;
  return { sql: `(${namespaces.sql} AND ${hidden.sql})`, parameters: { ...namespaces.parameters, ...hidden.parameters } };
}

/** Narrows a list to a namespace scope (namespace id null meaning every namespace, `*`), without the items a Deny hides. */
export function whereInScope<Q extends WhereExpressionBuilder>(qb: Q, column: ScopeColumns, scope: NamespaceScope): Q {
  const condition = scopeCondition(column, scope);
  return condition ? qb.andWhere(condition.sql, condition.parameters) : qb;
}

/** Leaves out of a list of items outside namespaces those a Deny hides from their single reads (`column` holds an item's id). */
export function whereNotHidden<Q extends WhereExpressionBuilder>(qb: Q, column: string, items: ItemDenials | undefined): Q {
  const condition = items && hiddenCondition({ item: column }, items);
  return condition ? qb.andWhere(condition.sql, condition.parameters) : qb;
}

/** Narrows a list to a namespace scope, but for the items a user owns, which they always see (as their single reads). */
export function whereInScopeOrOwned<Q extends WhereExpressionBuilder>(
  qb: Q,
  column: ScopeColumns,
  scope: NamespaceScope,
  ownerColumn: string,
  ownerId: string,
): Q {
  const condition = scopeCondition(column, scope);
  return condition ? qb.andWhere(`(${condition.sql} OR ${ownerColumn} = :scopeOwner)`, { ...condition.parameters, scopeOwner: ownerId }) : qb;
}

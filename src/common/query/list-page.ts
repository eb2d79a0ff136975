import type { ObjectLiteral, SelectQueryBuilder, WhereExpressionBuilder } from 'typeorm';
import type { ItemDenials, NamespaceScope } from '../http/access-scope.js';
import type { FilterCondition, ListQuery } from './list-query.js';

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
    case 'ST':
      return { sql: `${column} ILIKE :${name} ESCAPE '\\'`, value: likePattern(value as string, operator) };
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
 * Selects each column of the builder's entity under its property name; a builder over a derived
 * table (`from('(SELECT ...)', alias)`) names its columns itself, so all of them are taken.
 */
function selectRowColumns(qb: SelectQueryBuilder<ObjectLiteral>): void {
  const alias = qb.expressionMap.mainAlias;
  if (!alias?.hasMetadata) {
    qb.select(`${qb.escape(qb.alias)}.*`);
    return;
  }
  qb.select([]);
  for (const column of alias.metadata.columns) {
    if (column.transformer) throw new Error(`Lists return raw rows: ${column.entityMetadata.name}.${column.propertyName} has a transformer`);
    // Escaped expressions, so that TypeORM takes them as SQL rather than as entity paths to expand.
    qb.addSelect(`${qb.escape(qb.alias)}.${qb.escape(column.databaseName)}`, column.propertyName);
  }
}

/**
 * Runs a list query over a query builder on one flat entity or derived table (holding any scoping
 * `where` of its own): the filtered count and the sorted page, in parallel. The builder makes the SQL, which runs
 * as plain SQL: executing through the builder (getMany, even getRawMany) cost more CPU than all the
 * rest of a list request in the hub's own code. Items are rows with each column under its property
 * name, not entity instances, as mappers only read properties (so column transformers are not
 * applied: list entities have none). Both run on pooled connections, outside any transaction.
 */
export async function fetchListPage<T extends ObjectLiteral>(qb: SelectQueryBuilder<T>, query: ListQuery): Promise<ListPage<T>> {
  whereFilters(qb, query.filters);
  const [countSql, countParameters] = qb.clone().select('COUNT(*)', 'count').getQueryAndParameters();
  const [count, items] = await Promise.all([qb.connection.query<{ count: string }[]>(countSql, countParameters), selectSorted(qb, query, true)]);
  return { items, totalCount: Number(count[0]?.count ?? 0) };
}

/** Runs an unpaged list query (`paged: false`): every matching row, in the query's sort order. */
export function fetchListRows<T extends ObjectLiteral>(qb: SelectQueryBuilder<T>, query: ListQuery): Promise<T[]> {
  return selectSorted(whereFilters(qb, query.filters), query, false);
}

/**
 * Runs a list query that pages but does not count (a list answered as a plain array): the page
 * of matching rows, in the query's sort order.
 */
export function fetchListSlice<T extends ObjectLiteral>(qb: SelectQueryBuilder<T>, query: ListQuery): Promise<T[]> {
  return selectSorted(whereFilters(qb, query.filters), query, true);
}

/** Selects the rows of a filtered builder in the query's order (a stable one: the tie-breaker last), one page of them or all. */
function selectSorted<T extends ObjectLiteral>(qb: SelectQueryBuilder<T>, query: ListQuery, paged: boolean): Promise<T[]> {
  selectRowColumns(qb);
  const direction = query.sort.descending ? 'DESC' : 'ASC';
  qb.orderBy(query.sort.column, direction).addOrderBy(query.sort.tieBreaker, direction);
  if (paged) qb.offset(query.offset).limit(query.limit);
  const [sql, parameters] = qb.getQueryAndParameters();
  return qb.connection.query<T[]>(sql, parameters);
}

/** Where a list's items say their namespace (a namespace id, null meaning `*`) and their id. */
export interface ScopeColumns {
  readonly namespace: string;
  readonly item: string;
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
  const hidden = scope.items && hiddenCondition(column, scope.items);
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

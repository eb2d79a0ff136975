import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';

/**
 * The SQL texts of list statements, kept by the shape of what made them. A list request builds its
 * statements (its page's and its count's) with TypeORM's query builder, and making their text
 * (selects expanded, property paths replaced by columns over the whole text) was most of the hub's
 * own CPU for a list: a hub that made each text once per shape spent a tenth less CPU per request
 * on the namespaces list (docs/api-conventions.md). A request of a shape seen before takes the text and
 * binds its own values to it, as TypeORM binds them (`escapeQueryWithParameters`).
 *
 * The shape is everything the text is made of: the builder's whole expression map (its selects, its
 * conditions with their parameter names, the caller's narrowing among them, its order and page),
 * with the parameters' names but never their values, and what the list machinery adds (see
 * list-page.ts). A builder with anything this does not describe (a join, a function, an object of
 * another kind) has no shape, and its statement is made every time: a shape may only ever be
 * shared by builders whose texts are equal, so that no caller is given another's narrowing. The
 * test suite checks that on every list request it sends (`checkListStatements`).
 */
const KEPT = 512;
const texts = new Map<string, string>();
let checking = false;

/** Makes every request of a known shape build its statement too and compare (the test suite's check; off in the hub). */
export function checkListStatements(on: boolean): void {
  checking = on;
}

/** Thrown when what is kept for a shape is not what its builder makes: a shape that misses something. */
class ShapeMismatch extends Error {}

/** Thrown while walking a builder that has something the shape does not describe. */
class Unshaped extends Error {}

/** Expression map members that describe nothing in a SELECT's text, or that the shape takes otherwise. */
const SKIPPED = new Set(['dataSource', 'parameters', 'nativeParameters', 'locallyGenerated', 'queryEntity', 'callListeners', 'useTransaction', 'updateEntity']);
/** Members that, when not empty, make a statement the shape does not describe (joins, relations, entities). */
const UNSHAPED = ['joinAttributes', 'relationIdAttributes', 'whereEntities', 'commonTableExpressions'] as const;

type Alias = SelectQueryBuilder<ObjectLiteral>['expressionMap']['aliases'][number];

function aliasShape(alias: Alias): object {
  return {
    type: alias.type,
    name: alias.name,
    tablePath: alias.tablePath,
    subQuery: alias.subQuery,
    metadata: alias.hasMetadata ? `${alias.metadata.name}:${alias.metadata.tablePath}` : undefined,
  };
}

/** The names of a builder's parameters, with what decides how each is bound (a spread array's length; a function is SQL of its own). */
function parametersShape(parameters: ObjectLiteral): string[] {
  return Object.keys(parameters)
    .sort()
    .map((name) => {
      const value: unknown = parameters[name];
      if (typeof value === 'function') throw new Unshaped();
      return Array.isArray(value) ? `${name}[${value.length}]` : name;
    });
}

/**
 * One value of an expression map, written out: plain objects, arrays and primitives as they are,
 * aliases by their table and entity, anything else unshaped. (Loops and `+=` rather than
 * entries, map and join: it runs on every list request.)
 */
function valueShape(value: unknown, aliases: readonly Alias[]): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
    case 'boolean':
      return String(value);
    case 'undefined':
      return '-';
    case 'object': {
      if (value === null) return 'null';
      let shape: string;
      if (Array.isArray(value)) {
        shape = '[';
        for (const item of value) shape += `${valueShape(item, aliases)},`;
        return `${shape}]`;
      }
      if (aliases.includes(value as Alias)) return JSON.stringify(aliasShape(value as Alias));
      if (Object.getPrototypeOf(value) !== Object.prototype) throw new Unshaped();
      shape = '{';
      for (const key of Object.keys(value)) shape += `${JSON.stringify(key)}:${valueShape((value as Record<string, unknown>)[key], aliases)},`;
      return `${shape}}`;
    }
    default:
      throw new Unshaped();
  }
}

/**
 * The shape of a builder's statement, or undefined when it has something the shape does not
 * describe: every member of its expression map but those SKIPPED, written out by valueShape, and
 * its parameters' names.
 */
export function builderShape(qb: SelectQueryBuilder<ObjectLiteral>): string | undefined {
  const map = qb.expressionMap;
  if (map.queryType !== 'select' || UNSHAPED.some((member) => map[member].length > 0)) return undefined;
  try {
    const members = map as unknown as Record<string, unknown>;
    let shape = '';
    for (const key of Object.keys(members)) if (!SKIPPED.has(key)) shape += `${key}=${valueShape(members[key], map.aliases)};`;
    return `${shape}parameters=${parametersShape(qb.getParameters()).join(',')}`;
  } catch (error) {
    if (error instanceof Unshaped) return undefined;
    throw error;
  }
}

function sameValues(made: ObjectLiteral, given: ObjectLiteral): boolean {
  const names = Object.keys(made);
  return names.length === Object.keys(given).length && names.every((name) => Object.is(made[name], given[name]));
}

/**
 * A list statement's SQL and values for `qb` (its conditions and narrowing in place): its text
 * made by `build` (which finishes the statement, on `qb` or a builder made from it) the first time
 * its shape is seen, then bound to `qb`'s own values. `shape` undefined: made every time. A text is
 * kept only when the statement `build` makes has `qb`'s very parameters, so that binding `qb`'s
 * values to it later gives what building would have.
 */
export function listStatement(
  qb: SelectQueryBuilder<ObjectLiteral>,
  shape: string | undefined,
  build: () => SelectQueryBuilder<ObjectLiteral>,
): [string, unknown[]] {
  const bind = (text: string, parameters: ObjectLiteral) => qb.dataSource.driver.escapeQueryWithParameters(text, parameters) as [string, unknown[]];
  const kept = shape === undefined ? undefined : texts.get(shape);
  if (kept !== undefined && !checking) return bind(kept, qb.getParameters());
  const given = shape === undefined ? undefined : qb.getParameters();
  const built = build();
  const text = built.getQuery();
  const parameters = built.getParameters();
  if (shape === undefined || given === undefined) return bind(text, parameters);
  if (kept !== undefined) {
    if (kept !== text || !sameValues(parameters, given)) throw new ShapeMismatch(`A kept list statement is not what its builder makes now: ${shape}`);
  } else if (sameValues(parameters, given)) {
    if (texts.size >= KEPT) texts.delete(texts.keys().next().value as string);
    texts.set(shape, text);
  }
  return bind(text, parameters);
}

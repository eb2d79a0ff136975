import type { FieldError } from '../errors/hub-errors.js';
import { listValues, type RawQuery } from './query-values.js';

/** `fields` keeps only the named fields of each item; `excludeFields` drops them. */
export interface Projection {
  readonly mode: 'include' | 'exclude';
  readonly fields: ReadonlySet<string>;
}

/**
 * Reads `fields` or `excludeFields` (repeated or comma-separated) against the fields an operation
 * allows. Both at once, an unknown field or projection on an operation without it is an error.
 */
export function parseProjection(allowed: readonly string[] | undefined, raw: RawQuery, errors: FieldError[]): Projection | undefined {
  const given = (['fields', 'excludeFields'] as const).filter((name) => raw[name] !== undefined);
  if (given.length === 0) return undefined;
  if (!allowed) {
    for (const name of given) errors.push({ path: name, message: 'is not a parameter of this operation' });
    return undefined;
  }
  if (given.length > 1) {
    errors.push({ path: 'excludeFields', message: 'cannot be combined with fields' });
    return undefined;
  }
  const [name] = given;
  const fields = listValues(raw[name] ?? '');
  const unknown = fields.filter((field) => !allowed.includes(field));
  if (fields.length === 0 || unknown.length > 0) {
    const what = fields.length === 0 ? 'needs at least one field' : `names unknown field${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`;
    errors.push({ path: name, message: `${what}; allowed: ${allowed.join(', ')}` });
    return undefined;
  }
  return { mode: name === 'fields' ? 'include' : 'exclude', fields: new Set(fields) };
}

export function applyProjection<T extends object>(item: T, projection: Projection | undefined): Partial<T> {
  if (!projection) return item;
  const keep = (key: string) => projection.fields.has(key) === (projection.mode === 'include');
  return Object.fromEntries(Object.entries(item).filter(([key]) => keep(key))) as Partial<T>;
}

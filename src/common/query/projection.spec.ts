import { describe, expect, it } from '@jest/globals';
import type { FieldError } from '../errors/hub-errors.js';
import { applyProjection, parseProjection, type Projection } from './projection.js';
import type { RawQuery } from './query-values.js';

const ALLOWED = ['_id', 'name', 'tags', 'description'] as const;
const ALLOWED_LIST = '_id, name, tags, description';

/** Runs parseProjection and returns what it produced along with the errors it collected. */
function project(raw: RawQuery, allowed: readonly string[] | undefined): { projection: Projection | undefined; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const projection = parseProjection(allowed, raw, errors);
  return { projection, errors };
}

describe('parseProjection', () => {
  it('returns no projection when neither fields nor excludeFields is given', () => {
    expect(project({ sort: 'name', 'filter[name][EQ]': 'a' }, ALLOWED)).toEqual({ projection: undefined, errors: [] });
  });

  it('ignores parameters present with an undefined value', () => {
    expect(project({ fields: undefined, excludeFields: undefined }, ALLOWED)).toEqual({ projection: undefined, errors: [] });
  });

  it('reads comma-separated fields as an include projection', () => {
    const { projection, errors } = project({ fields: 'name,_id' }, ALLOWED);
    expect(errors).toEqual([]);
    expect(projection?.mode).toBe('include');
    expect([...(projection?.fields ?? [])]).toEqual(['name', '_id']);
  });

  it('reads excludeFields as an exclude projection', () => {
    const { projection, errors } = project({ excludeFields: 'description' }, ALLOWED);
    expect(errors).toEqual([]);
    expect(projection?.mode).toBe('exclude');
    expect([...(projection?.fields ?? [])]).toEqual(['description']);
  });

  it('takes a repeated parameter, comma-separated or not, and drops duplicates', () => {
    const { projection, errors } = project({ fields: ['name,tags', '_id', 'name'] }, ALLOWED);
    expect(errors).toEqual([]);
    expect(projection?.mode).toBe('include');
    expect([...(projection?.fields ?? [])]).toEqual(['name', 'tags', '_id']);
  });

  it('adds nothing to errors that were already collected', () => {
    const errors: FieldError[] = [{ path: 'sort', message: 'must be one of name' }];
    parseProjection(ALLOWED, { fields: 'name' }, errors);
    expect(errors).toEqual([{ path: 'sort', message: 'must be one of name' }]);
  });

  it('refuses fields and excludeFields together, naming excludeFields', () => {
    expect(project({ fields: 'name', excludeFields: 'tags' }, ALLOWED)).toEqual({
      projection: undefined,
      errors: [{ path: 'excludeFields', message: 'cannot be combined with fields' }],
    });
  });

  it('refuses an unknown field and lists the allowed ones', () => {
    expect(project({ fields: 'name,secret' }, ALLOWED)).toEqual({
      projection: undefined,
      errors: [{ path: 'fields', message: `names unknown field secret; allowed: ${ALLOWED_LIST}` }],
    });
  });

  it('lists every unknown field, in the plural', () => {
    expect(project({ excludeFields: ['secret', 'name,password'] }, ALLOWED)).toEqual({
      projection: undefined,
      errors: [{ path: 'excludeFields', message: `names unknown fields secret, password; allowed: ${ALLOWED_LIST}` }],
    });
  });

  it('matches field names exactly, case included', () => {
    expect(project({ fields: 'Name' }, ALLOWED).errors).toEqual([{ path: 'fields', message: `names unknown field Name; allowed: ${ALLOWED_LIST}` }]);
  });

  it.each(['fields', 'excludeFields'])('refuses an empty %s', (name) => {
    expect(project({ [name]: '' }, ALLOWED)).toEqual({
      projection: undefined,
      errors: [{ path: name, message: `needs at least one field; allowed: ${ALLOWED_LIST}` }],
    });
  });

  it('refuses projection on an operation without it, naming each parameter given', () => {
    expect(project({ fields: 'name' }, undefined)).toEqual({
      projection: undefined,
      errors: [{ path: 'fields', message: 'is not a parameter of this operation' }],
    });
    expect(project({ fields: 'name', excludeFields: 'tags' }, undefined)).toEqual({
      projection: undefined,
      errors: [
        { path: 'fields', message: 'is not a parameter of this operation' },
        { path: 'excludeFields', message: 'is not a parameter of this operation' },
      ],
    });
  });
});

describe('applyProjection', () => {
  const item = { _id: 'b3c1', name: 'analytics', tags: ['a', 'b'], description: null };

  it('returns the item itself, unchanged, without a projection', () => {
    const result = applyProjection(item, undefined);
    expect(result).toBe(item);
    expect(result).toEqual({ _id: 'b3c1', name: 'analytics', tags: ['a', 'b'], description: null });
  });

  it('keeps only the named fields in include mode', () => {
    expect(applyProjection(item, { mode: 'include', fields: new Set(['name', 'description']) })).toEqual({ name: 'analytics', description: null });
  });

  it('drops the named fields in exclude mode', () => {
    expect(applyProjection(item, { mode: 'exclude', fields: new Set(['tags', 'description']) })).toEqual({ _id: 'b3c1', name: 'analytics' });
  });

  it('does not invent a named field the item lacks', () => {
    const result = applyProjection({ name: 'analytics' }, { mode: 'include', fields: new Set(['name', '_id']) });
    expect(result).toEqual({ name: 'analytics' });
    expect(Object.keys(result)).toEqual(['name']);
  });

  it('leaves the original item untouched', () => {
    applyProjection(item, { mode: 'exclude', fields: new Set(['name']) });
    expect(item).toEqual({ _id: 'b3c1', name: 'analytics', tags: ['a', 'b'], description: null });
  });

  it('works end to end with a parsed projection', () => {
    const { projection } = project({ excludeFields: '_id,tags' }, ALLOWED);
    expect(applyProjection(item, projection)).toEqual({ name: 'analytics', description: null });
  });
});

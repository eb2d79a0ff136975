import { describe, expect, it } from '@jest/globals';
import { InvalidInputError, type FieldError } from '../errors/hub-errors.js';
import { applyJsonPatch, parseJsonPatch, type JsonPatch } from './json-patch.js';

/** Runs `action`, expects it to throw an InvalidInputError, and returns that error. */
function invalidInput(action: () => unknown): InvalidInputError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return error as InvalidInputError;
  }
  throw new Error('expected an InvalidInputError, but nothing was thrown');
}

function errorPaths(error: InvalidInputError): string[] {
  return (error.errors ?? []).map((fieldError: FieldError) => fieldError.path);
}

describe('parseJsonPatch', () => {
  describe('the document', () => {
    it.each([
      ['an object', { op: 'remove', path: '/a' }],
      ['a string', '[]'],
      ['null', null],
      ['a number', 3],
      ['undefined', undefined],
    ])('refuses %s with an error at the body root', (_label, body) => {
      const error = invalidInput(() => parseJsonPatch(body));
      expect(error.status).toBe(400);
      expect(errorPaths(error)).toEqual(['']);
      expect(error.message).toMatch(/array/i);
    });

    it('accepts an empty array', () => {
      expect(parseJsonPatch([])).toEqual([]);
    });

    it('returns the operations of a valid patch unchanged', () => {
      const body = [
        { op: 'add', path: '/description', value: 'new' },
        { op: 'replace', path: '/labels/0', value: { name: 'x' } },
        { op: 'remove', path: '/owner' },
      ];
      expect(parseJsonPatch(body)).toEqual([
        { op: 'add', path: '/description', value: 'new' },
        { op: 'replace', path: '/labels/0', value: { name: 'x' } },
        { op: 'remove', path: '/owner' },
      ]);
    });

    it('accepts exactly 1000 operations', () => {
      const body = Array.from({ length: 1000 }, () => ({ op: 'remove', path: '/a' }));
      expect(parseJsonPatch(body)).toHaveLength(1000);
    });

    it('refuses more than 1000 operations with an error at the body root', () => {
      const body = Array.from({ length: 1001 }, () => ({ op: 'remove', path: '/a' }));
      const error = invalidInput(() => parseJsonPatch(body));
      expect(errorPaths(error)).toEqual(['']);
      expect(error.message).toContain('1000');
    });
  });

  describe('each operation', () => {
    it.each([
      ['a number', 1],
      ['null', null],
      ['a string', 'remove /a'],
      ['an array', [{ op: 'remove', path: '/a' }]],
    ])('refuses an operation that is %s, at the operation index', (_label, item) => {
      const error = invalidInput(() => parseJsonPatch([{ op: 'remove', path: '/ok' }, item]));
      expect(errorPaths(error)).toEqual(['/1']);
    });

    it.each(['add', 'remove', 'replace'])('accepts op %s', (op) => {
      const operation = op === 'remove' ? { op, path: '/a' } : { op, path: '/a', value: 1 };
      expect(parseJsonPatch([operation])).toEqual([operation]);
    });

    it.each([
      ['move', { op: 'move', from: '/a', path: '/b' }],
      ['copy', { op: 'copy', from: '/a', path: '/b' }],
      ['test', { op: 'test', path: '/a', value: 1 }],
    ])('refuses op %s with an error at /0/op', (_op, operation) => {
      const error = invalidInput(() => parseJsonPatch([operation]));
      expect(errorPaths(error)).toContain('/0/op');
      expect(error.message).toContain('add, remove, replace');
    });

    it.each([
      ['a missing op', { path: '/a' }],
      ['an unknown op', { op: 'delete', path: '/a' }],
      ['an op that is not a string', { op: 1, path: '/a' }],
      ['an op in capitals', { op: 'REMOVE', path: '/a' }],
    ])('refuses %s with an error at /0/op', (_label, operation) => {
      expect(errorPaths(invalidInput(() => parseJsonPatch([operation])))).toEqual(['/0/op']);
    });

    it.each([
      ['the empty pointer (the whole document)', ''],
      ['a name without a leading slash', 'x'],
      ['a bad escape', '/a~2'],
      ['a trailing tilde', '/a~'],
    ])('refuses %s as path with an error at /0/path', (_label, path) => {
      const error = invalidInput(() => parseJsonPatch([{ op: 'remove', path }]));
      expect(errorPaths(error)).toEqual(['/0/path']);
    });

    it.each([
      ['missing', { op: 'remove' }],
      ['a number', { op: 'remove', path: 1 }],
      ['null', { op: 'remove', path: null }],
    ])('refuses a path that is %s with an error at /0/path', (_label, operation) => {
      expect(errorPaths(invalidInput(() => parseJsonPatch([operation])))).toEqual(['/0/path']);
    });

    it.each(['/description', '/labels/0', '/a~0b~1c', '/meta/owner/name', '/labels/-'])('accepts the JSON Pointer %s', (path) => {
      expect(parseJsonPatch([{ op: 'remove', path }])).toEqual([{ op: 'remove', path }]);
    });

    it('rejects a long malformed pointer promptly (no catastrophic backtracking)', () => {
      // 26 slashes and a bad escape: exponential work for a backtracking pattern such as (\/([^~]|~[01])*)+.
      const path = `${'/'.repeat(26)}~`;
      const started = Date.now();
      const error = invalidInput(() => parseJsonPatch([{ op: 'remove', path }]));
      const elapsed = Date.now() - started;
      expect(errorPaths(error)).toEqual(['/0/path']);
      expect(elapsed).toBeLessThan(250);
    });

    it.each(['add', 'replace'])('requires value for %s, with an error at /0/value', (op) => {
      const error = invalidInput(() => parseJsonPatch([{ op, path: '/a' }]));
      expect(errorPaths(error)).toEqual(['/0/value']);
      expect(error.message).toContain(op);
    });

    it.each(['add', 'replace'])('accepts null as the value of %s', (op) => {
      expect(parseJsonPatch([{ op, path: '/a', value: null }])).toEqual([{ op, path: '/a', value: null }]);
    });

    it('does not require value for remove', () => {
      expect(parseJsonPatch([{ op: 'remove', path: '/a' }])).toEqual([{ op: 'remove', path: '/a' }]);
    });

    it('refuses unknown keys, each at its own path', () => {
      const error = invalidInput(() => parseJsonPatch([{ op: 'remove', path: '/a', from: '/b', extra: true }]));
      expect(errorPaths(error)).toEqual(['/0/from', '/0/extra']);
      expect(error.message).toContain('from');
      expect(error.message).toContain('extra');
    });

    it('reports every problem of every operation, at the index of each operation', () => {
      const error = invalidInput(() =>
        parseJsonPatch([
          { op: 'add', path: '/fine', value: 1 },
          { op: 'move', path: 'x' },
          { op: 'remove', path: '/ok' },
          { op: 'replace', path: '/b', junk: 1 },
        ]),
      );
      expect(errorPaths(error)).toEqual(['/1/op', '/1/path', '/3/value', '/3/junk']);
      expect(error.message).toMatch(/^Invalid patch: /);
    });
  });
});

describe('applyJsonPatch', () => {
  const resource = () => ({
    _id: 'b1f0',
    _created: '2024-01-01T00:00:00.000Z',
    _modified: '2024-01-02T00:00:00.000Z',
    name: 'alpha',
    description: 'first',
    meta: { owner: 'ann', tags: ['a', 'b'], id: 'inner' },
  });

  const apply = (document: object, patch: unknown): Record<string, unknown> => applyJsonPatch(document, patch as JsonPatch);

  describe('operations', () => {
    it('adds a top-level field', () => {
      expect(apply(resource(), [{ op: 'add', path: '/size', value: 3 }])).toEqual({ ...resource(), size: 3 });
    });

    it('add replaces a top-level field that exists', () => {
      expect(apply(resource(), [{ op: 'add', path: '/name', value: 'beta' }])).toEqual({ ...resource(), name: 'beta' });
    });

    it('replaces a top-level field', () => {
      expect(apply(resource(), [{ op: 'replace', path: '/description', value: 'second' }])).toEqual({ ...resource(), description: 'second' });
    });

    it('removes a top-level field', () => {
      const result = apply(resource(), [{ op: 'remove', path: '/description' }]);
      expect(result).not.toHaveProperty('description');
      expect(result.name).toBe('alpha');
    });

    it('adds, replaces and removes nested fields and array items', () => {
      const result = apply(resource(), [
        { op: 'add', path: '/meta/group', value: 'ops' },
        { op: 'replace', path: '/meta/owner', value: 'bob' },
        { op: 'remove', path: '/meta/tags/0' },
        { op: 'add', path: '/meta/tags/-', value: 'c' },
      ]);
      expect(result.meta).toEqual({ owner: 'bob', group: 'ops', tags: ['b', 'c'], id: 'inner' });
    });

    it('applies operations in order, each seeing the result of the previous one', () => {
      const result = apply(resource(), [
        { op: 'add', path: '/extra', value: { level: 1 } },
        { op: 'replace', path: '/extra/level', value: 2 },
      ]);
      expect(result.extra).toEqual({ level: 2 });
    });

    it('returns a copy and never mutates the input document', () => {
      const document = resource();
      const result = apply(document, [
        { op: 'replace', path: '/name', value: 'beta' },
        { op: 'remove', path: '/meta/tags/0' },
        { op: 'add', path: '/meta/group', value: 'ops' },
      ]);
      expect(result).not.toBe(document);
      expect(document).toEqual(resource());
    });

    it('does not share added values with the patch', () => {
      const value = { nested: ['x'] };
      const result = apply(resource(), [{ op: 'add', path: '/extra', value }]);
      (result.extra as { nested: string[] }).nested.push('y');
      expect(value).toEqual({ nested: ['x'] });
    });

    it('returns an equal copy for an empty patch', () => {
      const document = resource();
      const result = apply(document, []);
      expect(result).toEqual(document);
      expect(result).not.toBe(document);
    });
  });

  describe('server-owned fields', () => {
    it.each(['_id', '_created', '_modified', 'id', 'created', 'modified'])('ignores replace, remove and add on %s', (field) => {
      const document = { ...resource(), id: 'i', created: 'c', modified: 'm' };
      const expected = structuredClone(document);
      expect(apply(document, [{ op: 'replace', path: `/${field}`, value: 'forged' }])).toEqual(expected);
      expect(apply(document, [{ op: 'remove', path: `/${field}` }])).toEqual(expected);
      expect(apply(document, [{ op: 'add', path: `/${field}`, value: 'forged' }])).toEqual(expected);
    });

    it('ignores add on a server-owned field the document lacks', () => {
      expect(apply(resource(), [{ op: 'add', path: '/created', value: 'forged' }])).toEqual(resource());
    });

    it.each(['/_id/x', '/_created/deep/path', '/modified/0'])('ignores operations on paths nested under a server-owned field (%s)', (path) => {
      // Were they applied, each would fail: the parents are strings or missing.
      expect(apply(resource(), [{ op: 'remove', path }])).toEqual(resource());
      expect(apply(resource(), [{ op: 'replace', path, value: 1 }])).toEqual(resource());
    });

    it('applies the other operations of a patch that also touches server-owned fields', () => {
      const result = apply(resource(), [
        { op: 'replace', path: '/_id', value: 'forged' },
        { op: 'replace', path: '/name', value: 'beta' },
        { op: 'remove', path: '/_modified' },
      ]);
      expect(result).toEqual({ ...resource(), name: 'beta' });
    });

    it('applies operations on a field named id nested under an ordinary field', () => {
      expect(apply(resource(), [{ op: 'replace', path: '/meta/id', value: 'changed' }]).meta).toMatchObject({ id: 'changed' });
    });
  });

  describe('failures', () => {
    it.each([
      ['remove of a missing field', { op: 'remove', path: '/missing' }],
      ['replace of a missing field', { op: 'replace', path: '/missing', value: 1 }],
      ['add under a missing parent', { op: 'add', path: '/missing/child', value: 1 }],
      ['remove of a missing nested field', { op: 'remove', path: '/meta/missing' }],
      ['replace of an array index past the end', { op: 'replace', path: '/meta/tags/5', value: 'z' }],
      ['add at an array index past the end', { op: 'add', path: '/meta/tags/9', value: 'z' }],
    ])('refuses %s with an error at the operation index', (_label, operation) => {
      const document = resource();
      const error = invalidInput(() => apply(document, [operation]));
      expect(error.status).toBe(400);
      expect(errorPaths(error)).toEqual(['/0']);
      expect(error.message).toContain(`${operation.op} ${operation.path}`);
      expect(document).toEqual(resource());
    });

    it('refuses add under a field that holds a string, as invalid input', () => {
      const error = invalidInput(() => apply(resource(), [{ op: 'add', path: '/name/child', value: 1 }]));
      expect(errorPaths(error)).toEqual(['/0']);
    });

    it('applies nothing when one operation fails: the whole patch is refused', () => {
      const document = resource();
      const error = invalidInput(() =>
        apply(document, [
          { op: 'replace', path: '/name', value: 'beta' },
          { op: 'remove', path: '/missing' },
          { op: 'add', path: '/size', value: 3 },
        ]),
      );
      expect(errorPaths(error)).toEqual(['/1']);
      expect(document).toEqual(resource());
    });

    it('names the failing operation by its index in the original patch, counting ignored server-owned operations', () => {
      const error = invalidInput(() =>
        apply(resource(), [
          { op: 'replace', path: '/_id', value: 'forged' },
          { op: 'remove', path: '/_created' },
          { op: 'replace', path: '/name', value: 'beta' },
          { op: 'remove', path: '/missing' },
        ]),
      );
      expect(errorPaths(error)).toEqual(['/3']);
      expect(error.message).toContain('remove /missing');
    });

    it('lists every failing operation, each at its original index', () => {
      const error = invalidInput(() =>
        apply(resource(), [
          { op: 'remove', path: '/nope' },
          { op: 'add', path: '/modified', value: 'x' },
          { op: 'replace', path: '/also-nope', value: 1 },
        ]),
      );
      expect(errorPaths(error)).toEqual(['/0', '/2']);
    });
  });
});

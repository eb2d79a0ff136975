import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { NamespacesService } from '../../src/namespaces/namespaces.service.js';
import { bearer, problemPaths, startTestHub, type TestHub } from '../support/test-hub.js';

interface Namespace {
  _id: string;
  _created: string;
  _modified: string;
  name: string;
  description?: string;
  isDefault: boolean;
}

interface NamespaceList {
  totalCount: number;
  data: Namespace[];
}

const BASE = '/api/v2/namespaces';

describe('namespaces', () => {
  let hub: TestHub;
  let auth: Record<string, string>;

  const get = (url: string, headers: Record<string, string> = {}) => hub.inject({ method: 'GET', url, headers: { ...auth, ...headers } });
  const list = async (query: string): Promise<NamespaceList> => {
    const response = await get(`${BASE}?${query}`);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const names = async (query: string): Promise<string[]> => (await list(query)).data.map((namespace) => namespace.name);
  const create = async (body: object): Promise<Namespace> => {
    const response = await hub.inject({ method: 'POST', url: BASE, headers: auth, payload: body });
    expect(response.statusCode).toBe(201);
    return response.json();
  };
  const patch = (id: string, operations: unknown, headers: Record<string, string> = {}) =>
    hub.inject({
      method: 'PATCH',
      url: `${BASE}/${id}`,
      headers: { ...auth, 'content-type': 'application/json-patch+json', ...headers },
      payload: JSON.stringify(operations),
    });

  beforeAll(async () => {
    hub = await startTestHub();
    auth = bearer(hub.adminToken);
  });
  afterAll(() => hub.close());

  describe('a fresh hub', () => {
    it('has one namespace, default, marked as the default', async () => {
      const page = await list('');
      expect(page.totalCount).toBe(1);
      expect(page.data[0]).toMatchObject({ name: 'default', isDefault: true });
    });
  });

  describe('create', () => {
    it('returns 201 with the namespace, an ETag and its Location', async () => {
      const response = await hub.inject({ method: 'POST', url: BASE, headers: auth, payload: { name: 'created-1', description: 'First' } });
      expect(response.statusCode).toBe(201);
      const body: Namespace = response.json();
      expect(body).toEqual({
        _id: expect.any(String),
        _created: expect.any(String),
        _modified: expect.any(String),
        name: 'created-1',
        description: 'First',
        isDefault: false,
      });
      expect(body._created).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(response.headers.etag).toBe('"1"');
      expect(response.headers.location).toBe(`${BASE}/${body._id}`);
      expect((await get(`${BASE}/${body._id}`)).json()).toEqual(body);
    });

    it('ignores server-owned fields', async () => {
      const body = await create({ name: 'created-2', _id: '00000000-0000-0000-0000-000000000000', _created: '2000-01-01T00:00:00.000Z', _modified: 'x' });
      expect(body._id).not.toBe('00000000-0000-0000-0000-000000000000');
      expect(body._created.startsWith('2000')).toBe(false);
    });

    it('refuses a duplicate name, ignoring case, with 409', async () => {
      await create({ name: 'Unique-Name' });
      const response = await hub.inject({ method: 'POST', url: BASE, headers: auth, payload: { name: 'unique-name' } });
      expect(response.statusCode).toBe(409);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json().detail).toContain("A namespace named 'unique-name' already exists");
    });

    it.each([
      ['no name', {}, '/name'],
      ['a name with a space', { name: 'two words' }, '/name'],
      ['a name of 65 characters', { name: 'a'.repeat(65) }, '/name'],
      ['a name that is a number', { name: 42 }, '/name'],
      ['a description that is not a string', { name: 'ok-1', description: 5 }, '/description'],
      ['a description over 1024 characters', { name: 'ok-2', description: 'x'.repeat(1025) }, '/description'],
      ['an isDefault that is not a boolean', { name: 'ok-3', isDefault: 'yes' }, '/isDefault'],
      ['an unknown property', { name: 'ok-4', owner: 'me' }, '/owner'],
    ])('refuses %s with 400 naming the field', async (_case, payload, path) => {
      const response = await hub.inject({ method: 'POST', url: BASE, headers: auth, payload });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ status: 400, title: 'Bad Request' });
      expect(problemPaths(response)).toContain(path);
    });

    it.each([
      ['an array', '[]'],
      ['a string', '"namespace"'],
      ['null', 'null'],
    ])('refuses a body that is %s', async (_case, payload) => {
      const response = await hub.inject({ method: 'POST', url: BASE, headers: { ...auth, 'content-type': 'application/json' }, payload });
      expect(response.statusCode).toBe(400);
      expect(response.json().detail).toBe('The request body must be a JSON object');
    });

    it('refuses malformed JSON with 400 and other media types with 415', async () => {
      const malformed = await hub.inject({ method: 'POST', url: BASE, headers: { ...auth, 'content-type': 'application/json' }, payload: '{"name": ' });
      expect(malformed.statusCode).toBe(400);
      const text = await hub.inject({ method: 'POST', url: BASE, headers: { ...auth, 'content-type': 'text/plain' }, payload: 'name=x' });
      expect(text.statusCode).toBe(415);
      const patchType = await hub.inject({
        method: 'POST',
        url: BASE,
        headers: { ...auth, 'content-type': 'application/json-patch+json' },
        payload: '{"name":"via-patch-type"}',
      });
      expect(patchType.statusCode).toBe(415);
      expect((await names('filter[name][EQ]=via-patch-type')).length).toBe(0);
    });
  });

  describe('get', () => {
    it('answers 404 for an unknown id and for an id that is not a UUID', async () => {
      expect((await get(`${BASE}/6f1c4b1e-0000-4000-8000-000000000000`)).statusCode).toBe(404);
      const notUuid = await get(`${BASE}/not-a-uuid`);
      expect(notUuid.statusCode).toBe(404);
      expect(notUuid.json().detail).toContain('not found');
    });

    it('answers 304 to If-None-Match with the current ETag', async () => {
      const namespace = await create({ name: 'cached' });
      expect((await get(`${BASE}/${namespace._id}`, { 'if-none-match': '"1"' })).statusCode).toBe(304);
      expect((await get(`${BASE}/${namespace._id}`, { 'if-none-match': '"2"' })).statusCode).toBe(200);
    });
  });

  describe('query', () => {
    const fixtures: Namespace[] = [];

    beforeAll(async () => {
      for (const [name, description] of [
        ['q-alpha', 'Alpha reports'],
        ['q-Beta', undefined],
        ['q-gamma_1', 'Gamma 100%'],
        ['q-gammaX1', ''],
        ['q-delta', 'delta stuff'],
      ] as const) {
        fixtures.push(await create(description === undefined ? { name } : { name, description }));
      }
    });
    const all = () => list('filter[name][SW]=q-&page[limit]=1000');

    it('filters _id with EQ and IN', async () => {
      expect(await names(`filter[_id][EQ]=${fixtures[1]._id}`)).toEqual(['q-Beta']);
      expect(await names(`filter[_id][IN]=${fixtures[0]._id},${fixtures[4]._id}&sort=name`)).toEqual(['q-alpha', 'q-delta']);
      expect(await names(`filter[_id][IN]=${fixtures[0]._id}&filter[_id][IN]=${fixtures[2]._id}&sort=name`)).toEqual(['q-alpha', 'q-gamma_1']);
    });

    it('filters name with EQ (exact case), IN, CO, SW and ST (ignoring case)', async () => {
      expect(await names('filter[name][EQ]=q-Beta')).toEqual(['q-Beta']);
      expect(await names('filter[name][EQ]=q-beta')).toEqual([]);
      expect(await names('filter[name][IN]=q-alpha,q-delta&sort=name')).toEqual(['q-alpha', 'q-delta']);
      expect(await names('filter[name][CO]=GAMMA&sort=name')).toEqual(['q-gamma_1', 'q-gammaX1']);
      expect(await names('filter[name][SW]=Q-B')).toEqual(['q-Beta']);
      expect(await names('filter[name][ST]=q-D')).toEqual(['q-delta']);
    });

    it('treats LIKE wildcards in values literally', async () => {
      expect(await names('filter[name][CO]=_1')).toEqual(['q-gamma_1']);
      expect(await names('filter[description][CO]=100%25')).toEqual(['q-gamma_1']);
      expect(await names('filter[name][CO]=%25')).toEqual([]);
    });

    it('filters description with CO and PR (empty counts as absent)', async () => {
      expect(await names('filter[description][CO]=REPORTS')).toEqual(['q-alpha']);
      expect(await names('filter[name][SW]=q-&filter[description][PR]=true&sort=name')).toEqual(['q-alpha', 'q-delta', 'q-gamma_1']);
      expect(await names('filter[name][SW]=q-&filter[description][PR]=false&sort=name')).toEqual(['q-Beta', 'q-gammaX1']);
    });

    it('filters isDefault with EQ', async () => {
      expect(await names('filter[isDefault][EQ]=true')).toEqual(['default']);
      expect((await names('filter[isDefault][EQ]=false&page[limit]=1000')).includes('default')).toBe(false);
    });

    it('filters _created and _modified with LT and GT exactly at a value the API returned', async () => {
      const everything = await all();
      const pivot = fixtures[2];
      const before = everything.data.filter((n) => n._created < pivot._created).map((n) => n.name);
      const after = everything.data.filter((n) => n._created > pivot._created).map((n) => n.name);
      expect(await names(`filter[name][SW]=q-&filter[_created][LT]=${pivot._created}&page[limit]=1000`)).toEqual(before);
      expect(await names(`filter[name][SW]=q-&filter[_created][GT]=${pivot._created}&page[limit]=1000`)).toEqual(after);
      expect(before).not.toContain(pivot.name);
      expect(after).not.toContain(pivot.name);
      const modifiedBefore = everything.data.filter((n) => n._modified < pivot._modified).map((n) => n.name);
      expect(await names(`filter[name][SW]=q-&filter[_modified][LT]=${pivot._modified}&page[limit]=1000`)).toEqual(modifiedBefore);
      expect(
        await names(`filter[name][SW]=q-&filter[_modified][GT]=2000-01-01T00:00:00.000Z&filter[_modified][LT]=2999-01-01T00:00:00%2B01:00&page[limit]=1000`),
      ).toHaveLength(5);
    });

    it('sorts by name ignoring case, by _created and by _modified, each reversed with -', async () => {
      const byName = ['q-alpha', 'q-Beta', 'q-delta', 'q-gamma_1', 'q-gammaX1'];
      expect(await names('filter[name][SW]=q-&sort=name')).toEqual(byName);
      expect(await names('filter[name][SW]=q-')).toEqual(byName);
      expect(await names('filter[name][SW]=q-&sort=-name')).toEqual([...byName].reverse());
      const created = fixtures.map((n) => n.name);
      expect(await names('filter[name][SW]=q-&sort=_created')).toEqual(created);
      expect(await names('filter[name][SW]=q-&sort=-_created')).toEqual([...created].reverse());
      expect(await names('filter[name][SW]=q-&sort=_modified')).toEqual(created);
      expect(await names('filter[name][SW]=q-&sort=-_modified')).toEqual([...created].reverse());
    });

    it('pages with page[offset] and page[limit], totalCount counting every match', async () => {
      const first = await list('filter[name][SW]=q-&sort=name&page[limit]=2');
      expect(first.totalCount).toBe(5);
      expect(first.data.map((n) => n.name)).toEqual(['q-alpha', 'q-Beta']);
      const last = await list('filter[name][SW]=q-&sort=name&page[offset]=4&page[limit]=2');
      expect(last.data.map((n) => n.name)).toEqual(['q-gammaX1']);
      const beyond = await list('filter[name][SW]=q-&page[offset]=50');
      expect(beyond).toEqual({ totalCount: 5, data: [] });
    });

    it('combines filters with AND', async () => {
      expect(await names('filter[name][CO]=gamma&filter[description][PR]=true')).toEqual(['q-gamma_1']);
    });

    it('projects with fields and excludeFields', async () => {
      const included = await list('filter[name][EQ]=q-alpha&fields=name,_id');
      expect(included.data).toEqual([{ _id: fixtures[0]._id, name: 'q-alpha' }]);
      const excluded = await list('filter[name][EQ]=q-alpha&excludeFields=_created&excludeFields=_modified');
      expect(excluded.data).toEqual([{ _id: fixtures[0]._id, name: 'q-alpha', description: 'Alpha reports', isDefault: false }]);
    });

    it.each([
      ['an unknown field', 'filter[owner][EQ]=x', 'filter[owner][EQ]'],
      ['an operator the field does not take', 'filter[name][PR]=true', 'filter[name][PR]'],
      ['an unknown operator', 'filter[name][LIKE]=x', 'filter[name][LIKE]'],
      ['a malformed filter', 'filter[name]=x', 'filter[name]'],
      ['a bad UUID', 'filter[_id][EQ]=42', 'filter[_id][EQ]'],
      ['a bad boolean', 'filter[isDefault][EQ]=yes', 'filter[isDefault][EQ]'],
      ['a bad date-time', 'filter[_created][LT]=yesterday', 'filter[_created][LT]'],
      ['a date-time without zone', 'filter[_created][GT]=2026-01-01T00:00:00', 'filter[_created][GT]'],
      ['an empty CO value', 'filter[name][CO]=', 'filter[name][CO]'],
      ['a repeated EQ', 'filter[name][EQ]=a&filter[name][EQ]=b', 'filter[name][EQ]'],
      ['a negative offset', 'page[offset]=-1', 'page[offset]'],
      ['a limit over 1000', 'page[limit]=1001', 'page[limit]'],
      ['a limit of 0', 'page[limit]=0', 'page[limit]'],
      ['an unknown sort', 'sort=description', 'sort'],
      ['two sorts', 'sort=name,-_created', 'sort'],
      ['an unknown projected field', 'fields=owner', 'fields'],
      ['fields with excludeFields', 'fields=name&excludeFields=_id', 'excludeFields'],
      ['an unknown parameter', 'limit=5', 'limit'],
    ])('refuses %s with 400 naming the parameter', async (_case, query, parameter) => {
      const response = await get(`${BASE}?${query}`);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual([parameter]);
      expect(response.json().detail).toContain(parameter);
    });

    it('reports every bad parameter of a request at once', async () => {
      const response = await get(`${BASE}?filter[nope][EQ]=1&page[limit]=x&sort=-nope`);
      expect(problemPaths(response)).toEqual(['filter[nope][EQ]', 'page[limit]', 'sort']);
    });
  });

  describe('replace', () => {
    it('replaces every client field, ignores server-owned ones and bumps the ETag', async () => {
      const namespace = await create({ name: 'to-replace', description: 'Old' });
      const response = await hub.inject({
        method: 'PUT',
        url: `${BASE}/${namespace._id}`,
        headers: { ...auth, 'if-match': '"1"' },
        payload: { ...namespace, name: 'replaced', description: undefined, _id: 'ignored' },
      });
      expect(response.statusCode).toBe(200);
      expect(response.headers.etag).toBe('"2"');
      const body: Namespace = response.json();
      expect(body).toEqual({ ...namespace, name: 'replaced', description: undefined, _modified: body._modified });
      expect('description' in body).toBe(false);
      expect(body._modified >= namespace._modified).toBe(true);
    });

    it('answers 412 when If-Match names another version, and changes nothing', async () => {
      const namespace = await create({ name: 'guarded' });
      const response = await hub.inject({
        method: 'PUT',
        url: `${BASE}/${namespace._id}`,
        headers: { ...auth, 'if-match': '"7"' },
        payload: { name: 'guarded-2' },
      });
      expect(response.statusCode).toBe(412);
      expect((await get(`${BASE}/${namespace._id}`)).json().name).toBe('guarded');
    });

    it('validates like a create and answers 404 for an unknown id and 409 for a taken name', async () => {
      const namespace = await create({ name: 'replace-me' });
      const invalid = await hub.inject({ method: 'PUT', url: `${BASE}/${namespace._id}`, headers: auth, payload: { name: '' } });
      expect(invalid.statusCode).toBe(400);
      expect(problemPaths(invalid)).toEqual(['/name']);
      const missing = await hub.inject({ method: 'PUT', url: `${BASE}/6f1c4b1e-0000-4000-8000-000000000000`, headers: auth, payload: { name: 'x' } });
      expect(missing.statusCode).toBe(404);
      const taken = await hub.inject({ method: 'PUT', url: `${BASE}/${namespace._id}`, headers: auth, payload: { name: 'DEFAULT' } });
      expect(taken.statusCode).toBe(409);
    });
  });

  describe('patch', () => {
    it('applies add, replace and remove, accepting application/json too', async () => {
      const namespace = await create({ name: 'to-patch', description: 'Before' });
      const replaced = await patch(namespace._id, [{ op: 'replace', path: '/description', value: 'After' }]);
      expect(replaced.statusCode).toBe(200);
      expect(replaced.json().description).toBe('After');
      const removed = await patch(namespace._id, [{ op: 'remove', path: '/description' }], { 'content-type': 'application/json' });
      expect(removed.statusCode).toBe(200);
      expect('description' in removed.json()).toBe(false);
      const added = await patch(namespace._id, [{ op: 'add', path: '/description', value: 'Again' }]);
      expect(added.json()).toMatchObject({ description: 'Again', name: 'to-patch' });
      expect(added.headers.etag).toBe('"4"');
    });

    it('ignores operations on server-owned fields', async () => {
      const namespace = await create({ name: 'owned-fields' });
      const response = await patch(namespace._id, [
        { op: 'replace', path: '/_id', value: 'x' },
        { op: 'replace', path: '/_created', value: 'x' },
        { op: 'replace', path: '/name', value: 'owned-fields-2' },
      ]);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ _id: namespace._id, _created: namespace._created, name: 'owned-fields-2' });
    });

    it('is all or nothing: a failing operation changes nothing', async () => {
      const namespace = await create({ name: 'atomic', description: 'Kept' });
      const response = await patch(namespace._id, [
        { op: 'replace', path: '/description', value: 'Lost' },
        { op: 'remove', path: '/missing' },
      ]);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(['/1']);
      expect((await get(`${BASE}/${namespace._id}`)).json().description).toBe('Kept');
    });

    it('validates the result like a replace', async () => {
      const namespace = await create({ name: 'validated' });
      const invalidName = await patch(namespace._id, [{ op: 'replace', path: '/name', value: 'not valid!' }]);
      expect(invalidName.statusCode).toBe(400);
      expect(problemPaths(invalidName)).toEqual(['/name']);
      const unknownField = await patch(namespace._id, [{ op: 'add', path: '/owner', value: 'me' }]);
      expect(problemPaths(unknownField)).toEqual(['/owner']);
      const noName = await patch(namespace._id, [{ op: 'remove', path: '/name' }]);
      expect(problemPaths(noName)).toEqual(['/name']);
    });

    it.each([
      ['a body that is not an array', { op: 'add' }, ['']],
      ['an operation outside add, remove and replace', [{ op: 'move', from: '/name', path: '/description' }], ['/0/op', '/0/from']],
      ['a path that is not a JSON Pointer', [{ op: 'remove', path: 'description' }], ['/0/path']],
      ['a replace without a value', [{ op: 'replace', path: '/description' }], ['/0/value']],
    ])('refuses %s', async (_case, operations, paths) => {
      const namespace = await create({ name: `bad-patch-${paths.length}-${String(paths[0]).length}-${Math.random().toString(36).slice(2, 8)}` });
      const response = await patch(namespace._id, operations);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(paths);
    });

    it('honours If-Match and answers 404, 409 and 415 as a replace does', async () => {
      const namespace = await create({ name: 'patch-guarded' });
      expect((await patch(namespace._id, [{ op: 'add', path: '/description', value: 'x' }], { 'if-match': '"2"' })).statusCode).toBe(412);
      expect((await patch(namespace._id, [{ op: 'add', path: '/description', value: 'x' }], { 'if-match': '"1"' })).statusCode).toBe(200);
      expect((await patch('6f1c4b1e-0000-4000-8000-000000000000', [])).statusCode).toBe(404);
      expect((await patch(namespace._id, [{ op: 'replace', path: '/name', value: 'Default' }])).statusCode).toBe(409);
      expect((await patch(namespace._id, [], { 'content-type': 'application/merge-patch+json' })).statusCode).toBe(415);
    });
  });

  describe('the default namespace', () => {
    it('moves when another namespace is made the default', async () => {
      const next = await create({ name: 'next-default' });
      const response = await patch(next._id, [{ op: 'replace', path: '/isDefault', value: true }]);
      expect(response.json().isDefault).toBe(true);
      expect(await names('filter[isDefault][EQ]=true')).toEqual(['next-default']);
      const restored = (await list('filter[name][EQ]=default')).data[0];
      expect(restored.isDefault).toBe(false);
      await patch(restored._id, [{ op: 'replace', path: '/isDefault', value: true }]);
      expect(await names('filter[isDefault][EQ]=true')).toEqual(['default']);
    });

    it('stays unique when several requests claim it at once', async () => {
      const contenders = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => create({ name: `contender-${n}` })));
      const responses = await Promise.all(contenders.map((n) => patch(n._id, [{ op: 'replace', path: '/isDefault', value: true }])));
      for (const response of responses) expect([200, 409]).toContain(response.statusCode);
      expect((await list('filter[isDefault][EQ]=true')).totalCount).toBe(1);
    });
  });

  describe('delete', () => {
    it('deletes with {msg}, then answers 404', async () => {
      const namespace = await create({ name: 'short-lived' });
      const response = await hub.inject({ method: 'DELETE', url: `${BASE}/${namespace._id}`, headers: auth });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ msg: "Namespace 'short-lived' deleted" });
      expect((await get(`${BASE}/${namespace._id}`)).statusCode).toBe(404);
      expect((await hub.inject({ method: 'DELETE', url: `${BASE}/${namespace._id}`, headers: auth })).statusCode).toBe(404);
    });

    it('honours If-Match', async () => {
      const namespace = await create({ name: 'delete-guarded' });
      expect((await hub.inject({ method: 'DELETE', url: `${BASE}/${namespace._id}`, headers: { ...auth, 'if-match': '"2"' } })).statusCode).toBe(412);
      expect((await hub.inject({ method: 'DELETE', url: `${BASE}/${namespace._id}`, headers: { ...auth, 'if-match': '"1"' } })).statusCode).toBe(200);
    });

    it('refuses with 409 while an area reports that the namespace holds its entities', async () => {
      const busy = await create({ name: 'busy' });
      const idle = await create({ name: 'idle' });
      hub.app.get(NamespacesService).registerUsageCheck({ holds: 'test widgets', count: (id) => Promise.resolve(id === busy._id ? 2 : 0) });
      const refused = await hub.inject({ method: 'DELETE', url: `${BASE}/${busy._id}`, headers: auth });
      expect(refused.statusCode).toBe(409);
      expect(refused.json().detail).toBe("Namespace 'busy' still holds 2 test widgets; delete or move them first");
      expect((await get(`${BASE}/${busy._id}`)).statusCode).toBe(200);
      expect((await hub.inject({ method: 'DELETE', url: `${BASE}/${idle._id}`, headers: auth })).statusCode).toBe(200);
    });
  });

  describe('without credentials', () => {
    it.each([
      ['GET', BASE],
      ['POST', BASE],
      ['GET', `${BASE}/6f1c4b1e-0000-4000-8000-000000000000`],
      ['PUT', `${BASE}/6f1c4b1e-0000-4000-8000-000000000000`],
      ['PATCH', `${BASE}/6f1c4b1e-0000-4000-8000-000000000000`],
      ['DELETE', `${BASE}/6f1c4b1e-0000-4000-8000-000000000000`],
    ] as const)('%s %s answers 401', async (method, url) => {
      const response = await hub.inject({ method, url, payload: method === 'GET' || method === 'DELETE' ? undefined : {} });
      expect(response.statusCode).toBe(401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="hub"');
    });
  });
});

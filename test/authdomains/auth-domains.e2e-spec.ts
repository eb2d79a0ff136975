import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { bearer, claimsOf, problemPaths, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

interface AuthDomain {
  _id: string;
  _created: string;
  _modified: string;
  name: string;
  namespace: string;
  description?: string;
  allowPersonalCredentials: boolean;
}

interface AuthDomainList {
  totalCount: number;
  data: AuthDomain[];
}

interface Permission {
  object: string;
  objectMatcher: string;
  actions: string[];
  effect: string;
}

type Headers = Record<string, string>;

const BASE = '/api/v2/authdomains/authdomains';
const CREDENTIALS = '/api/v2/authdomains/credentials';
const NAMESPACES = '/api/v2/namespaces';
const USERS = '/api/v2/auth/users';
const ROLES = '/api/v2/rbac/roles';
const BINDINGS = '/api/v2/rbac/rolebindings';
const UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-000000000000';
const PASSWORD = 'an-auth-domain-user-password';
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const allow = (object: string, actions: string[]): Permission => ({ object, objectMatcher: 'simple', actions, effect: 'Allow' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('auth domains', () => {
  let hub: TestHub;
  let auth: Headers;
  let adminId: string;

  const sql = <T = unknown>(query: string, parameters: unknown[] = []): Promise<T> => hub.app.get(DataSource).query(query, parameters);
  const get = (url: string, headers: Headers = auth) => hub.inject({ method: 'GET', url, headers });
  const post = (payload: unknown, headers: Headers = auth) => hub.inject({ method: 'POST', url: BASE, headers, payload: payload as object });
  const create = async (body: object): Promise<AuthDomain> => {
    const response = await post(body);
    expect(response.statusCode).toBe(201);
    return response.json();
  };
  const read = async (id: string): Promise<AuthDomain> => {
    const response = await get(`${BASE}/${id}`);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const put = (id: string, payload: object, headers: Headers = {}, as: Headers = auth) =>
    hub.inject({ method: 'PUT', url: `${BASE}/${id}`, headers: { ...as, ...headers }, payload });
  const patch = (id: string, operations: unknown, headers: Headers = {}, as: Headers = auth) =>
    hub.inject({
      method: 'PATCH',
      url: `${BASE}/${id}`,
      headers: { ...as, 'content-type': 'application/json-patch+json', ...headers },
      payload: JSON.stringify(operations),
    });
  const remove = (id: string, headers: Headers = {}, as: Headers = auth) =>
    hub.inject({ method: 'DELETE', url: `${BASE}/${id}`, headers: { ...as, ...headers } });
  const list = async (query: string, as: Headers = auth): Promise<AuthDomainList> => {
    const response = await get(`${BASE}?${query}`, as);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const names = async (query: string, as: Headers = auth): Promise<string[]> => (await list(query, as)).data.map((domain) => domain.name);

  const createNamespace = async (name: string): Promise<string> => {
    const response = await hub.inject({ method: 'POST', url: NAMESPACES, headers: auth, payload: { name } });
    expect(response.statusCode).toBe(201);
    return response.json()._id;
  };
  /** A user with no bindings, and its bearer header. */
  const userWithToken = async (userName: string): Promise<{ id: string; as: Headers }> => {
    const response = await hub.inject({ method: 'POST', url: USERS, headers: auth, payload: { userName, password: PASSWORD } });
    expect(response.statusCode).toBe(201);
    return { id: response.json()._id, as: bearer(await hub.login(userName, PASSWORD)) };
  };
  const createRole = async (name: string, permissions: Permission[]): Promise<string> => {
    const response = await hub.inject({ method: 'POST', url: ROLES, headers: auth, payload: { name, permissions } });
    expect(response.statusCode).toBe(201);
    return response.json().id;
  };
  const bind = async (role: string, principal: string, namespace: string): Promise<void> => {
    const response = await hub.inject({ method: 'POST', url: BINDINGS, headers: auth, payload: { role, principal, namespace } });
    expect(response.statusCode).toBe(201);
  };

  beforeAll(async () => {
    hub = await startTestHub();
    auth = bearer(hub.adminToken);
    adminId = claimsOf(hub.adminToken).sub as string;
    await createNamespace('ad-one');
    await createNamespace('ad-two');
  });
  afterAll(() => hub.close());

  describe('a fresh hub', () => {
    it('has no auth domains', async () => {
      expect(await list('')).toEqual({ totalCount: 0, data: [] });
    });
  });

  describe('create', () => {
    it('returns 201 with the domain, an ETag and its Location, and reads back the same', async () => {
      const response = await post({ name: 'Warehouse DB', namespace: 'ad-one', description: 'The warehouse', allowPersonalCredentials: true });
      expect(response.statusCode).toBe(201);
      const body: AuthDomain = response.json();
      expect(body).toEqual({
        _id: expect.any(String),
        _created: expect.any(String),
        _modified: expect.any(String),
        name: 'Warehouse DB',
        namespace: 'ad-one',
        description: 'The warehouse',
        allowPersonalCredentials: true,
      });
      expect(body._created).toMatch(ISO_DATE_TIME);
      expect(body._modified).toBe(body._created);
      expect(response.headers.etag).toBe('"1"');
      expect(response.headers.location).toBe(`${BASE}/${body._id}`);
      const readBack = await get(`${BASE}/${body._id}`);
      expect(readBack.statusCode).toBe(200);
      expect(readBack.headers.etag).toBe('"1"');
      expect(readBack.json()).toEqual(body);
    });

    it('leaves description out and allowPersonalCredentials false when they are not given', async () => {
      const body = await create({ name: 'plain-domain', namespace: 'default' });
      expect(body).toEqual({
        _id: body._id,
        _created: body._created,
        _modified: body._modified,
        name: 'plain-domain',
        namespace: 'default',
        allowPersonalCredentials: false,
      });
      expect('description' in body).toBe(false);
    });

    it('ignores server-owned fields', async () => {
      const body = await create({ name: 'owned', namespace: 'default', _id: UNKNOWN_ID, _created: '2000-01-01T00:00:00.000Z', _modified: 'x' });
      expect(body._id).not.toBe(UNKNOWN_ID);
      expect(body._created.startsWith('2000')).toBe(false);
      expect((await get(`${BASE}/${UNKNOWN_ID}`)).statusCode).toBe(404);
    });

    it.each([
      ['no name', { namespace: 'default' }, '/name'],
      ['an empty name', { name: '', namespace: 'default' }, '/name'],
      ['a name with a forbidden character', { name: 'bad/name', namespace: 'default' }, '/name'],
      ['a name with a leading space', { name: ' padded', namespace: 'default' }, '/name'],
      ['a name of 129 characters', { name: 'a'.repeat(129), namespace: 'default' }, '/name'],
      ['a name that is a number', { name: 42, namespace: 'default' }, '/name'],
      ['no namespace', { name: 'no-namespace' }, '/namespace'],
      ['an empty namespace', { name: 'empty-namespace', namespace: '' }, '/namespace'],
      ['a namespace that is a number', { name: 'numeric-namespace', namespace: 7 }, '/namespace'],
      ['a description that is not a string', { name: 'd-1', namespace: 'default', description: 5 }, '/description'],
      ['a description over 1024 characters', { name: 'd-2', namespace: 'default', description: 'x'.repeat(1025) }, '/description'],
      [
        'an allowPersonalCredentials that is not a boolean',
        { name: 'd-3', namespace: 'default', allowPersonalCredentials: 'yes' },
        '/allowPersonalCredentials',
      ],
      ['an unknown property', { name: 'd-4', namespace: 'default', owner: 'me' }, '/owner'],
    ])('refuses %s with 400 naming the field', async (_case, payload, path) => {
      const response = await post(payload);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json()).toMatchObject({ status: 400, title: 'Bad Request' });
      expect(problemPaths(response)).toContain(path);
    });

    it('refuses a namespace that does not exist with 400 at /namespace, creating nothing', async () => {
      const response = await post({ name: 'nowhere', namespace: 'no-such-namespace' });
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(['/namespace']);
      expect(response.json().detail).toContain("No namespace is named 'no-such-namespace'");
      expect(await names('filter[name][EQ]=nowhere')).toEqual([]);
    });

    it.each([
      ['an array', '[]'],
      ['a string', '"domain"'],
      ['null', 'null'],
    ])('refuses a body that is %s', async (_case, payload) => {
      const response = await hub.inject({ method: 'POST', url: BASE, headers: { ...auth, 'content-type': 'application/json' }, payload });
      expect(response.statusCode).toBe(400);
    });

    it('refuses a duplicate name in the same namespace, ignoring case, with 409', async () => {
      await create({ name: 'Shared Name', namespace: 'ad-one' });
      const response = await post({ name: 'SHARED name', namespace: 'ad-one' });
      expect(response.statusCode).toBe(409);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json().detail).toContain("An auth domain named 'SHARED name' already exists in this namespace");
      expect((await list('filter[namespace][EQ]=ad-one&filter[name][CO]=shared')).totalCount).toBe(1);
    });

    it('takes the same name in another namespace', async () => {
      const other = await create({ name: 'shared name', namespace: 'ad-two' });
      expect(other.namespace).toBe('ad-two');
      expect(await names('filter[name][CO]=shared name&filter[namespace][IN]=ad-one,ad-two&sort=name')).toHaveLength(2);
    });
  });

  describe('get', () => {
    it('answers 404 for an unknown id and for an id that is not a UUID', async () => {
      const unknown = await get(`${BASE}/${UNKNOWN_ID}`);
      expect(unknown.statusCode).toBe(404);
      expect(unknown.headers['content-type']).toContain('application/problem+json');
      expect((await get(`${BASE}/not-a-uuid`)).statusCode).toBe(404);
    });

    it('reads an id given in upper case', async () => {
      const domain = await create({ name: 'upper-case-id', namespace: 'default' });
      expect((await get(`${BASE}/${domain._id.toUpperCase()}`)).json()).toEqual(domain);
    });

    it('answers 304 to If-None-Match with the current ETag', async () => {
      const domain = await create({ name: 'cached', namespace: 'default' });
      expect((await get(`${BASE}/${domain._id}`, { ...auth, 'if-none-match': '"1"' })).statusCode).toBe(304);
      expect((await get(`${BASE}/${domain._id}`, { ...auth, 'if-none-match': '"2"' })).statusCode).toBe(200);
    });
  });

  describe('replace', () => {
    it('replaces every client field, ignores server-owned ones and bumps the ETag and _modified', async () => {
      const domain = await create({ name: 'to-replace', namespace: 'ad-one', description: 'Old', allowPersonalCredentials: true });
      await sleep(5);
      const response = await put(
        domain._id,
        { ...domain, _id: UNKNOWN_ID, _created: 'x', name: 'replaced', description: undefined, allowPersonalCredentials: false },
        { 'if-match': '"1"' },
      );
      expect(response.statusCode).toBe(200);
      expect(response.headers.etag).toBe('"2"');
      const body: AuthDomain = response.json();
      expect(body).toEqual({
        _id: domain._id,
        _created: domain._created,
        _modified: body._modified,
        name: 'replaced',
        namespace: 'ad-one',
        allowPersonalCredentials: false,
      });
      expect(body._modified > domain._modified).toBe(true);
      expect(await read(domain._id)).toEqual(body);
    });

    it('moves a domain to another namespace', async () => {
      const domain = await create({ name: 'to-move', namespace: 'ad-one' });
      const response = await put(domain._id, { name: 'to-move', namespace: 'ad-two' });
      expect(response.statusCode).toBe(200);
      expect(response.json().namespace).toBe('ad-two');
      expect(await names('filter[namespace][EQ]=ad-two&filter[name][EQ]=to-move')).toEqual(['to-move']);
      expect(await names('filter[namespace][EQ]=ad-one&filter[name][EQ]=to-move')).toEqual([]);
    });

    it('answers 412 when If-Match names another version, and changes nothing', async () => {
      const domain = await create({ name: 'guarded', namespace: 'default' });
      const response = await put(domain._id, { name: 'guarded-2', namespace: 'default' }, { 'if-match': '"7"' });
      expect(response.statusCode).toBe(412);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(await read(domain._id)).toEqual(domain);
    });

    it('validates like a create and answers 404 for an unknown or malformed id', async () => {
      const domain = await create({ name: 'replace-me', namespace: 'default' });
      const invalid = await put(domain._id, { name: '', namespace: 'default' });
      expect(invalid.statusCode).toBe(400);
      expect(problemPaths(invalid)).toEqual(['/name']);
      const noNamespace = await put(domain._id, { name: 'replace-me' });
      expect(problemPaths(noNamespace)).toEqual(['/namespace']);
      const unknownNamespace = await put(domain._id, { name: 'replace-me', namespace: 'no-such-namespace' });
      expect(unknownNamespace.statusCode).toBe(400);
      expect(problemPaths(unknownNamespace)).toEqual(['/namespace']);
      expect((await put(UNKNOWN_ID, { name: 'x', namespace: 'default' })).statusCode).toBe(404);
      expect((await put('not-a-uuid', { name: 'x', namespace: 'default' })).statusCode).toBe(404);
      expect(await read(domain._id)).toEqual(domain);
    });

    it('answers 409 for a name taken in the namespace ignoring case, and allows a change of case of its own name', async () => {
      await create({ name: 'Taken', namespace: 'ad-one' });
      const domain = await create({ name: 'renamed-later', namespace: 'ad-one' });
      const taken = await put(domain._id, { name: 'tAKEN', namespace: 'ad-one' });
      expect(taken.statusCode).toBe(409);
      expect(taken.json().detail).toContain("An auth domain named 'tAKEN' already exists in this namespace");
      expect((await put(domain._id, { name: 'Renamed-Later', namespace: 'ad-one' })).json().name).toBe('Renamed-Later');
      const intoTaken = await create({ name: 'taken', namespace: 'ad-two' });
      expect((await put(intoTaken._id, { name: 'taken', namespace: 'ad-one' })).statusCode).toBe(409);
      expect((await read(intoTaken._id)).namespace).toBe('ad-two');
    });
  });

  describe('patch', () => {
    it('applies add, replace and remove, accepting application/json too, and bumps the ETag', async () => {
      const domain = await create({ name: 'to-patch', namespace: 'default', description: 'Before' });
      const replaced = await patch(domain._id, [
        { op: 'replace', path: '/description', value: 'After' },
        { op: 'replace', path: '/allowPersonalCredentials', value: true },
      ]);
      expect(replaced.statusCode).toBe(200);
      expect(replaced.json()).toMatchObject({ description: 'After', allowPersonalCredentials: true, name: 'to-patch', namespace: 'default' });
      expect(replaced.headers.etag).toBe('"2"');
      const removed = await patch(domain._id, [{ op: 'remove', path: '/description' }], { 'content-type': 'application/json' });
      expect(removed.statusCode).toBe(200);
      expect('description' in removed.json()).toBe(false);
      const added = await patch(domain._id, [{ op: 'add', path: '/description', value: 'Again' }]);
      expect(added.json()).toMatchObject({ description: 'Again', allowPersonalCredentials: true });
      expect(added.headers.etag).toBe('"4"');
      expect(await read(domain._id)).toEqual(added.json());
    });

    it('moves a domain to another namespace by replacing /namespace', async () => {
      const domain = await create({ name: 'patched-move', namespace: 'ad-one' });
      const moved = await patch(domain._id, [{ op: 'replace', path: '/namespace', value: 'ad-two' }]);
      expect(moved.statusCode).toBe(200);
      expect(moved.json().namespace).toBe('ad-two');
    });

    it('ignores operations on server-owned fields', async () => {
      const domain = await create({ name: 'patch-owned', namespace: 'default' });
      const response = await patch(domain._id, [
        { op: 'replace', path: '/_id', value: UNKNOWN_ID },
        { op: 'replace', path: '/_created', value: '2000-01-01T00:00:00.000Z' },
        { op: 'replace', path: '/name', value: 'patch-owned-2' },
      ]);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ _id: domain._id, _created: domain._created, name: 'patch-owned-2' });
    });

    it('validates the result like a replace, changing nothing', async () => {
      const domain = await create({ name: 'patch-validated', namespace: 'default' });
      const badName = await patch(domain._id, [{ op: 'replace', path: '/name', value: 'not/valid' }]);
      expect(badName.statusCode).toBe(400);
      expect(problemPaths(badName)).toEqual(['/name']);
      const noNamespace = await patch(domain._id, [{ op: 'remove', path: '/namespace' }]);
      expect(problemPaths(noNamespace)).toEqual(['/namespace']);
      const unknownNamespace = await patch(domain._id, [{ op: 'replace', path: '/namespace', value: 'no-such-namespace' }]);
      expect(unknownNamespace.statusCode).toBe(400);
      expect(problemPaths(unknownNamespace)).toEqual(['/namespace']);
      const wrongType = await patch(domain._id, [{ op: 'replace', path: '/allowPersonalCredentials', value: 'true' }]);
      expect(problemPaths(wrongType)).toEqual(['/allowPersonalCredentials']);
      const unknownField = await patch(domain._id, [{ op: 'add', path: '/owner', value: 'me' }]);
      expect(problemPaths(unknownField)).toEqual(['/owner']);
      const failing = await patch(domain._id, [
        { op: 'replace', path: '/name', value: 'lost' },
        { op: 'remove', path: '/missing' },
      ]);
      expect(failing.statusCode).toBe(400);
      expect(await read(domain._id)).toEqual(domain);
    });

    it('honours If-Match and answers 404, 409 and 415 as a replace does', async () => {
      await create({ name: 'patch-taken', namespace: 'default' });
      const domain = await create({ name: 'patch-guarded', namespace: 'default' });
      expect((await patch(domain._id, [{ op: 'add', path: '/description', value: 'x' }], { 'if-match': '"2"' })).statusCode).toBe(412);
      expect((await patch(domain._id, [{ op: 'add', path: '/description', value: 'x' }], { 'if-match': '"1"' })).statusCode).toBe(200);
      expect((await patch(UNKNOWN_ID, [])).statusCode).toBe(404);
      const taken = await patch(domain._id, [{ op: 'replace', path: '/name', value: 'PATCH-TAKEN' }]);
      expect(taken.statusCode).toBe(409);
      expect((await patch(domain._id, [], { 'content-type': 'application/merge-patch+json' })).statusCode).toBe(415);
      expect((await read(domain._id)).name).toBe('patch-guarded');
    });
  });

  describe('delete', () => {
    it('deletes with {msg}, then answers 404', async () => {
      const domain = await create({ name: 'short-lived', namespace: 'default' });
      const response = await remove(domain._id);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ msg: "Auth domain 'short-lived' deleted with its credentials" });
      expect((await get(`${BASE}/${domain._id}`)).statusCode).toBe(404);
      expect((await remove(domain._id)).statusCode).toBe(404);
      expect((await remove('not-a-uuid')).statusCode).toBe(404);
    });

    it('honours If-Match', async () => {
      const domain = await create({ name: 'delete-guarded', namespace: 'default' });
      expect((await remove(domain._id, { 'if-match': '"2"' })).statusCode).toBe(412);
      expect(await read(domain._id)).toEqual(domain);
      expect((await remove(domain._id, { 'if-match': '"1"' })).statusCode).toBe(200);
    });

    it('deletes the credentials of the domain, and no others', async () => {
      const domain = await create({ name: 'with-credentials', namespace: 'default' });
      const other = await create({ name: 'keeps-credentials', namespace: 'default' });
      const credentialIn = async (authDomainId: string, label: string): Promise<string> => {
        const response = await hub.inject({
          method: 'POST',
          url: CREDENTIALS,
          headers: auth,
          payload: { authDomainId, principal: adminId, label, type: 'Internal', data: { password: label } },
        });
        expect(response.statusCode).toBe(201);
        return response.json()._id;
      };
      const doomed = [await credentialIn(domain._id, 'doomed-1'), await credentialIn(domain._id, 'doomed-2')];
      const kept = await credentialIn(other._id, 'kept');
      expect((await remove(domain._id)).statusCode).toBe(200);
      for (const id of doomed) expect((await get(`${CREDENTIALS}/${id}`)).statusCode).toBe(404);
      expect(await sql('SELECT id FROM credentials WHERE auth_domain_id = $1', [domain._id])).toEqual([]);
      expect((await get(`${CREDENTIALS}/${kept}`)).statusCode).toBe(200);
    });
  });

  describe('a namespace holding auth domains', () => {
    it('cannot be deleted (409) until its domains are gone', async () => {
      const namespaceId = await createNamespace('ad-busy');
      const domain = await create({ name: 'keeps-namespace', namespace: 'ad-busy' });
      const refused = await hub.inject({ method: 'DELETE', url: `${NAMESPACES}/${namespaceId}`, headers: auth });
      expect(refused.statusCode).toBe(409);
      expect(refused.json().detail).toBe("Namespace 'ad-busy' still holds 1 auth domains; delete or move them first");
      expect((await get(`${NAMESPACES}/${namespaceId}`)).statusCode).toBe(200);
      expect(await read(domain._id)).toEqual(domain);
      expect((await remove(domain._id)).statusCode).toBe(200);
      expect((await hub.inject({ method: 'DELETE', url: `${NAMESPACES}/${namespaceId}`, headers: auth })).statusCode).toBe(200);
    });

    it('can be deleted once its domains moved away', async () => {
      const namespaceId = await createNamespace('ad-emptied');
      const domain = await create({ name: 'moving-out', namespace: 'ad-emptied' });
      expect((await hub.inject({ method: 'DELETE', url: `${NAMESPACES}/${namespaceId}`, headers: auth })).statusCode).toBe(409);
      expect((await put(domain._id, { name: 'moving-out', namespace: 'default' })).statusCode).toBe(200);
      expect((await hub.inject({ method: 'DELETE', url: `${NAMESPACES}/${namespaceId}`, headers: auth })).statusCode).toBe(200);
    });
  });

  describe('query', () => {
    /** In creation order, a few milliseconds apart; the first one is modified last. */
    const fixtures: AuthDomain[] = [];
    const BY_NAME = ['q-alpha', 'Q-Beta', 'q-delta_1', 'q-gamma', 'q-gammaX'];

    beforeAll(async () => {
      await createNamespace('ad-query-a');
      await createNamespace('ad-query-b');
      for (const [name, namespace] of [
        ['q-gamma', 'ad-query-a'],
        ['Q-Beta', 'ad-query-b'],
        ['q-delta_1', 'ad-query-a'],
        ['q-alpha', 'ad-query-b'],
        ['q-gammaX', 'ad-query-a'],
      ]) {
        fixtures.push(await create({ name, namespace }));
        await sleep(3);
      }
      const touched = await patch(fixtures[0]._id, [{ op: 'add', path: '/description', value: 'touched' }]);
      expect(touched.statusCode).toBe(200);
      fixtures[0] = touched.json();
    });
    const SCOPE = 'filter[namespace][IN]=ad-query-a,ad-query-b';
    const ids = (...names: string[]) => names.map((name) => fixtures.find((domain) => domain.name === name)?._id);

    it('lists by name ignoring case by default, with the total count', async () => {
      const page = await list(SCOPE);
      expect(page.totalCount).toBe(5);
      expect(page.data.map((domain) => domain.name)).toEqual(BY_NAME);
      expect(page.data.map((domain) => domain._id)).toEqual(ids(...BY_NAME));
      expect(page.data.find((domain) => domain.name === 'q-gamma')).toEqual(fixtures[0]);
    });

    it('filters namespace with EQ and with IN, comma-separated or repeated', async () => {
      expect(await names('filter[namespace][EQ]=ad-query-a')).toEqual(['q-delta_1', 'q-gamma', 'q-gammaX']);
      expect(await names('filter[namespace][EQ]=ad-query-b')).toEqual(['q-alpha', 'Q-Beta']);
      expect(await names('filter[namespace][EQ]=AD-QUERY-B')).toEqual([]);
      expect(await names('filter[namespace][IN]=ad-query-b,no-such-namespace')).toEqual(['q-alpha', 'Q-Beta']);
      expect(await names('filter[namespace][IN]=ad-query-a&filter[namespace][IN]=ad-query-b')).toEqual(BY_NAME);
      expect(await names('filter[namespace][EQ]=no-such-namespace')).toEqual([]);
    });

    it('filters name with EQ (exact case), CO and SW (ignoring case), taking LIKE wildcards literally', async () => {
      expect(await names(`${SCOPE}&filter[name][EQ]=Q-Beta`)).toEqual(['Q-Beta']);
      expect(await names(`${SCOPE}&filter[name][EQ]=q-beta`)).toEqual([]);
      expect(await names(`${SCOPE}&filter[name][CO]=GAMMA`)).toEqual(['q-gamma', 'q-gammaX']);
      expect(await names(`${SCOPE}&filter[name][CO]=_1`)).toEqual(['q-delta_1']);
      expect(await names(`${SCOPE}&filter[name][CO]=%25`)).toEqual([]);
      expect(await names(`${SCOPE}&filter[name][SW]=Q-G`)).toEqual(['q-gamma', 'q-gammaX']);
      expect(await names(`${SCOPE}&filter[name][SW]=gamma`)).toEqual([]);
    });

    it('filters created with LT and GT, both exclusive, exactly at a value the API returned', async () => {
      const pivot = fixtures[2];
      expect(await names(`${SCOPE}&filter[created][LT]=${pivot._created}&sort=_created`)).toEqual(['q-gamma', 'Q-Beta']);
      expect(await names(`${SCOPE}&filter[created][GT]=${pivot._created}&sort=_created`)).toEqual(['q-alpha', 'q-gammaX']);
      expect(await names(`${SCOPE}&filter[created][GT]=${fixtures[1]._created}&filter[created][LT]=${fixtures[3]._created}`)).toEqual(['q-delta_1']);
      expect(await names(`${SCOPE}&filter[created][GT]=2000-01-01T01:00:00%2B01:00`)).toHaveLength(5);
      expect(await names(`${SCOPE}&filter[created][LT]=2000-01-01T00:00:00Z`)).toEqual([]);
    });

    it('filters modified with LT and GT', async () => {
      const touched = fixtures[0];
      expect(touched._modified > fixtures[4]._modified).toBe(true);
      expect(await names(`${SCOPE}&filter[modified][GT]=${fixtures[4]._modified}`)).toEqual(['q-gamma']);
      expect(await names(`${SCOPE}&filter[modified][LT]=${touched._modified}&sort=_modified`)).toEqual(['Q-Beta', 'q-delta_1', 'q-alpha', 'q-gammaX']);
      expect(await names(`${SCOPE}&filter[modified][LT]=${fixtures[1]._modified}`)).toEqual([]);
    });

    it.each([
      ['name', BY_NAME],
      ['-name', [...BY_NAME].reverse()],
      ['_created', ['q-gamma', 'Q-Beta', 'q-delta_1', 'q-alpha', 'q-gammaX']],
      ['-_created', ['q-gammaX', 'q-alpha', 'q-delta_1', 'Q-Beta', 'q-gamma']],
      ['_modified', ['Q-Beta', 'q-delta_1', 'q-alpha', 'q-gammaX', 'q-gamma']],
      ['-_modified', ['q-gamma', 'q-gammaX', 'q-alpha', 'q-delta_1', 'Q-Beta']],
    ])('sorts by %s', async (sort, expected) => {
      expect(await names(`${SCOPE}&sort=${sort}`)).toEqual(expected);
    });

    it('pages with page[offset] and page[limit], totalCount counting every match', async () => {
      const first = await list(`${SCOPE}&page[limit]=2`);
      expect(first.totalCount).toBe(5);
      expect(first.data.map((domain) => domain.name)).toEqual(['q-alpha', 'Q-Beta']);
      const last = await list(`${SCOPE}&page[offset]=4&page[limit]=2`);
      expect(last.data.map((domain) => domain.name)).toEqual(['q-gammaX']);
      expect(await list(`${SCOPE}&page[offset]=50`)).toEqual({ totalCount: 5, data: [] });
    });

    it('combines filters with AND', async () => {
      expect(await names('filter[namespace][EQ]=ad-query-a&filter[name][CO]=gamma&filter[created][GT]=' + fixtures[0]._created)).toEqual(['q-gammaX']);
    });

    it.each([
      ['an unknown field', 'filter[description][EQ]=x', 'filter[description][EQ]'],
      ['the spelling _created, which this list does not take', 'filter[_created][LT]=2026-01-01T00:00:00Z', 'filter[_created][LT]'],
      ['an operator name does not take', 'filter[name][IN]=a,b', 'filter[name][IN]'],
      ['an operator namespace does not take', 'filter[namespace][CO]=ad', 'filter[namespace][CO]'],
      ['an operator created does not take', 'filter[created][EQ]=2026-01-01T00:00:00Z', 'filter[created][EQ]'],
      ['an unknown operator', 'filter[name][LIKE]=x', 'filter[name][LIKE]'],
      ['a malformed filter', 'filter[name]=x', 'filter[name]'],
      ['a bad date-time', 'filter[created][LT]=yesterday', 'filter[created][LT]'],
      ['a date-time without zone', 'filter[modified][GT]=2026-01-01T00:00:00', 'filter[modified][GT]'],
      ['an empty CO value', 'filter[name][CO]=', 'filter[name][CO]'],
      ['a repeated EQ', 'filter[name][EQ]=a&filter[name][EQ]=b', 'filter[name][EQ]'],
      ['a negative offset', 'page[offset]=-1', 'page[offset]'],
      ['a limit over 1000', 'page[limit]=1001', 'page[limit]'],
      ['a limit of 0', 'page[limit]=0', 'page[limit]'],
      ['an unknown sort', 'sort=namespace', 'sort'],
      ['a sort by created (the list sorts by _created)', 'sort=created', 'sort'],
      ['two sorts', 'sort=name,-_created', 'sort'],
      ['an unknown parameter', 'limit=5', 'limit'],
    ])('refuses %s with 400 naming the parameter', async (_case, query, parameter) => {
      const response = await get(`${BASE}?${query}`);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(problemPaths(response)).toEqual([parameter]);
      expect(response.json().detail).toContain(parameter);
    });
  });

  describe('access', () => {
    let inOne: AuthDomain;
    let inTwo: AuthDomain;

    beforeAll(async () => {
      inOne = await create({ name: 'acc-in-one', namespace: 'ad-one' });
      inTwo = await create({ name: 'acc-in-two', namespace: 'ad-two' });
    });

    describe('a user with no bindings', () => {
      let nobody: Headers;

      beforeAll(async () => {
        nobody = (await userWithToken('ad-nobody')).as;
      });

      it('gets 403 on the list, naming the action and object', async () => {
        const response = await get(BASE, nobody);
        expect(response.statusCode).toBe(403);
        expect(response.headers['content-type']).toContain('application/problem+json');
        expect(response.json().detail).toContain('Not allowed: Read on /AuthDomains');
      });

      it('gets 403 on create, and creates nothing', async () => {
        const response = await post({ name: 'by-nobody', namespace: 'ad-one' }, nobody);
        expect(response.statusCode).toBe(403);
        expect(response.json().detail).toContain("Not allowed: Create on /AuthDomains in namespace 'ad-one'");
        expect(await names('filter[name][EQ]=by-nobody')).toEqual([]);
      });

      it.each<[string, (as: Headers, id: string) => Promise<InjectResponse>]>([
        ['GET', (as, id) => get(`${BASE}/${id}`, as)],
        ['PUT', (as, id) => put(id, { name: 'hijacked', namespace: 'ad-one' }, {}, as)],
        ['PATCH', (as, id) => patch(id, [{ op: 'replace', path: '/name', value: 'hijacked' }], {}, as)],
        ['DELETE', (as, id) => remove(id, {}, as)],
      ])('gets 404 on %s of a single domain, as if it did not exist', async (_method, call) => {
        const response = await call(nobody, inOne._id);
        expect(response.statusCode).toBe(404);
        expect(response.headers['content-type']).toContain('application/problem+json');
        expect((await call(nobody, UNKNOWN_ID)).statusCode).toBe(404);
        expect(await read(inOne._id)).toEqual(inOne);
      });
    });

    describe('a user allowed to read auth domains in one namespace', () => {
      let reader: Headers;

      beforeAll(async () => {
        const role = await createRole('ad-reader', [allow('/AuthDomains', ['Read']), allow('/AuthDomains/*', ['Read'])]);
        const user = await userWithToken('ad-reader-user');
        await bind(role, user.id, 'ad-one');
        reader = user.as;
      });

      it('sees only the domains of that namespace in the list', async () => {
        const everything = await list('page[limit]=1000');
        const expected = everything.data.filter((domain) => domain.namespace === 'ad-one');
        expect(expected.length).toBeGreaterThan(1);
        expect(expected.length).toBeLessThan(everything.totalCount);
        const page = await list('page[limit]=1000', reader);
        expect(page).toEqual({ totalCount: expected.length, data: expected });
        expect(await list('filter[namespace][EQ]=ad-two', reader)).toEqual({ totalCount: 0, data: [] });
        expect(await names(`filter[name][CO]=acc-in`, reader)).toEqual(['acc-in-one']);
      });

      it('reads a domain of that namespace, and gets 404 for one of another', async () => {
        const own = await get(`${BASE}/${inOne._id}`, reader);
        expect(own.statusCode).toBe(200);
        expect(own.json()).toEqual(inOne);
        expect((await get(`${BASE}/${inTwo._id}`, reader)).statusCode).toBe(404);
      });

      it('gets 403 on create, replace, patch and delete of what it may read, changing nothing', async () => {
        const created = await post({ name: 'by-reader', namespace: 'ad-one' }, reader);
        expect(created.statusCode).toBe(403);
        const replaced = await put(inOne._id, { name: 'by-reader', namespace: 'ad-one' }, {}, reader);
        expect(replaced.statusCode).toBe(403);
        expect(replaced.json().detail).toContain(`Not allowed: Update on /AuthDomains/${inOne._id}`);
        expect((await patch(inOne._id, [{ op: 'replace', path: '/name', value: 'by-reader' }], {}, reader)).statusCode).toBe(403);
        const deleted = await remove(inOne._id, {}, reader);
        expect(deleted.statusCode).toBe(403);
        expect(deleted.json().detail).toContain(`Not allowed: Delete on /AuthDomains/${inOne._id}`);
        expect((await put(inTwo._id, { name: 'by-reader', namespace: 'ad-two' }, {}, reader)).statusCode).toBe(404);
        expect(await read(inOne._id)).toEqual(inOne);
        expect(await names('filter[name][EQ]=by-reader')).toEqual([]);
      });
    });

    describe('moving a domain to another namespace', () => {
      let manager: { id: string; as: Headers };
      let creatorInTwo: string;

      beforeAll(async () => {
        const manage = await createRole('ad-manager', [allow('/AuthDomains', ['Read', 'Create']), allow('/AuthDomains/*', ['Read', 'Update'])]);
        creatorInTwo = await createRole('ad-creator', [allow('/AuthDomains', ['Create'])]);
        manager = await userWithToken('ad-manager-user');
        await bind(manage, manager.id, 'ad-one');
      });

      it('lets a manager create and change domains in its namespace, but not create them in another', async () => {
        const created = await post({ name: 'managed', namespace: 'ad-one' }, manager.as);
        expect(created.statusCode).toBe(201);
        const renamed = await put(created.json()._id, { name: 'managed-renamed', namespace: 'ad-one' }, {}, manager.as);
        expect(renamed.statusCode).toBe(200);
        const elsewhere = await post({ name: 'managed-elsewhere', namespace: 'ad-two' }, manager.as);
        expect(elsewhere.statusCode).toBe(403);
        expect(elsewhere.json().detail).toContain("Not allowed: Create on /AuthDomains in namespace 'ad-two'");
      });

      it('needs Create on /AuthDomains in the new namespace: 403 without it, by PUT or by PATCH, changing nothing', async () => {
        const domain = await create({ name: 'mover-target', namespace: 'ad-one' });
        const replaced = await put(domain._id, { name: 'mover-target', namespace: 'ad-two' }, {}, manager.as);
        expect(replaced.statusCode).toBe(403);
        expect(replaced.json().detail).toContain("Not allowed: Create on /AuthDomains in namespace 'ad-two'");
        const patched = await patch(domain._id, [{ op: 'replace', path: '/namespace', value: 'ad-two' }], {}, manager.as);
        expect(patched.statusCode).toBe(403);
        expect(await read(domain._id)).toEqual(domain);

        await bind(creatorInTwo, manager.id, 'ad-two');
        const moved = await put(domain._id, { name: 'mover-target', namespace: 'ad-two' }, {}, manager.as);
        expect(moved.statusCode).toBe(200);
        expect(moved.json().namespace).toBe('ad-two');
        expect((await read(domain._id)).namespace).toBe('ad-two');
        // It may create there, but not read or change what is there.
        expect((await get(`${BASE}/${domain._id}`, manager.as)).statusCode).toBe(404);
      });
    });
  });

  describe('without credentials', () => {
    it.each([
      ['GET', BASE],
      ['POST', BASE],
      ['GET', `${BASE}/${UNKNOWN_ID}`],
      ['PUT', `${BASE}/${UNKNOWN_ID}`],
      ['PATCH', `${BASE}/${UNKNOWN_ID}`],
      ['DELETE', `${BASE}/${UNKNOWN_ID}`],
    ] as const)('%s %s answers 401', async (method, url) => {
      const response = await hub.inject({ method, url, payload: method === 'GET' || method === 'DELETE' ? undefined : {} });
      expect(response.statusCode).toBe(401);
    });
  });
});

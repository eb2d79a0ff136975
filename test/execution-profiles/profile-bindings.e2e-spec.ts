import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { bearer, problemPaths, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

interface Profile {
  _id: string;
  _created: string;
  _modified: string;
  name: string;
  description?: string;
  isDefault: boolean;
  environment: Record<string, string>;
  constraints: { attribute: string; value: string; operator: string }[];
  properties: Record<string, unknown>;
}

interface Binding {
  id: string;
  executionProfileId: string;
  namespaceId: string;
  isDefault: boolean;
}

interface BindingList {
  totalCount: number;
  data: Binding[];
  executionProfiles: Record<string, string>;
}

interface Named {
  id: string;
  name: string;
}

interface Permission {
  object: string;
  objectMatcher: string;
  actions: string[];
  effect: string;
}

type Headers = Record<string, string>;

const API = '/api/v2/execution-profiles';
const PROFILES = `${API}/execprofiles`;
const BINDINGS = `${API}/bindings`;
const NAMESPACES = '/api/v2/namespaces';
const USERS = '/api/v2/auth/users';
const ROLES = '/api/v2/rbac/roles';
const ROLE_BINDINGS = '/api/v2/rbac/rolebindings';
const UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-000000000000';
const OTHER_UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-000000000001';
const PASSWORD = 'a-binding-user-password';

const allow = (object: string, actions: string[]): Permission => ({ object, objectMatcher: 'simple', actions, effect: 'Allow' });
const defaultPath = (namespaceId: string) => `${API}/namespaces/${namespaceId}/default`;
const bindingInPath = (namespaceId: string, profileId: string) => `${API}/namespaces/${namespaceId}/bindings/${profileId}`;

let sequence = 0;
/** A name no other test uses. */
function unique(prefix: string): string {
  sequence += 1;
  return `${prefix}-${sequence}`;
}

describe('execution profile bindings', () => {
  let hub: TestHub;
  let auth: Headers;
  let defaultNamespace: Named;
  let standard: Profile;

  const get = (url: string, headers: Headers = auth) => hub.inject({ method: 'GET', url, headers });
  const createProfile = async (prefix: string): Promise<Named> => {
    const name = unique(prefix);
    const response = await hub.inject({ method: 'POST', url: PROFILES, headers: auth, payload: { name } });
    expect(response.statusCode).toBe(201);
    return { id: response.json()._id, name };
  };
  const createNamespace = async (prefix: string): Promise<Named> => {
    const name = unique(prefix);
    const response = await hub.inject({ method: 'POST', url: NAMESPACES, headers: auth, payload: { name } });
    expect(response.statusCode).toBe(201);
    return { id: response.json()._id, name };
  };
  const post = (payload: unknown, headers: Headers = auth) => hub.inject({ method: 'POST', url: BINDINGS, headers, payload: payload as object });
  const bind = async (profile: Named | string, namespace: Named | string, extra: object = {}): Promise<Binding> => {
    const executionProfileId = typeof profile === 'string' ? profile : profile.id;
    const namespaceId = typeof namespace === 'string' ? namespace : namespace.id;
    const response = await post({ executionProfileId, namespaceId, ...extra });
    expect(response.statusCode).toBe(201);
    return response.json();
  };
  const read = async (id: string): Promise<Binding> => {
    const response = await get(`${BINDINGS}/${id}`);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const put = (id: string, payload: object, headers: Headers = {}) =>
    hub.inject({ method: 'PUT', url: `${BINDINGS}/${id}`, headers: { ...auth, ...headers }, payload });
  const patch = (id: string, operations: unknown, headers: Headers = {}) =>
    hub.inject({
      method: 'PATCH',
      url: `${BINDINGS}/${id}`,
      headers: { ...auth, 'content-type': 'application/json-patch+json', ...headers },
      payload: JSON.stringify(operations),
    });
  const remove = (id: string, headers: Headers = {}) => hub.inject({ method: 'DELETE', url: `${BINDINGS}/${id}`, headers: { ...auth, ...headers } });
  const makeDefault = (id: string, headers: Headers = auth) => hub.inject({ method: 'POST', url: `${BINDINGS}/${id}/default`, headers });
  const list = async (query: string, headers: Headers = auth): Promise<BindingList> => {
    const response = await get(`${BINDINGS}?${query}`, headers);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  /** The bindings of a namespace that are its default, as the list shows them. */
  const defaultsIn = async (namespaceId: string): Promise<Binding[]> =>
    (await list(`filter[namespaceId][EQ]=${namespaceId}&page[limit]=1000`)).data.filter((binding) => binding.isDefault);
  /** A new user with no role bindings, and its bearer header. */
  const newUser = async (prefix: string): Promise<{ id: string; as: Headers }> => {
    const userName = unique(prefix);
    const response = await hub.inject({ method: 'POST', url: USERS, headers: auth, payload: { userName, password: PASSWORD } });
    expect(response.statusCode).toBe(201);
    return { id: response.json()._id, as: bearer(await hub.login(userName, PASSWORD)) };
  };
  const bindRole = async (role: string, principal: string, namespace: string) => {
    const response = await hub.inject({ method: 'POST', url: ROLE_BINDINGS, headers: auth, payload: { role, principal, namespace } });
    expect(response.statusCode).toBe(201);
  };
  /** Binds a new role with `permissions` to `principal` in `namespace` (a name or `*`). */
  const grant = async (principal: string, namespace: string, permissions: Permission[]) => {
    const role = await hub.inject({ method: 'POST', url: ROLES, headers: auth, payload: { name: unique('binding-role'), permissions } });
    expect(role.statusCode).toBe(201);
    await bindRole(role.json().id, principal, namespace);
  };
  const expectProblem = (response: InjectResponse, status: number) => {
    expect(response.statusCode).toBe(status);
    expect(response.headers['content-type']).toContain('application/problem+json');
  };

  beforeAll(async () => {
    hub = await startTestHub();
    auth = bearer(hub.adminToken);
    const namespaces = await get(`${NAMESPACES}?filter[name][EQ]=default`);
    defaultNamespace = { id: namespaces.json().data[0]._id, name: 'default' };
    const profiles = await get(`${PROFILES}?filter[name][EQ]=Standard`);
    standard = (await get(`${PROFILES}/${profiles.json().data[0]._id}`)).json();
  });
  afterAll(() => hub.close());

  describe('a fresh hub', () => {
    it('binds Standard to default as its default, readable through every binding route', async () => {
      const page = await list('');
      expect(page).toEqual({
        totalCount: 1,
        data: [{ id: expect.any(String), executionProfileId: standard._id, namespaceId: defaultNamespace.id, isDefault: true }],
        executionProfiles: { [standard._id]: 'Standard' },
      });
      const binding = page.data[0];
      const single = await get(`${BINDINGS}/${binding.id}`);
      expect(single.json()).toEqual(binding);
      expect(single.headers.etag).toBe('"1"');
      expect((await get(bindingInPath(defaultNamespace.id, standard._id))).json()).toEqual(binding);
      const profile = await get(defaultPath(defaultNamespace.id));
      expect(profile.statusCode).toBe(200);
      expect(profile.json()).toEqual(standard);
      expect(standard.isDefault).toBe(true);
    });
  });

  describe('create', () => {
    it('returns 201 with exactly id, executionProfileId, namespaceId and isDefault, an ETag and its Location', async () => {
      const profile = await createProfile('c-profile');
      const namespace = await createNamespace('c-ns');
      const response = await post({ executionProfileId: profile.id, namespaceId: namespace.id });
      expect(response.statusCode).toBe(201);
      expect(response.headers['content-type']).toContain('application/json');
      const binding: Binding = response.json();
      expect(binding).toEqual({ id: expect.any(String), executionProfileId: profile.id, namespaceId: namespace.id, isDefault: false });
      expect(Object.keys(binding).sort()).toEqual(['executionProfileId', 'id', 'isDefault', 'namespaceId']);
      expect(response.headers.etag).toBe('"1"');
      expect(response.headers.location).toBe(`${BINDINGS}/${binding.id}`);
      expect(await read(binding.id)).toEqual(binding);
      expect((await list(`filter[namespaceId][EQ]=${namespace.id}`)).data).toEqual([binding]);
    });

    it('uses an id the client gives, in lower case', async () => {
      const profile = await createProfile('c-given');
      const namespace = await createNamespace('c-given-ns');
      const given = 'a1b2c3d4-0000-4000-8000-00000000000a';
      expect((await bind(profile, namespace, { id: given })).id).toBe(given);
      expect((await read(given)).executionProfileId).toBe(profile.id);
      const other = await createProfile('c-given-upper');
      const upper = 'A1B2C3D4-0000-4000-8000-00000000000B';
      const created = await bind(other, namespace, { id: upper });
      expect(created.id).toBe(upper.toLowerCase());
      expect((await get(`${BINDINGS}/${upper}`)).json()).toEqual(created);
    });

    it('refuses with 409 the same profile twice in a namespace, and an id already used', async () => {
      const profile = await createProfile('c-twice');
      const namespace = await createNamespace('c-twice-ns');
      const first = await bind(profile, namespace);
      const twice = await post({ executionProfileId: profile.id, namespaceId: namespace.id, isDefault: true });
      expectProblem(twice, 409);
      const upperCase = await post({ executionProfileId: profile.id.toUpperCase(), namespaceId: namespace.id.toUpperCase() });
      expectProblem(upperCase, 409);
      const elsewhere = await createNamespace('c-twice-other');
      const sameId = await post({ executionProfileId: profile.id, namespaceId: elsewhere.id, id: first.id });
      expectProblem(sameId, 409);
      const sameIdUpper = await post({ executionProfileId: profile.id, namespaceId: elsewhere.id, id: first.id.toUpperCase() });
      expectProblem(sameIdUpper, 409);
      expect((await list(`filter[executionProfileId][EQ]=${profile.id}`)).data).toEqual([first]);
      expect((await read(first.id)).isDefault).toBe(false);
    });

    it('refuses an unknown profile or namespace with 400 naming each', async () => {
      const profile = await createProfile('c-unknown');
      const namespace = await createNamespace('c-unknown-ns');
      const noProfile = await post({ executionProfileId: UNKNOWN_ID, namespaceId: namespace.id });
      expectProblem(noProfile, 400);
      expect(problemPaths(noProfile)).toEqual(['/executionProfileId']);
      const noNamespace = await post({ executionProfileId: profile.id, namespaceId: UNKNOWN_ID });
      expectProblem(noNamespace, 400);
      expect(problemPaths(noNamespace)).toEqual(['/namespaceId']);
      const neither = await post({ executionProfileId: UNKNOWN_ID, namespaceId: OTHER_UNKNOWN_ID });
      expect(problemPaths(neither).sort()).toEqual(['/executionProfileId', '/namespaceId']);
      expect((await list(`filter[namespaceId][EQ]=${namespace.id}`)).totalCount).toBe(0);
    });

    it.each([
      ['no executionProfileId', { namespaceId: UNKNOWN_ID }, ['/executionProfileId']],
      ['an executionProfileId that is not a UUID', { executionProfileId: 'Standard', namespaceId: UNKNOWN_ID }, ['/executionProfileId']],
      ['no namespaceId', { executionProfileId: UNKNOWN_ID }, ['/namespaceId']],
      ['a namespace name for namespaceId', { executionProfileId: UNKNOWN_ID, namespaceId: 'default' }, ['/namespaceId']],
      ['a namespaceId that is a number', { executionProfileId: UNKNOWN_ID, namespaceId: 7 }, ['/namespaceId']],
      ['an id that is not a UUID', { executionProfileId: UNKNOWN_ID, namespaceId: UNKNOWN_ID, id: 'mine' }, ['/id']],
      ['an isDefault that is not a boolean', { executionProfileId: UNKNOWN_ID, namespaceId: UNKNOWN_ID, isDefault: 'yes' }, ['/isDefault']],
      ['an unknown property', { executionProfileId: UNKNOWN_ID, namespaceId: UNKNOWN_ID, owner: 'me' }, ['/owner']],
      ['nothing', {}, ['/executionProfileId', '/namespaceId']],
    ])('refuses %s with 400 naming the field', async (_case, payload, paths) => {
      const response = await post(payload);
      expectProblem(response, 400);
      expect(problemPaths(response).sort()).toEqual([...paths].sort());
    });

    it('moves the default of the namespace to a binding created with isDefault true', async () => {
      const namespace = await createNamespace('c-default-ns');
      const [p1, p2, p3] = await Promise.all([createProfile('c-default-1'), createProfile('c-default-2'), createProfile('c-default-3')]);
      const first = await bind(p1, namespace, { isDefault: true });
      expect(first.isDefault).toBe(true);
      const plain = await bind(p2, namespace, { isDefault: false });
      expect(plain.isDefault).toBe(false);
      expect((await defaultsIn(namespace.id)).map((binding) => binding.id)).toEqual([first.id]);
      const next = await bind(p3, namespace, { isDefault: true });
      expect(next.isDefault).toBe(true);
      expect(await read(first.id)).toEqual({ ...first, isDefault: false });
      expect((await defaultsIn(namespace.id)).map((binding) => binding.id)).toEqual([next.id]);
      expect((await get(defaultPath(namespace.id))).json().name).toBe(p3.name);
      expect((await defaultsIn(defaultNamespace.id)).map((binding) => binding.executionProfileId)).toEqual([standard._id]);
    });
  });

  describe('get', () => {
    it('answers 404 for an unknown id and for an id that is not a UUID, 304 for the current ETag', async () => {
      expectProblem(await get(`${BINDINGS}/${UNKNOWN_ID}`), 404);
      expectProblem(await get(`${BINDINGS}/not-a-uuid`), 404);
      const binding = await bind(await createProfile('g-profile'), await createNamespace('g-ns'));
      expect((await get(`${BINDINGS}/${binding.id}`, { ...auth, 'if-none-match': '"1"' })).statusCode).toBe(304);
      expect((await get(`${BINDINGS}/${binding.id}`, { ...auth, 'if-none-match': '"2"' })).statusCode).toBe(200);
    });
  });

  describe('replace', () => {
    it('binds another profile, with the binding id or none in the body, bumping the ETag', async () => {
      const namespace = await createNamespace('r-ns');
      const [before, after, third] = await Promise.all([createProfile('r-before'), createProfile('r-after'), createProfile('r-third')]);
      const binding = await bind(before, namespace);
      const response = await put(binding.id, { executionProfileId: after.id, namespaceId: namespace.id, id: binding.id }, { 'if-match': '"1"' });
      expect(response.statusCode).toBe(200);
      expect(response.headers.etag).toBe('"2"');
      expect(response.json()).toEqual({ id: binding.id, executionProfileId: after.id, namespaceId: namespace.id, isDefault: false });
      expect(await read(binding.id)).toEqual(response.json());
      expect((await get(bindingInPath(namespace.id, before.id))).statusCode).toBe(404);
      expect((await get(bindingInPath(namespace.id, after.id))).json()).toEqual(response.json());
      const withoutId = await put(binding.id, { executionProfileId: third.id, namespaceId: namespace.id });
      expect(withoutId.statusCode).toBe(200);
      expect(withoutId.json().executionProfileId).toBe(third.id);
      expect(withoutId.headers.etag).toBe('"3"');
    });

    it('moves a binding to another namespace', async () => {
      const profile = await createProfile('r-move');
      const [from, to] = await Promise.all([createNamespace('r-from'), createNamespace('r-to')]);
      const binding = await bind(profile, from);
      const response = await put(binding.id, { executionProfileId: profile.id, namespaceId: to.id });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ ...binding, namespaceId: to.id });
      expect((await list(`filter[namespaceId][EQ]=${from.id}`)).totalCount).toBe(0);
      expect((await list(`filter[namespaceId][EQ]=${to.id}`)).data).toEqual([response.json()]);
    });

    it('takes the default of the namespace with isDefault true, and gives it up when isDefault is left out', async () => {
      const namespace = await createNamespace('r-default-ns');
      const [p1, p2] = await Promise.all([createProfile('r-default-1'), createProfile('r-default-2')]);
      const first = await bind(p1, namespace, { isDefault: true });
      const second = await bind(p2, namespace);
      const taken = await put(second.id, { executionProfileId: p2.id, namespaceId: namespace.id, isDefault: true });
      expect(taken.json().isDefault).toBe(true);
      expect((await read(first.id)).isDefault).toBe(false);
      expect((await defaultsIn(namespace.id)).map((binding) => binding.id)).toEqual([second.id]);
      const givenUp = await put(second.id, { executionProfileId: p2.id, namespaceId: namespace.id });
      expect(givenUp.json().isDefault).toBe(false);
      expect(await defaultsIn(namespace.id)).toEqual([]);
      expectProblem(await get(defaultPath(namespace.id)), 404);
    });

    it('refuses another id, an unknown profile or namespace, a duplicate, a stale If-Match and an unknown binding', async () => {
      const namespace = await createNamespace('r-bad-ns');
      const [p1, p2] = await Promise.all([createProfile('r-bad-1'), createProfile('r-bad-2')]);
      const binding = await bind(p1, namespace);
      await bind(p2, namespace);
      const otherId = await put(binding.id, { executionProfileId: p1.id, namespaceId: namespace.id, id: UNKNOWN_ID });
      expectProblem(otherId, 400);
      expect(problemPaths(otherId)).toEqual(['/id']);
      const unknownProfile = await put(binding.id, { executionProfileId: UNKNOWN_ID, namespaceId: namespace.id });
      expect(problemPaths(unknownProfile)).toEqual(['/executionProfileId']);
      const unknownNamespace = await put(binding.id, { executionProfileId: p1.id, namespaceId: UNKNOWN_ID });
      expect(problemPaths(unknownNamespace)).toEqual(['/namespaceId']);
      const missing = await put(binding.id, { executionProfileId: p1.id });
      expect(problemPaths(missing)).toEqual(['/namespaceId']);
      expectProblem(await put(binding.id, { executionProfileId: p2.id, namespaceId: namespace.id }), 409);
      expectProblem(await put(binding.id, { executionProfileId: p1.id, namespaceId: namespace.id, isDefault: true }, { 'if-match': '"9"' }), 412);
      expectProblem(await put(UNKNOWN_ID, { executionProfileId: p1.id, namespaceId: namespace.id }), 404);
      const unchanged = await get(`${BINDINGS}/${binding.id}`);
      expect(unchanged.json()).toEqual(binding);
      expect(unchanged.headers.etag).toBe('"1"');
    });
  });

  describe('patch', () => {
    it('changes the profile and the default flag, accepting application/json too', async () => {
      const namespace = await createNamespace('p-ns');
      const [p1, p2, p3] = await Promise.all([createProfile('p-1'), createProfile('p-2'), createProfile('p-3')]);
      const previous = await bind(p3, namespace, { isDefault: true });
      const binding = await bind(p1, namespace);
      const changed = await patch(binding.id, [{ op: 'replace', path: '/executionProfileId', value: p2.id }]);
      expect(changed.statusCode).toBe(200);
      expect(changed.headers.etag).toBe('"2"');
      expect(changed.json()).toEqual({ ...binding, executionProfileId: p2.id });
      const flagged = await patch(binding.id, [{ op: 'replace', path: '/isDefault', value: true }], { 'content-type': 'application/json' });
      expect(flagged.statusCode).toBe(200);
      expect(flagged.json()).toEqual({ ...binding, executionProfileId: p2.id, isDefault: true });
      expect((await read(previous.id)).isDefault).toBe(false);
      expect((await get(defaultPath(namespace.id))).json().name).toBe(p2.name);
      const keptDefault = await patch(binding.id, [{ op: 'replace', path: '/executionProfileId', value: p1.id }]);
      expect(keptDefault.json()).toEqual({ ...binding, isDefault: true });
      expect((await get(defaultPath(namespace.id))).json().name).toBe(p1.name);
    });

    it('ignores operations on id', async () => {
      const binding = await bind(await createProfile('p-owned'), await createNamespace('p-owned-ns'));
      const response = await patch(binding.id, [
        { op: 'replace', path: '/id', value: UNKNOWN_ID },
        { op: 'replace', path: '/isDefault', value: false },
      ]);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual(binding);
      expectProblem(await get(`${BINDINGS}/${UNKNOWN_ID}`), 404);
    });

    it('validates the result like a replace and is all or nothing', async () => {
      const namespace = await createNamespace('p-bad-ns');
      const [p1, p2] = await Promise.all([createProfile('p-bad-1'), createProfile('p-bad-2')]);
      const binding = await bind(p1, namespace);
      await bind(p2, namespace);
      const cases: [unknown, string[]][] = [
        [[{ op: 'remove', path: '/namespaceId' }], ['/namespaceId']],
        [[{ op: 'replace', path: '/namespaceId', value: 'default' }], ['/namespaceId']],
        [[{ op: 'replace', path: '/executionProfileId', value: UNKNOWN_ID }], ['/executionProfileId']],
        [[{ op: 'replace', path: '/isDefault', value: 'yes' }], ['/isDefault']],
        [[{ op: 'add', path: '/owner', value: 'me' }], ['/owner']],
        [
          [
            { op: 'replace', path: '/isDefault', value: true },
            { op: 'remove', path: '/missing' },
          ],
          ['/1'],
        ],
      ];
      for (const [operations, paths] of cases) {
        const response = await patch(binding.id, operations);
        expectProblem(response, 400);
        expect(problemPaths(response)).toEqual(paths);
      }
      expectProblem(await patch(binding.id, [{ op: 'replace', path: '/executionProfileId', value: p2.id }]), 409);
      expectProblem(await patch(binding.id, [{ op: 'replace', path: '/isDefault', value: true }], { 'if-match': '"2"' }), 412);
      expectProblem(await patch(UNKNOWN_ID, []), 404);
      expect((await patch(binding.id, [], { 'content-type': 'application/merge-patch+json' })).statusCode).toBe(415);
      expect(await read(binding.id)).toEqual(binding);
      expect((await patch(binding.id, [{ op: 'replace', path: '/isDefault', value: true }], { 'if-match': '"1"' })).statusCode).toBe(200);
    });
  });

  describe('delete', () => {
    it('deletes with {msg} naming the profile and the namespace, then answers 404', async () => {
      const profile = await createProfile('d-profile');
      const namespace = await createNamespace('d-ns');
      const binding = await bind(profile, namespace, { isDefault: true });
      const response = await remove(binding.id);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ msg: `Execution profile '${profile.name}' unbound from namespace '${namespace.name}'` });
      expectProblem(await get(`${BINDINGS}/${binding.id}`), 404);
      expectProblem(await remove(binding.id), 404);
      expectProblem(await get(defaultPath(namespace.id)), 404);
      expectProblem(await get(bindingInPath(namespace.id, profile.id)), 404);
      expect((await get(`${PROFILES}/${profile.id}`)).statusCode).toBe(200);
    });

    it('honours If-Match, the version counting each change of the default flag', async () => {
      const namespace = await createNamespace('d-guarded-ns');
      const [p1, p2] = await Promise.all([createProfile('d-guarded-1'), createProfile('d-guarded-2')]);
      const binding = await bind(p1, namespace, { isDefault: true });
      await bind(p2, namespace, { isDefault: true });
      const current = await get(`${BINDINGS}/${binding.id}`);
      expect(current.json().isDefault).toBe(false);
      expect(current.headers.etag).not.toBe('"1"');
      expectProblem(await remove(binding.id, { 'if-match': '"1"' }), 412);
      expect((await remove(binding.id, { 'if-match': current.headers.etag as string })).statusCode).toBe(200);
    });
  });

  describe('list', () => {
    let profiles: Record<'zeta' | 'alpha' | 'mid', Named>;
    let namespaces: Record<'b' | 'a' | 'c', Named>;
    const lines = (page: BindingList) =>
      page.data.map((binding) => {
        const profile = Object.values(profiles).find((p) => p.id === binding.executionProfileId)?.name ?? binding.executionProfileId;
        const namespace = Object.values(namespaces).find((n) => n.id === binding.namespaceId)?.name ?? binding.namespaceId;
        return `${profile} ${namespace}${binding.isDefault ? ' *' : ''}`;
      });

    beforeAll(async () => {
      profiles = { zeta: await createProfile('l-zeta'), alpha: await createProfile('l-Alpha'), mid: await createProfile('l-mid') };
      namespaces = { b: await createNamespace('l-ns-b'), a: await createNamespace('l-ns-A'), c: await createNamespace('l-ns-c') };
      await bind(profiles.zeta, namespaces.b);
      await bind(profiles.alpha, namespaces.b, { isDefault: true });
      await bind(profiles.mid, namespaces.b);
      await bind(profiles.zeta, namespaces.a);
      await bind(profiles.zeta, namespaces.c, { isDefault: true });
      await bind(profiles.mid, namespaces.c);
    });

    it('filters namespaceId and executionProfileId with EQ, alone or together', async () => {
      const inB = await list(`filter[namespaceId][EQ]=${namespaces.b.id}&sort=executionProfileId`);
      expect(inB.totalCount).toBe(3);
      expect(lines(inB)).toEqual([
        `${profiles.alpha.name} ${namespaces.b.name} *`,
        `${profiles.mid.name} ${namespaces.b.name}`,
        `${profiles.zeta.name} ${namespaces.b.name}`,
      ]);
      const ofZeta = await list(`filter[executionProfileId][EQ]=${profiles.zeta.id}`);
      expect(lines(ofZeta)).toEqual([
        `${profiles.zeta.name} ${namespaces.a.name}`,
        `${profiles.zeta.name} ${namespaces.b.name}`,
        `${profiles.zeta.name} ${namespaces.c.name} *`,
      ]);
      const both = await list(`filter[executionProfileId][EQ]=${profiles.mid.id.toUpperCase()}&filter[namespaceId][EQ]=${namespaces.c.id}`);
      expect(lines(both)).toEqual([`${profiles.mid.name} ${namespaces.c.name}`]);
      expect(await list(`filter[executionProfileId][EQ]=${profiles.alpha.id}&filter[namespaceId][EQ]=${namespaces.a.id}`)).toEqual({
        totalCount: 0,
        data: [],
        executionProfiles: {},
      });
      expect((await list(`filter[namespaceId][EQ]=${UNKNOWN_ID}`)).totalCount).toBe(0);
    });

    it('sorts by executionProfileId and namespaceId as the profile and namespace names, ignoring case, each reversed with -', async () => {
      const inC = `filter[namespaceId][EQ]=${namespaces.c.id}`;
      expect(lines(await list(`${inC}&sort=executionProfileId`))).toEqual([
        `${profiles.mid.name} ${namespaces.c.name}`,
        `${profiles.zeta.name} ${namespaces.c.name} *`,
      ]);
      expect(lines(await list(`${inC}&sort=-executionProfileId`))).toEqual([
        `${profiles.zeta.name} ${namespaces.c.name} *`,
        `${profiles.mid.name} ${namespaces.c.name}`,
      ]);
      const inB = `filter[namespaceId][EQ]=${namespaces.b.id}`;
      expect(lines(await list(`${inB}&sort=-executionProfileId`)).map((line) => line.split(' ')[0])).toEqual([
        profiles.zeta.name,
        profiles.mid.name,
        profiles.alpha.name,
      ]);
      const ofZeta = `filter[executionProfileId][EQ]=${profiles.zeta.id}`;
      const byNamespace = [namespaces.a.name, namespaces.b.name, namespaces.c.name];
      expect(lines(await list(`${ofZeta}&sort=namespaceId`)).map((line) => line.split(' ')[1])).toEqual(byNamespace);
      expect(lines(await list(ofZeta)).map((line) => line.split(' ')[1])).toEqual(byNamespace);
      expect(lines(await list(`${ofZeta}&sort=-namespaceId`)).map((line) => line.split(' ')[1])).toEqual([...byNamespace].reverse());
      const everything = await list('sort=namespaceId&page[limit]=1000');
      const namespaceNames = await Promise.all(
        everything.data.map(async (binding) => (await get(`${NAMESPACES}/${binding.namespaceId}`)).json().name as string),
      );
      expect(namespaceNames).toEqual([...namespaceNames].sort((x, y) => x.toLowerCase().localeCompare(y.toLowerCase())));
    });

    it('pages, totalCount counting every match and executionProfiles naming exactly the profiles of the page', async () => {
      const ofB = `filter[namespaceId][EQ]=${namespaces.b.id}&sort=executionProfileId`;
      const first = await list(`${ofB}&page[limit]=2`);
      expect(first.totalCount).toBe(3);
      expect(first.data.map((binding) => binding.executionProfileId)).toEqual([profiles.alpha.id, profiles.mid.id]);
      expect(first.executionProfiles).toEqual({ [profiles.alpha.id]: profiles.alpha.name, [profiles.mid.id]: profiles.mid.name });
      const last = await list(`${ofB}&page[offset]=2&page[limit]=2`);
      expect(last).toEqual({
        totalCount: 3,
        data: [{ id: expect.any(String), executionProfileId: profiles.zeta.id, namespaceId: namespaces.b.id, isDefault: false }],
        executionProfiles: { [profiles.zeta.id]: profiles.zeta.name },
      });
      expect(await list(`${ofB}&page[offset]=10`)).toEqual({ totalCount: 3, data: [], executionProfiles: {} });
      const everything = await list('page[limit]=1000');
      expect(Object.keys(everything.executionProfiles).sort()).toEqual([...new Set(everything.data.map((binding) => binding.executionProfileId))].sort());
    });

    it.each([
      ['a namespaceId that is not a UUID', 'filter[namespaceId][EQ]=default', 'filter[namespaceId][EQ]'],
      ['an executionProfileId that is not a UUID', 'filter[executionProfileId][EQ]=Standard', 'filter[executionProfileId][EQ]'],
      ['an operator namespaceId does not take', `filter[namespaceId][IN]=${UNKNOWN_ID}`, 'filter[namespaceId][IN]'],
      ['an unknown field', 'filter[isDefault][EQ]=true', 'filter[isDefault][EQ]'],
      ['a plain filter', `namespaceId=${UNKNOWN_ID}`, 'namespaceId'],
      ['an unknown sort', 'sort=isDefault', 'sort'],
      ['a sort by id', 'sort=-id', 'sort'],
      ['a limit of 0', 'page[limit]=0', 'page[limit]'],
    ])('refuses %s with 400 naming the parameter', async (_case, query, parameter) => {
      const response = await get(`${BINDINGS}?${query}`);
      expectProblem(response, 400);
      expect(problemPaths(response)).toEqual([parameter]);
    });
  });

  describe('the default of a namespace', () => {
    it('moves to a binding made the default; the previous default gives the flag up', async () => {
      const namespace = await createNamespace('m-ns');
      const [p1, p2] = await Promise.all([createProfile('m-1'), createProfile('m-2')]);
      const first = await bind(p1, namespace, { isDefault: true });
      const second = await bind(p2, namespace);
      const response = await makeDefault(second.id);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ ...second, isDefault: true });
      expect(response.headers.etag).toBe('"2"');
      expect(await read(first.id)).toEqual({ ...first, isDefault: false });
      expect((await defaultsIn(namespace.id)).map((binding) => binding.id)).toEqual([second.id]);
      const profile = await get(defaultPath(namespace.id));
      expect(profile.statusCode).toBe(200);
      expect(profile.json()).toEqual((await get(`${PROFILES}/${p2.id}`)).json());
      const again = await makeDefault(second.id);
      expect(again.statusCode).toBe(200);
      expect(again.json().isDefault).toBe(true);
      expect((await defaultsIn(namespace.id)).map((binding) => binding.id)).toEqual([second.id]);
      const back = await makeDefault(first.id.toUpperCase());
      expect(back.json()).toEqual({ ...first, isDefault: true });
      expect((await get(defaultPath(namespace.id))).json().name).toBe(p1.name);
      expect((await defaultsIn(defaultNamespace.id)).map((binding) => binding.executionProfileId)).toEqual([standard._id]);
    });

    it('answers 404 to make-default for an unknown binding', async () => {
      expectProblem(await makeDefault(UNKNOWN_ID), 404);
      expectProblem(await makeDefault('not-a-uuid'), 404);
    });

    it('answers 404 for a namespace without a default, an unknown namespace, and an id that is not a UUID', async () => {
      const empty = await createNamespace('m-empty');
      expectProblem(await get(defaultPath(empty.id)), 404);
      await bind(await createProfile('m-not-default'), empty);
      expectProblem(await get(defaultPath(empty.id)), 404);
      expectProblem(await get(defaultPath(UNKNOWN_ID)), 404);
      expectProblem(await get(defaultPath('default')), 404);
    });

    it('reads the binding of a profile in a namespace, or 404', async () => {
      const namespace = await createNamespace('m-in');
      const [bound, unbound] = await Promise.all([createProfile('m-in-bound'), createProfile('m-in-unbound')]);
      const binding = await bind(bound, namespace);
      const response = await get(bindingInPath(namespace.id, bound.id));
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual(binding);
      expect(response.headers.etag).toBe('"1"');
      expect((await get(bindingInPath(namespace.id.toUpperCase(), bound.id.toUpperCase()))).json()).toEqual(binding);
      expectProblem(await get(bindingInPath(namespace.id, unbound.id)), 404);
      expectProblem(await get(bindingInPath(defaultNamespace.id, bound.id)), 404);
      expectProblem(await get(bindingInPath(UNKNOWN_ID, bound.id)), 404);
      expectProblem(await get(bindingInPath(namespace.id, UNKNOWN_ID)), 404);
      expectProblem(await get(bindingInPath(namespace.id, 'Standard')), 404);
    });
  });

  describe('concurrency', () => {
    it('keeps exactly one default when every binding of a namespace is made the default at once, round after round', async () => {
      const namespace = await createNamespace('x-ns');
      const profiles = await Promise.all(Array.from({ length: 8 }, (_, n) => createProfile(`x-${n}`)));
      const bindings: Binding[] = [];
      for (const profile of profiles) bindings.push(await bind(profile, namespace));
      for (let round = 0; round < 4; round += 1) {
        const responses = await Promise.all(bindings.map((binding) => makeDefault(binding.id)));
        for (const response of responses) expect([200, 409]).toContain(response.statusCode);
        expect(responses.some((response) => response.statusCode === 200)).toBe(true);
        const defaults = await defaultsIn(namespace.id);
        expect(defaults).toHaveLength(1);
        const profile = await get(defaultPath(namespace.id));
        expect(profile.json()._id).toBe(defaults[0].executionProfileId);
      }
      expect((await list(`filter[namespaceId][EQ]=${namespace.id}`)).totalCount).toBe(8);
    });

    it('keeps exactly one default when bindings are created with isDefault true at once', async () => {
      const namespace = await createNamespace('x-create-ns');
      const profiles = await Promise.all(Array.from({ length: 8 }, (_, n) => createProfile(`x-create-${n}`)));
      const responses = await Promise.all(profiles.map((profile) => post({ executionProfileId: profile.id, namespaceId: namespace.id, isDefault: true })));
      for (const response of responses) expect([201, 409]).toContain(response.statusCode);
      const created = responses.filter((response) => response.statusCode === 201).length;
      expect(created).toBeGreaterThan(0);
      expect((await list(`filter[namespaceId][EQ]=${namespace.id}`)).totalCount).toBe(created);
      expect(await defaultsIn(namespace.id)).toHaveLength(1);
    });

    it('keeps exactly one default when creations and make-defaults race', async () => {
      const namespace = await createNamespace('x-mixed-ns');
      const profiles = await Promise.all(Array.from({ length: 12 }, (_, n) => createProfile(`x-mixed-${n}`)));
      const existing: Binding[] = [];
      for (const profile of profiles.slice(0, 6)) existing.push(await bind(profile, namespace));
      for (const fresh of [profiles.slice(6, 9), profiles.slice(9)]) {
        const responses = await Promise.all([
          ...existing.map((binding) => makeDefault(binding.id)),
          ...fresh.map((profile) => post({ executionProfileId: profile.id, namespaceId: namespace.id, isDefault: true })),
        ]);
        for (const response of responses) expect([200, 201, 409]).toContain(response.statusCode);
        expect(await defaultsIn(namespace.id)).toHaveLength(1);
      }
    });

    // More concurrent replaces or patches of bindings than the hub has database connections (4 in
    // these tests, 10 by default): each holds a connection while it waits for the defaults lock,
    // and the one holding the lock needs another connection to look the profile and the namespace
    // up, so none can finish until the pool's connect timeout (10 s) fails them with 500.
    it('keeps exactly one default when every binding of a namespace is patched to be the default at once', async () => {
      const namespace = await createNamespace('x-patch-ns');
      const profiles = await Promise.all(Array.from({ length: 8 }, (_, n) => createProfile(`x-patch-${n}`)));
      const bindings: Binding[] = [];
      for (const profile of profiles) bindings.push(await bind(profile, namespace));
      const started = Date.now();
      const responses = await Promise.all(bindings.map((binding) => patch(binding.id, [{ op: 'replace', path: '/isDefault', value: true }])));
      expect(responses.map((response) => response.statusCode).filter((status) => status !== 200 && status !== 409)).toEqual([]);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(await defaultsIn(namespace.id)).toHaveLength(1);
    });

    it('never both binds a profile and deletes it when the two race', async () => {
      for (let round = 0; round < 4; round += 1) {
        const profile = await createProfile('x-race');
        const namespace = await createNamespace('x-race-ns');
        const [deleted, created] = await Promise.all([
          hub.inject({ method: 'DELETE', url: `${PROFILES}/${profile.id}`, headers: auth }),
          post({ executionProfileId: profile.id, namespaceId: namespace.id }),
        ]);
        if (deleted.statusCode === 200) {
          expect(created.statusCode).toBe(400);
          expect((await list(`filter[namespaceId][EQ]=${namespace.id}`)).totalCount).toBe(0);
        } else {
          expect(deleted.statusCode).toBe(409);
          expect(created.statusCode).toBe(201);
          expect((await get(`${PROFILES}/${profile.id}`)).statusCode).toBe(200);
        }
      }
    });
  });

  describe('a namespace and a binding to it, created and deleted at once', () => {
    it('never leave a binding to a deleted namespace', async () => {
      const profile = await createProfile('x-ns-race');
      for (let round = 0; round < 4; round += 1) {
        const namespace = await createNamespace('x-ns-race');
        const [deleted, created] = await Promise.all([
          hub.inject({ method: 'DELETE', url: `${NAMESPACES}/${namespace.id}`, headers: auth }),
          post({ executionProfileId: profile.id, namespaceId: namespace.id, isDefault: true }),
        ]);
        if (deleted.statusCode === 200) {
          expect(created.statusCode).toBe(400);
        } else {
          expect(deleted.statusCode).toBe(409);
          expect(created.statusCode).toBe(201);
          expect((await get(defaultPath(namespace.id))).json()._id).toBe(profile.id);
        }
      }
      const remaining = await list(`filter[executionProfileId][EQ]=${profile.id}&page[limit]=1000`);
      for (const binding of remaining.data) expect((await get(`${NAMESPACES}/${binding.namespaceId}`)).statusCode).toBe(200);
    });
  });

  describe('a namespace with bindings', () => {
    it('cannot be deleted (409) until its bindings are gone', async () => {
      const namespace = await createNamespace('n-busy');
      const binding = await bind(await createProfile('n-busy-profile'), namespace, { isDefault: true });
      const refused = await hub.inject({ method: 'DELETE', url: `${NAMESPACES}/${namespace.id}`, headers: auth });
      expectProblem(refused, 409);
      expect(refused.json().detail).toContain('execution profile binding');
      expect((await get(`${NAMESPACES}/${namespace.id}`)).statusCode).toBe(200);
      expect(await read(binding.id)).toEqual(binding);
      expectProblem(await hub.inject({ method: 'DELETE', url: `${NAMESPACES}/${defaultNamespace.id}`, headers: auth }), 409);
      expect((await remove(binding.id)).statusCode).toBe(200);
      expect((await hub.inject({ method: 'DELETE', url: `${NAMESPACES}/${namespace.id}`, headers: auth })).statusCode).toBe(200);
    });
  });

  describe('access', () => {
    let nsA: Named;
    let nsB: Named;
    let profile: Named;
    let other: Named;
    let inA: Binding;
    let inB: Binding;
    const readBindings = [allow('/ExecutionProfileBindings', ['Read']), allow('/ExecutionProfileBindings/*', ['Read'])];

    beforeAll(async () => {
      nsA = await createNamespace('acc-a');
      nsB = await createNamespace('acc-b');
      profile = await createProfile('acc-profile');
      other = await createProfile('acc-other');
      inA = await bind(profile, nsA, { isDefault: true });
      inB = await bind(profile, nsB, { isDefault: true });
    });

    it('answers 403 on list and create, and 404 on a single binding and the namespace routes, to a user without bindings', async () => {
      const { as } = await newUser('nobody');
      expectProblem(await get(BINDINGS, as), 403);
      expectProblem(await post({ executionProfileId: other.id, namespaceId: nsA.id }, as), 403);
      expectProblem(await get(defaultPath(nsA.id), as), 404);
      expectProblem(await get(bindingInPath(nsA.id, profile.id), as), 404);
      expectProblem(await get(`${BINDINGS}/${inA.id}`, as), 404);
      expectProblem(
        await hub.inject({ method: 'PUT', url: `${BINDINGS}/${inA.id}`, headers: as, payload: { executionProfileId: other.id, namespaceId: nsA.id } }),
        404,
      );
      expectProblem(
        await hub.inject({
          method: 'PATCH',
          url: `${BINDINGS}/${inA.id}`,
          headers: { ...as, 'content-type': 'application/json-patch+json' },
          payload: JSON.stringify([{ op: 'replace', path: '/isDefault', value: false }]),
        }),
        404,
      );
      expectProblem(await hub.inject({ method: 'DELETE', url: `${BINDINGS}/${inA.id}`, headers: as }), 404);
      expectProblem(await makeDefault(inA.id, as), 404);
      expect(await read(inA.id)).toEqual(inA);
      expect((await list(`filter[executionProfileId][EQ]=${other.id}`)).totalCount).toBe(0);
    });

    it('shows a reader in namespace A only the bindings of A, and answers 404 for a binding in B', async () => {
      const user = await newUser('reader-a');
      await grant(user.id, nsA.name, readBindings);
      const page = await list('page[limit]=1000', user.as);
      expect(page).toEqual({ totalCount: 1, data: [inA], executionProfiles: { [profile.id]: profile.name } });
      expect((await list(`filter[namespaceId][EQ]=${nsB.id}`, user.as)).totalCount).toBe(0);
      expect((await list(`filter[executionProfileId][EQ]=${profile.id}`, user.as)).data).toEqual([inA]);
      expect((await get(`${BINDINGS}/${inA.id}`, user.as)).json()).toEqual(inA);
      expectProblem(await get(`${BINDINGS}/${inB.id}`, user.as), 404);
      expectProblem(await hub.inject({ method: 'DELETE', url: `${BINDINGS}/${inB.id}`, headers: user.as }), 404);
      expectProblem(await makeDefault(inB.id, user.as), 404);
    });

    it('answers the namespace routes to those who may read the namespace', async () => {
      const user = await newUser('ns-reader');
      await grant(user.id, nsA.name, readBindings);
      expectProblem(await get(defaultPath(nsA.id), user.as), 404);
      expectProblem(await get(bindingInPath(nsA.id, profile.id), user.as), 404);
      await grant(user.id, nsA.name, [allow('/Namespaces/*', ['Read'])]);
      expect((await get(bindingInPath(nsA.id, profile.id), user.as)).json()).toEqual(inA);
      expect((await get(defaultPath(nsA.id), user.as)).json().name).toBe(profile.name);
      expectProblem(await get(bindingInPath(nsB.id, profile.id), user.as), 404);
      expectProblem(await get(defaultPath(nsB.id), user.as), 404);
      expectProblem(await get(defaultPath(defaultNamespace.id), user.as), 404);
      expectProblem(await get(defaultPath(UNKNOWN_ID), user.as), 404);
    });

    it('answers 403 to a reader that changes a binding it can read', async () => {
      const user = await newUser('reader-only');
      await grant(user.id, nsA.name, readBindings);
      expectProblem(
        await hub.inject({ method: 'PUT', url: `${BINDINGS}/${inA.id}`, headers: user.as, payload: { executionProfileId: profile.id, namespaceId: nsA.id } }),
        403,
      );
      expectProblem(await hub.inject({ method: 'DELETE', url: `${BINDINGS}/${inA.id}`, headers: user.as }), 403);
      expectProblem(await makeDefault(inA.id, user.as), 403);
      expectProblem(await post({ executionProfileId: other.id, namespaceId: nsA.id }, user.as), 403);
      expect(await read(inA.id)).toEqual(inA);
    });

    it('needs Create on bindings in the target namespace and Use on the profile in * to create a binding', async () => {
      const user = await newUser('binder');
      await grant(user.id, nsA.name, [allow('/ExecutionProfileBindings', ['Create', 'Read']), allow('/ExecutionProfileBindings/*', ['Read'])]);
      const body = { executionProfileId: other.id, namespaceId: nsA.id };
      const withoutUse = await post(body, user.as);
      expectProblem(withoutUse, 403);
      expect(withoutUse.json().detail).toContain(`/ExecutionProfiles/${other.id}`);
      await grant(user.id, nsA.name, [allow('/ExecutionProfiles/*', ['Use'])]);
      expectProblem(await post(body, user.as), 403);
      await grant(user.id, '*', [allow(`/ExecutionProfiles/${other.id}`, ['Use'])]);
      expectProblem(await post({ executionProfileId: other.id, namespaceId: nsB.id }, user.as), 403);
      expect((await list(`filter[executionProfileId][EQ]=${other.id}`)).totalCount).toBe(0);
      const created = await post(body, user.as);
      expect(created.statusCode).toBe(201);
      expect(created.json()).toEqual({ id: expect.any(String), ...body, isDefault: false });
      const third = await createProfile('acc-third');
      expectProblem(await post({ executionProfileId: third.id, namespaceId: nsA.id }, user.as), 403);
      expect((await remove(created.json().id)).statusCode).toBe(200);
    });

    it('needs Use on a profile bound anew and Create in a namespace a binding moves to, on replace and patch', async () => {
      const user = await newUser('updater');
      const namespace = await createNamespace('acc-upd');
      const [p1, p2, p3] = await Promise.all([createProfile('acc-upd-1'), createProfile('acc-upd-2'), createProfile('acc-upd-3')]);
      const binding = await bind(p1, namespace);
      await grant(user.id, namespace.name, [allow('/ExecutionProfileBindings/*', ['Read', 'Update']), allow('/ExecutionProfileBindings', ['Create'])]);
      await grant(user.id, '*', [allow(`/ExecutionProfiles/${p2.id}`, ['Use'])]);
      const toP2 = await hub.inject({
        method: 'PUT',
        url: `${BINDINGS}/${binding.id}`,
        headers: user.as,
        payload: { executionProfileId: p2.id, namespaceId: namespace.id },
      });
      expect(toP2.statusCode).toBe(200);
      const toP3 = await hub.inject({
        method: 'PATCH',
        url: `${BINDINGS}/${binding.id}`,
        headers: { ...user.as, 'content-type': 'application/json-patch+json' },
        payload: JSON.stringify([{ op: 'replace', path: '/executionProfileId', value: p3.id }]),
      });
      expectProblem(toP3, 403);
      const flag = await hub.inject({
        method: 'PATCH',
        url: `${BINDINGS}/${binding.id}`,
        headers: { ...user.as, 'content-type': 'application/json-patch+json' },
        payload: JSON.stringify([{ op: 'replace', path: '/isDefault', value: true }]),
      });
      expect(flag.statusCode).toBe(200);
      const moved = await hub.inject({
        method: 'PUT',
        url: `${BINDINGS}/${binding.id}`,
        headers: user.as,
        payload: { executionProfileId: p2.id, namespaceId: nsB.id },
      });
      expectProblem(moved, 403);
      expect(await read(binding.id)).toEqual({ ...binding, executionProfileId: p2.id, isDefault: true });
      expect((await makeDefault(binding.id, user.as)).statusCode).toBe(200);
    });

    it('lets a NamespaceUser read the bindings and the default profile of its namespace only', async () => {
      const user = await newUser('ns-user');
      const roles = await get(`${ROLES}?filter[name][EQ]=NamespaceUser`);
      await bindRole(roles.json().data[0].id, user.id, nsA.name);
      const page = await list('', user.as);
      expect(page.data).toEqual([inA]);
      expect((await get(`${BINDINGS}/${inA.id}`, user.as)).json()).toEqual(inA);
      const profileRead = await get(defaultPath(nsA.id), user.as);
      expect(profileRead.statusCode).toBe(200);
      expect(profileRead.json()).toEqual((await get(`${PROFILES}/${profile.id}`)).json());
      expect((await get(bindingInPath(nsA.id, profile.id), user.as)).json()).toEqual(inA);
      expectProblem(await get(`${BINDINGS}/${inB.id}`, user.as), 404);
      expectProblem(await get(defaultPath(nsB.id), user.as), 404);
      expectProblem(await get(defaultPath(defaultNamespace.id), user.as), 404);
      expectProblem(await makeDefault(inA.id, user.as), 403);
      expectProblem(await post({ executionProfileId: other.id, namespaceId: nsA.id }, user.as), 403);
    });

    it.each([
      ['GET', BINDINGS],
      ['POST', BINDINGS],
      ['GET', `${BINDINGS}/${UNKNOWN_ID}`],
      ['PUT', `${BINDINGS}/${UNKNOWN_ID}`],
      ['PATCH', `${BINDINGS}/${UNKNOWN_ID}`],
      ['DELETE', `${BINDINGS}/${UNKNOWN_ID}`],
      ['POST', `${BINDINGS}/${UNKNOWN_ID}/default`],
      ['GET', defaultPath(UNKNOWN_ID)],
      ['GET', bindingInPath(UNKNOWN_ID, UNKNOWN_ID)],
    ] as const)('%s %s answers 401 without credentials', async (method, url) => {
      const response = await hub.inject({
        method,
        url,
        payload: method === 'PUT' || method === 'PATCH' || (method === 'POST' && url === BINDINGS) ? {} : undefined,
      });
      expect(response.statusCode).toBe(401);
    });
  });
});

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { bearer, problemPaths, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

interface Constraint {
  attribute: string;
  value: string;
  operator: string;
}

interface Profile {
  _id: string;
  _created: string;
  _modified: string;
  name: string;
  description?: string;
  isDefault: boolean;
  environment: Record<string, string>;
  constraints: Constraint[];
  properties: Record<string, unknown>;
}

interface ProfileListItem {
  _id: string;
  _created: string;
  _modified: string;
  name: string;
}

interface ProfileList {
  totalCount: number;
  data: ProfileListItem[];
}

interface Binding {
  id: string;
  executionProfileId: string;
  namespaceId: string;
  isDefault: boolean;
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
const AVAILABILITY = `${PROFILES}/name-availability`;
const BINDINGS = `${API}/bindings`;
const NAMESPACES = '/api/v2/namespaces';
const USERS = '/api/v2/auth/users';
const ROLES = '/api/v2/rbac/roles';
const ROLE_BINDINGS = '/api/v2/rbac/rolebindings';
const UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-000000000000';
const PASSWORD = 'a-profile-user-password';
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ATTRIBUTES = ['node.label', 'node.os', 'node.name', 'node.attr.rack'];
const OPERATORS = ['=', '!=', 'in', 'not_in', 'contains', 'regexp'];

const allow = (object: string, actions: string[]): Permission => ({ object, objectMatcher: 'simple', actions, effect: 'Allow' });
const constraint = (attribute: string, operator: string, value: string): Constraint => ({ attribute, value, operator });

let sequence = 0;
/** A name no other test uses. */
function unique(prefix: string): string {
  sequence += 1;
  return `${prefix}-${sequence}`;
}

describe('execution profiles', () => {
  let hub: TestHub;
  let auth: Headers;
  let defaultNamespaceId: string;
  let standard: Profile;

  const get = (url: string, headers: Headers = auth) => hub.inject({ method: 'GET', url, headers });
  const post = (payload: unknown, headers: Headers = auth) => hub.inject({ method: 'POST', url: PROFILES, headers, payload: payload as object });
  const create = async (body: object): Promise<Profile> => {
    const response = await post(body);
    expect(response.statusCode).toBe(201);
    return response.json();
  };
  const createNamed = (prefix: string, extra: object = {}) => create({ name: unique(prefix), ...extra });
  const read = async (id: string): Promise<Profile> => {
    const response = await get(`${PROFILES}/${id}`);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const put = (id: string, payload: object, headers: Headers = {}) =>
    hub.inject({ method: 'PUT', url: `${PROFILES}/${id}`, headers: { ...auth, ...headers }, payload });
  const patch = (id: string, operations: unknown, headers: Headers = {}) =>
    hub.inject({
      method: 'PATCH',
      url: `${PROFILES}/${id}`,
      headers: { ...auth, 'content-type': 'application/json-patch+json', ...headers },
      payload: JSON.stringify(operations),
    });
  const remove = (id: string, headers: Headers = {}) => hub.inject({ method: 'DELETE', url: `${PROFILES}/${id}`, headers: { ...auth, ...headers } });
  const list = async (query: string, headers: Headers = auth): Promise<ProfileList> => {
    const response = await get(`${PROFILES}?${query}`, headers);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const names = async (query: string, headers: Headers = auth): Promise<string[]> => (await list(query, headers)).data.map((profile) => profile.name);
  const availability = async (query: string): Promise<InjectResponse> => get(`${AVAILABILITY}${query}`);
  /** Names of every profile whose isDefault is true, read one by one. */
  const defaultProfiles = async (): Promise<string[]> => {
    const all = await list('page[limit]=1000');
    const profiles = await Promise.all(all.data.map((item) => read(item._id)));
    return profiles.filter((profile) => profile.isDefault).map((profile) => profile.name);
  };

  const createNamespace = async (prefix: string): Promise<{ id: string; name: string }> => {
    const name = unique(prefix);
    const response = await hub.inject({ method: 'POST', url: NAMESPACES, headers: auth, payload: { name } });
    expect(response.statusCode).toBe(201);
    return { id: response.json()._id, name };
  };
  const bind = async (executionProfileId: string, namespaceId: string, isDefault = false): Promise<Binding> => {
    const response = await hub.inject({ method: 'POST', url: BINDINGS, headers: auth, payload: { executionProfileId, namespaceId, isDefault } });
    expect(response.statusCode).toBe(201);
    return response.json();
  };
  const unbind = async (bindingId: string) => {
    const response = await hub.inject({ method: 'DELETE', url: `${BINDINGS}/${bindingId}`, headers: auth });
    expect(response.statusCode).toBe(200);
  };
  /** A new user with no role bindings, and its bearer header. */
  const newUser = async (prefix: string): Promise<{ id: string; as: Headers }> => {
    const userName = unique(prefix);
    const response = await hub.inject({ method: 'POST', url: USERS, headers: auth, payload: { userName, password: PASSWORD } });
    expect(response.statusCode).toBe(201);
    return { id: response.json()._id, as: bearer(await hub.login(userName, PASSWORD)) };
  };
  /** Binds a new role with `permissions` to `principal` in `namespace` (a name or `*`). */
  const grant = async (principal: string, namespace: string, permissions: Permission[]) => {
    const role = await hub.inject({ method: 'POST', url: ROLES, headers: auth, payload: { name: unique('profile-role'), permissions } });
    expect(role.statusCode).toBe(201);
    const binding = await hub.inject({ method: 'POST', url: ROLE_BINDINGS, headers: auth, payload: { role: role.json().id, principal, namespace } });
    expect(binding.statusCode).toBe(201);
  };

  beforeAll(async () => {
    hub = await startTestHub();
    auth = bearer(hub.adminToken);
    const namespaces = await get(`${NAMESPACES}?filter[name][EQ]=default`);
    defaultNamespaceId = namespaces.json().data[0]._id;
    const page = await list('filter[name][EQ]=Standard');
    standard = await read(page.data[0]._id);
  });
  afterAll(() => hub.close());

  describe('a fresh hub', () => {
    it('has exactly one profile, Standard, the default, with no environment, constraints or properties', async () => {
      const page = await list('');
      expect(page).toEqual({
        totalCount: 1,
        data: [{ _id: standard._id, _created: expect.stringMatching(ISO_DATE_TIME), _modified: expect.stringMatching(ISO_DATE_TIME), name: 'Standard' }],
      });
      expect(standard).toEqual({
        _id: page.data[0]._id,
        _created: page.data[0]._created,
        _modified: page.data[0]._modified,
        name: 'Standard',
        description: expect.any(String),
        isDefault: true,
        environment: {},
        constraints: [],
        properties: {},
      });
    });

    it('binds Standard as the default of the namespace default', async () => {
      const response = await get(`${API}/namespaces/${defaultNamespaceId}/default`);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual(standard);
      const bindings = await get(BINDINGS);
      expect(bindings.statusCode).toBe(200);
      expect(bindings.json()).toEqual({
        totalCount: 1,
        data: [{ id: expect.any(String), executionProfileId: standard._id, namespaceId: defaultNamespaceId, isDefault: true }],
        executionProfiles: { [standard._id]: 'Standard' },
      });
    });
  });

  describe('create', () => {
    it('returns 201 with the whole profile, an ETag and its Location, and reads back the same', async () => {
      const body = {
        name: 'GPU nodes',
        description: 'Workloads that need a GPU',
        environment: { CUDA_HOME: '/opt/cuda', OMP_NUM_THREADS: '4', _PRIVATE: '' },
        constraints: [constraint('node.label', '=', 'gpu'), constraint('node.attr.rack', 'in', 'r1, r2')],
        properties: { intermediateFilesDir: '/scratch', retries: 3, nested: { list: [1, 'a', null], flag: true } },
      };
      const response = await post(body);
      expect(response.statusCode).toBe(201);
      expect(response.headers['content-type']).toContain('application/json');
      const profile: Profile = response.json();
      expect(profile).toEqual({
        _id: expect.any(String),
        _created: expect.stringMatching(ISO_DATE_TIME),
        _modified: expect.stringMatching(ISO_DATE_TIME),
        isDefault: false,
        ...body,
      });
      expect(Object.keys(profile).sort()).toEqual([
        '_created',
        '_id',
        '_modified',
        'constraints',
        'description',
        'environment',
        'isDefault',
        'name',
        'properties',
      ]);
      expect(profile._modified).toBe(profile._created);
      expect(response.headers.etag).toBe('"1"');
      expect(response.headers.location).toBe(`${PROFILES}/${profile._id}`);
      const again = await get(`${PROFILES}/${profile._id}`);
      expect(again.statusCode).toBe(200);
      expect(again.json()).toEqual(profile);
      expect(again.headers.etag).toBe('"1"');
    });

    it('fills what a body leaves out: no description, isDefault false, empty environment, constraints and properties', async () => {
      const profile = await create({ name: 'bare-profile' });
      expect(profile).toEqual({
        _id: expect.any(String),
        _created: expect.any(String),
        _modified: expect.any(String),
        name: 'bare-profile',
        isDefault: false,
        environment: {},
        constraints: [],
        properties: {},
      });
      const nulls = await create({ name: 'null-profile', description: null, isDefault: null, environment: null, constraints: null, properties: null });
      expect(nulls).toMatchObject({ isDefault: false, environment: {}, constraints: [], properties: {} });
      expect('description' in nulls).toBe(false);
    });

    it('ignores server-owned fields', async () => {
      const profile = await create({ name: 'owned-fields', _id: UNKNOWN_ID, _created: '2000-01-01T00:00:00.000Z', _modified: 'x' });
      expect(profile._id).not.toBe(UNKNOWN_ID);
      expect(profile._created.startsWith('2000')).toBe(false);
      expect((await get(`${PROFILES}/${UNKNOWN_ID}`)).statusCode).toBe(404);
    });

    it('lists items with exactly _id, _created, _modified and name', async () => {
      const profile = await create({ name: 'list-shape', description: 'd', environment: { A: 'b' }, constraints: [constraint('node.os', '=', 'linux')] });
      const page = await list('filter[name][EQ]=list-shape');
      expect(page).toEqual({ totalCount: 1, data: [{ _id: profile._id, _created: profile._created, _modified: profile._modified, name: 'list-shape' }] });
    });

    it('accepts every constraint attribute with every operator, keeping their order', async () => {
      const valueFor: Record<string, string> = { '=': 'x', '!=': 'y', in: 'a,b', not_in: ' a , b ', contains: 'gp', regexp: '^(gpu|cpu)[0-9]+.*$' };
      const constraints = ATTRIBUTES.flatMap((attribute) => OPERATORS.map((operator) => constraint(attribute, operator, valueFor[operator])));
      expect(constraints).toHaveLength(24);
      const profile = await create({ name: 'all-constraints', constraints });
      expect(profile.constraints).toEqual(constraints);
      expect((await read(profile._id)).constraints).toEqual(constraints);
    });

    it.each([
      ['a dotted node.attr key', 'node.attr.topology.zone-1_a'],
      ['a 64-character node.attr key', `node.attr.${'k'.repeat(64)}`],
    ])('accepts an attribute with %s', async (_case, attribute) => {
      const profile = await createNamed('attr', { constraints: [constraint(attribute, '=', 'v')] });
      expect(profile.constraints[0].attribute).toBe(attribute);
    });

    it.each([
      ['a single character', 'p'],
      ['128 characters', 'p'.repeat(128)],
      ['inner spaces and punctuation', 'Big Memory @site-1_b.x'],
      ['letters outside ASCII', 'Profil Ünïcode'],
    ])('accepts a name of %s', async (_case, name) => {
      expect((await create({ name })).name).toBe(name);
    });

    it('accepts environment names of a letter or "_" then letters, digits or "_"', async () => {
      const environment = { _: '1', a: '2', JAVA_HOME: '/opt/java', x9_Y: '', [`V${'a'.repeat(127)}`]: 'long name' };
      expect((await createNamed('env', { environment })).environment).toEqual(environment);
    });

    it('refuses a name taken ignoring case with 409, whichever profile holds it', async () => {
      await create({ name: 'Unique Profile' });
      const response = await post({ name: 'UNIQUE profile' });
      expect(response.statusCode).toBe(409);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json()).toMatchObject({ status: 409, detail: expect.stringContaining('already exists') });
      expect((await post({ name: 'standard' })).statusCode).toBe(409);
      expect(await names('filter[name][CO]=unique profile')).toEqual(['Unique Profile']);
    });

    it('creates one profile when several requests claim a name at once, answering 409 to the others', async () => {
      const responses = await Promise.all(['Race', 'race', 'RACE', 'rAcE', 'Race'].map((name) => post({ name })));
      expect(responses.map((response) => response.statusCode).sort()).toEqual([201, 409, 409, 409, 409]);
      expect((await list('filter[name][CO]=race')).totalCount).toBe(1);
    });

    it.each([
      ['no name', {}, ['/name']],
      ['an empty name', { name: '' }, ['/name']],
      ['a name with a leading space', { name: ' lead' }, ['/name']],
      ['a name with a trailing space', { name: 'trail ' }, ['/name']],
      ['a name of 129 characters', { name: 'n'.repeat(129) }, ['/name']],
      ['a name with a slash', { name: 'a/b' }, ['/name']],
      ['a name that is a number', { name: 42 }, ['/name']],
      ['a description that is not a string', { name: 'v-1', description: 5 }, ['/description']],
      ['a description over 1024 characters', { name: 'v-2', description: 'd'.repeat(1025) }, ['/description']],
      ['an isDefault that is not a boolean', { name: 'v-3', isDefault: 'yes' }, ['/isDefault']],
      ['an environment name starting with a digit', { name: 'v-4', environment: { '1X': 'a' } }, ['/environment']],
      ['an environment name with a dash', { name: 'v-5', environment: { 'A-B': 'a' } }, ['/environment']],
      ['an empty environment name', { name: 'v-6', environment: { '': 'a' } }, ['/environment']],
      ['an environment name of 129 characters', { name: 'v-7', environment: { [`V${'a'.repeat(128)}`]: 'a' } }, ['/environment']],
      ['an environment value that is a number', { name: 'v-8', environment: { A: 1 } }, ['/environment']],
      ['an environment value that is null', { name: 'v-9', environment: { A: null } }, ['/environment']],
      ['an environment value that is an object', { name: 'v-10', environment: { A: { b: 'c' } } }, ['/environment']],
      ['an environment that is an array', { name: 'v-11', environment: ['A=b'] }, ['/environment']],
      ['an environment that is a string', { name: 'v-12', environment: 'A=b' }, ['/environment']],
      ['constraints that are not an array', { name: 'v-13', constraints: constraint('node.os', '=', 'linux') }, ['/constraints']],
      ['an attribute outside the node vocabulary', { name: 'v-14', constraints: [constraint('node.foo', '=', 'x')] }, ['/constraints/0/attribute']],
      ['node.attr. without a key', { name: 'v-15', constraints: [constraint('node.attr.', '=', 'x')] }, ['/constraints/0/attribute']],
      ['an attribute without node.', { name: 'v-16', constraints: [constraint('label', '=', 'x')] }, ['/constraints/0/attribute']],
      ['an attribute in the wrong case', { name: 'v-17', constraints: [constraint('Node.Label', '=', 'x')] }, ['/constraints/0/attribute']],
      ['a node.attr key of 65 characters', { name: 'v-18', constraints: [constraint(`node.attr.${'k'.repeat(65)}`, '=', 'x')] }, ['/constraints/0/attribute']],
      ['an operator outside the vocabulary', { name: 'v-19', constraints: [constraint('node.os', '==', 'x')] }, ['/constraints/0/operator']],
      ['an operator in the wrong case', { name: 'v-20', constraints: [constraint('node.os', 'IN', 'x')] }, ['/constraints/0/operator']],
      ['in with an empty value', { name: 'v-21', constraints: [constraint('node.label', 'in', '')] }, ['/constraints/0/value']],
      ['in with an empty item', { name: 'v-22', constraints: [constraint('node.label', 'in', 'a,,b')] }, ['/constraints/0/value']],
      ['not_in with only blanks', { name: 'v-23', constraints: [constraint('node.label', 'not_in', ' , ')] }, ['/constraints/0/value']],
      ['an invalid regexp', { name: 'v-24', constraints: [constraint('node.name', 'regexp', '(')] }, ['/constraints/0/value']],
      ['an unclosed class in a regexp', { name: 'v-25', constraints: [constraint('node.name', 'regexp', '[a-')] }, ['/constraints/0/value']],
      ['a value that is not a string', { name: 'v-26', constraints: [{ attribute: 'node.os', operator: '=', value: 1 }] }, ['/constraints/0/value']],
      ['a constraint without a value', { name: 'v-27', constraints: [{ attribute: 'node.os', operator: '=' }] }, ['/constraints/0/value']],
      ['a constraint without an operator', { name: 'v-28', constraints: [{ attribute: 'node.os', value: 'x' }] }, ['/constraints/0/operator']],
      ['an unknown property of a constraint', { name: 'v-29', constraints: [{ ...constraint('node.os', '=', 'x'), weight: 2 }] }, ['/constraints/0/weight']],
      [
        'bad constraints after good ones, each reported',
        {
          name: 'v-30',
          constraints: [
            constraint('node.os', '=', 'linux'),
            constraint('node.bar', '=', 'x'),
            constraint('node.name', '=', 'y'),
            constraint('node.os', 'like', 'x'),
          ],
        },
        ['/constraints/1/attribute', '/constraints/3/operator'],
      ],
      [
        'bad values after good ones, each reported',
        {
          name: 'v-35',
          constraints: [constraint('node.os', '=', 'linux'), constraint('node.label', 'not_in', 'a,'), constraint('node.name', 'regexp', '((')],
        },
        ['/constraints/1/value', '/constraints/2/value'],
      ],
      ['properties that are an array', { name: 'v-31', properties: [1, 2] }, ['/properties']],
      ['properties that are a string', { name: 'v-32', properties: 'x' }, ['/properties']],
      ['properties that are a number', { name: 'v-33', properties: 7 }, ['/properties']],
      ['a maxProcesses that is not a positive integer', { name: 'v-36', properties: { maxProcesses: 0 } }, ['/properties']],
      ['a maxMemoryMiB that is a string', { name: 'v-37', properties: { maxMemoryMiB: '512' } }, ['/properties']],
      ['a maxRunSeconds that is a fraction', { name: 'v-38', properties: { maxRunSeconds: 1.5 } }, ['/properties']],
      ['a maxDiskMiB that is negative', { name: 'v-39', properties: { maxDiskMiB: -1 } }, ['/properties']],
      ['an unknown property', { name: 'v-34', owner: 'me' }, ['/owner']],
    ])('refuses %s with 400 naming the field', async (_case, payload, paths) => {
      const response = await post(payload);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json()).toMatchObject({ status: 400, title: 'Bad Request' });
      expect([...new Set(problemPaths(response))].sort()).toEqual([...paths].sort());
      const name = (payload as { name?: unknown }).name;
      if (typeof name === 'string' && name !== '') expect((await availability(`?name=${encodeURIComponent(name)}`)).json().reason).not.toBe('taken');
    });

    it('refuses more than 64 constraints and properties over 64 KiB', async () => {
      const many = await post({ name: 'too-many', constraints: Array.from({ length: 65 }, () => constraint('node.os', '=', 'linux')) });
      expect(many.statusCode).toBe(400);
      expect(problemPaths(many)).toEqual(['/constraints']);
      const big = await post({ name: 'too-big', properties: { blob: 'x'.repeat(70 * 1024) } });
      expect(big.statusCode).toBe(400);
      expect(problemPaths(big)).toEqual(['/properties']);
      expect(await names('filter[name][SW]=too-')).toEqual([]);
    });

    it('refuses a body that is not a JSON object, and other media types with 415', async () => {
      for (const payload of ['[]', '"GPU"', 'null']) {
        const response = await hub.inject({ method: 'POST', url: PROFILES, headers: { ...auth, 'content-type': 'application/json' }, payload });
        expect(response.statusCode).toBe(400);
      }
      const text = await hub.inject({ method: 'POST', url: PROFILES, headers: { ...auth, 'content-type': 'text/plain' }, payload: 'name=x' });
      expect(text.statusCode).toBe(415);
    });
  });

  describe('get', () => {
    it('answers 404 for an unknown id and for an id that is not a UUID', async () => {
      expect((await get(`${PROFILES}/${UNKNOWN_ID}`)).statusCode).toBe(404);
      const notUuid = await get(`${PROFILES}/not-a-uuid`);
      expect(notUuid.statusCode).toBe(404);
      expect(notUuid.headers['content-type']).toContain('application/problem+json');
    });

    it('reads a profile by its id in upper case too', async () => {
      const profile = await createNamed('upper');
      expect((await get(`${PROFILES}/${profile._id.toUpperCase()}`)).json()).toEqual(profile);
    });

    it('answers 304 to If-None-Match with the current ETag', async () => {
      const profile = await createNamed('cached');
      expect((await get(`${PROFILES}/${profile._id}`, { ...auth, 'if-none-match': '"1"' })).statusCode).toBe(304);
      expect((await get(`${PROFILES}/${profile._id}`, { ...auth, 'if-none-match': '"2"' })).statusCode).toBe(200);
    });
  });

  describe('replace', () => {
    it('replaces every client field, resets those left out, ignores server-owned ones and bumps the ETag', async () => {
      const profile = await create({
        name: 'to-replace',
        description: 'Old',
        environment: { OLD: '1' },
        constraints: [constraint('node.os', '=', 'linux')],
        properties: { old: true },
      });
      const response = await put(
        profile._id,
        { name: 'replaced', environment: { NEW: '2' }, _id: UNKNOWN_ID, _created: '2000-01-01T00:00:00.000Z' },
        { 'if-match': '"1"' },
      );
      expect(response.statusCode).toBe(200);
      expect(response.headers.etag).toBe('"2"');
      const body: Profile = response.json();
      expect(body).toEqual({
        _id: profile._id,
        _created: profile._created,
        _modified: expect.stringMatching(ISO_DATE_TIME),
        name: 'replaced',
        isDefault: false,
        environment: { NEW: '2' },
        constraints: [],
        properties: {},
      });
      expect(body._modified >= profile._modified).toBe(true);
      expect(await read(profile._id)).toEqual(body);
      expect((await availability('?name=to-replace')).json()).toEqual({ result: true });
    });

    it('may change only the case of its own name', async () => {
      const profile = await create({ name: 'case-only' });
      const response = await put(profile._id, { name: 'CASE-ONLY' });
      expect(response.statusCode).toBe(200);
      expect(response.json().name).toBe('CASE-ONLY');
    });

    it('answers 412 when If-Match names another version, and changes nothing', async () => {
      const profile = await create({ name: 'guarded' });
      const response = await put(profile._id, { name: 'guarded-2' }, { 'if-match': '"7"' });
      expect(response.statusCode).toBe(412);
      expect((await read(profile._id)).name).toBe('guarded');
      expect((await put(profile._id, { name: 'guarded-2' }, { 'if-match': '*' })).statusCode).toBe(200);
    });

    it('validates like a create and answers 404 for an unknown id and 409 for a taken name', async () => {
      const profile = await create({ name: 'replace-me' });
      const invalid = await put(profile._id, { name: 'replace-me', constraints: [constraint('node.label', 'regexp', '(')] });
      expect(invalid.statusCode).toBe(400);
      expect(problemPaths(invalid)).toEqual(['/constraints/0/value']);
      const noName = await put(profile._id, { description: 'x' });
      expect(problemPaths(noName)).toEqual(['/name']);
      expect((await put(UNKNOWN_ID, { name: 'whatever' })).statusCode).toBe(404);
      const taken = await put(profile._id, { name: 'STANDARD' });
      expect(taken.statusCode).toBe(409);
      expect((await read(profile._id)).name).toBe('replace-me');
    });
  });

  describe('patch', () => {
    it('applies add, replace and remove on every part of a profile, accepting application/json too', async () => {
      const profile = await create({
        name: 'to-patch',
        description: 'Before',
        environment: { KEEP: 'k', DROP: 'd' },
        constraints: [constraint('node.os', '=', 'linux'), constraint('node.label', 'in', 'a,b')],
        properties: { depth: 1 },
      });
      const response = await patch(profile._id, [
        { op: 'replace', path: '/description', value: 'After' },
        { op: 'add', path: '/environment/NEW_VAR', value: 'n' },
        { op: 'remove', path: '/environment/DROP' },
        { op: 'remove', path: '/constraints/0' },
        { op: 'add', path: '/constraints/-', value: constraint('node.attr.rack', 'contains', 'r') },
        { op: 'replace', path: '/constraints/0/operator', value: 'not_in' },
        { op: 'add', path: '/properties/extra', value: { a: [1] } },
      ]);
      expect(response.statusCode).toBe(200);
      expect(response.headers.etag).toBe('"2"');
      expect(response.json()).toEqual({
        ...profile,
        _modified: expect.stringMatching(ISO_DATE_TIME),
        description: 'After',
        environment: { KEEP: 'k', NEW_VAR: 'n' },
        constraints: [constraint('node.label', 'not_in', 'a,b'), constraint('node.attr.rack', 'contains', 'r')],
        properties: { depth: 1, extra: { a: [1] } },
      });
      const removed = await patch(profile._id, [{ op: 'remove', path: '/description' }], { 'content-type': 'application/json' });
      expect(removed.statusCode).toBe(200);
      expect('description' in removed.json()).toBe(false);
      expect(removed.headers.etag).toBe('"3"');
      expect(await read(profile._id)).toEqual(removed.json());
    });

    it('ignores operations on server-owned fields', async () => {
      const profile = await create({ name: 'patch-owned' });
      const response = await patch(profile._id, [
        { op: 'replace', path: '/_id', value: UNKNOWN_ID },
        { op: 'replace', path: '/_created', value: '2000-01-01T00:00:00.000Z' },
        { op: 'replace', path: '/name', value: 'patch-owned-2' },
      ]);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ _id: profile._id, _created: profile._created, name: 'patch-owned-2' });
    });

    it.each([
      ['a bad environment name', [{ op: 'add', path: '/environment/1X', value: 'a' }], ['/environment']],
      ['an environment value that is not a string', [{ op: 'add', path: '/environment/A', value: 5 }], ['/environment']],
      ['a bad operator', [{ op: 'add', path: '/constraints/-', value: constraint('node.os', '~', 'x') }], ['/constraints/0/operator']],
      ['a bad attribute', [{ op: 'add', path: '/constraints/-', value: constraint('node.attr.', '=', 'x') }], ['/constraints/0/attribute']],
      ['an empty in', [{ op: 'add', path: '/constraints/-', value: constraint('node.label', 'in', '') }], ['/constraints/0/value']],
      ['properties that are not an object', [{ op: 'replace', path: '/properties', value: [] }], ['/properties']],
      ['no name', [{ op: 'remove', path: '/name' }], ['/name']],
      ['an unknown field', [{ op: 'add', path: '/owner', value: 'me' }], ['/owner']],
    ])('validates the result like a replace: %s', async (_case, operations, paths) => {
      const profile = await createNamed('patch-invalid');
      const response = await patch(profile._id, operations);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(paths);
      expect(await read(profile._id)).toEqual(profile);
    });

    it('is all or nothing and honours If-Match; 404 for an unknown id, 409 for a taken name, 415 for other media types', async () => {
      const profile = await create({ name: 'patch-guarded', description: 'Kept' });
      const failing = await patch(profile._id, [
        { op: 'replace', path: '/description', value: 'Lost' },
        { op: 'remove', path: '/environment/MISSING' },
      ]);
      expect(failing.statusCode).toBe(400);
      expect(problemPaths(failing)).toEqual(['/1']);
      expect((await patch(profile._id, [{ op: 'replace', path: '/description', value: 'x' }], { 'if-match': '"2"' })).statusCode).toBe(412);
      expect((await read(profile._id)).description).toBe('Kept');
      expect((await patch(profile._id, [{ op: 'replace', path: '/description', value: 'x' }], { 'if-match': '"1"' })).statusCode).toBe(200);
      expect((await patch(UNKNOWN_ID, [])).statusCode).toBe(404);
      expect((await patch(profile._id, [{ op: 'replace', path: '/name', value: 'standard' }])).statusCode).toBe(409);
      expect((await patch(profile._id, [], { 'content-type': 'application/merge-patch+json' })).statusCode).toBe(415);
    });
  });

  describe('delete', () => {
    it('deletes with {msg}, then answers 404', async () => {
      const profile = await create({ name: 'short-lived' });
      const response = await remove(profile._id);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ msg: "Execution profile 'short-lived' deleted" });
      expect((await get(`${PROFILES}/${profile._id}`)).statusCode).toBe(404);
      expect((await remove(profile._id)).statusCode).toBe(404);
      expect((await availability('?name=short-lived')).json()).toEqual({ result: true });
    });

    it('honours If-Match', async () => {
      const profile = await create({ name: 'delete-guarded' });
      expect((await remove(profile._id, { 'if-match': '"2"' })).statusCode).toBe(412);
      expect((await get(`${PROFILES}/${profile._id}`)).statusCode).toBe(200);
      expect((await remove(profile._id, { 'if-match': '"1"' })).statusCode).toBe(200);
    });

    it('is refused with 409 while the profile is bound to a namespace, and allowed once the binding is gone', async () => {
      const profile = await create({ name: 'bound-profile' });
      const namespace = await createNamespace('bound-ns');
      const binding = await bind(profile._id, namespace.id);
      const refused = await remove(profile._id);
      expect(refused.statusCode).toBe(409);
      expect(refused.headers['content-type']).toContain('application/problem+json');
      expect(refused.json().detail).toContain('bound-profile');
      expect((await get(`${PROFILES}/${profile._id}`)).statusCode).toBe(200);
      expect((await get(`${BINDINGS}/${binding.id}`)).statusCode).toBe(200);
      expect((await remove(standard._id)).statusCode).toBe(409);
      await unbind(binding.id);
      expect((await remove(profile._id)).statusCode).toBe(200);
      expect((await get(`${PROFILES}/${profile._id}`)).statusCode).toBe(404);
    });
  });

  describe('name availability', () => {
    it('answers {result: true} for a free valid name', async () => {
      const response = await availability('?name=Free%20Name.1');
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ result: true });
    });

    it.each([['Standard'], ['standard'], ['STANDARD'], ['sTaNdArD']])('answers taken for %s', async (name) => {
      const response = await availability(`?name=${name}`);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ result: false, reason: 'taken', msg: expect.stringContaining('Standard') });
    });

    it('follows creations and renames', async () => {
      expect((await availability('?name=soon-taken')).json()).toEqual({ result: true });
      const profile = await create({ name: 'Soon-Taken' });
      expect((await availability('?name=soon-taken')).json()).toMatchObject({ result: false, reason: 'taken' });
      await put(profile._id, { name: 'renamed-away' });
      expect((await availability('?name=soon-taken')).json()).toEqual({ result: true });
      expect((await availability('?name=RENAMED-AWAY')).json()).toMatchObject({ result: false, reason: 'taken' });
    });

    it.each([
      ['missing', ''],
      ['empty', '?name='],
      ['blank', '?name=%20%20'],
      ['with a leading space', '?name=%20x'],
      ['with a trailing space', '?name=x%20'],
      ['with a slash', '?name=a%2Fb'],
      ['with a "!"', '?name=bad!'],
      ['200 characters long', `?name=${'n'.repeat(200)}`],
      ['129 characters long', `?name=${'n'.repeat(129)}`],
      ['given twice', '?name=a&name=b'],
    ])('answers invalid, with 200, for a name %s', async (_case, query) => {
      const response = await availability(query);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ result: false, reason: 'invalid', msg: expect.any(String) });
      expect(response.json().msg.length).toBeGreaterThan(0);
    });
  });

  describe('query', () => {
    const fixtures: Profile[] = [];
    let nsA: { id: string; name: string };
    let nsB: { id: string; name: string };
    let nsEmpty: { id: string; name: string };
    const byName = (name: string) => fixtures.find((profile) => profile.name === name) as Profile;

    beforeAll(async () => {
      for (const name of ['q-alpha', 'q-Beta', 'q-gamma_1', 'q-gammaX', 'q-delta']) {
        fixtures.push(await create({ name }));
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      // q-delta is modified last, after every other fixture.
      const modified = await patch(byName('q-delta')._id, [{ op: 'add', path: '/description', value: 'touched' }]);
      fixtures[4] = modified.json();
      nsA = await createNamespace('q-ns-a');
      nsB = await createNamespace('q-ns-b');
      nsEmpty = await createNamespace('q-ns-empty');
      await bind(byName('q-alpha')._id, nsA.id);
      await bind(byName('q-Beta')._id, nsA.id, true);
      await bind(byName('q-Beta')._id, nsB.id);
      await bind(byName('q-gamma_1')._id, nsB.id, true);
    });

    it('filters name with EQ (exact case), CO and SW (ignoring case)', async () => {
      expect(await names('filter[name][EQ]=q-Beta')).toEqual(['q-Beta']);
      expect(await names('filter[name][EQ]=q-beta')).toEqual([]);
      expect(await names('filter[name][CO]=GAMMA')).toEqual(['q-gamma_1', 'q-gammaX']);
      expect(await names('filter[name][CO]=_1')).toEqual(['q-gamma_1']);
      expect(await names('filter[name][SW]=Q-B')).toEqual(['q-Beta']);
      expect(await names('filter[name][SW]=lpha')).toEqual([]);
    });

    it('filters created and modified with LT and GT exactly at a value the API returned', async () => {
      const pivot = byName('q-gamma_1');
      expect(await names(`filter[name][SW]=q-&filter[created][LT]=${pivot._created}`)).toEqual(['q-alpha', 'q-Beta']);
      expect(await names(`filter[name][SW]=q-&filter[created][GT]=${pivot._created}`)).toEqual(['q-delta', 'q-gammaX']);
      const delta = byName('q-delta');
      expect(delta._modified > delta._created).toBe(true);
      expect(await names(`filter[name][SW]=q-&filter[modified][GT]=${byName('q-gammaX')._modified}`)).toEqual(['q-delta']);
      expect(await names(`filter[name][SW]=q-&filter[modified][LT]=${delta._modified}`)).toEqual(['q-alpha', 'q-Beta', 'q-gamma_1', 'q-gammaX']);
      expect(await names(`filter[name][SW]=q-&filter[created][GT]=${byName('q-alpha')._created}&filter[created][LT]=${byName('q-gammaX')._created}`)).toEqual([
        'q-Beta',
        'q-gamma_1',
      ]);
    });

    it('sorts by name ignoring case, by _created and by _modified, each reversed with -', async () => {
      const alphabetical = ['q-alpha', 'q-Beta', 'q-delta', 'q-gamma_1', 'q-gammaX'];
      expect(await names('filter[name][SW]=q-')).toEqual(alphabetical);
      expect(await names('filter[name][SW]=q-&sort=name')).toEqual(alphabetical);
      expect(await names('filter[name][SW]=q-&sort=-name')).toEqual([...alphabetical].reverse());
      const created = ['q-alpha', 'q-Beta', 'q-gamma_1', 'q-gammaX', 'q-delta'];
      expect(await names('filter[name][SW]=q-&sort=_created')).toEqual(created);
      expect(await names('filter[name][SW]=q-&sort=-_created')).toEqual([...created].reverse());
      expect(await names('filter[name][SW]=q-&sort=_modified')).toEqual(created);
      expect(await names('filter[name][SW]=q-&sort=-_modified')).toEqual(['q-delta', 'q-gammaX', 'q-gamma_1', 'q-Beta', 'q-alpha']);
    });

    it('pages with page[offset] and page[limit], totalCount counting every match', async () => {
      const first = await list('filter[name][SW]=q-&page[limit]=2');
      expect(first.totalCount).toBe(5);
      expect(first.data.map((profile) => profile.name)).toEqual(['q-alpha', 'q-Beta']);
      const last = await list('filter[name][SW]=q-&page[offset]=4&page[limit]=2');
      expect(last.data.map((profile) => profile.name)).toEqual(['q-gammaX']);
      expect(await list('filter[name][SW]=q-&page[offset]=40')).toEqual({ totalCount: 5, data: [] });
    });

    it('filters hasBindingTo with ANY and ALL, by namespace id or name, in both spellings', async () => {
      expect(await names(`filter[hasBindingTo][ANY]=${nsA.id}`)).toEqual(['q-alpha', 'q-Beta']);
      expect(await names(`filter[hasBindingTo][ANY]=${nsA.name}`)).toEqual(['q-alpha', 'q-Beta']);
      expect(await names(`filter[hasBindingTo][ANY]=${nsA.name.toUpperCase()}`)).toEqual(['q-alpha', 'q-Beta']);
      expect(await names(`filter[hasBindingTo][ANY]=${nsA.id.toUpperCase()}`)).toEqual(['q-alpha', 'q-Beta']);
      expect(await names(`hasBindingTo=${nsB.name}`)).toEqual(['q-Beta', 'q-gamma_1']);
      expect(await names(`filter[hasBindingTo][ANY]=${nsA.id},${nsB.name}`)).toEqual(['q-alpha', 'q-Beta', 'q-gamma_1']);
      expect(await names(`filter[hasBindingTo][ANY]=${nsA.name}&filter[hasBindingTo][ANY]=${nsB.id}`)).toEqual(['q-alpha', 'q-Beta', 'q-gamma_1']);
      expect(await names(`hasBindingTo=${nsA.id}&hasBindingTo=${nsB.id}`)).toEqual(['q-alpha', 'q-Beta', 'q-gamma_1']);
      expect(await names(`filter[hasBindingTo][ALL]=${nsA.id},${nsB.name}`)).toEqual(['q-Beta']);
      expect(await names(`filter[hasBindingTo][ALL]=${nsA.name},${nsA.id}`)).toEqual(['q-alpha', 'q-Beta']);
      expect(await names(`filter[hasBindingTo][ALL]=${nsB.id}`)).toEqual(['q-Beta', 'q-gamma_1']);
      expect(await names('filter[hasBindingTo][ANY]=default')).toEqual(['Standard']);
      expect(await names(`filter[hasBindingTo][ANY]=${nsEmpty.name}`)).toEqual([]);
    });

    it('matches no profile through a namespace that does not exist', async () => {
      expect(await names('filter[hasBindingTo][ANY]=no-such-namespace')).toEqual([]);
      expect(await names(`filter[hasBindingTo][ANY]=${UNKNOWN_ID}`)).toEqual([]);
      expect(await names(`filter[hasBindingTo][ANY]=no-such-namespace,${nsA.name}`)).toEqual(['q-alpha', 'q-Beta']);
      expect(await names(`filter[hasBindingTo][ALL]=${nsA.name},no-such-namespace`)).toEqual([]);
      expect(await names('hasBindingTo=no-such-namespace')).toEqual([]);
    });

    it('filters isDefaultFor by namespace id or name, in both spellings', async () => {
      expect(await names(`filter[isDefaultFor][EQ]=${nsA.id}`)).toEqual(['q-Beta']);
      expect(await names(`filter[isDefaultFor][EQ]=${nsA.name}`)).toEqual(['q-Beta']);
      expect(await names(`isDefaultFor=${nsB.id}`)).toEqual(['q-gamma_1']);
      expect(await names(`isDefaultFor=${nsB.name.toUpperCase()}`)).toEqual(['q-gamma_1']);
      expect(await names(`isDefaultFor=${defaultNamespaceId}`)).toEqual(['Standard']);
      expect(await names('isDefaultFor=default')).toEqual(['Standard']);
      expect(await names(`isDefaultFor=${nsEmpty.id}`)).toEqual([]);
      expect(await names('isDefaultFor=no-such-namespace')).toEqual([]);
      expect(await names(`filter[isDefaultFor][EQ]=${UNKNOWN_ID}`)).toEqual([]);
    });

    it('combines filters with AND', async () => {
      expect(await names(`hasBindingTo=${nsA.id}&filter[name][CO]=beta`)).toEqual(['q-Beta']);
      expect(await names(`hasBindingTo=${nsA.id}&isDefaultFor=${nsB.id}`)).toEqual([]);
      expect(await names(`filter[hasBindingTo][ALL]=${nsB.id}&isDefaultFor=${nsA.id}`)).toEqual(['q-Beta']);
      expect(await names(`hasBindingTo=${nsA.name},${nsB.name}&sort=-name`)).toEqual(['q-gamma_1', 'q-Beta', 'q-alpha']);
    });

    // The plain and the filter[...] spellings of one filter in one request: like any two filters they
    // combine with AND (or, like a repeated EQ, they are refused); one must not silently replace the other.
    it('applies both spellings of isDefaultFor given together, in either order', async () => {
      for (const query of [`isDefaultFor=${nsA.id}&filter[isDefaultFor][EQ]=${nsB.id}`, `filter[isDefaultFor][EQ]=${nsB.id}&isDefaultFor=${nsA.id}`]) {
        const response = await get(`${PROFILES}?${query}`);
        if (response.statusCode !== 400) expect(response.json<ProfileList>().data.map((profile) => profile.name)).toEqual([]);
      }
    });

    it('applies hasBindingTo ANY (plain) and ALL together', async () => {
      expect(await names(`hasBindingTo=${nsA.id}&filter[hasBindingTo][ALL]=${nsB.id}`)).toEqual(['q-Beta']);
      expect(await names(`filter[hasBindingTo][ALL]=${nsA.id}&hasBindingTo=${nsB.name},${nsEmpty.name}`)).toEqual(['q-Beta']);
    });

    it('applies both spellings of hasBindingTo with ANY given together, as an intersection or a union', async () => {
      const response = await get(`${PROFILES}?hasBindingTo=${nsA.id}&filter[hasBindingTo][ANY]=${nsB.id}`);
      if (response.statusCode !== 400) {
        expect(response.statusCode).toBe(200);
        expect([['q-Beta'], ['q-alpha', 'q-Beta', 'q-gamma_1']]).toContainEqual(response.json<ProfileList>().data.map((profile) => profile.name));
      }
    });

    it('filters hasPermission for the administrator: every profile for Read, Use, Delete and Update', async () => {
      const everything = await list('page[limit]=1000');
      for (const action of ['Read', 'Use', 'Delete', 'Update']) {
        expect((await list(`hasPermission=${action}&page[limit]=1000`)).data).toEqual(everything.data);
        expect((await list(`filter[hasPermission][EQ]=${action}&page[limit]=1000`)).totalCount).toBe(everything.totalCount);
      }
    });

    it('keeps, for hasPermission=Use, only the profile a user may use in *', async () => {
      const user = await newUser('use-one');
      await grant(user.id, '*', [allow('/ExecutionProfiles', ['Read']), allow(`/ExecutionProfiles/${byName('q-gammaX')._id}`, ['Use'])]);
      const everything = await list('page[limit]=1000');
      expect((await list('page[limit]=1000', user.as)).totalCount).toBe(everything.totalCount);
      expect(await names('hasPermission=Use', user.as)).toEqual(['q-gammaX']);
      expect(await names('filter[hasPermission][EQ]=Use', user.as)).toEqual(['q-gammaX']);
      expect(await names('hasPermission=Read', user.as)).toEqual([]);
      expect(await names('hasPermission=Update', user.as)).toEqual([]);
      expect(await names('hasPermission=Delete', user.as)).toEqual([]);
      expect(await names('hasPermission=Use&filter[name][CO]=alpha', user.as)).toEqual([]);
    });

    it('applies both spellings of hasPermission given together', async () => {
      const user = await newUser('use-and-read');
      await grant(user.id, '*', [allow('/ExecutionProfiles', ['Read']), allow(`/ExecutionProfiles/${byName('q-alpha')._id}`, ['Use'])]);
      expect(await names('hasPermission=Use', user.as)).toEqual(['q-alpha']);
      // Use AND Read, which the user holds on no profile (or a 400, as for a repeated EQ).
      for (const query of ['filter[hasPermission][EQ]=Read&hasPermission=Use', 'hasPermission=Read&filter[hasPermission][EQ]=Use']) {
        const response = await get(`${PROFILES}?${query}`, user.as);
        if (response.statusCode !== 400) expect(response.json<ProfileList>().data).toEqual([]);
      }
    });

    it('keeps, for hasPermission=Use, the profiles bound to the namespace a user may use them in', async () => {
      const user = await newUser('use-in-a');
      await grant(user.id, '*', [allow('/ExecutionProfiles', ['Read'])]);
      await grant(user.id, nsA.name, [allow('/ExecutionProfiles/*', ['Use'])]);
      expect(await names('hasPermission=Use', user.as)).toEqual(['q-alpha', 'q-Beta']);
      expect(await names('filter[hasPermission][EQ]=Use', user.as)).toEqual(['q-alpha', 'q-Beta']);
      expect(await names('hasPermission=Read', user.as)).toEqual([]);
      await grant(user.id, nsB.name, [allow(`/ExecutionProfiles/${byName('q-gamma_1')._id}`, ['Use'])]);
      expect(await names('hasPermission=Use', user.as)).toEqual(['q-alpha', 'q-Beta', 'q-gamma_1']);
    });

    it('keeps, for hasPermission Update, Delete and Read, the profiles with that very action', async () => {
      const user = await newUser('mixed');
      await grant(user.id, '*', [
        allow('/ExecutionProfiles', ['Read']),
        allow(`/ExecutionProfiles/${byName('q-alpha')._id}`, ['Update']),
        allow(`/ExecutionProfiles/${byName('q-delta')._id}`, ['Delete', 'Read']),
      ]);
      expect(await names('hasPermission=Update', user.as)).toEqual(['q-alpha']);
      expect(await names('hasPermission=Delete', user.as)).toEqual(['q-delta']);
      expect(await names('hasPermission=Read', user.as)).toEqual(['q-delta']);
      expect(await names('hasPermission=Use', user.as)).toEqual([]);
      await grant(user.id, '*', [{ object: '/ExecutionProfiles/*', objectMatcher: 'simple', actions: ['Update'], effect: 'Deny' }]);
      expect(await names('hasPermission=Update', user.as)).toEqual([]);
    });

    it.each([
      ['an action hasPermission does not take (plain)', 'hasPermission=Execute', 'filter[hasPermission][EQ]'],
      ['an action hasPermission does not take', 'filter[hasPermission][EQ]=Create', 'filter[hasPermission][EQ]'],
      ['an action in the wrong case', 'hasPermission=use', 'filter[hasPermission][EQ]'],
      ['an empty hasPermission', 'hasPermission=', 'filter[hasPermission][EQ]'],
      ['an operator hasPermission does not take', 'filter[hasPermission][IN]=Use', 'filter[hasPermission][IN]'],
      ['an operator hasBindingTo does not take', 'filter[hasBindingTo][EQ]=default', 'filter[hasBindingTo][EQ]'],
      ['an empty hasBindingTo', 'hasBindingTo=', 'filter[hasBindingTo][ANY]'],
      ['an operator isDefaultFor does not take', 'filter[isDefaultFor][IN]=default', 'filter[isDefaultFor][IN]'],
      ['an operator name does not take', 'filter[name][ST]=q', 'filter[name][ST]'],
      ['an empty CO value', 'filter[name][CO]=', 'filter[name][CO]'],
      ['an unknown field', 'filter[isDefault][EQ]=true', 'filter[isDefault][EQ]'],
      ['the created filter spelled _created', 'filter[_created][LT]=2026-01-01T00:00:00.000Z', 'filter[_created][LT]'],
      ['a bad date-time', 'filter[created][LT]=yesterday', 'filter[created][LT]'],
      ['a date-time with an operator it does not take', 'filter[modified][EQ]=2026-01-01T00:00:00.000Z', 'filter[modified][EQ]'],
      ['an unknown sort', 'sort=description', 'sort'],
      ['a sort spelled created', 'sort=created', 'sort'],
      ['two sorts', 'sort=name,-_created', 'sort'],
      ['a limit over 1000', 'page[limit]=1001', 'page[limit]'],
      ['an unknown parameter', 'namespace=default', 'namespace'],
    ])('refuses %s with 400 naming the parameter', async (_case, query, parameter) => {
      const response = await get(`${PROFILES}?${query}`);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(problemPaths(response)).toEqual([parameter]);
    });
  });

  describe('the default profile', () => {
    afterAll(async () => {
      const restored = await patch(standard._id, [{ op: 'replace', path: '/isDefault', value: true }]);
      expect(restored.statusCode).toBe(200);
    });

    it('moves to a profile created with isDefault true', async () => {
      expect(await defaultProfiles()).toEqual(['Standard']);
      const first = await create({ name: 'default-1', isDefault: true });
      expect(first.isDefault).toBe(true);
      expect((await read(standard._id)).isDefault).toBe(false);
      expect(await defaultProfiles()).toEqual(['default-1']);
    });

    it('moves to a profile patched or replaced with isDefault true', async () => {
      const second = await create({ name: 'default-2' });
      const patched = await patch(second._id, [{ op: 'replace', path: '/isDefault', value: true }]);
      expect(patched.statusCode).toBe(200);
      expect(patched.json().isDefault).toBe(true);
      expect(await defaultProfiles()).toEqual(['default-2']);
      const third = await create({ name: 'default-3' });
      const replaced = await put(third._id, { name: 'default-3', isDefault: true });
      expect(replaced.json().isDefault).toBe(true);
      expect(await defaultProfiles()).toEqual(['default-3']);
    });

    it('stays with a default profile that is changed without giving the flag up, and is lost by one that gives it up', async () => {
      const current = (await list('filter[name][EQ]=default-3')).data[0];
      const kept = await patch(current._id, [{ op: 'add', path: '/description', value: 'still default' }]);
      expect(kept.json().isDefault).toBe(true);
      expect(await defaultProfiles()).toEqual(['default-3']);
      const dropped = await put(current._id, { name: 'default-3' });
      expect(dropped.json().isDefault).toBe(false);
      expect(await defaultProfiles()).toEqual([]);
    });

    it('stays unique when several requests claim it at once', async () => {
      const contenders = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => create({ name: `contender-${n}` })));
      for (let round = 0; round < 3; round += 1) {
        const responses = await Promise.all(contenders.map((profile) => patch(profile._id, [{ op: 'replace', path: '/isDefault', value: true }])));
        for (const response of responses) expect([200, 409]).toContain(response.statusCode);
        const defaults = await defaultProfiles();
        expect(defaults).toHaveLength(1);
        expect(defaults[0]).toMatch(/^contender-/);
      }
      const created = await Promise.all([1, 2, 3, 4].map((n) => post({ name: `contender-new-${n}`, isDefault: true })));
      for (const response of created) expect([201, 409]).toContain(response.statusCode);
      expect(await defaultProfiles()).toHaveLength(1);
    });
  });

  describe('access', () => {
    let profile: Profile;

    beforeAll(async () => {
      profile = await create({ name: 'guarded-profile', description: 'Only for some' });
    });

    it('answers 403 on list, create and name availability, and 404 on a single profile, to a user without bindings', async () => {
      const { as } = await newUser('nobody');
      expect((await get(PROFILES, as)).statusCode).toBe(403);
      expect((await get(`${PROFILES}?hasPermission=Use`, as)).statusCode).toBe(403);
      const created = await post({ name: 'by-nobody' }, as);
      expect(created.statusCode).toBe(403);
      expect(created.headers['content-type']).toContain('application/problem+json');
      expect((await get(`${AVAILABILITY}?name=x`, as)).statusCode).toBe(403);
      expect((await get(`${PROFILES}/${profile._id}`, as)).statusCode).toBe(404);
      expect((await hub.inject({ method: 'PUT', url: `${PROFILES}/${profile._id}`, headers: as, payload: { name: 'taken-over' } })).statusCode).toBe(404);
      expect(
        (
          await hub.inject({
            method: 'PATCH',
            url: `${PROFILES}/${profile._id}`,
            headers: { ...as, 'content-type': 'application/json-patch+json' },
            payload: '[]',
          })
        ).statusCode,
      ).toBe(404);
      expect((await hub.inject({ method: 'DELETE', url: `${PROFILES}/${profile._id}`, headers: as })).statusCode).toBe(404);
      expect(await read(profile._id)).toEqual(profile);
      expect((await availability('?name=by-nobody')).json()).toEqual({ result: true });
    });

    it('lets a reader read, but answers 403 to its create, replace, patch and delete', async () => {
      const user = await newUser('reader');
      await grant(user.id, '*', [allow('/ExecutionProfiles', ['Read']), allow('/ExecutionProfiles/*', ['Read'])]);
      expect((await get(PROFILES, user.as)).statusCode).toBe(200);
      expect((await get(`${PROFILES}/${profile._id}`, user.as)).json()).toEqual(profile);
      expect((await get(`${AVAILABILITY}?name=guarded-profile`, user.as)).json()).toMatchObject({ result: false, reason: 'taken' });
      expect((await post({ name: 'by-reader' }, user.as)).statusCode).toBe(403);
      expect((await hub.inject({ method: 'PUT', url: `${PROFILES}/${profile._id}`, headers: user.as, payload: { name: 'by-reader' } })).statusCode).toBe(403);
      const patched = await hub.inject({
        method: 'PATCH',
        url: `${PROFILES}/${profile._id}`,
        headers: { ...user.as, 'content-type': 'application/json-patch+json' },
        payload: JSON.stringify([{ op: 'replace', path: '/name', value: 'by-reader' }]),
      });
      expect(patched.statusCode).toBe(403);
      expect((await hub.inject({ method: 'DELETE', url: `${PROFILES}/${profile._id}`, headers: user.as })).statusCode).toBe(403);
      expect(await read(profile._id)).toEqual(profile);
      expect((await availability('?name=by-reader')).json()).toEqual({ result: true });
    });

    it('lets a user with Update on one profile change it, and only it', async () => {
      const user = await newUser('updater');
      const other = await createNamed('other-profile');
      await grant(user.id, '*', [allow('/ExecutionProfiles/*', ['Read']), allow(`/ExecutionProfiles/${profile._id}`, ['Update'])]);
      const changed = await hub.inject({
        method: 'PUT',
        url: `${PROFILES}/${profile._id}`,
        headers: user.as,
        payload: { name: 'guarded-profile', description: 'New' },
      });
      expect(changed.statusCode).toBe(200);
      expect(changed.json().description).toBe('New');
      expect((await hub.inject({ method: 'PUT', url: `${PROFILES}/${other._id}`, headers: user.as, payload: { name: other.name } })).statusCode).toBe(403);
      expect((await hub.inject({ method: 'DELETE', url: `${PROFILES}/${profile._id}`, headers: user.as })).statusCode).toBe(403);
      profile = await read(profile._id);
    });

    it('lets a user with Create on /ExecutionProfiles create one', async () => {
      const user = await newUser('creator');
      await grant(user.id, '*', [allow('/ExecutionProfiles', ['Create'])]);
      const response = await post({ name: 'by-creator' }, user.as);
      expect(response.statusCode).toBe(201);
      expect((await get(`${PROFILES}/${response.json()._id}`, user.as)).statusCode).toBe(404);
    });

    it.each([
      ['GET', PROFILES],
      ['POST', PROFILES],
      ['GET', AVAILABILITY],
      ['GET', `${PROFILES}/${UNKNOWN_ID}`],
      ['PUT', `${PROFILES}/${UNKNOWN_ID}`],
      ['PATCH', `${PROFILES}/${UNKNOWN_ID}`],
      ['DELETE', `${PROFILES}/${UNKNOWN_ID}`],
    ] as const)('%s %s answers 401 without credentials', async (method, url) => {
      const response = await hub.inject({ method, url, payload: method === 'GET' || method === 'DELETE' ? undefined : {} });
      expect(response.statusCode).toBe(401);
    });
  });
});

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { bearer, claimsOf, problemPaths, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

interface Permission {
  object: string;
  objectMatcher: string;
  actions: string[];
  effect: string;
}

interface Role {
  id: string;
  created: string;
  modified: string;
  name: string;
  description?: string;
  permissions: Permission[];
  system: boolean;
}

interface RoleList {
  totalCount: number;
  data: Role[];
}

interface Binding {
  id: string;
  created: string;
  role: string;
  principal: string;
  namespace: string;
}

interface BindingList {
  data: Binding[];
  totalCount: number;
  roles: Record<string, string>;
}

type Headers = Record<string, string>;

const ROLES = '/api/v2/rbac/roles';
const BINDINGS = '/api/v2/rbac/rolebindings';
const USERS = '/api/v2/auth/users';
const GROUPS = '/api/v2/auth/groups';
const NAMESPACES = '/api/v2/namespaces';
const UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-000000000000';
const PASSWORD = 'a-rbac-user-password';
const BUILT_IN = ['ClusterAdministrator', 'HubAdministrator', 'NamespaceUser', 'PipelineDeveloper', 'PublishedLibraryConsumer', 'SessionUser'];
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const allow = (object: string, actions: string[], objectMatcher = 'simple'): Permission => ({ object, objectMatcher, actions, effect: 'Allow' });
const deny = (object: string, actions: string[], objectMatcher = 'simple'): Permission => ({ object, objectMatcher, actions, effect: 'Deny' });
const READ_ROLES = [allow('/Roles', ['Read']), allow('/Roles/*', ['Read'])];
const READ_BINDINGS = [allow('/RoleBindings', ['Read'])];

describe('roles and role bindings', () => {
  let hub: TestHub;
  let auth: Headers;
  let adminId: string;
  /** Role, user and group names by id, to show bindings as `<role> <principal> <namespace>`. */
  const names = new Map<string, string>();
  const builtIn: Record<string, Role> = {};

  const sql = <T = unknown>(query: string, parameters: unknown[] = []): Promise<T> => hub.app.get(DataSource).query(query, parameters);
  const get = (url: string, headers: Headers = auth) => hub.inject({ method: 'GET', url, headers });

  const postRole = (payload: unknown, headers: Headers = auth) => hub.inject({ method: 'POST', url: ROLES, headers, payload: payload as object });
  const createRole = async (name: string, permissions: Permission[] = [], extra: object = {}): Promise<Role> => {
    const response = await postRole({ name, permissions, ...extra });
    expect(response.statusCode).toBe(201);
    const role: Role = response.json();
    names.set(role.id, role.name);
    return role;
  };
  const readRole = async (id: string): Promise<InjectResponse> => {
    const response = await get(`${ROLES}/${id}`);
    expect(response.statusCode).toBe(200);
    return response;
  };
  const putRole = (id: string, payload: object, headers: Headers = {}) =>
    hub.inject({ method: 'PUT', url: `${ROLES}/${id}`, headers: { ...auth, ...headers }, payload });
  const patchRole = (id: string, operations: unknown, headers: Headers = {}) =>
    hub.inject({
      method: 'PATCH',
      url: `${ROLES}/${id}`,
      headers: { ...auth, 'content-type': 'application/json-patch+json', ...headers },
      payload: JSON.stringify(operations),
    });
  const deleteRole = (id: string, headers: Headers = {}) => hub.inject({ method: 'DELETE', url: `${ROLES}/${id}`, headers: { ...auth, ...headers } });
  const listRoles = async (query: string): Promise<RoleList> => {
    const response = await get(`${ROLES}?${query}`);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const roleNames = async (query: string): Promise<string[]> => (await listRoles(query)).data.map((role) => role.name);

  const postBinding = (payload: unknown, headers: Headers = auth) => hub.inject({ method: 'POST', url: BINDINGS, headers, payload: payload as object });
  const bind = async (role: string, principal: string, namespace = '*'): Promise<Binding> => {
    const response = await postBinding({ role, principal, namespace });
    expect(response.statusCode).toBe(201);
    return response.json();
  };
  const listBindings = async (query: string, headers: Headers = auth): Promise<BindingList> => {
    const response = await get(`${BINDINGS}?${query}`, headers);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const line = (binding: Binding) => `${names.get(binding.role)} ${names.get(binding.principal)} ${binding.namespace}`;
  const bindingLines = async (query: string, headers: Headers = auth): Promise<string[]> => (await listBindings(query, headers)).data.map(line);
  const deleteBindings = (query: string, headers: Headers = auth) => hub.inject({ method: 'DELETE', url: `${BINDINGS}?${query}`, headers });
  const deletedCount = async (query: string): Promise<number> => {
    const response = await deleteBindings(query);
    expect(response.statusCode).toBe(200);
    expect(Object.keys(response.json())).toEqual(['count']);
    return response.json().count;
  };

  const createUser = async (userName: string): Promise<string> => {
    const response = await hub.inject({ method: 'POST', url: USERS, headers: auth, payload: { userName, password: PASSWORD } });
    expect(response.statusCode).toBe(201);
    const id: string = response.json()._id;
    names.set(id, userName);
    return id;
  };
  const createGroup = async (name: string): Promise<string> => {
    const response = await hub.inject({ method: 'POST', url: GROUPS, headers: auth, payload: { name } });
    expect(response.statusCode).toBe(201);
    const id: string = response.json()._id;
    names.set(id, name);
    return id;
  };
  const addMember = async (groupId: string, memberId: string) => {
    const response = await hub.inject({
      method: 'PATCH',
      url: `${GROUPS}/${groupId}/members`,
      headers: { ...auth, 'content-type': 'application/json' },
      payload: JSON.stringify([{ op: 'add', id: memberId }]),
    });
    expect(response.statusCode).toBe(200);
  };
  const createNamespace = async (name: string): Promise<string> => {
    const response = await hub.inject({ method: 'POST', url: NAMESPACES, headers: auth, payload: { name } });
    expect(response.statusCode).toBe(201);
    return response.json()._id;
  };
  /** A user with no bindings, and its bearer header. */
  const userWithToken = async (userName: string): Promise<{ id: string; as: Headers }> => {
    const id = await createUser(userName);
    return { id, as: bearer(await hub.login(userName, PASSWORD)) };
  };

  beforeAll(async () => {
    hub = await startTestHub();
    auth = bearer(hub.adminToken);
    adminId = claimsOf(hub.adminToken).sub as string;
    names.set(adminId, 'admin');
    for (const role of (await listRoles('filter[system][EQ]=true')).data) {
      builtIn[role.name] = role;
      names.set(role.id, role.name);
    }
  });
  afterAll(() => hub.close());

  describe('a fresh hub', () => {
    it('has exactly the six built-in roles, all system, HubAdministrator allowing every action on /** (glob)', async () => {
      const page = await listRoles('');
      expect(page.totalCount).toBe(6);
      expect(page.data.map((role) => role.name)).toEqual(BUILT_IN);
      expect(page.data.map((role) => role.system)).toEqual(BUILT_IN.map(() => true));
      expect(page.data.find((role) => role.name === 'HubAdministrator')).toEqual({
        id: builtIn.HubAdministrator.id,
        created: expect.stringMatching(ISO_DATE_TIME),
        modified: expect.stringMatching(ISO_DATE_TIME),
        name: 'HubAdministrator',
        description: expect.any(String),
        permissions: [{ object: '/**', objectMatcher: 'glob', actions: ['*'], effect: 'Allow' }],
        system: true,
      });
      for (const role of page.data.filter((r) => r.name !== 'HubAdministrator')) expect(role.permissions.length).toBeGreaterThan(0);
    });

    it('lists exactly one role binding: HubAdministrator for the administrator in *', async () => {
      const page = await listBindings('');
      expect(page).toEqual({
        totalCount: 1,
        data: [
          { id: expect.any(String), created: expect.stringMatching(ISO_DATE_TIME), role: builtIn.HubAdministrator.id, principal: adminId, namespace: '*' },
        ],
        roles: { [builtIn.HubAdministrator.id]: 'HubAdministrator' },
      });
    });
  });

  describe('create role', () => {
    it('returns 201 with the role, an ETag and its Location, and reads back the same', async () => {
      const permissions = [allow('/Pipelines/*', ['Read', 'Execute']), deny('/Credentials/**', ['*'], 'glob'), allow('/Users/[0-9a-f-]+', ['Update'], 'regex')];
      const response = await postRole({ name: 'Auditor', description: 'Reads pipelines', permissions });
      expect(response.statusCode).toBe(201);
      expect(response.headers['content-type']).toContain('application/json');
      const role: Role = response.json();
      expect(role).toEqual({
        id: expect.any(String),
        created: expect.stringMatching(ISO_DATE_TIME),
        modified: expect.stringMatching(ISO_DATE_TIME),
        name: 'Auditor',
        description: 'Reads pipelines',
        permissions,
        system: false,
      });
      expect(role.modified).toBe(role.created);
      expect(response.headers.etag).toBe('"1"');
      expect(response.headers.location).toBe(`${ROLES}/${role.id}`);
      const read = await readRole(role.id);
      expect(read.json()).toEqual(role);
      expect(read.headers.etag).toBe('"1"');
    });

    it('leaves description out and permissions empty when none are given, accepting system false', async () => {
      const response = await postRole({ name: 'bare-role', system: false });
      expect(response.statusCode).toBe(201);
      const role: Role = response.json();
      expect(Object.keys(role).sort()).toEqual(['created', 'id', 'modified', 'name', 'permissions', 'system']);
      expect(role).toMatchObject({ permissions: [], system: false });
    });

    it('collapses duplicate actions of a permission, keeping their first order', async () => {
      const role = await createRole('dedup-role', [allow('/Pipelines', ['Update', 'Read', 'Update', 'Read', 'Delete'])]);
      expect(role.permissions).toEqual([allow('/Pipelines', ['Update', 'Read', 'Delete'])]);
      expect((await readRole(role.id)).json().permissions).toEqual(role.permissions);
    });

    it('ignores server-owned fields', async () => {
      const role = await createRole('owned-on-create', [], { id: UNKNOWN_ID, created: '2000-01-01T00:00:00.000Z', modified: 'x' });
      expect(role.id).not.toBe(UNKNOWN_ID);
      expect(role.created.startsWith('2000')).toBe(false);
      expect((await get(`${ROLES}/${UNKNOWN_ID}`)).statusCode).toBe(404);
    });

    it.each([
      ['a single character', 'x'],
      ['a single digit', '7'],
      ['128 characters', 'r'.repeat(128)],
      ['inner spaces', 'Role  With Spaces'],
      ['letters outside ASCII', 'Rôle Ünïcode'],
      ['every allowed punctuation', 'ops.role@site-1_b'],
    ])('accepts a name of %s', async (_case, name) => {
      expect((await createRole(name)).name).toBe(name);
    });

    it('refuses a name taken ignoring case, a built-in one included, with 409', async () => {
      await createRole('Unique Role');
      const response = await postRole({ name: 'UNIQUE role' });
      expect(response.statusCode).toBe(409);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json().detail).toBe("A role named 'UNIQUE role' already exists (names are compared ignoring case)");
      const builtInName = await postRole({ name: 'hubadministrator', permissions: [] });
      expect(builtInName.statusCode).toBe(409);
      expect(await roleNames('filter[name][CO]=unique role')).toEqual(['Unique Role']);
      expect(await roleNames('filter[name][CO]=hubadministrator')).toEqual(['HubAdministrator']);
    });

    const permission = (changes: Record<string, unknown>, omit?: string) => {
      const value: Record<string, unknown> = { ...allow('/Pipelines', ['Read']), ...changes };
      if (omit) delete value[omit];
      return value;
    };

    it.each([
      ['no name', { permissions: [] }, ['/name']],
      ['an empty name', { name: '' }, ['/name']],
      ['a name with a leading space', { name: ' lead' }, ['/name']],
      ['a name with a trailing space', { name: 'trail ' }, ['/name']],
      ['a name of 129 characters', { name: 'v'.repeat(129) }, ['/name']],
      ['a name with a "!"', { name: 'bad!' }, ['/name']],
      ['a name with a slash', { name: 'v/b' }, ['/name']],
      ['a name that is a number', { name: 42 }, ['/name']],
      ['a description that is not a string', { name: 'v-1', description: 5 }, ['/description']],
      ['permissions that are not an array', { name: 'v-2', permissions: 'Read' }, ['/permissions']],
      ['an unknown objectMatcher', { name: 'v-3', permissions: [permission({ objectMatcher: 'prefix' })] }, ['/permissions/0/objectMatcher']],
      ['no objectMatcher', { name: 'v-4', permissions: [permission({}, 'objectMatcher')] }, ['/permissions/0/objectMatcher']],
      ['an unknown effect', { name: 'v-5', permissions: [permission({ effect: 'Maybe' })] }, ['/permissions/0/effect']],
      ['no effect', { name: 'v-6', permissions: [permission({}, 'effect')] }, ['/permissions/0/effect']],
      ['an unknown action', { name: 'v-7', permissions: [permission({ actions: ['Read', 'Write'] })] }, ['/permissions/0/actions']],
      ['an action in the wrong case', { name: 'v-8', permissions: [permission({ actions: ['read'] })] }, ['/permissions/0/actions']],
      ['an empty actions array', { name: 'v-9', permissions: [permission({ actions: [] })] }, ['/permissions/0/actions']],
      ['actions that are not an array', { name: 'v-10', permissions: [permission({ actions: 'Read' })] }, ['/permissions/0/actions']],
      ['no object', { name: 'v-11', permissions: [permission({}, 'object')] }, ['/permissions/0/object']],
      ['an empty object', { name: 'v-12', permissions: [permission({ object: '' })] }, ['/permissions/0/object']],
      ['an invalid regex', { name: 'v-13', permissions: [permission({ object: '(', objectMatcher: 'regex' })] }, ['/permissions/0/object']],
      [
        'an invalid regex in a later permission',
        { name: 'v-14', permissions: [permission({}), permission({ object: '/Pipelines/[a-', objectMatcher: 'regex' })] },
        ['/permissions/1/object'],
      ],
      ['an unknown property of a permission', { name: 'v-15', permissions: [permission({ condition: 'x' })] }, ['/permissions/0/condition']],
      [
        'several bad permissions, reporting each',
        { name: 'v-16', permissions: [permission({ effect: 'Perhaps' }), permission({}), permission({ objectMatcher: 'fuzzy', actions: [] })] },
        ['/permissions/0/effect', '/permissions/2/objectMatcher', '/permissions/2/actions'],
      ],
      ['system true', { name: 'v-17', system: true }, ['/system']],
      ['a system that is not a boolean', { name: 'v-18', system: 'no' }, ['/system']],
      ['an unknown property', { name: 'v-19', members: [] }, ['/members']],
    ])('refuses %s with 400 naming the field', async (_case, payload, paths) => {
      const response = await postRole(payload);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json()).toMatchObject({ status: 400, title: 'Bad Request' });
      expect(problemPaths(response)).toEqual(paths);
      expect(await roleNames('filter[name][CO]=v-')).toEqual([]);
    });
  });

  describe('get role', () => {
    it('answers 404 for an unknown id and for an id that is not a UUID', async () => {
      const unknown = await get(`${ROLES}/${UNKNOWN_ID}`);
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json().detail).toBe(`Role ${UNKNOWN_ID} not found`);
      expect((await get(`${ROLES}/not-a-uuid`)).statusCode).toBe(404);
    });

    it('reads a built-in role', async () => {
      const read = await readRole(builtIn.NamespaceUser.id);
      expect(read.json()).toEqual(builtIn.NamespaceUser);
      expect(read.json().system).toBe(true);
    });
  });

  describe('query roles', () => {
    const fixtures: Record<string, string> = {};
    const createdOrder = ['qr-alpha', 'qr-Beta', 'qr-gamma_1', 'qr-gammaX1', 'qr-delta'];
    const modifiedOrder = ['qr-delta', 'qr-gamma_1', 'qr-alpha', 'qr-gammaX1', 'qr-Beta'];
    const byName = ['qr-alpha', 'qr-Beta', 'qr-delta', 'qr-gamma_1', 'qr-gammaX1'];
    const day = (year: number, index: number) => `${year}-01-0${index + 1}T00:00:00.000Z`;
    const qr = (query: string) => roleNames(`filter[name][CO]=qr-&${query}`);

    beforeAll(async () => {
      for (const name of createdOrder) fixtures[name] = (await createRole(name, [allow(`/Pipelines/${name}`, ['Read'])], { description: `about ${name}` })).id;
      for (const [index, name] of createdOrder.entries()) {
        await sql('UPDATE roles SET created = $2, modified = $3 WHERE id = $1', [fixtures[name], day(2001, index), day(2002, modifiedOrder.indexOf(name))]);
      }
    });

    it('lists by name ignoring case by default, with the total count', async () => {
      const page = await listRoles('filter[name][CO]=qr-');
      expect(page.totalCount).toBe(5);
      expect(page.data.map((role) => role.name)).toEqual(byName);
      expect(page.data[0]).toEqual({
        id: fixtures['qr-alpha'],
        created: day(2001, 0),
        modified: day(2002, 2),
        name: 'qr-alpha',
        description: 'about qr-alpha',
        permissions: [allow('/Pipelines/qr-alpha', ['Read'])],
        system: false,
      });
    });

    it('filters name with EQ (exact) and CO (ignoring case), taking LIKE wildcards literally', async () => {
      expect(await roleNames('filter[name][EQ]=qr-Beta')).toEqual(['qr-Beta']);
      expect(await roleNames('filter[name][EQ]=qr-beta')).toEqual([]);
      expect(await roleNames('filter[name][EQ]=qr-')).toEqual([]);
      expect(await roleNames('filter[name][CO]=GAMMA')).toEqual(['qr-gamma_1', 'qr-gammaX1']);
      expect(await roleNames('filter[name][CO]=a_1')).toEqual(['qr-gamma_1']);
      expect(await roleNames('filter[name][CO]=qr-%25')).toEqual([]);
      expect(await roleNames('filter[name][CO]=administrator')).toEqual(['ClusterAdministrator', 'HubAdministrator']);
    });

    it('filters system with EQ', async () => {
      expect(await roleNames('filter[system][EQ]=true')).toEqual(BUILT_IN);
      expect(await roleNames('filter[system][EQ]=true&filter[name][CO]=qr-')).toEqual([]);
      expect(await qr('filter[system][EQ]=false')).toEqual(byName);
    });

    it('filters created with LT and GT, both exclusive, in any time zone', async () => {
      expect(await qr(`filter[created][LT]=${day(2001, 2)}&sort=created`)).toEqual(['qr-alpha', 'qr-Beta']);
      expect(await qr(`filter[created][GT]=${day(2001, 2)}&sort=created`)).toEqual(['qr-gammaX1', 'qr-delta']);
      expect(await qr('filter[created][LT]=2001-01-03T01:00:00%2B01:00&sort=created')).toEqual(['qr-alpha', 'qr-Beta']);
      expect(await qr(`filter[created][GT]=${day(2001, 0)}&filter[created][LT]=${day(2001, 4)}&sort=created`)).toEqual(['qr-Beta', 'qr-gamma_1', 'qr-gammaX1']);
      expect(await roleNames(`filter[created][LT]=${day(2001, 0)}`)).toEqual([]);
    });

    it('filters modified with LT and GT', async () => {
      expect(await qr(`filter[modified][LT]=${day(2002, 2)}&sort=modified`)).toEqual(['qr-delta', 'qr-gamma_1']);
      expect(await qr(`filter[modified][GT]=${day(2002, 2)}&sort=modified`)).toEqual(['qr-gammaX1', 'qr-Beta']);
      expect(await roleNames(`filter[modified][GT]=${day(2002, 0)}&filter[modified][LT]=${day(2002, 4)}&sort=-modified`)).toEqual([
        'qr-gammaX1',
        'qr-alpha',
        'qr-gamma_1',
      ]);
    });

    it.each([
      ['name', byName],
      ['-name', [...byName].reverse()],
      ['created', createdOrder],
      ['-created', [...createdOrder].reverse()],
      ['modified', modifiedOrder],
      ['-modified', [...modifiedOrder].reverse()],
    ])('sorts with sort=%s', async (sort, expected) => {
      expect(await qr(`sort=${sort}`)).toEqual(expected);
    });

    it('sorts the built-in roles by name ignoring case, and reversed', async () => {
      expect(await roleNames('filter[system][EQ]=true&sort=-name')).toEqual([...BUILT_IN].reverse());
    });

    it('pages with page[offset] and page[limit], totalCount counting every match', async () => {
      const first = await listRoles('filter[name][CO]=qr-&page[limit]=2');
      expect(first.totalCount).toBe(5);
      expect(first.data.map((role) => role.name)).toEqual(['qr-alpha', 'qr-Beta']);
      const middle = await listRoles('filter[name][CO]=qr-&page[offset]=2&page[limit]=2');
      expect(middle.totalCount).toBe(5);
      expect(middle.data.map((role) => role.name)).toEqual(['qr-delta', 'qr-gamma_1']);
      const last = await listRoles('filter[name][CO]=qr-&sort=-created&page[offset]=4&page[limit]=3');
      expect(last).toMatchObject({ totalCount: 5, data: [{ name: 'qr-alpha' }] });
      expect(await listRoles('filter[name][CO]=qr-&page[offset]=5')).toEqual({ totalCount: 5, data: [] });
    });

    it.each([
      ['a projection with fields', 'fields=name', 'fields'],
      ['a projection with excludeFields', 'excludeFields=permissions', 'excludeFields'],
      ['an unknown filter field', 'filter[description][EQ]=x', 'filter[description][EQ]'],
      ['a filter on permissions', 'filter[permissions][EQ]=x', 'filter[permissions][EQ]'],
      ['SW on name', 'filter[name][SW]=qr', 'filter[name][SW]'],
      ['IN on name', 'filter[name][IN]=a,b', 'filter[name][IN]'],
      ['an empty CO value', 'filter[name][CO]=', 'filter[name][CO]'],
      ['a system value that is not a boolean', 'filter[system][EQ]=yes', 'filter[system][EQ]'],
      ['EQ on created', `filter[created][EQ]=${day(2001, 0)}`, 'filter[created][EQ]'],
      ['a bad date-time', 'filter[modified][LT]=yesterday', 'filter[modified][LT]'],
      ['a date-time without zone', 'filter[created][GT]=2026-01-01T00:00:00', 'filter[created][GT]'],
      ['a repeated EQ', 'filter[name][EQ]=a&filter[name][EQ]=b', 'filter[name][EQ]'],
      ['a negative offset', 'page[offset]=-1', 'page[offset]'],
      ['a limit of 0', 'page[limit]=0', 'page[limit]'],
      ['a limit over 1000', 'page[limit]=1001', 'page[limit]'],
      ['a sort on system', 'sort=system', 'sort'],
      ['a sort on description', 'sort=-description', 'sort'],
      ['two sorts', 'sort=name,created', 'sort'],
      ['an unknown parameter', 'limit=5', 'limit'],
    ])('refuses %s with 400 naming the parameter', async (_case, query, parameter) => {
      const response = await get(`${ROLES}?${query}`);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(problemPaths(response)).toEqual([parameter]);
    });
  });

  describe('replace role', () => {
    it('replaces name, description and permissions, ignores server-owned fields and bumps the ETag and modified', async () => {
      const role = await createRole('to-replace', [allow('/Pipelines', ['Read'])], { description: 'before' });
      await sql("UPDATE roles SET modified = '2001-01-01T00:00:00Z' WHERE id = $1", [role.id]);
      const permissions = [deny('/Pipelines/**', ['Delete', 'Update'], 'glob')];
      const response = await putRole(
        role.id,
        { ...role, id: UNKNOWN_ID, created: '2000-01-01T00:00:00.000Z', name: 'Replaced Role', description: 'after', permissions },
        { 'if-match': '"1"' },
      );
      expect(response.statusCode).toBe(200);
      expect(response.headers.etag).toBe('"2"');
      const replaced: Role = response.json();
      expect(replaced).toEqual({ ...role, name: 'Replaced Role', description: 'after', permissions, modified: expect.stringMatching(ISO_DATE_TIME) });
      expect(replaced.modified > '2001-01-01T00:00:00.000Z').toBe(true);
      const read = await readRole(role.id);
      expect(read.json()).toEqual(replaced);
      expect(read.headers.etag).toBe('"2"');
    });

    it('clears an absent description and permissions', async () => {
      const role = await createRole('to-clear', [allow('/Pipelines', ['Read'])], { description: 'gone soon' });
      const response = await putRole(role.id, { name: 'to-clear' });
      expect(response.statusCode).toBe(200);
      expect(response.headers.etag).toBe('"2"');
      expect('description' in response.json()).toBe(false);
      expect(response.json().permissions).toEqual([]);
    });

    it('answers 412 when If-Match names another version, and changes nothing', async () => {
      const role = await createRole('guarded-role');
      const response = await putRole(role.id, { name: 'guarded-role-2' }, { 'if-match': '"7"' });
      expect(response.statusCode).toBe(412);
      expect((await readRole(role.id)).json()).toEqual(role);
      expect((await putRole(role.id, { name: 'guarded-role-2' }, { 'if-match': '*' })).statusCode).toBe(200);
    });

    it('validates like a create and answers 404 for an unknown or malformed id', async () => {
      const role = await createRole('replace-validated', [allow('/Pipelines', ['Read'])]);
      const invalid = await putRole(role.id, { name: 'not valid!', permissions: [{ ...allow('/x', ['Read']), objectMatcher: 'fuzzy' }] });
      expect(invalid.statusCode).toBe(400);
      expect(problemPaths(invalid)).toEqual(['/name', '/permissions/0/objectMatcher']);
      const badRegex = await putRole(role.id, { name: 'replace-validated', permissions: [allow('(', ['Read'], 'regex')] });
      expect(badRegex.statusCode).toBe(400);
      expect(problemPaths(badRegex)).toEqual(['/permissions/0/object']);
      const promoted = await putRole(role.id, { name: 'replace-validated', system: true });
      expect(promoted.statusCode).toBe(400);
      expect(problemPaths(promoted)).toEqual(['/system']);
      expect((await putRole(UNKNOWN_ID, { name: 'anything' })).statusCode).toBe(404);
      expect((await putRole('not-a-uuid', { name: 'anything' })).statusCode).toBe(404);
      const read = await readRole(role.id);
      expect(read.json()).toEqual(role);
      expect(read.headers.etag).toBe('"1"');
      expect((await putRole(role.id, { name: 'replace-validated', system: false })).statusCode).toBe(200);
    });

    it('answers 409 for a name taken ignoring case, and allows a change of case of its own name', async () => {
      await createRole('Taken Role');
      const role = await createRole('replace-conflicts');
      const taken = await putRole(role.id, { name: 'taken ROLE' });
      expect(taken.statusCode).toBe(409);
      expect(taken.json().detail).toBe("A role named 'taken ROLE' already exists (names are compared ignoring case)");
      expect((await putRole(role.id, { name: 'SessionUser' })).statusCode).toBe(409);
      expect((await readRole(role.id)).headers.etag).toBe('"1"');
      const recased = await putRole(role.id, { name: 'REPLACE-conflicts' });
      expect(recased.statusCode).toBe(200);
      expect(recased.json().name).toBe('REPLACE-conflicts');
    });
  });

  describe('patch role', () => {
    it('applies add, replace and remove, accepting application/json too, and bumps the ETag', async () => {
      const role = await createRole('to-patch', [allow('/Pipelines', ['Read'])], { description: 'patched away' });
      const added = await patchRole(role.id, [{ op: 'add', path: '/permissions/-', value: deny('/Credentials/*', ['Use']) }]);
      expect(added.statusCode).toBe(200);
      expect(added.headers.etag).toBe('"2"');
      expect(added.json()).toEqual({ ...role, permissions: [allow('/Pipelines', ['Read']), deny('/Credentials/*', ['Use'])], modified: expect.any(String) });
      const replaced = await patchRole(role.id, [{ op: 'replace', path: '/name', value: 'Patched Role' }], { 'content-type': 'application/json' });
      expect(replaced.statusCode).toBe(200);
      expect(replaced.json()).toMatchObject({ name: 'Patched Role', description: 'patched away' });
      const removed = await patchRole(role.id, [
        { op: 'remove', path: '/description' },
        { op: 'remove', path: '/permissions/0' },
      ]);
      expect(removed.statusCode).toBe(200);
      expect('description' in removed.json()).toBe(false);
      expect(removed.json().permissions).toEqual([deny('/Credentials/*', ['Use'])]);
      expect(removed.headers.etag).toBe('"4"');
      expect((await readRole(role.id)).json()).toEqual(removed.json());
    });

    it('collapses duplicate actions a patch adds', async () => {
      const role = await createRole('patch-dedup', [allow('/Pipelines', ['Read'])]);
      const response = await patchRole(role.id, [
        { op: 'add', path: '/permissions/0/actions/-', value: 'Read' },
        { op: 'add', path: '/permissions/0/actions/-', value: 'Execute' },
      ]);
      expect(response.statusCode).toBe(200);
      expect(response.json().permissions).toEqual([allow('/Pipelines', ['Read', 'Execute'])]);
    });

    it('is all or nothing: a failing operation changes nothing', async () => {
      const role = await createRole('atomic-patch', [allow('/Pipelines', ['Read'])]);
      const response = await patchRole(role.id, [
        { op: 'replace', path: '/name', value: 'atomic-lost' },
        { op: 'remove', path: '/description' },
      ]);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(['/1']);
      expect((await readRole(role.id)).json()).toEqual(role);
      expect(await roleNames('filter[name][EQ]=atomic-lost')).toEqual([]);
    });

    it.each([
      ['an invalid name', [{ op: 'replace', path: '/name', value: 'not valid!' }], ['/name']],
      ['no name', [{ op: 'remove', path: '/name' }], ['/name']],
      ['an unknown objectMatcher', [{ op: 'replace', path: '/permissions/0/objectMatcher', value: 'prefix' }], ['/permissions/0/objectMatcher']],
      ['an unknown effect', [{ op: 'replace', path: '/permissions/0/effect', value: 'Perhaps' }], ['/permissions/0/effect']],
      ['an unknown action', [{ op: 'add', path: '/permissions/0/actions/-', value: 'Write' }], ['/permissions/0/actions']],
      ['an empty actions array', [{ op: 'replace', path: '/permissions/0/actions', value: [] }], ['/permissions/0/actions']],
      ['a missing object', [{ op: 'remove', path: '/permissions/0/object' }], ['/permissions/0/object']],
      [
        'an invalid regex',
        [
          { op: 'replace', path: '/permissions/0/objectMatcher', value: 'regex' },
          { op: 'replace', path: '/permissions/0/object', value: '(' },
        ],
        ['/permissions/0/object'],
      ],
      ['system made true', [{ op: 'replace', path: '/system', value: true }], ['/system']],
      ['an unknown field', [{ op: 'add', path: '/owner', value: 'me' }], ['/owner']],
    ])('validates the result like a replace: refuses %s', async (_case, operations, paths) => {
      const role = await createRole(`patch-validated-${_case.replace(/[^a-z]/g, '')}`, [allow('/Pipelines', ['Read'])]);
      const response = await patchRole(role.id, operations);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(paths);
      expect((await readRole(role.id)).json()).toEqual(role);
    });

    it('honours If-Match and answers 404, 409 and 415 as a replace does', async () => {
      await createRole('patch-taken');
      const role = await createRole('patch-guarded');
      const rename = [{ op: 'replace', path: '/name', value: 'patch-guarded-2' }];
      expect((await patchRole(role.id, rename, { 'if-match': '"2"' })).statusCode).toBe(412);
      expect((await readRole(role.id)).json().name).toBe('patch-guarded');
      expect((await patchRole(role.id, rename, { 'if-match': '"1"' })).statusCode).toBe(200);
      expect((await patchRole(UNKNOWN_ID, rename)).statusCode).toBe(404);
      expect((await patchRole('not-a-uuid', rename)).statusCode).toBe(404);
      expect((await patchRole(role.id, [{ op: 'replace', path: '/name', value: 'PATCH-TAKEN' }])).statusCode).toBe(409);
      expect((await patchRole(role.id, rename, { 'content-type': 'application/merge-patch+json' })).statusCode).toBe(415);
      const read = await readRole(role.id);
      expect(read.json().name).toBe('patch-guarded-2');
      expect(read.headers.etag).toBe('"2"');
    });
  });

  describe('built-in roles', () => {
    const attempts: [string, (role: Role) => Promise<InjectResponse>][] = [
      ['PUT', (role) => putRole(role.id, { name: 'Renamed Builtin', permissions: [] })],
      ['PUT of the body as read', (role) => putRole(role.id, role)],
      ['PATCH', (role) => patchRole(role.id, [{ op: 'replace', path: '/permissions', value: [] }])],
      ['DELETE', (role) => deleteRole(role.id)],
    ];

    it.each(attempts.flatMap(([method, attempt]) => ['HubAdministrator', 'SessionUser'].map((name) => [method, name, attempt] as const)))(
      'refuses %s of %s with 403, naming the role, and changes nothing',
      async (_method, name, attempt) => {
        const role = builtIn[name];
        const before = await readRole(role.id);
        const response = await attempt(role);
        expect(response.statusCode).toBe(403);
        expect(response.headers['content-type']).toContain('application/problem+json');
        expect(response.json().detail).toBe(`Role '${name}' is built in and read-only`);
        const after = await readRole(role.id);
        expect(after.json()).toEqual(before.json());
        expect(after.headers.etag).toBe(before.headers.etag);
      },
    );
  });

  describe('delete role', () => {
    it('deletes with {msg}, then answers 404', async () => {
      const role = await createRole('short-lived-role');
      const response = await deleteRole(role.id);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ msg: "Role 'short-lived-role' deleted" });
      expect((await get(`${ROLES}/${role.id}`)).statusCode).toBe(404);
      expect(await roleNames('filter[name][EQ]=short-lived-role')).toEqual([]);
      expect((await deleteRole(role.id)).statusCode).toBe(404);
      expect((await deleteRole('not-a-uuid')).statusCode).toBe(404);
    });

    it('honours If-Match', async () => {
      const role = await createRole('delete-guarded-role');
      expect((await deleteRole(role.id, { 'if-match': '"2"' })).statusCode).toBe(412);
      await readRole(role.id);
      expect((await deleteRole(role.id, { 'if-match': '"1"' })).statusCode).toBe(200);
    });

    it('refuses with 409 naming the count while bindings give the role, and deletes it once they are gone', async () => {
      const role = await createRole('in-use-role', READ_ROLES);
      const user = await createUser('in-use-user');
      const group = await createGroup('in-use-group');
      await bind(role.id, user);
      await bind(role.id, group);
      const twice = await deleteRole(role.id);
      expect(twice.statusCode).toBe(409);
      expect(twice.headers['content-type']).toContain('application/problem+json');
      expect(twice.json().detail).toBe("Role 'in-use-role' is given by 2 role bindings; delete them first");
      expect(await deletedCount(`filter[role][EQ]=${role.id}&filter[principal][EQ]=${group}`)).toBe(1);
      const once = await deleteRole(role.id);
      expect(once.statusCode).toBe(409);
      expect(once.json().detail).toBe("Role 'in-use-role' is given by 1 role binding; delete them first");
      expect(await bindingLines(`filter[role][EQ]=${role.id}`)).toEqual(['in-use-role in-use-user *']);
      expect(await deletedCount(`filter[role][EQ]=${role.id}`)).toBe(1);
      const deleted = await deleteRole(role.id);
      expect(deleted.statusCode).toBe(200);
      expect(deleted.json()).toEqual({ msg: "Role 'in-use-role' deleted" });
    });
  });

  describe('create role binding', () => {
    let role: Role;
    let user: string;
    let group: string;

    beforeAll(async () => {
      role = await createRole('cb-role', READ_ROLES);
      user = await createUser('cb-user');
      group = await createGroup('cb-group');
      await createNamespace('cb-ns');
    });

    it('returns 201 with the binding of a user in a namespace, which the list then shows', async () => {
      const response = await postBinding({ role: role.id, principal: user, namespace: 'cb-ns' });
      expect(response.statusCode).toBe(201);
      const binding: Binding = response.json();
      expect(binding).toEqual({ id: expect.any(String), created: expect.stringMatching(ISO_DATE_TIME), role: role.id, principal: user, namespace: 'cb-ns' });
      expect(await listBindings(`filter[principal][EQ]=${user}`)).toEqual({ totalCount: 1, data: [binding], roles: { [role.id]: 'cb-role' } });
    });

    it('binds a group, and in * (every namespace)', async () => {
      const binding = await bind(role.id, group);
      expect(binding).toMatchObject({ role: role.id, principal: group, namespace: '*' });
      expect(await listBindings(`filter[principal][EQ]=${group}`)).toEqual({ totalCount: 1, data: [binding], roles: { [role.id]: 'cb-role' } });
    });

    it('refuses a duplicate binding with 409, in a namespace and in *, but takes the same role in another namespace', async () => {
      const principal = await createUser('cb-twice');
      await bind(role.id, principal, 'cb-ns');
      await bind(role.id, principal);
      for (const namespace of ['cb-ns', '*']) {
        const response = await postBinding({ role: role.id, principal, namespace });
        expect(response.statusCode).toBe(409);
        expect(response.headers['content-type']).toContain('application/problem+json');
        expect(response.json().detail).toBe('This principal already has this role in this namespace');
      }
      await bind(role.id, principal, 'default');
      expect((await bindingLines(`filter[principal][EQ]=${principal}`)).sort()).toEqual([
        'cb-role cb-twice *',
        'cb-role cb-twice cb-ns',
        'cb-role cb-twice default',
      ]);
    });

    it.each<[string, (ids: { role: string; user: string; group: string }) => Record<string, unknown>, string[]]>([
      ['an unknown role', ({ user }) => ({ role: UNKNOWN_ID, principal: user, namespace: '*' }), ['/role']],
      ['a role that is not a UUID', ({ user }) => ({ role: 'cb-role', principal: user, namespace: '*' }), ['/role']],
      ['no role', ({ user }) => ({ principal: user, namespace: '*' }), ['/role']],
      ['an unknown principal', ({ role }) => ({ role, principal: UNKNOWN_ID, namespace: '*' }), ['/principal']],
      ['a role id as principal', ({ role }) => ({ role, principal: role, namespace: '*' }), ['/principal']],
      ['a principal that is not a UUID', ({ role }) => ({ role, principal: 'cb-user', namespace: '*' }), ['/principal']],
      ['no principal', ({ role }) => ({ role, namespace: '*' }), ['/principal']],
      ['an unknown namespace', ({ role, user }) => ({ role, principal: user, namespace: 'cb-nowhere' }), ['/namespace']],
      ['a malformed namespace', ({ role, user }) => ({ role, principal: user, namespace: 'cb ns' }), ['/namespace']],
      ['no namespace', ({ role, group }) => ({ role, principal: group }), ['/namespace']],
      ['an unknown property', ({ role, group }) => ({ role, principal: group, namespace: '*', effect: 'Allow' }), ['/effect']],
      [
        'an unknown role, principal and namespace, reporting each',
        () => ({ role: UNKNOWN_ID, principal: UNKNOWN_ID, namespace: 'cb-nowhere' }),
        ['/role', '/principal', '/namespace'],
      ],
    ])('refuses %s with 400 naming the field', async (_case, payload, paths) => {
      const newcomer = await createUser(`cb-${_case.replace(/[^a-z]/g, '').slice(0, 40)}`);
      const body = payload({ role: role.id, user: newcomer, group });
      const response = await postBinding(body);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(problemPaths(response)).toEqual(paths);
      expect((await listBindings(`filter[principal][EQ]=${newcomer}`)).totalCount).toBe(0);
      expect((await listBindings(`filter[principal][EQ]=${group}`)).totalCount).toBe(1);
    });
  });

  describe('query role bindings', () => {
    const roleIds: Record<string, string> = {};
    const principals: Record<string, string> = {};
    /** In created order: `<role> <principal> <namespace>`. */
    const created = ['rb-gamma rbu-Carol *', 'rb-alpha rbu-bob rbq-ns', 'rb-Beta rbg-Anna *', 'rb-alpha rbg-dave *', 'rb-gamma rbu-bob rbq-ns'];
    const ids: string[] = [];
    let all = '';
    const rb = (query: string) => bindingLines(`${all}&${query}`);

    beforeAll(async () => {
      for (const name of ['rb-alpha', 'rb-Beta', 'rb-gamma']) roleIds[name] = (await createRole(name)).id;
      for (const name of ['rbu-Carol', 'rbu-bob']) principals[name] = await createUser(name);
      for (const name of ['rbg-Anna', 'rbg-dave']) principals[name] = await createGroup(name);
      await createNamespace('rbq-ns');
      for (const [index, entry] of created.entries()) {
        const [role, principal, namespace] = entry.split(' ');
        const binding = await bind(roleIds[role], principals[principal], namespace);
        ids.push(binding.id);
        await sql('UPDATE role_bindings SET created = $2 WHERE id = $1', [binding.id, `2001-01-0${index + 1}T00:00:00.000Z`]);
      }
      all = `filter[principal][IN]=${Object.values(principals).join(',')}`;
    });

    it('lists by created by default, with the total count and the names of the roles on the page', async () => {
      const page = await listBindings(all);
      expect(page.totalCount).toBe(5);
      expect(page.data.map(line)).toEqual(created);
      expect(page.data[1]).toEqual({
        id: ids[1],
        created: '2001-01-02T00:00:00.000Z',
        role: roleIds['rb-alpha'],
        principal: principals['rbu-bob'],
        namespace: 'rbq-ns',
      });
      expect(page.roles).toEqual({ [roleIds['rb-alpha']]: 'rb-alpha', [roleIds['rb-Beta']]: 'rb-Beta', [roleIds['rb-gamma']]: 'rb-gamma' });
    });

    it('filters role with EQ', async () => {
      expect(await bindingLines(`filter[role][EQ]=${roleIds['rb-alpha']}`)).toEqual(['rb-alpha rbu-bob rbq-ns', 'rb-alpha rbg-dave *']);
      expect(await bindingLines(`filter[role][EQ]=${roleIds['rb-Beta'].toUpperCase()}`)).toEqual(['rb-Beta rbg-Anna *']);
      expect(await bindingLines(`filter[role][EQ]=${UNKNOWN_ID}`)).toEqual([]);
      expect(await bindingLines(`filter[role][EQ]=${builtIn.HubAdministrator.id}`)).toEqual(['HubAdministrator admin *']);
    });

    it('filters principal with EQ and with IN, comma-separated or repeated', async () => {
      expect(await bindingLines(`filter[principal][EQ]=${principals['rbu-bob']}`)).toEqual(['rb-alpha rbu-bob rbq-ns', 'rb-gamma rbu-bob rbq-ns']);
      expect(await bindingLines(`filter[principal][EQ]=${principals['rbg-Anna']}`)).toEqual(['rb-Beta rbg-Anna *']);
      expect(await bindingLines(`filter[principal][IN]=${principals['rbu-Carol']},${principals['rbg-dave']}`)).toEqual([
        'rb-gamma rbu-Carol *',
        'rb-alpha rbg-dave *',
      ]);
      expect(await bindingLines(`filter[principal][IN]=${principals['rbg-Anna']}&filter[principal][IN]=${principals['rbu-Carol']}`)).toEqual([
        'rb-gamma rbu-Carol *',
        'rb-Beta rbg-Anna *',
      ]);
      expect(await bindingLines(`filter[principal][IN]=${UNKNOWN_ID}`)).toEqual([]);
    });

    it('combines filters with AND', async () => {
      expect(await rb(`filter[role][EQ]=${roleIds['rb-gamma']}`)).toEqual(['rb-gamma rbu-Carol *', 'rb-gamma rbu-bob rbq-ns']);
      expect(await bindingLines(`filter[role][EQ]=${roleIds['rb-gamma']}&filter[principal][EQ]=${principals['rbu-bob']}`)).toEqual(['rb-gamma rbu-bob rbq-ns']);
      expect(await bindingLines(`filter[role][EQ]=${roleIds['rb-Beta']}&filter[principal][EQ]=${principals['rbu-bob']}`)).toEqual([]);
    });

    it.each([
      ['created', created],
      ['-created', [...created].reverse()],
    ])('sorts with sort=%s', async (sort, expected) => {
      expect(await rb(`sort=${sort}`)).toEqual(expected);
    });

    it.each([
      ['role', 0, ['rb-alpha', 'rb-alpha', 'rb-Beta', 'rb-gamma', 'rb-gamma']],
      ['-role', 0, ['rb-gamma', 'rb-gamma', 'rb-Beta', 'rb-alpha', 'rb-alpha']],
      ['principal', 1, ['rbg-Anna', 'rbg-dave', 'rbu-bob', 'rbu-bob', 'rbu-Carol']],
      ['-principal', 1, ['rbu-Carol', 'rbu-bob', 'rbu-bob', 'rbg-dave', 'rbg-Anna']],
    ])('sorts with sort=%s by name ignoring case, across users and groups', async (sort, part, expected) => {
      expect((await rb(`sort=${sort}`)).map((entry) => entry.split(' ')[part])).toEqual(expected);
    });

    it('pages with page[offset] and page[limit], naming only the roles of the page', async () => {
      const first = await listBindings(`${all}&page[limit]=2`);
      expect(first.totalCount).toBe(5);
      expect(first.data.map(line)).toEqual(created.slice(0, 2));
      expect(first.roles).toEqual({ [roleIds['rb-gamma']]: 'rb-gamma', [roleIds['rb-alpha']]: 'rb-alpha' });
      const middle = await listBindings(`${all}&page[offset]=2&page[limit]=1`);
      expect(middle.data.map(line)).toEqual([created[2]]);
      expect(middle.roles).toEqual({ [roleIds['rb-Beta']]: 'rb-Beta' });
      const last = await listBindings(`${all}&sort=-created&page[offset]=4&page[limit]=3`);
      expect(last.data.map(line)).toEqual([created[0]]);
      expect(await listBindings(`${all}&page[offset]=5`)).toEqual({ totalCount: 5, data: [], roles: {} });
    });

    it.each([
      ['a projection', 'fields=role', 'fields'],
      ['a filter on namespace', 'filter[namespace][EQ]=*', 'filter[namespace][EQ]'],
      ['an unknown filter field', 'filter[created][LT]=2001-01-01T00:00:00Z', 'filter[created][LT]'],
      ['IN on role', `filter[role][EQ]=${UNKNOWN_ID}&filter[role][IN]=${UNKNOWN_ID}`, 'filter[role][IN]'],
      ['a role that is not a UUID', 'filter[role][EQ]=rb-alpha', 'filter[role][EQ]'],
      ['a principal that is not a UUID', 'filter[principal][EQ]=rbu-bob', 'filter[principal][EQ]'],
      ['an IN with a bad UUID', `filter[principal][IN]=${UNKNOWN_ID},x`, 'filter[principal][IN]'],
      ['an IN without values', 'filter[principal][IN]=', 'filter[principal][IN]'],
      ['a sort on namespace', 'sort=namespace', 'sort'],
      ['a limit over 1000', 'page[limit]=1001', 'page[limit]'],
      ['an unknown parameter', 'role=x', 'role'],
    ])('refuses %s with 400 naming the parameter', async (_case, query, parameter) => {
      const response = await get(`${BINDINGS}?${query}`);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(problemPaths(response)).toEqual([parameter]);
    });
  });

  describe('delete role bindings', () => {
    /** r1 u1 *, r1 u1 ns, r1 u2 ns, r2 u1 ns, r2 u2 * — fresh for each case. */
    const fixture = async (prefix: string) => {
      const ids: Record<string, string> = {};
      for (const name of ['r1', 'r2']) ids[name] = (await createRole(`${prefix}-${name}`)).id;
      for (const name of ['u1', 'u2']) ids[name] = await createUser(`${prefix}-${name}`);
      ids.ns = `${prefix}-ns`;
      await createNamespace(ids.ns);
      for (const [role, user, namespace] of [
        ['r1', 'u1', '*'],
        ['r1', 'u1', ids.ns],
        ['r1', 'u2', ids.ns],
        ['r2', 'u1', ids.ns],
        ['r2', 'u2', '*'],
      ]) {
        await bind(ids[role], ids[user], namespace);
      }
      return ids;
    };
    const remaining = async (prefix: string, ids: Record<string, string>) =>
      (await bindingLines(`filter[principal][IN]=${ids.u1},${ids.u2}`)).map((entry) => entry.replaceAll(`${prefix}-`, '')).sort();

    it.each<[string, (ids: Record<string, string>) => string, number, string[]]>([
      ['role', (ids) => `filter[role][EQ]=${ids.r1}`, 3, ['r2 u1 ns', 'r2 u2 *']],
      ['namespace name', (ids) => `filter[namespace][EQ]=${ids.ns}`, 3, ['r1 u1 *', 'r2 u2 *']],
      ['principal', (ids) => `filter[principal][EQ]=${ids.u1}`, 3, ['r1 u2 ns', 'r2 u2 *']],
      ['role and namespace name', (ids) => `filter[role][EQ]=${ids.r1}&filter[namespace][EQ]=${ids.ns}`, 2, ['r1 u1 *', 'r2 u1 ns', 'r2 u2 *']],
      ['namespace * and principal', (ids) => `filter[namespace][EQ]=*&filter[principal][EQ]=${ids.u2}`, 1, ['r1 u1 *', 'r1 u1 ns', 'r1 u2 ns', 'r2 u1 ns']],
      ['role and namespace *', (ids) => `filter[role][EQ]=${ids.r1}&filter[namespace][EQ]=*`, 1, ['r1 u1 ns', 'r1 u2 ns', 'r2 u1 ns', 'r2 u2 *']],
      [
        'role, namespace and principal',
        (ids) => `filter[role][EQ]=${ids.r2}&filter[namespace][EQ]=${ids.ns}&filter[principal][EQ]=${ids.u1}`,
        1,
        ['r1 u1 *', 'r1 u1 ns', 'r1 u2 ns', 'r2 u2 *'],
      ],
      [
        'filters nothing matches all of',
        (ids) => `filter[role][EQ]=${ids.r2}&filter[namespace][EQ]=*&filter[principal][EQ]=${ids.u1}`,
        0,
        ['r1 u1 *', 'r1 u1 ns', 'r1 u2 ns', 'r2 u1 ns', 'r2 u2 *'],
      ],
    ])('deletes by %s, answering the count', async (_case, query, count, left) => {
      const prefix = `d${_case.replace(/[^a-z]/g, '')}`;
      const ids = await fixture(prefix);
      const response = await deleteBindings(query(ids));
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ count });
      expect(await remaining(prefix, ids)).toEqual(left);
    });

    it('never deletes the administrator binding HubAdministrator in *, leaving it out of the count', async () => {
      const other = await createUser('dadmin-other');
      await bind(builtIn.HubAdministrator.id, other);
      await bind(builtIn.HubAdministrator.id, adminId, 'default');
      expect(await deletedCount(`filter[principal][EQ]=${adminId}&filter[namespace][EQ]=*`)).toBe(0);
      expect(await deletedCount(`filter[role][EQ]=${builtIn.HubAdministrator.id}`)).toBe(2);
      expect(await deletedCount(`filter[principal][EQ]=${adminId}`)).toBe(0);
      expect(await bindingLines(`filter[role][EQ]=${builtIn.HubAdministrator.id}`)).toEqual(['HubAdministrator admin *']);
      expect((await get(ROLES)).statusCode).toBe(200);
    });

    it.each([
      ['no filter', '', 'filter'],
      ['an unknown filter field', 'filter[created][LT]=2001-01-01T00:00:00Z', 'filter[created][LT]'],
      ['IN on principal', `filter[principal][IN]=${UNKNOWN_ID}`, 'filter[principal][IN]'],
      ['CO on namespace', 'filter[namespace][CO]=d', 'filter[namespace][CO]'],
      ['a role that is not a UUID', 'filter[role][EQ]=r1', 'filter[role][EQ]'],
      ['a page limit', `filter[role][EQ]=${UNKNOWN_ID}&page[limit]=10`, 'page[limit]'],
      ['a sort', `filter[role][EQ]=${UNKNOWN_ID}&sort=created`, 'sort'],
      ['an unknown parameter', `filter[role][EQ]=${UNKNOWN_ID}&all=true`, 'all'],
    ])('refuses %s with 400, deleting nothing', async (_case, query, parameter) => {
      const before = await listBindings('page[limit]=1000');
      const response = await deleteBindings(query);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(problemPaths(response)).toEqual([parameter]);
      expect((await listBindings('page[limit]=1000')).totalCount).toBe(before.totalCount);
    });
  });

  describe('bindings of deleted principals and namespaces', () => {
    it('deletes the bindings of a deleted user', async () => {
      const role = await createRole('pd-user-role');
      const user = await createUser('pd-user');
      await bind(role.id, user);
      await bind(role.id, user, 'default');
      expect(await bindingLines(`filter[role][EQ]=${role.id}`)).toHaveLength(2);
      expect((await hub.inject({ method: 'DELETE', url: `${USERS}/${user}`, headers: auth })).statusCode).toBe(200);
      expect(await listBindings(`filter[principal][EQ]=${user}`)).toEqual({ totalCount: 0, data: [], roles: {} });
      expect(await bindingLines(`filter[role][EQ]=${role.id}`)).toEqual([]);
      expect((await deleteRole(role.id)).statusCode).toBe(200);
    });

    it("deletes the bindings of a deleted group, so its members lose the role's permissions on their next request", async () => {
      const role = await createRole('pd-group-role', READ_ROLES);
      const group = await createGroup('pd-group');
      const { id: member, as } = await userWithToken('pd-member');
      await addMember(group, member);
      await bind(role.id, group);
      expect((await get(ROLES, as)).statusCode).toBe(200);
      expect((await hub.inject({ method: 'DELETE', url: `${GROUPS}/${group}`, headers: auth })).statusCode).toBe(200);
      expect(await listBindings(`filter[principal][EQ]=${group}`)).toEqual({ totalCount: 0, data: [], roles: {} });
      expect(await bindingLines(`filter[role][EQ]=${role.id}`)).toEqual([]);
      expect((await get(ROLES, as)).statusCode).toBe(403);
    });

    it('refuses to delete a namespace holding bindings with 409, until they are deleted', async () => {
      const role = await createRole('pd-ns-role');
      const user = await createUser('pd-ns-user');
      const namespaceId = await createNamespace('pd-ns');
      await bind(role.id, user, 'pd-ns');
      const refused = await hub.inject({ method: 'DELETE', url: `${NAMESPACES}/${namespaceId}`, headers: auth });
      expect(refused.statusCode).toBe(409);
      expect(refused.json().detail).toContain('role bindings');
      expect(await bindingLines(`filter[principal][EQ]=${user}`)).toEqual(['pd-ns-role pd-ns-user pd-ns']);
      expect(await deletedCount('filter[namespace][EQ]=pd-ns')).toBe(1);
      expect((await hub.inject({ method: 'DELETE', url: `${NAMESPACES}/${namespaceId}`, headers: auth })).statusCode).toBe(200);
    });
  });

  describe('access', () => {
    let target: Role;

    beforeAll(async () => {
      target = await createRole('acc-target', [allow('/Pipelines', ['Read'])]);
    });

    describe('a user with no bindings', () => {
      let nobody: { id: string; as: Headers };

      beforeAll(async () => {
        nobody = await userWithToken('acc-nobody');
      });

      it.each<[string, () => Promise<InjectResponse>, string]>([
        ['GET /roles', () => get(ROLES, nobody.as), 'Not allowed: Read on /Roles'],
        ['POST /roles', () => postRole({ name: 'acc-by-nobody' }, nobody.as), 'Not allowed: Create on /Roles'],
        ['GET /rolebindings', () => get(BINDINGS, nobody.as), 'Not allowed: Read on /RoleBindings'],
        [
          'POST /rolebindings',
          () => postBinding({ role: builtIn.HubAdministrator.id, principal: nobody.id, namespace: '*' }, nobody.as),
          'Not allowed: Create on /RoleBindings',
        ],
        ['DELETE /rolebindings', () => deleteBindings(`filter[principal][EQ]=${adminId}`, nobody.as), 'Not allowed: Delete on /RoleBindings'],
      ])('gets 403 on %s, naming the action and object', async (_case, call, detail) => {
        const response = await call();
        expect(response.statusCode).toBe(403);
        expect(response.headers['content-type']).toContain('application/problem+json');
        expect(response.json().detail).toContain(detail);
      });

      it.each<[string, (id: string) => Promise<InjectResponse>]>([
        ['GET', (id) => get(`${ROLES}/${id}`, nobody.as)],
        ['PUT', (id) => hub.inject({ method: 'PUT', url: `${ROLES}/${id}`, headers: nobody.as, payload: { name: 'acc-hijacked' } })],
        [
          'PATCH',
          (id) =>
            hub.inject({
              method: 'PATCH',
              url: `${ROLES}/${id}`,
              headers: { ...nobody.as, 'content-type': 'application/json-patch+json' },
              payload: JSON.stringify([{ op: 'replace', path: '/name', value: 'acc-hijacked' }]),
            }),
        ],
        ['DELETE', (id) => hub.inject({ method: 'DELETE', url: `${ROLES}/${id}`, headers: nobody.as })],
      ])('gets 404 on %s /roles/{id}, as if it did not exist', async (_method, call) => {
        expect((await call(target.id)).statusCode).toBe(404);
        expect((await call(builtIn.HubAdministrator.id)).statusCode).toBe(404);
        expect((await call(UNKNOWN_ID)).statusCode).toBe(404);
      });

      it('changes nothing by trying', async () => {
        expect((await readRole(target.id)).json()).toEqual(target);
        expect(await roleNames('filter[name][CO]=acc-by-nobody')).toEqual([]);
        expect(await roleNames('filter[name][CO]=acc-hijacked')).toEqual([]);
        expect(await listBindings(`filter[principal][EQ]=${nobody.id}`)).toEqual({ totalCount: 0, data: [], roles: {} });
        expect(await bindingLines(`filter[principal][EQ]=${adminId}`)).toEqual(['HubAdministrator admin *']);
      });
    });

    it('lets a user bound to a role reading roles list and read them on the very next request, but not create, change or delete them', async () => {
      const reader = await createRole('acc-role-reader', READ_ROLES);
      const { id, as } = await userWithToken('acc-reader');
      expect((await get(ROLES, as)).statusCode).toBe(403);
      expect((await get(`${ROLES}/${target.id}`, as)).statusCode).toBe(404);
      await bind(reader.id, id);

      const listed = await get(`${ROLES}?filter[name][EQ]=acc-target`, as);
      expect(listed.statusCode).toBe(200);
      expect(listed.json()).toEqual({ totalCount: 1, data: [target] });
      const read = await get(`${ROLES}/${target.id}`, as);
      expect(read.statusCode).toBe(200);
      expect(read.json()).toEqual(target);

      const created = await postRole({ name: 'acc-by-reader' }, as);
      expect(created.statusCode).toBe(403);
      expect(created.json().detail).toContain('Not allowed: Create on /Roles');
      const replaced = await hub.inject({ method: 'PUT', url: `${ROLES}/${target.id}`, headers: as, payload: { name: 'acc-by-reader' } });
      expect(replaced.statusCode).toBe(403);
      expect(replaced.json().detail).toContain(`Not allowed: Update on /Roles/${target.id}`);
      const deleted = await hub.inject({ method: 'DELETE', url: `${ROLES}/${target.id}`, headers: as });
      expect(deleted.statusCode).toBe(403);
      expect(deleted.json().detail).toContain(`Not allowed: Delete on /Roles/${target.id}`);
      expect((await get(BINDINGS, as)).statusCode).toBe(403);
      expect((await readRole(target.id)).json()).toEqual(target);
      expect(await roleNames('filter[name][CO]=acc-by-reader')).toEqual([]);

      expect(await deletedCount(`filter[principal][EQ]=${id}`)).toBe(1);
      expect((await get(ROLES, as)).statusCode).toBe(403);
      expect((await get(`${ROLES}/${target.id}`, as)).statusCode).toBe(404);
    });

    it("applies a change to a bound role's permissions on the very next request", async () => {
      const reader = await createRole('acc-changing', READ_ROLES);
      const { id, as } = await userWithToken('acc-changing-user');
      await bind(reader.id, id);
      expect((await get(ROLES, as)).statusCode).toBe(200);
      expect((await patchRole(reader.id, [{ op: 'replace', path: '/permissions/0/actions', value: ['Update'] }])).statusCode).toBe(200);
      expect((await get(ROLES, as)).statusCode).toBe(403);
      expect((await get(`${ROLES}/${target.id}`, as)).statusCode).toBe(200);
      expect((await putRole(reader.id, { name: 'acc-changing', permissions: READ_ROLES })).statusCode).toBe(200);
      expect((await get(ROLES, as)).statusCode).toBe(200);
    });

    it('gives the permissions of a role bound to a group to its members', async () => {
      const reader = await createRole('acc-group-reader', READ_ROLES);
      const group = await createGroup('acc-readers');
      const { id, as } = await userWithToken('acc-group-member');
      await addMember(group, id);
      expect((await get(ROLES, as)).statusCode).toBe(403);
      await bind(reader.id, group);
      expect((await get(ROLES, as)).statusCode).toBe(200);
      expect((await get(`${ROLES}/${target.id}`, as)).statusCode).toBe(200);
    });

    it('lets a Deny of any bound role win over an Allow of another', async () => {
      const reader = await createRole('acc-allowing', READ_ROLES);
      const denier = await createRole('acc-denying', [deny('/Roles', ['*'])]);
      const { id, as } = await userWithToken('acc-denied');
      await bind(reader.id, id);
      expect((await get(ROLES, as)).statusCode).toBe(200);
      await bind(denier.id, id, 'default');
      expect((await get(ROLES, as)).statusCode).toBe(200);
      await bind(denier.id, id);
      expect((await get(ROLES, as)).statusCode).toBe(403);
      expect((await get(`${ROLES}/${target.id}`, as)).statusCode).toBe(200);
    });

    describe('role binding lists', () => {
      let bindingReader: Role;
      let nsReader: { id: string; as: Headers };
      let allReader: { id: string; as: Headers };
      const otherUsers: Record<string, string> = {};

      beforeAll(async () => {
        bindingReader = await createRole('acc-binding-reader', READ_BINDINGS);
        await createNamespace('acc-a');
        await createNamespace('acc-b');
        nsReader = await userWithToken('acc-ns-reader');
        allReader = await userWithToken('acc-all-reader');
        for (const name of ['acc-x', 'acc-y', 'acc-z']) otherUsers[name] = await createUser(name);
        await bind(builtIn.NamespaceUser.id, otherUsers['acc-x'], 'acc-a');
        await bind(builtIn.NamespaceUser.id, otherUsers['acc-y'], 'acc-b');
        await bind(builtIn.NamespaceUser.id, otherUsers['acc-z']);
        await bind(bindingReader.id, nsReader.id, 'acc-a');
        await bind(bindingReader.id, allReader.id);
      });

      it('shows a user allowed to read bindings in one namespace only the bindings of that namespace', async () => {
        const page = await listBindings('sort=principal', nsReader.as);
        expect(page.totalCount).toBe(2);
        expect(page.data.map(line)).toEqual(['acc-binding-reader acc-ns-reader acc-a', 'NamespaceUser acc-x acc-a']);
        expect(page.roles).toEqual({ [bindingReader.id]: 'acc-binding-reader', [builtIn.NamespaceUser.id]: 'NamespaceUser' });
        expect(await listBindings(`filter[principal][EQ]=${otherUsers['acc-y']}`, nsReader.as)).toEqual({ totalCount: 0, data: [], roles: {} });
        expect(await listBindings(`filter[principal][EQ]=${adminId}`, nsReader.as)).toEqual({ totalCount: 0, data: [], roles: {} });
      });

      it('shows a user allowed to read bindings in * every binding', async () => {
        const everything = await listBindings('page[limit]=1000');
        const seen = await listBindings('page[limit]=1000', allReader.as);
        expect(seen.totalCount).toBe(everything.totalCount);
        expect(seen.data.map((binding) => binding.id)).toEqual(everything.data.map((binding) => binding.id));
        expect(seen.data.map(line)).toEqual(
          expect.arrayContaining(['HubAdministrator admin *', 'NamespaceUser acc-x acc-a', 'NamespaceUser acc-y acc-b', 'NamespaceUser acc-z *']),
        );
      });

      it('lets neither create or delete bindings, nor read roles', async () => {
        for (const { id, as } of [nsReader, allReader]) {
          const created = await postBinding({ role: bindingReader.id, principal: id, namespace: 'acc-a' }, as);
          expect(created.statusCode).toBe(403);
          expect(created.json().detail).toContain('Not allowed: Create on /RoleBindings');
          const deleted = await deleteBindings('filter[namespace][EQ]=acc-a', as);
          expect(deleted.statusCode).toBe(403);
          expect(deleted.json().detail).toContain('Not allowed: Delete on /RoleBindings');
          expect((await get(ROLES, as)).statusCode).toBe(403);
        }
        expect((await listBindings('filter[principal][IN]=' + Object.values(otherUsers).join(','))).totalCount).toBe(3);
      });

      it('narrows the list anew on the very next request after a binding changes', async () => {
        await bind(bindingReader.id, nsReader.id, 'acc-b');
        expect((await bindingLines('sort=principal', nsReader.as)).sort()).toEqual([
          'NamespaceUser acc-x acc-a',
          'NamespaceUser acc-y acc-b',
          'acc-binding-reader acc-ns-reader acc-a',
          'acc-binding-reader acc-ns-reader acc-b',
        ]);
        expect(await deletedCount(`filter[principal][EQ]=${nsReader.id}`)).toBe(2);
        expect((await get(BINDINGS, nsReader.as)).statusCode).toBe(403);
      });

      it('leaves out the namespaces where a Deny takes back a Read allowed in *', async () => {
        const denier = await createRole('acc-binding-denier', [deny('/RoleBindings', ['Read'])]);
        await bind(denier.id, allReader.id, 'acc-b');
        const everything = await listBindings('page[limit]=1000');
        const seen = await listBindings('page[limit]=1000', allReader.as);
        const expected = everything.data.filter((binding) => binding.namespace !== 'acc-b');
        expect(expected.length).toBeLessThan(everything.data.length);
        expect(seen.totalCount).toBe(expected.length);
        expect(seen.data.map((binding) => binding.id)).toEqual(expected.map((binding) => binding.id));
      });

      it('decides creating and deleting bindings in the namespace the request names', async () => {
        const manager = await createRole('acc-binding-manager', [
          allow('/RoleBindings', ['Create', 'Delete']),
          allow(`/Roles/${builtIn.NamespaceUser.id}`, ['Use']),
        ]);
        const { id, as } = await userWithToken('acc-manager');
        await bind(manager.id, id, 'acc-a');
        const newcomer = await createUser('acc-newcomer');
        const created = await postBinding({ role: builtIn.NamespaceUser.id, principal: newcomer, namespace: 'acc-a' }, as);
        expect(created.statusCode).toBe(201);
        for (const namespace of ['acc-b', '*']) {
          const refused = await postBinding({ role: builtIn.NamespaceUser.id, principal: newcomer, namespace }, as);
          expect(refused.statusCode).toBe(403);
          expect(refused.json().detail).toContain('Not allowed: Create on /RoleBindings');
        }
        expect((await deleteBindings(`filter[principal][EQ]=${newcomer}`, as)).statusCode).toBe(403);
        expect((await deleteBindings(`filter[principal][EQ]=${newcomer}&filter[namespace][EQ]=acc-b`, as)).statusCode).toBe(403);
        expect(await bindingLines(`filter[principal][EQ]=${newcomer}`)).toEqual(['NamespaceUser acc-newcomer acc-a']);
        const deleted = await deleteBindings(`filter[principal][EQ]=${newcomer}&filter[namespace][EQ]=acc-a`, as);
        expect(deleted.statusCode).toBe(200);
        expect(deleted.json()).toEqual({ count: 1 });
        expect(await bindingLines(`filter[principal][EQ]=${newcomer}`)).toEqual([]);
      });

      it('lets a binding manager grant only the roles it may Use there, so it cannot make itself an administrator', async () => {
        const manager = await createRole('acc-escalation-manager', [allow('/RoleBindings', ['Create']), allow(`/Roles/${builtIn.NamespaceUser.id}`, ['Use'])]);
        const { id, as } = await userWithToken('acc-escalator');
        await bind(manager.id, id, 'acc-a');
        const refused = await postBinding({ role: builtIn.HubAdministrator.id, principal: id, namespace: 'acc-a' }, as);
        expect(refused.statusCode).toBe(403);
        expect(refused.json().detail).toBe(`Not allowed: Use on /Roles/${builtIn.HubAdministrator.id} in namespace 'acc-a'`);
        expect(await bindingLines(`filter[principal][EQ]=${id}`)).toEqual(['acc-escalation-manager acc-escalator acc-a']);
        expect((await postBinding({ role: builtIn.NamespaceUser.id, principal: id, namespace: 'acc-a' }, as)).statusCode).toBe(201);
      });

      it('needs Use on a role to change what it grants, so holders of Update cannot widen their own role', async () => {
        const editor = await createRole('acc-role-editor', [allow('/Roles', ['Read']), allow('/Roles/*', ['Read', 'Update'])]);
        const { id, as } = await userWithToken('acc-editor');
        await bind(editor.id, id, '*');
        const widened = await hub.inject({
          method: 'PATCH',
          url: `${ROLES}/${editor.id}`,
          headers: as,
          payload: [{ op: 'add', path: '/permissions/-', value: allow('/**', ['*'], 'glob') }],
        });
        expect(widened.statusCode).toBe(403);
        expect(widened.json().detail).toBe(`Not allowed: Use on /Roles/${editor.id} in every namespace`);
        expect((await readRole(editor.id)).json<Role>().permissions).toHaveLength(2);
        const renamed = await hub.inject({
          method: 'PATCH',
          url: `${ROLES}/${editor.id}`,
          headers: as,
          payload: [{ op: 'add', path: '/description', value: 'Edits roles' }],
        });
        expect(renamed.statusCode).toBe(200);
      });
    });
  });

  describe('without credentials', () => {
    it.each([
      ['GET', ROLES],
      ['POST', ROLES],
      ['GET', `${ROLES}/${UNKNOWN_ID}`],
      ['PUT', `${ROLES}/${UNKNOWN_ID}`],
      ['PATCH', `${ROLES}/${UNKNOWN_ID}`],
      ['DELETE', `${ROLES}/${UNKNOWN_ID}`],
      ['GET', BINDINGS],
      ['POST', BINDINGS],
      ['DELETE', `${BINDINGS}?filter[role][EQ]=${UNKNOWN_ID}`],
    ] as const)('%s %s answers 401', async (method, url) => {
      const response = await hub.inject({ method, url, payload: method === 'GET' || method === 'DELETE' ? undefined : {} });
      expect(response.statusCode).toBe(401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="hub"');
    });

    it('answers 401 to a bad token too', async () => {
      expect((await get(ROLES, bearer('not-a-token'))).statusCode).toBe(401);
      expect((await get(BINDINGS, bearer('not-a-token'))).statusCode).toBe(401);
    });
  });
});

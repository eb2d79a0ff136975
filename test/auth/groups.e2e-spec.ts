import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { AuthService } from '../../src/auth/auth.service.js';
import { CallerCache } from '../../src/auth/caller-cache.js';
import { bearer, claimsOf, problemPaths, startTestHub, type TestHub } from '../support/test-hub.js';

interface Group {
  _id: string;
  _created: string;
  _modified: string;
  externalId?: string;
  system: boolean;
  name: string;
}

interface GroupList {
  totalCount: number;
  data: Group[];
}

interface Member {
  membershipType: 'direct' | 'indirect';
  principalType: 'User' | 'Group';
  id: string;
  name: string;
}

interface MemberChange {
  op?: unknown;
  id?: unknown;
  principalType?: unknown;
  name?: unknown;
  [key: string]: unknown;
}

const BASE = '/api/v2/auth/groups';
const USERS = '/api/v2/auth/users';
const UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-000000000000';
const PASSWORD = 'a-member-password';

describe('groups', () => {
  let hub: TestHub;
  let auth: Record<string, string>;

  const get = (url: string, headers: Record<string, string> = {}) => hub.inject({ method: 'GET', url, headers: { ...auth, ...headers } });
  const list = async (query: string): Promise<GroupList> => {
    const response = await get(`${BASE}?${query}`);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const names = async (query: string): Promise<string[]> => (await list(query)).data.map((group) => group.name);
  const post = (payload: unknown) => hub.inject({ method: 'POST', url: BASE, headers: auth, payload: payload as object });
  const create = async (body: object): Promise<Group> => {
    const response = await post(body);
    expect(response.statusCode).toBe(201);
    return response.json();
  };
  const put = (id: string, payload: object, headers: Record<string, string> = {}) =>
    hub.inject({ method: 'PUT', url: `${BASE}/${id}`, headers: { ...auth, ...headers }, payload });
  const patch = (id: string, operations: unknown, headers: Record<string, string> = {}) =>
    hub.inject({
      method: 'PATCH',
      url: `${BASE}/${id}`,
      headers: { ...auth, 'content-type': 'application/json-patch+json', ...headers },
      payload: JSON.stringify(operations),
    });
  const remove = (id: string, headers: Record<string, string> = {}) => hub.inject({ method: 'DELETE', url: `${BASE}/${id}`, headers: { ...auth, ...headers } });
  const changeMembers = (id: string, items: unknown) =>
    hub.inject({
      method: 'PATCH',
      url: `${BASE}/${id}/members`,
      headers: { ...auth, 'content-type': 'application/json' },
      payload: JSON.stringify(items),
    });
  const changed = async (id: string, items: MemberChange[]): Promise<string> => {
    const response = await changeMembers(id, items);
    expect(response.statusCode).toBe(200);
    return response.json().msg;
  };
  const members = async (id: string, query = ''): Promise<Member[]> => {
    const response = await get(`${BASE}/${id}/members${query ? `?${query}` : ''}`);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  /** A group's members as `<membershipType> <principalType> <name>`, in the order listed. */
  const memberLines = async (id: string, query = ''): Promise<string[]> =>
    (await members(id, query)).map((m) => `${m.membershipType} ${m.principalType} ${m.name}`);
  const userGroups = async (userId: string): Promise<string[]> => {
    const response = await get(`${USERS}/${userId}/groups`);
    expect(response.statusCode).toBe(200);
    return response.json<{ membershipType: string; name: string }[]>().map((g) => `${g.membershipType} ${g.name}`);
  };
  const createUser = async (userName: string): Promise<string> => {
    const response = await hub.inject({ method: 'POST', url: USERS, headers: auth, payload: { userName, password: PASSWORD } });
    expect(response.statusCode).toBe(201);
    return response.json()._id;
  };
  const sql = <T = unknown>(query: string, parameters: unknown[] = []): Promise<T> => hub.app.get(DataSource).query(query, parameters);
  const insertSystemGroup = async (name: string): Promise<string> =>
    (await sql<{ id: string }[]>('INSERT INTO groups (name, system, version) VALUES ($1, true, 1) RETURNING id', [name]))[0].id;

  beforeAll(async () => {
    hub = await startTestHub();
    auth = bearer(hub.adminToken);
  });
  afterAll(() => hub.close());

  describe('create', () => {
    it('returns 201 with the group, an ETag and its Location', async () => {
      const response = await post({ name: 'Data Scientists', externalId: 'cn=data-scientists' });
      expect(response.statusCode).toBe(201);
      const body: Group = response.json();
      expect(body).toEqual({
        _id: expect.any(String),
        _created: expect.any(String),
        _modified: expect.any(String),
        externalId: 'cn=data-scientists',
        system: false,
        name: 'Data Scientists',
      });
      expect(body._created).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(body._modified).toBe(body._created);
      expect(response.headers.etag).toBe('"1"');
      expect(response.headers.location).toBe(`${BASE}/${body._id}`);
      const read = await get(`${BASE}/${body._id}`);
      expect(read.json()).toEqual(body);
      expect(read.headers.etag).toBe('"1"');
    });

    it('leaves externalId out when there is none and accepts system false', async () => {
      const body = await create({ name: 'no-external', system: false });
      expect(Object.keys(body).sort()).toEqual(['_created', '_id', '_modified', 'name', 'system']);
      expect(body.system).toBe(false);
    });

    it('ignores server-owned fields', async () => {
      const body = await create({ name: 'owned-on-create', _id: UNKNOWN_ID, _created: '2000-01-01T00:00:00.000Z', _modified: 'x' });
      expect(body._id).not.toBe(UNKNOWN_ID);
      expect(body._created.startsWith('2000')).toBe(false);
    });

    it.each([
      ['a single character', 'x'],
      ['a single digit', '7'],
      ['128 characters', 'n'.repeat(128)],
      ['inner spaces', 'Team  With Spaces'],
      ['letters outside ASCII', 'Équipe Ünïcode'],
      ['every allowed punctuation', 'ops.team@site-1_b'],
    ])('accepts a name of %s', async (_case, name) => {
      expect((await create({ name })).name).toBe(name);
    });

    it('refuses a duplicate name, ignoring case, with 409', async () => {
      await create({ name: 'Unique Group' });
      const response = await post({ name: 'UNIQUE group' });
      expect(response.statusCode).toBe(409);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json().detail).toBe("A group named 'UNIQUE group' already exists (names are compared ignoring case)");
      expect(await names('filter[name][CO]=unique group')).toEqual(['Unique Group']);
    });

    it('refuses a duplicate externalId with 409', async () => {
      await create({ name: 'external-one', externalId: 'shared-external' });
      const response = await post({ name: 'external-two', externalId: 'shared-external' });
      expect(response.statusCode).toBe(409);
      expect(response.json().detail).toBe("Another group already has the externalId 'shared-external'");
      expect(await names('filter[name][EQ]=external-two')).toEqual([]);
    });

    it.each([
      ['no name', {}, '/name'],
      ['an empty name', { name: '' }, '/name'],
      ['a name with a leading space', { name: ' lead' }, '/name'],
      ['a name with a trailing space', { name: 'trail ' }, '/name'],
      ['a name of 129 characters', { name: 'n'.repeat(129) }, '/name'],
      ['a name with a "!"', { name: 'bad!' }, '/name'],
      ['a name with a slash', { name: 'a/b' }, '/name'],
      ['a name with a tab', { name: 'tab\tname' }, '/name'],
      ['a name that is a number', { name: 42 }, '/name'],
      ['a null name', { name: null }, '/name'],
      ['an empty externalId', { name: 'ok-1', externalId: '' }, '/externalId'],
      ['an externalId that is a number', { name: 'ok-2', externalId: 7 }, '/externalId'],
      ['an externalId over 256 characters', { name: 'ok-3', externalId: 'e'.repeat(257) }, '/externalId'],
      ['a system that is not a boolean', { name: 'ok-4', system: 'no' }, '/system'],
      ['system true', { name: 'ok-5', system: true }, '/system'],
      ['an unknown property', { name: 'ok-6', members: [] }, '/members'],
    ])('refuses %s with 400 naming the field', async (_case, payload, path) => {
      const response = await post(payload);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json()).toMatchObject({ status: 400, title: 'Bad Request' });
      expect(problemPaths(response)).toEqual([path]);
      expect(await names('filter[name][CO]=ok-')).toEqual([]);
    });

    it.each([
      ['an array', '[]'],
      ['a string', '"group"'],
      ['null', 'null'],
    ])('refuses a body that is %s', async (_case, payload) => {
      const response = await hub.inject({ method: 'POST', url: BASE, headers: { ...auth, 'content-type': 'application/json' }, payload });
      expect(response.statusCode).toBe(400);
      expect(response.json().detail).toBe('The request body must be a JSON object');
    });
  });

  describe('get', () => {
    it('answers 404 for an unknown id and for an id that is not a UUID', async () => {
      const unknown = await get(`${BASE}/${UNKNOWN_ID}`);
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json().detail).toBe(`Group ${UNKNOWN_ID} not found`);
      expect((await get(`${BASE}/not-a-uuid`)).statusCode).toBe(404);
    });

    it('answers 304 to If-None-Match with the current ETag', async () => {
      const group = await create({ name: 'cache-holder' });
      const cached = await get(`${BASE}/${group._id}`, { 'if-none-match': '"1"' });
      expect(cached.statusCode).toBe(304);
      expect(cached.body).toBe('');
      expect((await get(`${BASE}/${group._id}`, { 'if-none-match': '"2"' })).statusCode).toBe(200);
    });

    it('projects with fields and excludeFields over exactly _id, _created, _modified, externalId and name', async () => {
      const group = await create({ name: 'projected-group', externalId: 'projected-external' });
      const included = await get(`${BASE}/${group._id}?fields=name,externalId`);
      expect(included.json()).toEqual({ name: 'projected-group', externalId: 'projected-external' });
      const excluded = await get(`${BASE}/${group._id}?excludeFields=_created,_modified,externalId`);
      expect(excluded.json()).toEqual({ _id: group._id, name: 'projected-group', system: false });
      for (const query of ['fields=system', 'excludeFields=system', 'fields=members', 'fields=name&excludeFields=_id', 'name=x']) {
        const response = await get(`${BASE}/${group._id}?${query}`);
        expect(response.statusCode).toBe(400);
      }
    });
  });

  describe('query', () => {
    /** Created in this order, with _created one day apart and _modified in another order. */
    const fixtures: Record<string, string> = {};
    const createdOrder = ['qg-Builtin', 'qg-alpha', 'qg-Beta', 'qg-gamma_1', 'qg-gammaX1', 'qg-delta'];
    const modifiedOrder = ['qg-delta', 'qg-gamma_1', 'qg-alpha', 'qg-Builtin', 'qg-gammaX1', 'qg-Beta'];
    const byName = ['qg-alpha', 'qg-Beta', 'qg-Builtin', 'qg-delta', 'qg-gamma_1', 'qg-gammaX1'];
    const day = (year: number, index: number) => `${year}-01-0${index + 1}T00:00:00.000Z`;

    beforeAll(async () => {
      fixtures['qg-Builtin'] = await insertSystemGroup('qg-Builtin');
      for (const name of createdOrder.slice(1)) {
        const externalId = name === 'qg-alpha' ? 'ext-qg-alpha' : name === 'qg-gammaX1' ? 'ext-qg-gammax1' : undefined;
        fixtures[name] = (await create(externalId ? { name, externalId } : { name }))._id;
      }
      for (const [index, name] of createdOrder.entries()) {
        await sql('UPDATE groups SET created = $2, modified = $3 WHERE id = $1', [fixtures[name], day(2001, index), day(2002, modifiedOrder.indexOf(name))]);
      }
    });
    const qg = (query: string) => names(`filter[name][CO]=qg-&${query}`);

    it('lists every group by name by default, with the total count', async () => {
      const page = await list('filter[name][CO]=qg-');
      expect(page.totalCount).toBe(6);
      expect(page.data.map((g) => g.name)).toEqual(byName);
      expect(page.data.find((g) => g.name === 'qg-alpha')).toEqual({
        _id: fixtures['qg-alpha'],
        _created: day(2001, 1),
        _modified: day(2002, 2),
        externalId: 'ext-qg-alpha',
        system: false,
        name: 'qg-alpha',
      });
    });

    it('filters _id with EQ and IN', async () => {
      expect(await names(`filter[_id][EQ]=${fixtures['qg-Beta']}`)).toEqual(['qg-Beta']);
      expect(await names(`filter[_id][EQ]=${fixtures['qg-Beta'].toUpperCase()}`)).toEqual(['qg-Beta']);
      expect(await names(`filter[_id][EQ]=${UNKNOWN_ID}`)).toEqual([]);
      expect(await names(`filter[_id][IN]=${fixtures['qg-delta']},${fixtures['qg-alpha']}`)).toEqual(['qg-alpha', 'qg-delta']);
      expect(await names(`filter[_id][IN]=${fixtures['qg-delta']}&filter[_id][IN]=${fixtures['qg-Builtin']}`)).toEqual(['qg-Builtin', 'qg-delta']);
    });

    it('filters name with EQ (exact) and CO (ignoring case), taking LIKE wildcards literally', async () => {
      expect(await names('filter[name][EQ]=qg-Beta')).toEqual(['qg-Beta']);
      expect(await names('filter[name][EQ]=qg-beta')).toEqual([]);
      expect(await names('filter[name][CO]=GAMMA')).toEqual(['qg-gamma_1', 'qg-gammaX1']);
      expect(await names('filter[name][CO]=QG-B')).toEqual(['qg-Beta', 'qg-Builtin']);
      expect(await names('filter[name][CO]=a_1')).toEqual(['qg-gamma_1']);
      expect(await names('filter[name][CO]=qg-%25')).toEqual([]);
    });

    it('filters externalId with PR', async () => {
      expect(await qg('filter[externalId][PR]=true')).toEqual(['qg-alpha', 'qg-gammaX1']);
      expect(await qg('filter[externalId][PR]=false')).toEqual(['qg-Beta', 'qg-Builtin', 'qg-delta', 'qg-gamma_1']);
    });

    it('filters system with EQ', async () => {
      expect(await qg('filter[system][EQ]=true')).toEqual(['qg-Builtin']);
      expect(await qg('filter[system][EQ]=false')).toEqual(['qg-alpha', 'qg-Beta', 'qg-delta', 'qg-gamma_1', 'qg-gammaX1']);
    });

    it('filters _created with LT and GT, both exclusive, in any time zone', async () => {
      expect(await qg(`filter[_created][LT]=${day(2001, 3)}&sort=_created`)).toEqual(['qg-Builtin', 'qg-alpha', 'qg-Beta']);
      expect(await qg(`filter[_created][GT]=${day(2001, 3)}&sort=_created`)).toEqual(['qg-gammaX1', 'qg-delta']);
      expect(await qg('filter[_created][LT]=2001-01-04T01:00:00%2B01:00&sort=_created')).toEqual(['qg-Builtin', 'qg-alpha', 'qg-Beta']);
      expect(await qg(`filter[_created][GT]=${day(2001, 0)}&filter[_created][LT]=${day(2001, 3)}&sort=_created`)).toEqual(['qg-alpha', 'qg-Beta']);
    });

    it('filters _modified with LT and GT', async () => {
      expect(await qg(`filter[_modified][LT]=${day(2002, 2)}&sort=_modified`)).toEqual(['qg-delta', 'qg-gamma_1']);
      expect(await qg(`filter[_modified][GT]=${day(2002, 3)}&sort=_modified`)).toEqual(['qg-gammaX1', 'qg-Beta']);
    });

    it('combines filters with AND', async () => {
      expect(await names('filter[name][CO]=gamma&filter[externalId][PR]=false')).toEqual(['qg-gamma_1']);
      expect(await qg('filter[system][EQ]=false&filter[_created][LT]=2001-01-05T00:00:00.000Z')).toEqual(['qg-alpha', 'qg-Beta', 'qg-gamma_1']);
    });

    it('sorts by name ignoring case, by _created and by _modified, each reversed with -', async () => {
      expect(await qg('sort=name')).toEqual(byName);
      expect(await qg('sort=-name')).toEqual([...byName].reverse());
      expect(await qg('sort=_created')).toEqual(createdOrder);
      expect(await qg('sort=-_created')).toEqual([...createdOrder].reverse());
      expect(await qg('sort=_modified')).toEqual(modifiedOrder);
      expect(await qg('sort=-_modified')).toEqual([...modifiedOrder].reverse());
    });

    it('pages with page[offset] and page[limit], totalCount counting every match', async () => {
      const first = await list('filter[name][CO]=qg-&page[limit]=2');
      expect(first.totalCount).toBe(6);
      expect(first.data.map((g) => g.name)).toEqual(['qg-alpha', 'qg-Beta']);
      const middle = await list('filter[name][CO]=qg-&page[offset]=2&page[limit]=3');
      expect(middle.data.map((g) => g.name)).toEqual(['qg-Builtin', 'qg-delta', 'qg-gamma_1']);
      const last = await list('filter[name][CO]=qg-&sort=-_created&page[offset]=5&page[limit]=2');
      expect(last).toMatchObject({ totalCount: 6, data: [{ name: 'qg-Builtin' }] });
      expect(await list('filter[name][CO]=qg-&page[offset]=50')).toEqual({ totalCount: 6, data: [] });
    });

    it('projects with fields and excludeFields', async () => {
      expect((await list('filter[name][EQ]=qg-alpha&fields=name,_id')).data).toEqual([{ _id: fixtures['qg-alpha'], name: 'qg-alpha' }]);
      expect((await list('filter[name][EQ]=qg-alpha&fields=externalId')).data).toEqual([{ externalId: 'ext-qg-alpha' }]);
      expect((await list('filter[name][EQ]=qg-Beta&excludeFields=_created&excludeFields=_modified')).data).toEqual([
        { _id: fixtures['qg-Beta'], system: false, name: 'qg-Beta' },
      ]);
    });

    it.each([
      ['projection of system', 'fields=system', 'fields'],
      ['exclusion of system', 'excludeFields=system', 'excludeFields'],
      ['an unknown projected field', 'fields=members', 'fields'],
      ['fields with excludeFields', 'fields=name&excludeFields=_id', 'excludeFields'],
      ['an unknown filter field', 'filter[description][EQ]=x', 'filter[description][EQ]'],
      ['SW on name', 'filter[name][SW]=qg', 'filter[name][SW]'],
      ['IN on name', 'filter[name][IN]=a,b', 'filter[name][IN]'],
      ['EQ on externalId', 'filter[externalId][EQ]=x', 'filter[externalId][EQ]'],
      ['a PR value that is not a boolean', 'filter[externalId][PR]=maybe', 'filter[externalId][PR]'],
      ['a system value that is not a boolean', 'filter[system][EQ]=yes', 'filter[system][EQ]'],
      ['an _id that is not a UUID', 'filter[_id][EQ]=42', 'filter[_id][EQ]'],
      ['an IN without values', 'filter[_id][IN]=', 'filter[_id][IN]'],
      ['an IN with a bad UUID', `filter[_id][IN]=${UNKNOWN_ID},x`, 'filter[_id][IN]'],
      ['EQ on _created', 'filter[_created][EQ]=2001-01-01T00:00:00.000Z', 'filter[_created][EQ]'],
      ['a bad date-time', 'filter[_modified][LT]=yesterday', 'filter[_modified][LT]'],
      ['a date-time without zone', 'filter[_created][GT]=2026-01-01T00:00:00', 'filter[_created][GT]'],
      ['an empty CO value', 'filter[name][CO]=', 'filter[name][CO]'],
      ['a repeated EQ', 'filter[name][EQ]=a&filter[name][EQ]=b', 'filter[name][EQ]'],
      ['a malformed filter', 'filter[name]=x', 'filter[name]'],
      ['a negative offset', 'page[offset]=-1', 'page[offset]'],
      ['an offset that is not a number', 'page[offset]=one', 'page[offset]'],
      ['a limit of 0', 'page[limit]=0', 'page[limit]'],
      ['a limit over 1000', 'page[limit]=1001', 'page[limit]'],
      ['a sort on system', 'sort=system', 'sort'],
      ['a sort on externalId', 'sort=-externalId', 'sort'],
      ['two sorts', 'sort=name,_created', 'sort'],
      ['an unknown parameter', 'limit=5', 'limit'],
    ])('refuses %s with 400 naming the parameter', async (_case, query, parameter) => {
      const response = await get(`${BASE}?${query}`);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(problemPaths(response)).toEqual([parameter]);
    });

    it('reports every bad parameter of a request at once', async () => {
      const response = await get(`${BASE}?filter[nope][EQ]=1&page[limit]=x&sort=-nope`);
      expect(problemPaths(response)).toEqual(['filter[nope][EQ]', 'page[limit]', 'sort']);
    });
  });

  describe('replace', () => {
    it('replaces name and externalId, clears an absent externalId, ignores server-owned fields and bumps the ETag', async () => {
      const group = await create({ name: 'to-replace', externalId: 'replace-external' });
      await sql("UPDATE groups SET modified = '2001-01-01T00:00:00Z' WHERE id = $1", [group._id]);
      const renamed = await put(group._id, { ...group, name: 'Replaced Group', externalId: 'replaced-external', _id: UNKNOWN_ID }, { 'if-match': '"1"' });
      expect(renamed.statusCode).toBe(200);
      expect(renamed.headers.etag).toBe('"2"');
      expect(renamed.json()).toEqual({ ...group, name: 'Replaced Group', externalId: 'replaced-external', _modified: expect.any(String) });
      expect(renamed.json()._modified > '2001-01-01T00:00:00.000Z').toBe(true);
      const cleared = await put(group._id, { name: 'Replaced Group' });
      expect(cleared.headers.etag).toBe('"3"');
      expect('externalId' in cleared.json()).toBe(false);
      expect((await get(`${BASE}/${group._id}`)).json()).toEqual(cleared.json());
    });

    it('answers 412 when If-Match names another version, and changes nothing', async () => {
      const group = await create({ name: 'guarded-group' });
      const response = await put(group._id, { name: 'guarded-group-2' }, { 'if-match': '"7"' });
      expect(response.statusCode).toBe(412);
      expect((await get(`${BASE}/${group._id}`)).json().name).toBe('guarded-group');
      expect((await put(group._id, { name: 'guarded-group-2' }, { 'if-match': '*' })).statusCode).toBe(200);
    });

    it('validates like a create and answers 404 for an unknown or malformed id', async () => {
      const group = await create({ name: 'replace-validated' });
      const invalid = await put(group._id, { name: 'not valid!', externalId: '' });
      expect(invalid.statusCode).toBe(400);
      expect(problemPaths(invalid)).toEqual(['/name', '/externalId']);
      expect((await put(UNKNOWN_ID, { name: 'anything' })).statusCode).toBe(404);
      expect((await put('not-a-uuid', { name: 'anything' })).statusCode).toBe(404);
      expect((await get(`${BASE}/${group._id}`)).json().name).toBe('replace-validated');
    });

    it('answers 409 for a name taken ignoring case or a taken externalId, and allows a change of case of its own name', async () => {
      await create({ name: 'Taken Name', externalId: 'taken-external' });
      const group = await create({ name: 'replace-conflicts' });
      const name = await put(group._id, { name: 'taken name' });
      expect(name.statusCode).toBe(409);
      expect(name.json().detail).toBe("A group named 'taken name' already exists (names are compared ignoring case)");
      const external = await put(group._id, { name: 'replace-conflicts', externalId: 'taken-external' });
      expect(external.statusCode).toBe(409);
      expect(external.json().detail).toBe("Another group already has the externalId 'taken-external'");
      expect((await get(`${BASE}/${group._id}`)).headers.etag).toBe('"1"');
      const recased = await put(group._id, { name: 'REPLACE-conflicts' });
      expect(recased.statusCode).toBe(200);
      expect(recased.json().name).toBe('REPLACE-conflicts');
    });

    it('refuses to change system either way, accepting its current value', async () => {
      const group = await create({ name: 'plain-group' });
      const promoted = await put(group._id, { name: 'plain-group', system: true });
      expect(promoted.statusCode).toBe(400);
      expect(problemPaths(promoted)).toEqual(['/system']);
      expect((await put(group._id, { name: 'plain-group', system: false })).statusCode).toBe(200);
      const builtinId = await insertSystemGroup('Builtin Replace');
      const demoted = await put(builtinId, { name: 'Builtin Replace', system: false });
      expect(demoted.statusCode).toBe(400);
      expect(problemPaths(demoted)).toEqual(['/system']);
      const kept = await put(builtinId, { name: 'Builtin Renamed', system: true });
      expect(kept.statusCode).toBe(200);
      expect(kept.json()).toMatchObject({ name: 'Builtin Renamed', system: true });
      expect((await put(builtinId, { name: 'Builtin Renamed' })).json().system).toBe(true);
    });
  });

  describe('patch', () => {
    it('applies add, replace and remove, accepting application/json too', async () => {
      const group = await create({ name: 'to-patch' });
      const added = await patch(group._id, [{ op: 'add', path: '/externalId', value: 'patched-external' }]);
      expect(added.statusCode).toBe(200);
      expect(added.json()).toEqual({ ...group, externalId: 'patched-external', _modified: expect.any(String) });
      const replaced = await patch(group._id, [{ op: 'replace', path: '/name', value: 'Patched Group' }], { 'content-type': 'application/json' });
      expect(replaced.json()).toMatchObject({ name: 'Patched Group', externalId: 'patched-external' });
      const removed = await patch(group._id, [{ op: 'remove', path: '/externalId' }]);
      expect('externalId' in removed.json()).toBe(false);
      expect(removed.headers.etag).toBe('"4"');
      expect((await get(`${BASE}/${group._id}`)).json()).toEqual(removed.json());
    });

    it('is all or nothing: a failing operation changes nothing', async () => {
      const group = await create({ name: 'atomic-patch' });
      const response = await patch(group._id, [
        { op: 'replace', path: '/name', value: 'atomic-lost' },
        { op: 'remove', path: '/externalId' },
      ]);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(['/1']);
      expect((await get(`${BASE}/${group._id}`)).json()).toEqual(group);
    });

    it.each([
      ['an invalid name', [{ op: 'replace', path: '/name', value: 'not valid!' }], ['/name']],
      ['no name', [{ op: 'remove', path: '/name' }], ['/name']],
      ['an empty externalId', [{ op: 'add', path: '/externalId', value: '' }], ['/externalId']],
      ['an unknown field', [{ op: 'add', path: '/owner', value: 'me' }], ['/owner']],
      ['system made true', [{ op: 'replace', path: '/system', value: true }], ['/system']],
      ['system that is not a boolean', [{ op: 'replace', path: '/system', value: 'yes' }], ['/system']],
    ])('validates the result like a replace: refuses %s', async (_case, operations, paths) => {
      const group = await create({ name: `patch-validated-${_case.replace(/[^a-z]/g, '')}` });
      const response = await patch(group._id, operations);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(paths);
      expect((await get(`${BASE}/${group._id}`)).json()).toEqual(group);
    });

    it('refuses to change the system flag of a built-in group', async () => {
      const builtinId = await insertSystemGroup('Builtin Patch');
      const response = await patch(builtinId, [{ op: 'replace', path: '/system', value: false }]);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(['/system']);
      expect((await get(`${BASE}/${builtinId}`)).json().system).toBe(true);
    });

    it('honours If-Match and answers 404, 409 and 415 as a replace does', async () => {
      await create({ name: 'patch-taken', externalId: 'patch-taken-external' });
      const group = await create({ name: 'patch-guarded' });
      const rename = [{ op: 'replace', path: '/name', value: 'patch-guarded-2' }];
      expect((await patch(group._id, rename, { 'if-match': '"2"' })).statusCode).toBe(412);
      expect((await patch(group._id, rename, { 'if-match': '"1"' })).statusCode).toBe(200);
      expect((await patch(UNKNOWN_ID, rename)).statusCode).toBe(404);
      expect((await patch('not-a-uuid', rename)).statusCode).toBe(404);
      expect((await patch(group._id, [{ op: 'replace', path: '/name', value: 'PATCH-TAKEN' }])).statusCode).toBe(409);
      expect((await patch(group._id, [{ op: 'add', path: '/externalId', value: 'patch-taken-external' }])).statusCode).toBe(409);
      expect((await patch(group._id, rename, { 'content-type': 'application/merge-patch+json' })).statusCode).toBe(415);
      expect((await get(`${BASE}/${group._id}`)).json()).toMatchObject({ name: 'patch-guarded-2' });
      expect((await get(`${BASE}/${group._id}`)).headers.etag).toBe('"2"');
    });
  });

  describe('delete', () => {
    it('deletes with {msg}, then answers 404', async () => {
      const group = await create({ name: 'short-lived-group' });
      const response = await remove(group._id);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ msg: "Group 'short-lived-group' deleted" });
      expect((await get(`${BASE}/${group._id}`)).statusCode).toBe(404);
      expect((await remove(group._id)).statusCode).toBe(404);
      expect((await remove('not-a-uuid')).statusCode).toBe(404);
    });

    it('honours If-Match', async () => {
      const group = await create({ name: 'delete-guarded-group' });
      expect((await remove(group._id, { 'if-match': '"2"' })).statusCode).toBe(412);
      expect((await get(`${BASE}/${group._id}`)).statusCode).toBe(200);
      expect((await remove(group._id, { 'if-match': '"1"' })).statusCode).toBe(200);
    });

    it('refuses to delete a built-in group with 403', async () => {
      const builtinId = await insertSystemGroup('Builtin Delete');
      const response = await remove(builtinId);
      expect(response.statusCode).toBe(403);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json().detail).toBe("Group 'Builtin Delete' is a built-in group and cannot be deleted");
      expect((await get(`${BASE}/${builtinId}`)).statusCode).toBe(200);
    });

    it('removes its memberships both ways', async () => {
      const userId = await createUser('deleted-group-member');
      const parent = await create({ name: 'del-parent' });
      const doomed = await create({ name: 'del-doomed' });
      const child = await create({ name: 'del-child' });
      await changed(doomed._id, [
        { op: 'add', id: userId },
        { op: 'add', id: child._id },
      ]);
      await changed(parent._id, [{ op: 'add', id: doomed._id }]);
      expect(await userGroups(userId)).toEqual(['direct del-doomed', 'indirect del-parent']);
      expect(await memberLines(parent._id)).toEqual(['indirect Group del-child', 'direct Group del-doomed', 'indirect User deleted-group-member']);

      expect((await remove(doomed._id)).statusCode).toBe(200);
      expect(await userGroups(userId)).toEqual([]);
      expect(await memberLines(parent._id)).toEqual([]);
      expect(await memberLines(child._id)).toEqual([]);
      expect((await get(`${BASE}/${child._id}`)).statusCode).toBe(200);
      const claims = claimsOf(await hub.login('deleted-group-member', PASSWORD));
      expect(claims.groups).toEqual([]);
    });
  });

  describe('members', () => {
    it('lists direct and indirect members by name ignoring case, each principal once and direct winning', async () => {
      const top = await create({ name: 'm-top' });
      const middle = await create({ name: 'M-Middle' });
      const bottom = await create({ name: 'm-bottom' });
      const ann = await createUser('m-ann');
      const bea = await createUser('M-Bea');
      const cal = await createUser('m-cal');
      await changed(bottom._id, [
        { op: 'add', id: ann },
        { op: 'add', id: cal },
      ]);
      await changed(middle._id, [
        { op: 'add', id: bottom._id },
        { op: 'add', id: bea },
      ]);
      await changed(top._id, [
        { op: 'add', id: middle._id },
        { op: 'add', id: bottom._id },
        { op: 'add', id: cal },
      ]);
      const listed = await members(top._id);
      expect(listed).toEqual([
        { membershipType: 'indirect', principalType: 'User', id: ann, name: 'm-ann' },
        { membershipType: 'indirect', principalType: 'User', id: bea, name: 'M-Bea' },
        { membershipType: 'direct', principalType: 'Group', id: bottom._id, name: 'm-bottom' },
        { membershipType: 'direct', principalType: 'User', id: cal, name: 'm-cal' },
        { membershipType: 'direct', principalType: 'Group', id: middle._id, name: 'M-Middle' },
      ]);
      expect(await memberLines(middle._id)).toEqual(['indirect User m-ann', 'direct User M-Bea', 'direct Group m-bottom', 'indirect User m-cal']);
      expect(await memberLines(bottom._id)).toEqual(['direct User m-ann', 'direct User m-cal']);
    });

    it('filters by membershipType and principalType', async () => {
      const outer = await create({ name: 'f-outer' });
      const inner = await create({ name: 'f-inner' });
      const direct = await createUser('f-direct');
      const nested = await createUser('f-nested');
      await changed(inner._id, [{ op: 'add', id: nested }]);
      await changed(outer._id, [
        { op: 'add', id: inner._id },
        { op: 'add', id: direct },
      ]);
      expect(await memberLines(outer._id, 'filter[membershipType][EQ]=direct')).toEqual(['direct User f-direct', 'direct Group f-inner']);
      expect(await memberLines(outer._id, 'filter[membershipType][EQ]=indirect')).toEqual(['indirect User f-nested']);
      expect(await memberLines(outer._id, 'filter[principalType][EQ]=User')).toEqual(['direct User f-direct', 'indirect User f-nested']);
      expect(await memberLines(outer._id, 'filter[principalType][EQ]=Group')).toEqual(['direct Group f-inner']);
      expect(await memberLines(outer._id, 'filter[principalType][EQ]=User&filter[membershipType][EQ]=indirect')).toEqual(['indirect User f-nested']);
    });

    it('lists nothing for a group without members and answers 404 for an unknown or malformed group', async () => {
      const empty = await create({ name: 'empty-group' });
      const response = await get(`${BASE}/${empty._id}/members`);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual([]);
      expect((await get(`${BASE}/${UNKNOWN_ID}/members`)).statusCode).toBe(404);
      expect((await get(`${BASE}/not-a-uuid/members`)).statusCode).toBe(404);
    });

    it.each([
      ['a sort', 'sort=name', 'sort'],
      ['a page limit', 'page[limit]=10', 'page[limit]'],
      ['a page offset', 'page[offset]=0', 'page[offset]'],
      ['a projection', 'fields=name', 'fields'],
      ['an unknown membershipType', 'filter[membershipType][EQ]=nested', 'filter[membershipType][EQ]'],
      ['an unknown principalType', 'filter[principalType][EQ]=user', 'filter[principalType][EQ]'],
      ['an operator the field does not take', 'filter[principalType][CO]=U', 'filter[principalType][CO]'],
      ['a filter on name', 'filter[name][EQ]=x', 'filter[name][EQ]'],
    ])('refuses %s with 400 naming the parameter', async (_case, query, parameter) => {
      const group = await create({ name: `members-query-${_case.replace(/[^a-z]/g, '')}` });
      const response = await get(`${BASE}/${group._id}/members?${query}`);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual([parameter]);
    });
  });

  describe('member changes', () => {
    it('adds and removes by id and by name ignoring case, counting what changed', async () => {
      const group = await create({ name: 'Change Target' });
      const sub = await create({ name: 'Change Sub' });
      const amy = await createUser('c-amy');
      const ben = await createUser('c-ben');
      expect(
        await changed(group._id, [
          { op: 'add', id: amy },
          { op: 'add', name: 'C-BEN', principalType: 'User' },
          { op: 'add', name: 'change sub', principalType: 'Group' },
        ]),
      ).toBe("Members of group 'Change Target' changed: 3 added, 0 removed, 0 unchanged");
      expect(await members(group._id)).toEqual([
        { membershipType: 'direct', principalType: 'User', id: amy, name: 'c-amy' },
        { membershipType: 'direct', principalType: 'User', id: ben, name: 'c-ben' },
        { membershipType: 'direct', principalType: 'Group', id: sub._id, name: 'Change Sub' },
      ]);
      expect(
        await changed(group._id, [
          { op: 'add', id: amy.toUpperCase(), principalType: 'User', name: 'C-Amy' },
          { op: 'remove', id: ben },
          { op: 'remove', name: 'Change Sub', principalType: 'Group' },
          { op: 'remove', id: ben },
        ]),
      ).toBe("Members of group 'Change Target' changed: 0 added, 2 removed, 2 unchanged");
      expect(await memberLines(group._id)).toEqual(['direct User c-amy']);
    });

    it('applies the items in order', async () => {
      const group = await create({ name: 'ordered-changes' });
      const user = await createUser('c-ordered');
      expect(
        await changed(group._id, [
          { op: 'add', id: user },
          { op: 'remove', id: user },
          { op: 'add', id: user },
          { op: 'add', id: user },
        ]),
      ).toBe("Members of group 'ordered-changes' changed: 2 added, 1 removed, 1 unchanged");
      expect(await memberLines(group._id)).toEqual(['direct User c-ordered']);
    });

    describe('refuses, changing nothing,', () => {
      let group: Group;
      let kept: string;
      let newcomer: string;
      let other: Group;

      beforeAll(async () => {
        group = await create({ name: 'c-guarded' });
        other = await create({ name: 'c-other' });
        kept = await createUser('c-kept');
        newcomer = await createUser('c-newcomer');
        await changed(group._id, [{ op: 'add', id: kept }]);
      });

      it.each<[string, (ids: { newcomer: string; kept: string; other: string }) => MemberChange[], string[]]>([
        ['an unknown id', () => [{ op: 'add', id: UNKNOWN_ID }], ['/1/id']],
        ['an unknown user name', () => [{ op: 'add', name: 'c-nobody', principalType: 'User' }], ['/1/name']],
        ['a group name given as a user', () => [{ op: 'add', name: 'c-other', principalType: 'User' }], ['/1/name']],
        ['a name without principalType', () => [{ op: 'add', name: 'c-other' }], ['/1/principalType']],
        ['an id whose principalType disagrees', ({ other }) => [{ op: 'add', id: other, principalType: 'User' }], ['/1/principalType']],
        ['an id whose name disagrees', ({ other }) => [{ op: 'add', id: other, name: 'c-kept' }], ['/1/name']],
        ['an item with neither id nor name', () => [{ op: 'add', principalType: 'User' }], ['/1']],
        ['an item without op', ({ other }) => [{ id: other }], ['/1/op']],
        ['an unknown op', ({ other }) => [{ op: 'replace', id: other }], ['/1/op']],
        ['an id that is not a UUID', () => [{ op: 'add', id: 'c-kept' }], ['/1/id']],
        ['an unknown principalType', () => [{ op: 'add', name: 'c-kept', principalType: 'user' }], ['/1/principalType']],
        ['an empty name', () => [{ op: 'add', name: '', principalType: 'User' }], ['/1/name']],
        ['a name that is not a string', () => [{ op: 'add', name: 7, principalType: 'User' }], ['/1/name']],
        ['an unknown property', ({ other }) => [{ op: 'add', id: other, role: 'owner' }], ['/1/role']],
        [
          'several bad items, reporting each',
          ({ other }) => [
            { op: 'remove', id: UNKNOWN_ID },
            { op: 'add', id: other },
            { op: 'add', name: 'c-ghost', principalType: 'Group' },
          ],
          ['/1/id', '/3/name'],
        ],
      ])('%s with 400 naming the item', async (_case, items, paths) => {
        const response = await changeMembers(group._id, [
          { op: 'add', id: newcomer },
          ...items({ newcomer, kept, other: other._id }),
          { op: 'remove', id: kept },
        ]);
        expect(response.statusCode).toBe(400);
        expect(response.headers['content-type']).toContain('application/problem+json');
        expect(problemPaths(response)).toEqual(paths);
        expect(await memberLines(group._id)).toEqual(['direct User c-kept']);
      });

      it.each([
        ['an object', { op: 'add', id: UNKNOWN_ID }, ''],
        ['a string', 'add', ''],
        ['null', null, ''],
        ['an empty array', [], ''],
        ['an array with an item that is not an object', [{ op: 'remove', id: UNKNOWN_ID }, 5], '/1'],
      ])('a body that is %s', async (_case, body, path) => {
        const response = await changeMembers(group._id, body);
        expect(response.statusCode).toBe(400);
        expect(problemPaths(response)).toEqual([path]);
        expect(await memberLines(group._id)).toEqual(['direct User c-kept']);
      });

      it('more than 1000 items, accepting exactly 1000', async () => {
        const tooMany = Array.from({ length: 1001 }, () => ({ op: 'remove', id: kept }));
        const response = await changeMembers(group._id, tooMany);
        expect(response.statusCode).toBe(400);
        expect(problemPaths(response)).toEqual(['']);
        expect(await memberLines(group._id)).toEqual(['direct User c-kept']);
        const allowed = Array.from({ length: 1000 }, (_, index) => ({ op: index % 2 === 0 ? 'add' : 'remove', id: newcomer }));
        expect(await changed(group._id, allowed)).toBe("Members of group 'c-guarded' changed: 500 added, 500 removed, 0 unchanged");
        expect(await memberLines(group._id)).toEqual(['direct User c-kept']);
      });

      it('a body that is not JSON', async () => {
        const response = await hub.inject({
          method: 'PATCH',
          url: `${BASE}/${group._id}/members`,
          headers: { ...auth, 'content-type': 'text/plain' },
          payload: 'add c-newcomer',
        });
        expect(response.statusCode).toBe(415);
        expect(await memberLines(group._id)).toEqual(['direct User c-kept']);
      });
    });

    it('answers 404 for an unknown or malformed group', async () => {
      const user = await createUser('c-homeless');
      expect((await changeMembers(UNKNOWN_ID, [{ op: 'add', id: user }])).statusCode).toBe(404);
      expect((await changeMembers('not-a-uuid', [{ op: 'add', id: user }])).statusCode).toBe(404);
      expect(await userGroups(user)).toEqual([]);
    });
  });

  describe('nesting cycles', () => {
    it('refuses to put a group into itself', async () => {
      const group = await create({ name: 'cy-self' });
      const response = await changeMembers(group._id, [{ op: 'add', id: group._id }]);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(['/0']);
      expect(response.json().detail).toContain("group 'cy-self'");
      expect(await memberLines(group._id)).toEqual([]);
    });

    it('refuses to put a group into one of its members', async () => {
      const a = await create({ name: 'cy-a' });
      const b = await create({ name: 'cy-b' });
      await changed(b._id, [{ op: 'add', id: a._id }]);
      const response = await changeMembers(a._id, [{ op: 'add', name: 'CY-B', principalType: 'Group' }]);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(['/0']);
      expect(await memberLines(a._id)).toEqual([]);
      expect(await memberLines(b._id)).toEqual(['direct Group cy-a']);
    });

    it('refuses to close a cycle through three groups, applying none of the batch', async () => {
      const a = await create({ name: 'cy3-a' });
      const b = await create({ name: 'cy3-b' });
      const c = await create({ name: 'cy3-c' });
      const extra = await create({ name: 'cy3-extra' });
      const user = await createUser('cy3-user');
      await changed(b._id, [{ op: 'add', id: a._id }]);
      await changed(c._id, [{ op: 'add', id: b._id }]);
      const response = await changeMembers(a._id, [
        { op: 'add', id: user },
        { op: 'add', id: extra._id },
        { op: 'add', id: c._id },
      ]);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(['/2']);
      expect(response.json().detail).toContain("group 'cy3-c'");
      expect(await memberLines(a._id)).toEqual([]);
      expect(await userGroups(user)).toEqual([]);
      expect(await memberLines(c._id)).toEqual(['indirect Group cy3-a', 'direct Group cy3-b']);
    });

    it('allows the reverse nesting once the first one is removed', async () => {
      const a = await create({ name: 'cyr-a' });
      const b = await create({ name: 'cyr-b' });
      await changed(b._id, [{ op: 'add', id: a._id }]);
      expect((await changeMembers(a._id, [{ op: 'add', id: b._id }])).statusCode).toBe(400);
      await changed(b._id, [{ op: 'remove', id: a._id }]);
      expect(await changed(a._id, [{ op: 'add', id: b._id }])).toBe("Members of group 'cyr-a' changed: 1 added, 0 removed, 0 unchanged");
      expect(await memberLines(a._id)).toEqual(['direct Group cyr-b']);
      expect(await memberLines(b._id)).toEqual([]);
    });

    it('lets only one of two concurrent additions that together would close a cycle succeed', async () => {
      const a = await create({ name: 'cyc-a' });
      const b = await create({ name: 'cyc-b' });
      const responses = await Promise.all([changeMembers(a._id, [{ op: 'add', id: b._id }]), changeMembers(b._id, [{ op: 'add', id: a._id }])]);
      expect(responses.map((response) => response.statusCode).sort()).toEqual([200, 400]);
      const nested = [...(await memberLines(a._id)), ...(await memberLines(b._id))];
      expect(nested).toHaveLength(1);
    });

    it('allows a diamond, which is no cycle', async () => {
      const top = await create({ name: 'dia-top' });
      const left = await create({ name: 'dia-left' });
      const right = await create({ name: 'dia-right' });
      const base = await create({ name: 'dia-base' });
      await changed(left._id, [{ op: 'add', id: base._id }]);
      await changed(right._id, [{ op: 'add', id: base._id }]);
      await changed(top._id, [
        { op: 'add', id: left._id },
        { op: 'add', id: right._id },
      ]);
      expect(await memberLines(top._id)).toEqual(['indirect Group dia-base', 'direct Group dia-left', 'direct Group dia-right']);
    });
  });

  describe('nesting', () => {
    let userId: string;
    const ids: string[] = [];

    beforeAll(async () => {
      userId = await createUser('nest-user');
      for (const name of ['nest-1', 'nest-2', 'nest-3']) ids.push((await create({ name }))._id);
      await changed(ids[0], [{ op: 'add', id: userId }]);
      await changed(ids[1], [{ op: 'add', id: ids[0] }]);
      await changed(ids[2], [{ op: 'add', id: ids[1] }]);
    });

    it("shows a user's groups at every depth, direct and indirect", async () => {
      const response = await get(`${USERS}/${userId}/groups`);
      expect(response.json()).toEqual([
        { membershipType: 'direct', id: ids[0], name: 'nest-1' },
        { membershipType: 'indirect', id: ids[1], name: 'nest-2' },
        { membershipType: 'indirect', id: ids[2], name: 'nest-3' },
      ]);
    });

    it("shows a group's members at every depth", async () => {
      expect(await members(ids[2])).toEqual([
        { membershipType: 'indirect', principalType: 'Group', id: ids[0], name: 'nest-1' },
        { membershipType: 'direct', principalType: 'Group', id: ids[1], name: 'nest-2' },
        { membershipType: 'indirect', principalType: 'User', id: userId, name: 'nest-user' },
      ]);
    });

    it('puts every group of the user, at every depth, in the groups claim of its tokens', async () => {
      const token = await hub.login('nest-user', PASSWORD);
      expect((claimsOf(token).groups as string[]).sort()).toEqual([...ids].sort());
      const response = await hub.inject({ method: 'GET', url: '/api/v2/auth/claims', headers: bearer(token) });
      expect(response.statusCode).toBe(200);
      const { claims } = response.json();
      expect(Object.keys(response.json())).toEqual(['claims']);
      expect(Object.keys(claims).sort()).toEqual(['exp', 'groups', 'iat', 'iss', 'sub', 'tokenVersion', 'userName']);
      expect(claims).toMatchObject({ sub: userId, userName: 'nest-user', iss: 'hub' });
      expect([...claims.groups].sort()).toEqual([...ids].sort());
      expect(claims.exp - claims.iat).toBe(3600);
    });

    it('drops the groups no longer reached from the claims of new tokens', async () => {
      expect(await changed(ids[1], [{ op: 'remove', name: 'NEST-1', principalType: 'Group' }])).toBe(
        "Members of group 'nest-2' changed: 0 added, 1 removed, 0 unchanged",
      );
      expect(claimsOf(await hub.login('nest-user', PASSWORD)).groups).toEqual([ids[0]]);
      expect(await userGroups(userId)).toEqual(['direct nest-1']);
      expect(await memberLines(ids[2])).toEqual(['direct Group nest-2']);
    });
  });

  describe("the callers' cache", () => {
    /** The groups of the cached caller `userId`, or undefined when it is not cached. */
    const cachedGroups = async (userId: string) => (await hub.app.get(CallerCache).get(userId, () => Promise.resolve(null)))?.caller.groups;
    /** Makes requests as the user until its caller is cached (a late notification of an earlier test's change may drop it). */
    const cacheCaller = async (userId: string, token: string) => {
      for (let attempt = 0; attempt < 50 && (await cachedGroups(userId)) === undefined; attempt += 1) {
        await hub.inject({ method: 'GET', url: '/api/v2/auth/me', headers: bearer(token) });
      }
      return cachedGroups(userId);
    };

    it('makes a caller carry its groups at every depth', async () => {
      const userId = await createUser('cached-user');
      const inner = await create({ name: 'cache-inner' });
      const outer = await create({ name: 'cache-outer' });
      await changed(inner._id, [{ op: 'add', id: userId }]);
      await changed(outer._id, [{ op: 'add', id: inner._id }]);
      const { caller } = await hub.app.get(AuthService).authenticate(`Bearer ${await hub.login('cached-user', PASSWORD)}`, { peer: '127.0.0.1' });
      expect([...caller.groups].sort()).toEqual([inner._id, outer._id].sort());
    });

    it("drops every cached caller when this hub changes a group's members, so the next request sees the change", async () => {
      const userId = await createUser('changed-member');
      const token = await hub.login('changed-member', PASSWORD);
      expect(await cacheCaller(userId, token)).toEqual([]);
      const group = await create({ name: 'joined-group' });
      await changed(group._id, [{ op: 'add', id: userId }]);
      expect(await cachedGroups(userId)).toBeUndefined();
      const { caller } = await hub.app.get(AuthService).authenticate(`Bearer ${token}`, { peer: '127.0.0.1' });
      expect(caller.groups).toEqual([group._id]);
    });

    it('drops them too when another process changes memberships in the database', async () => {
      const userId = await createUser('changed-elsewhere');
      const group = await create({ name: 'joined-elsewhere' });
      const token = await hub.login('changed-elsewhere', PASSWORD);
      expect(await cacheCaller(userId, token)).toEqual([]);
      await hub.app.get(DataSource).query('INSERT INTO group_user_members (group_id, user_id) VALUES ($1, $2)', [group._id, userId]);
      const deadline = Date.now() + 3000;
      while ((await cachedGroups(userId)) !== undefined && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await cachedGroups(userId)).toBeUndefined();
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
      ['GET', `${BASE}/${UNKNOWN_ID}/members`],
      ['PATCH', `${BASE}/${UNKNOWN_ID}/members`],
    ] as const)('%s %s answers 401', async (method, url) => {
      const response = await hub.inject({ method, url, payload: method === 'GET' || method === 'DELETE' ? undefined : {} });
      expect(response.statusCode).toBe(401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="hub"');
    });
  });
});

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { bearer, problemPaths, startTestHub, type TestHub } from '../support/test-hub.js';

interface Principal {
  _type: 'User' | 'Group';
  _id: string;
  displayName: string;
  external: boolean;
}

interface PrincipalList {
  totalCount: number;
  data: Principal[];
}

const BASE = '/api/v2/auth/principals';
const UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-000000000000';

/** Every principal of the hub, by displayName ignoring case. */
const ALL = ['Ada Lovelace', 'Adam Group', 'Administrator', 'Analysts', 'Builtin Admins', 'Grace Hopper', 'linus', 'Zeta Team'];

describe('principals', () => {
  let hub: TestHub;
  let auth: Record<string, string>;
  const ids: Record<string, string> = {};

  const get = (url: string) => hub.inject({ method: 'GET', url, headers: auth });
  const list = async (query: string): Promise<PrincipalList> => {
    const response = await get(`${BASE}?${query}`);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const names = async (query: string): Promise<string[]> => (await list(query)).data.map((principal) => principal.displayName);
  const createdId = async (url: string, payload: object): Promise<string> => {
    const response = await hub.inject({ method: 'POST', url, headers: auth, payload });
    expect(response.statusCode).toBe(201);
    return response.json()._id;
  };

  beforeAll(async () => {
    hub = await startTestHub();
    auth = bearer(hub.adminToken);
    ids.Administrator = (await get('/api/v2/auth/me')).json()._id;
    const users = '/api/v2/auth/users';
    ids['Ada Lovelace'] = await createdId(users, { userName: 'ada', password: 'ada-password', displayName: 'Ada Lovelace', externalId: 'ext-ada' });
    ids['Grace Hopper'] = await createdId(users, { userName: 'grace', password: 'grace-password', displayName: 'Grace Hopper' });
    ids.linus = await createdId(users, { userName: 'linus', password: 'linus-password' });
    const groups = '/api/v2/auth/groups';
    ids.Analysts = await createdId(groups, { name: 'Analysts', externalId: 'ext-analysts' });
    ids['Adam Group'] = await createdId(groups, { name: 'Adam Group' });
    ids['Zeta Team'] = await createdId(groups, { name: 'Zeta Team' });
    const rows: { id: string }[] = await hub.app
      .get(DataSource)
      .query("INSERT INTO groups (name, system, version) VALUES ('Builtin Admins', true, 1) RETURNING id");
    ids['Builtin Admins'] = rows[0].id;
  });
  afterAll(() => hub.close());

  it('lists users and groups together by displayName ignoring case, each with exactly _type, _id, displayName and external', async () => {
    const page = await list('');
    expect(page.totalCount).toBe(8);
    expect(page.data).toEqual([
      { _type: 'User', _id: ids['Ada Lovelace'], displayName: 'Ada Lovelace', external: true },
      { _type: 'Group', _id: ids['Adam Group'], displayName: 'Adam Group', external: false },
      { _type: 'User', _id: ids.Administrator, displayName: 'Administrator', external: false },
      { _type: 'Group', _id: ids.Analysts, displayName: 'Analysts', external: true },
      { _type: 'Group', _id: ids['Builtin Admins'], displayName: 'Builtin Admins', external: false },
      { _type: 'User', _id: ids['Grace Hopper'], displayName: 'Grace Hopper', external: false },
      { _type: 'User', _id: ids.linus, displayName: 'linus', external: false },
      { _type: 'Group', _id: ids['Zeta Team'], displayName: 'Zeta Team', external: false },
    ]);
  });

  it('sorts by displayName and -displayName, ignoring case', async () => {
    expect(await names('sort=displayName')).toEqual(ALL);
    expect(await names('sort=-displayName')).toEqual([...ALL].reverse());
  });

  it('filters _id with EQ and IN, across users and groups', async () => {
    expect(await names(`filter[_id][EQ]=${ids.linus}`)).toEqual(['linus']);
    expect(await names(`filter[_id][EQ]=${ids['Zeta Team'].toUpperCase()}`)).toEqual(['Zeta Team']);
    expect(await names(`filter[_id][EQ]=${UNKNOWN_ID}`)).toEqual([]);
    expect(await names(`filter[_id][IN]=${ids['Zeta Team']},${ids['Ada Lovelace']},${UNKNOWN_ID}`)).toEqual(['Ada Lovelace', 'Zeta Team']);
    expect(await names(`filter[_id][IN]=${ids.Analysts}&filter[_id][IN]=${ids['Grace Hopper']}`)).toEqual(['Analysts', 'Grace Hopper']);
  });

  it('filters _type with EQ', async () => {
    expect(await names('filter[_type][EQ]=User')).toEqual(['Ada Lovelace', 'Administrator', 'Grace Hopper', 'linus']);
    expect(await names('filter[_type][EQ]=Group')).toEqual(['Adam Group', 'Analysts', 'Builtin Admins', 'Zeta Team']);
  });

  it('filters displayName with EQ (exact), CO and SW (ignoring case), taking LIKE wildcards literally', async () => {
    expect(await names('filter[displayName][EQ]=linus')).toEqual(['linus']);
    expect(await names('filter[displayName][EQ]=Linus')).toEqual([]);
    expect(await names('filter[displayName][EQ]=Adam%20Group')).toEqual(['Adam Group']);
    expect(await names('filter[displayName][CO]=IN')).toEqual(['Administrator', 'Builtin Admins', 'linus']);
    expect(await names('filter[displayName][CO]=team')).toEqual(['Zeta Team']);
    expect(await names('filter[displayName][SW]=AD')).toEqual(['Ada Lovelace', 'Adam Group', 'Administrator']);
    expect(await names('filter[displayName][SW]=lovelace')).toEqual([]);
    expect(await names('filter[displayName][CO]=a_a')).toEqual([]);
    expect(await names('filter[displayName][SW]=%25')).toEqual([]);
  });

  it("shows a user's userName as its displayName when it has none, and filters on that", async () => {
    expect(await names('filter[displayName][EQ]=ada')).toEqual([]);
    expect(await names('filter[displayName][SW]=lin')).toEqual(['linus']);
  });

  it('filters external with EQ', async () => {
    expect(await names('filter[external][EQ]=true')).toEqual(['Ada Lovelace', 'Analysts']);
    expect(await names('filter[external][EQ]=false')).toEqual(['Adam Group', 'Administrator', 'Builtin Admins', 'Grace Hopper', 'linus', 'Zeta Team']);
  });

  it('filters system with EQ: the administrator and built-in groups are system principals', async () => {
    expect(await names('filter[system][EQ]=true')).toEqual(['Administrator', 'Builtin Admins']);
    expect(await names('filter[system][EQ]=false')).toEqual(['Ada Lovelace', 'Adam Group', 'Analysts', 'Grace Hopper', 'linus', 'Zeta Team']);
  });

  it('combines filters with AND, counting only the matches', async () => {
    const page = await list('filter[_type][EQ]=Group&filter[displayName][SW]=a&sort=-displayName');
    expect(page).toEqual({
      totalCount: 2,
      data: [
        { _type: 'Group', _id: ids.Analysts, displayName: 'Analysts', external: true },
        { _type: 'Group', _id: ids['Adam Group'], displayName: 'Adam Group', external: false },
      ],
    });
    expect(await names('filter[_type][EQ]=User&filter[external][EQ]=false&filter[system][EQ]=false')).toEqual(['Grace Hopper', 'linus']);
  });

  it('pages with page[offset] and page[limit], totalCount counting every match', async () => {
    const first = await list('page[limit]=3');
    expect(first.totalCount).toBe(8);
    expect(first.data.map((p) => p.displayName)).toEqual(ALL.slice(0, 3));
    expect(await names('page[offset]=3&page[limit]=3')).toEqual(ALL.slice(3, 6));
    const last = await list('page[offset]=6&page[limit]=3');
    expect(last.totalCount).toBe(8);
    expect(last.data.map((p) => p.displayName)).toEqual(ALL.slice(6));
    expect(await names('sort=-displayName&page[offset]=1&page[limit]=2')).toEqual(['linus', 'Grace Hopper']);
    expect(await list('page[offset]=8')).toEqual({ totalCount: 8, data: [] });
    expect(await list('filter[_type][EQ]=Group&page[offset]=2&page[limit]=1')).toMatchObject({ totalCount: 4, data: [{ displayName: 'Builtin Admins' }] });
  });

  it.each([
    ['a projection with fields', 'fields=displayName', 'fields'],
    ['a projection with excludeFields', 'excludeFields=_id', 'excludeFields'],
    ['a _type in lower case', 'filter[_type][EQ]=user', 'filter[_type][EQ]'],
    ['a _type that is neither User nor Group', 'filter[_type][EQ]=Role', 'filter[_type][EQ]'],
    ['IN on _type', 'filter[_type][IN]=User,Group', 'filter[_type][IN]'],
    ['PR on displayName', 'filter[displayName][PR]=true', 'filter[displayName][PR]'],
    ['IN on displayName', 'filter[displayName][IN]=linus', 'filter[displayName][IN]'],
    ['an empty SW value', 'filter[displayName][SW]=', 'filter[displayName][SW]'],
    ['an empty CO value', 'filter[displayName][CO]=', 'filter[displayName][CO]'],
    ['an external value that is not a boolean', 'filter[external][EQ]=yes', 'filter[external][EQ]'],
    ['a system value that is not a boolean', 'filter[system][EQ]=1', 'filter[system][EQ]'],
    ['an _id that is not a UUID', 'filter[_id][EQ]=ada', 'filter[_id][EQ]'],
    ['an IN with a bad UUID', `filter[_id][IN]=${UNKNOWN_ID},ada`, 'filter[_id][IN]'],
    ['a filter on userName', 'filter[userName][EQ]=ada', 'filter[userName][EQ]'],
    ['a filter on name', 'filter[name][CO]=a', 'filter[name][CO]'],
    ['a repeated EQ', 'filter[_type][EQ]=User&filter[_type][EQ]=Group', 'filter[_type][EQ]'],
    ['a sort on _type', 'sort=_type', 'sort'],
    ['a sort on _id', 'sort=-_id', 'sort'],
    ['a sort on name', 'sort=name', 'sort'],
    ['a negative offset', 'page[offset]=-1', 'page[offset]'],
    ['a limit of 0', 'page[limit]=0', 'page[limit]'],
    ['a limit over 1000', 'page[limit]=1001', 'page[limit]'],
    ['an unknown parameter', 'q=ada', 'q'],
  ])('refuses %s with 400 naming the parameter', async (_case, query, parameter) => {
    const response = await get(`${BASE}?${query}`);
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toContain('application/problem+json');
    expect(problemPaths(response)).toEqual([parameter]);
  });

  it('answers 401 without credentials', async () => {
    const response = await hub.inject({ method: 'GET', url: BASE });
    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toBe('Bearer realm="hub"');
  });

  it('follows changes to users and groups', async () => {
    const patched = await hub.inject({
      method: 'PATCH',
      url: `/api/v2/auth/users/${ids.linus}`,
      headers: { ...auth, 'content-type': 'application/json-patch+json' },
      payload: JSON.stringify([
        { op: 'add', path: '/displayName', value: 'Linus Torvalds' },
        { op: 'add', path: '/externalId', value: 'ext-linus' },
      ]),
    });
    expect(patched.statusCode).toBe(200);
    expect(await list(`filter[_id][EQ]=${ids.linus}`)).toEqual({
      totalCount: 1,
      data: [{ _type: 'User', _id: ids.linus, displayName: 'Linus Torvalds', external: true }],
    });
    const deleted = await hub.inject({ method: 'DELETE', url: `/api/v2/auth/groups/${ids['Zeta Team']}`, headers: auth });
    expect(deleted.statusCode).toBe(200);
    expect(await names('')).toEqual(['Ada Lovelace', 'Adam Group', 'Administrator', 'Analysts', 'Builtin Admins', 'Grace Hopper', 'Linus Torvalds']);
  });
});

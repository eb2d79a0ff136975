import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { ADMIN_PASSWORD, ADMIN_USER, bearer, problemPaths, startTestHub, type TestHub } from '../support/test-hub.js';

interface User {
  _id: string;
  _created: string;
  _modified: string;
  externalId?: string;
  system: boolean;
  userName: string;
  displayName?: string;
  active: boolean;
  email?: string;
  unixHomeDirectory?: string;
  unixUserName?: string;
  userPrincipalName?: string;
  invitationPending: boolean;
  invitationExpiry?: string;
  invitationToken?: string;
}

interface UserList {
  totalCount: number;
  data: Partial<User>[];
}

interface Membership {
  membershipType: 'direct' | 'indirect';
  id: string;
  name: string;
}

const BASE = '/api/v2/auth/users';
const GROUPS = '/api/v2/auth/groups';
const ME = '/api/v2/auth/me';
const UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-000000000000';
const PROJECTABLE = [
  '_id',
  '_created',
  '_modified',
  'externalId',
  'userName',
  'displayName',
  'active',
  'email',
  'unixHomeDirectory',
  'unixUserName',
  'userPrincipalName',
  'invitationPending',
];

describe('users', () => {
  let hub: TestHub;
  let auth: Record<string, string>;
  const logs: Record<string, unknown>[] = [];

  const get = (url: string, headers: Record<string, string> = {}) => hub.inject({ method: 'GET', url, headers: { ...auth, ...headers } });
  const list = async (query: string): Promise<UserList> => {
    const response = await get(`${BASE}?${query}`);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const names = async (query: string): Promise<string[]> => (await list(query)).data.map((user) => user.userName as string);
  const post = (payload: object) => hub.inject({ method: 'POST', url: BASE, headers: auth, payload });
  const create = async (body: object): Promise<User> => {
    const response = await post(body);
    expect(response.statusCode).toBe(201);
    return response.json();
  };
  const read = async (id: string): Promise<User> => {
    const response = await get(`${BASE}/${id}`);
    expect(response.statusCode).toBe(200);
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
  const login = (username: string, password: string) => hub.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username, password } });
  const createGroup = async (name: string): Promise<string> => {
    const response = await hub.inject({ method: 'POST', url: GROUPS, headers: auth, payload: { name } });
    expect(response.statusCode).toBe(201);
    return response.json()._id;
  };
  const addMember = async (groupId: string, memberId: string) => {
    const response = await hub.inject({ method: 'PATCH', url: `${GROUPS}/${groupId}/members`, headers: auth, payload: [{ op: 'add', id: memberId }] });
    expect(response.statusCode).toBe(200);
  };
  const adminId = async (): Promise<string> => (await list(`filter[userName][EQ]=${ADMIN_USER}`)).data[0]._id as string;

  beforeAll(async () => {
    hub = await startTestHub({ logs });
    auth = bearer(hub.adminToken);
  });
  afterAll(() => hub.close());

  describe('create', () => {
    it('returns 201 with the user, an ETag and its Location, never a password or hash', async () => {
      const password = 'create-secret-1';
      const response = await post({
        userName: 'ada',
        displayName: 'Ada Lovelace',
        email: 'ada@example.com',
        active: true,
        externalId: 'ext-ada',
        unixHomeDirectory: '/home/ada',
        unixUserName: 'ada_l',
        userPrincipalName: 'ada@EXAMPLE.COM',
        system: false,
        invitationPending: false,
        password,
      });
      expect(response.statusCode).toBe(201);
      const body: User = response.json();
      expect(body).toEqual({
        _id: expect.any(String),
        _created: expect.any(String),
        _modified: expect.any(String),
        externalId: 'ext-ada',
        system: false,
        userName: 'ada',
        displayName: 'Ada Lovelace',
        active: true,
        email: 'ada@example.com',
        unixHomeDirectory: '/home/ada',
        unixUserName: 'ada_l',
        userPrincipalName: 'ada@EXAMPLE.COM',
        invitationPending: false,
      });
      expect(body._created).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(response.headers.etag).toBe('"1"');
      expect(response.headers.location).toBe(`${BASE}/${body._id}`);
      expect(response.body).not.toMatch(/password|hash|argon/i);
      expect(response.body).not.toContain(password);
      expect(await read(body._id)).toEqual(body);
      expect((await login('ada', password)).statusCode).toBe(200);
    });

    it('defaults active to true and leaves absent optional fields out', async () => {
      const body = await create({ userName: 'minimal', password: 'minimal-password' });
      expect(body).toEqual({
        _id: expect.any(String),
        _created: expect.any(String),
        _modified: expect.any(String),
        system: false,
        userName: 'minimal',
        active: true,
        invitationPending: false,
      });
    });

    it('accepts a user name of 128 characters and a password of exactly 8 characters', async () => {
      const userName = `a${'b'.repeat(127)}`;
      const body = await create({ userName, password: '12345678' });
      expect(body.userName).toBe(userName);
      expect((await login(userName, '12345678')).statusCode).toBe(200);
    });

    it('creates an invitation without a password, showing its token this once', async () => {
      const response = await post({ userName: 'invitee', invitationPending: true });
      expect(response.statusCode).toBe(201);
      const body: User = response.json();
      expect(body).toMatchObject({ userName: 'invitee', invitationPending: true, active: true });
      expect(body.invitationToken).toEqual(expect.any(String));
      expect(body.invitationExpiry).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      const read1 = await read(body._id);
      expect('invitationToken' in read1).toBe(false);
      expect(JSON.stringify(read1)).not.toContain(body.invitationToken);
    });

    it('ignores server-owned fields', async () => {
      const body = await create({
        userName: 'owned-fields',
        password: 'owned-fields-password',
        _id: UNKNOWN_ID,
        _created: '2000-01-01T00:00:00.000Z',
        _modified: 'not even a date',
      });
      expect(body._id).not.toBe(UNKNOWN_ID);
      expect(body._created.startsWith('2000')).toBe(false);
      expect(body._modified.startsWith('2000')).toBe(false);
    });

    it('refuses a user name taken ignoring case with 409, and creates nothing', async () => {
      await create({ userName: 'Unique.Name', password: 'unique-password' });
      const response = await post({ userName: 'unique.NAME', password: 'unique-password-2' });
      expect(response.statusCode).toBe(409);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json().detail).toContain("A user named 'unique.NAME' already exists");
      expect(await names('filter[userName][CO]=unique.name')).toEqual(['Unique.Name']);
    });

    it('refuses an externalId another user has with 409', async () => {
      await create({ userName: 'external-1', externalId: 'shared-external', password: 'external-password' });
      const response = await post({ userName: 'external-2', externalId: 'shared-external', password: 'external-password' });
      expect(response.statusCode).toBe(409);
      expect(response.json().detail).toContain('shared-external');
      expect(await names('filter[userName][EQ]=external-2')).toEqual([]);
    });

    const valid = { password: 'valid-password' };
    it.each([
      ['no userName', { ...valid }, '/userName'],
      ['an empty userName', { ...valid, userName: '' }, '/userName'],
      ['a userName starting with a dot', { ...valid, userName: '.invalid-1' }, '/userName'],
      ['a userName starting with a dash', { ...valid, userName: '-invalid-2' }, '/userName'],
      ['a userName with a space', { ...valid, userName: 'invalid 3' }, '/userName'],
      ['a userName with a slash', { ...valid, userName: 'invalid/4' }, '/userName'],
      ['a userName of 129 characters', { ...valid, userName: `invalid-${'x'.repeat(121)}` }, '/userName'],
      ['a userName that is a number', { ...valid, userName: 5 }, '/userName'],
      ['a displayName that is not a string', { ...valid, userName: 'invalid-5', displayName: 5 }, '/displayName'],
      ['a displayName over 256 characters', { ...valid, userName: 'invalid-6', displayName: 'x'.repeat(257) }, '/displayName'],
      ['an email that is not an e-mail address', { ...valid, userName: 'invalid-7', email: 'not-an-email' }, '/email'],
      ['an email without a domain', { ...valid, userName: 'invalid-8', email: 'someone@' }, '/email'],
      ['an active that is not a boolean', { ...valid, userName: 'invalid-9', active: 'yes' }, '/active'],
      ['an empty externalId', { ...valid, userName: 'invalid-10', externalId: '' }, '/externalId'],
      ['an externalId that is not a string', { ...valid, userName: 'invalid-11', externalId: 7 }, '/externalId'],
      ['a relative unixHomeDirectory', { ...valid, userName: 'invalid-12', unixHomeDirectory: 'home/x' }, '/unixHomeDirectory'],
      ['a unixUserName with capitals', { ...valid, userName: 'invalid-13', unixUserName: 'Ada' }, '/unixUserName'],
      ['a unixUserName starting with a digit', { ...valid, userName: 'invalid-14', unixUserName: '1ada' }, '/unixUserName'],
      ['a unixUserName of 33 characters', { ...valid, userName: 'invalid-15', unixUserName: 'a'.repeat(33) }, '/unixUserName'],
      ['a userPrincipalName without a realm', { ...valid, userName: 'invalid-16', userPrincipalName: 'ada' }, '/userPrincipalName'],
      ['a userPrincipalName with an empty realm', { ...valid, userName: 'invalid-17', userPrincipalName: 'ada@' }, '/userPrincipalName'],
      ['an invitationPending that is not a boolean', { userName: 'invalid-18', invitationPending: 'true' }, '/invitationPending'],
      ['an invitationExpiry that is not a date-time', { userName: 'invalid-19', invitationPending: true, invitationExpiry: 'tomorrow' }, '/invitationExpiry'],
      [
        'an invitationExpiry in the past',
        { userName: 'invalid-20', invitationPending: true, invitationExpiry: '2001-01-01T00:00:00.000Z' },
        '/invitationExpiry',
      ],
      [
        'an invitationExpiry without a pending invitation',
        { ...valid, userName: 'invalid-21', invitationExpiry: '2999-01-01T00:00:00.000Z' },
        '/invitationExpiry',
      ],
      ['no password', { userName: 'invalid-22' }, '/password'],
      ['no password with invitationPending false', { userName: 'invalid-23', invitationPending: false }, '/password'],
      ['a password with invitationPending true', { ...valid, userName: 'invalid-24', invitationPending: true }, '/password'],
      ['a password of 7 characters', { userName: 'invalid-25', password: '1234567' }, '/password'],
      ['a password of 8 UTF-16 units but 4 characters', { userName: 'invalid-26', password: '🙂🙂🙂🙂' }, '/password'],
      ['a password equal to the userName ignoring case', { userName: 'Invalid-Name-27', password: 'invalid-NAME-27' }, '/password'],
      ['a password that is not a string', { userName: 'invalid-28', password: 12345678 }, '/password'],
      ['a null password', { userName: 'invalid-33', password: null }, '/password'],
      [
        'an invitationExpiry more than 365 days ahead',
        { userName: 'invalid-34', invitationPending: true, invitationExpiry: new Date(Date.now() + 366 * 24 * 3600 * 1000).toISOString() },
        '/invitationExpiry',
      ],
      ['system true', { ...valid, userName: 'invalid-29', system: true }, '/system'],
      ['system that is not a boolean', { ...valid, userName: 'invalid-30', system: 'no' }, '/system'],
      ['an unknown property', { ...valid, userName: 'invalid-31', nickname: 'x' }, '/nickname'],
      ['invitationToken, which is only ever returned', { ...valid, userName: 'invalid-32', invitationToken: 'x' }, '/invitationToken'],
    ])('refuses %s with 400 naming the field', async (_case, payload, path) => {
      const response = await post(payload);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json()).toMatchObject({ status: 400, title: 'Bad Request' });
      expect(problemPaths(response)).toContain(path);
    });

    it('has created none of the refused users', async () => {
      expect((await list('filter[userName][CO]=invalid')).totalCount).toBe(0);
    });

    it('refuses a body that is not a JSON object', async () => {
      for (const payload of ['[]', '"ada"', 'null']) {
        const response = await hub.inject({ method: 'POST', url: BASE, headers: { ...auth, 'content-type': 'application/json' }, payload });
        expect(response.statusCode).toBe(400);
      }
    });

    it('never writes a password given on create to the log', async () => {
      const accepted = 'logged-never-Accepted-9f2';
      const refused = 'Nvr-7x'; // Too short: refused by the policy.
      await create({ userName: 'log-check', password: accepted });
      expect((await post({ userName: 'log-check-2', password: refused })).statusCode).toBe(400);
      expect((await post({ userName: 'log-check', password: `${accepted}-dup` })).statusCode).toBe(409);
      const written = JSON.stringify(logs);
      expect(logs.some((line) => line.msg === 'request' && line.url === BASE)).toBe(true);
      expect(written).not.toContain(accepted);
      expect(written).not.toContain(refused);
    });
  });

  describe('get', () => {
    let user: User;
    beforeAll(async () => {
      user = await create({ userName: 'get-me', displayName: 'Get Me', email: 'get@example.com', password: 'get-me-password' });
    });

    it('answers 404 for an unknown id and for an id that is not a UUID', async () => {
      const unknown = await get(`${BASE}/${UNKNOWN_ID}`);
      expect(unknown.statusCode).toBe(404);
      expect(unknown.headers['content-type']).toContain('application/problem+json');
      const notUuid = await get(`${BASE}/get-me`);
      expect(notUuid.statusCode).toBe(404);
      expect(notUuid.json().detail).toContain('not found');
    });

    it('answers with an ETag, and 304 to If-None-Match with it', async () => {
      const response = await get(`${BASE}/${user._id}`);
      expect(response.headers.etag).toBe('"1"');
      const cached = await get(`${BASE}/${user._id}`, { 'if-none-match': '"1"' });
      expect(cached.statusCode).toBe(304);
      expect(cached.body).toBe('');
      expect((await get(`${BASE}/${user._id}`, { 'if-none-match': '"2"' })).statusCode).toBe(200);
    });

    it('projects with fields and excludeFields', async () => {
      const included = await get(`${BASE}/${user._id}?fields=userName,email`);
      expect(included.json()).toEqual({ userName: 'get-me', email: 'get@example.com' });
      const excluded = await get(`${BASE}/${user._id}?excludeFields=_id,_created,_modified`);
      expect(excluded.json()).toEqual({
        system: false,
        userName: 'get-me',
        displayName: 'Get Me',
        active: true,
        email: 'get@example.com',
        invitationPending: false,
      });
    });

    it.each([
      ['fields=system', 'fields'],
      ['fields=invitationExpiry', 'fields'],
      ['fields=password', 'fields'],
      ['excludeFields=system', 'excludeFields'],
      ['excludeFields=password', 'excludeFields'],
      ['fields=userName&excludeFields=_id', 'excludeFields'],
      ['fields=', 'fields'],
      ['userName=get-me', 'userName'],
    ])('refuses %s with 400 naming %s', async (query, parameter) => {
      const response = await get(`${BASE}/${user._id}?${query}`);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual([parameter]);
    });
  });

  describe('query', () => {
    // Created in this order, which is neither their name order nor their display name order.
    const fixtures: Record<string, User> = {};
    const ALL = 'filter[userName][CO]=qf-';

    beforeAll(async () => {
      for (const body of [
        { userName: 'qf-carol', displayName: 'Nina', email: 'carol@example.com', externalId: 'ext-carol', password: 'carol-password' },
        { userName: 'qf-alice', displayName: 'Zoe', email: 'alice@example.com', externalId: 'ext-alice', password: 'alice-password' },
        { userName: 'qf-Eve_1', displayName: 'Mabel', email: 'EVE@Sample.net', password: 'eve-password' },
        { userName: 'QF-bob', displayName: 'mallory', email: 'bob@example.org', password: 'bob-password' },
        { userName: 'qf-dave', displayName: 'oscar', invitationPending: true },
      ]) {
        const user = await create(body);
        fixtures[user.userName] = user;
      }
      // Bob is modified last, so that the _modified order differs from the _created one.
      const response = await patch(fixtures['QF-bob']._id, [{ op: 'replace', path: '/active', value: false }]);
      expect(response.statusCode).toBe(200);
      fixtures['QF-bob'] = response.json();
    });

    const ordered = (key: '_created' | '_modified') =>
      Object.values(fixtures)
        .sort((a, b) => (a[key] === b[key] ? (a._id < b._id ? -1 : 1) : a[key] < b[key] ? -1 : 1))
        .map((user) => user.userName);

    it('returns {totalCount, data} with every user field', async () => {
      const page = await list(`filter[userName][EQ]=qf-alice`);
      expect(page).toEqual({ totalCount: 1, data: [fixtures['qf-alice']] });
    });

    it('lists every user, including the administrator, by default', async () => {
      const everyone = await names('page[limit]=1000');
      expect(everyone).toContain(ADMIN_USER);
      expect(everyone).toEqual(expect.arrayContaining(Object.keys(fixtures)));
    });

    it('filters _id with EQ and IN', async () => {
      expect(await names(`filter[_id][EQ]=${fixtures['qf-carol']._id}`)).toEqual(['qf-carol']);
      expect(await names(`filter[_id][EQ]=${fixtures['qf-carol']._id.toUpperCase()}`)).toEqual(['qf-carol']);
      expect(await names(`filter[_id][IN]=${fixtures['qf-alice']._id},${fixtures['qf-dave']._id}`)).toEqual(['qf-alice', 'qf-dave']);
      expect(await names(`filter[_id][IN]=${fixtures['qf-Eve_1']._id}&filter[_id][IN]=${fixtures['QF-bob']._id}`)).toEqual(['QF-bob', 'qf-Eve_1']);
      expect(await names(`filter[_id][EQ]=${UNKNOWN_ID}`)).toEqual([]);
    });

    it('filters userName with EQ (exact case) and CO (ignoring case)', async () => {
      expect(await names('filter[userName][EQ]=QF-bob')).toEqual(['QF-bob']);
      expect(await names('filter[userName][EQ]=qf-bob')).toEqual([]);
      expect(await names('filter[userName][EQ]=qf-')).toEqual([]);
      expect(await names('filter[userName][CO]=QF-')).toEqual(['qf-alice', 'QF-bob', 'qf-carol', 'qf-dave', 'qf-Eve_1']);
      expect(await names('filter[userName][CO]=-B')).toEqual(['QF-bob']);
      expect(await names('filter[userName][CO]=eve_')).toEqual(['qf-Eve_1']);
    });

    it('treats LIKE wildcards in CO values literally', async () => {
      expect((await list('filter[userName][CO]=%25')).totalCount).toBe(0);
      expect(await names('filter[userName][CO]=qf_')).toEqual([]);
      expect(await names('filter[email][CO]=e_e')).toEqual([]);
    });

    it('filters displayName with EQ (exact case) and CO (ignoring case)', async () => {
      expect(await names('filter[displayName][EQ]=Mabel')).toEqual(['qf-Eve_1']);
      expect(await names('filter[displayName][EQ]=mabel')).toEqual([]);
      expect(await names(`${ALL}&filter[displayName][CO]=MA`)).toEqual(['QF-bob', 'qf-Eve_1']);
      expect(await names(`${ALL}&filter[displayName][CO]=o`)).toEqual(['qf-alice', 'QF-bob', 'qf-dave']);
    });

    it('filters email with EQ (exact case) and CO (ignoring case)', async () => {
      expect(await names('filter[email][EQ]=carol@example.com')).toEqual(['qf-carol']);
      expect(await names('filter[email][EQ]=EVE@Sample.net')).toEqual(['qf-Eve_1']);
      expect(await names('filter[email][EQ]=eve@sample.net')).toEqual([]);
      expect(await names(`${ALL}&filter[email][CO]=EXAMPLE.`)).toEqual(['qf-alice', 'QF-bob', 'qf-carol']);
      expect(await names('filter[email][CO]=sample.NET')).toEqual(['qf-Eve_1']);
    });

    it('filters active with EQ', async () => {
      expect(await names(`${ALL}&filter[active][EQ]=false`)).toEqual(['QF-bob']);
      expect(await names(`${ALL}&filter[active][EQ]=true`)).toEqual(['qf-alice', 'qf-carol', 'qf-dave', 'qf-Eve_1']);
    });

    it('filters externalId with PR', async () => {
      expect(await names(`${ALL}&filter[externalId][PR]=true`)).toEqual(['qf-alice', 'qf-carol']);
      expect(await names(`${ALL}&filter[externalId][PR]=false`)).toEqual(['QF-bob', 'qf-dave', 'qf-Eve_1']);
    });

    it('filters system with EQ: the administrator is the only system user', async () => {
      expect(await names('filter[system][EQ]=true')).toEqual([ADMIN_USER]);
      expect(await names(`${ALL}&filter[system][EQ]=false`)).toEqual(['qf-alice', 'QF-bob', 'qf-carol', 'qf-dave', 'qf-Eve_1']);
      expect(await names('filter[system][EQ]=false&page[limit]=1000')).not.toContain(ADMIN_USER);
    });

    it('filters invitationPending with EQ', async () => {
      expect(await names(`${ALL}&filter[invitationPending][EQ]=true`)).toEqual(['qf-dave']);
      expect(await names(`${ALL}&filter[invitationPending][EQ]=false`)).toEqual(['qf-alice', 'QF-bob', 'qf-carol', 'qf-Eve_1']);
    });

    it('filters _created with LT and GT, exact at a value the API returned', async () => {
      const created = ordered('_created');
      const pivot = fixtures[created[2]];
      const before = Object.values(fixtures).filter((u) => u._created < pivot._created);
      const after = Object.values(fixtures).filter((u) => u._created > pivot._created);
      expect(await names(`${ALL}&filter[_created][LT]=${pivot._created}&sort=_created`)).toEqual(created.filter((n) => before.some((u) => u.userName === n)));
      expect(await names(`${ALL}&filter[_created][GT]=${pivot._created}&sort=_created`)).toEqual(created.filter((n) => after.some((u) => u.userName === n)));
      expect(await names(`${ALL}&filter[_created][LT]=${fixtures[created[0]]._created}`)).toEqual([]);
      expect(await names(`${ALL}&filter[_created][GT]=2000-01-01T00:00:00%2B01:00&filter[_created][LT]=2999-01-01T00:00:00Z`)).toHaveLength(5);
    });

    it('filters _modified with LT and GT, exact at a value the API returned', async () => {
      const bob = fixtures['QF-bob'];
      expect(await names(`${ALL}&filter[_modified][GT]=${bob._modified}`)).toEqual([]);
      const earlier = Object.values(fixtures)
        .filter((u) => u._modified < bob._modified)
        .map((u) => u.userName);
      expect(await names(`${ALL}&filter[_modified][LT]=${bob._modified}`)).toEqual(
        ['qf-alice', 'qf-carol', 'qf-dave', 'qf-Eve_1'].filter((n) => earlier.includes(n)),
      );
      expect(await names(`${ALL}&filter[_modified][GT]=${fixtures['qf-carol']._modified}&filter[_modified][LT]=2999-01-01T00:00:00Z`)).toContain('QF-bob');
      expect(await names(`${ALL}&filter[_modified][LT]=${fixtures['qf-carol']._modified}`)).not.toContain('qf-carol');
    });

    it('combines filters with AND', async () => {
      expect(await names(`${ALL}&filter[email][CO]=example&filter[externalId][PR]=false`)).toEqual(['QF-bob']);
      expect(await names(`${ALL}&filter[active][EQ]=true&filter[invitationPending][EQ]=false&filter[externalId][PR]=true`)).toEqual(['qf-alice', 'qf-carol']);
    });

    it('sorts by userName ignoring case by default, and reversed with -userName', async () => {
      const byName = ['qf-alice', 'QF-bob', 'qf-carol', 'qf-dave', 'qf-Eve_1'];
      expect(await names(ALL)).toEqual(byName);
      expect(await names(`${ALL}&sort=userName`)).toEqual(byName);
      expect(await names(`${ALL}&sort=-userName`)).toEqual([...byName].reverse());
    });

    it('sorts by displayName ignoring case, and reversed with -displayName', async () => {
      // Mabel, mallory, Nina, oscar, Zoe.
      const byDisplayName = ['qf-Eve_1', 'QF-bob', 'qf-carol', 'qf-dave', 'qf-alice'];
      expect(await names(`${ALL}&sort=displayName`)).toEqual(byDisplayName);
      expect(await names(`${ALL}&sort=-displayName`)).toEqual([...byDisplayName].reverse());
    });

    it('sorts by _created and by _modified, each reversed with -', async () => {
      const created = ordered('_created');
      expect(await names(`${ALL}&sort=_created`)).toEqual(created);
      expect(await names(`${ALL}&sort=-_created`)).toEqual([...created].reverse());
      const modified = ordered('_modified');
      expect(await names(`${ALL}&sort=_modified`)).toEqual(modified);
      expect(await names(`${ALL}&sort=-_modified`)).toEqual([...modified].reverse());
    });

    it('pages with page[offset] and page[limit], totalCount counting every match', async () => {
      const first = await list(`${ALL}&page[limit]=2`);
      expect(first.totalCount).toBe(5);
      expect(first.data.map((u) => u.userName)).toEqual(['qf-alice', 'QF-bob']);
      const second = await list(`${ALL}&page[offset]=2&page[limit]=2`);
      expect(second.data.map((u) => u.userName)).toEqual(['qf-carol', 'qf-dave']);
      const last = await list(`${ALL}&sort=-userName&page[offset]=4&page[limit]=2`);
      expect(last).toMatchObject({ totalCount: 5 });
      expect(last.data.map((u) => u.userName)).toEqual(['qf-alice']);
      expect(await list(`${ALL}&page[offset]=50`)).toEqual({ totalCount: 5, data: [] });
    });

    it('returns 100 users a page by default and up to 1000 with page[limit]', async () => {
      await hub.app
        .get(DataSource)
        .query(
          "INSERT INTO users (user_name, password_hash, active, invitation_pending, version) SELECT 'bulk-' || lpad(n::text, 3, '0'), NULL, true, false, 1 FROM generate_series(1, 101) AS n",
        );
      const byDefault = await list('filter[userName][CO]=bulk-');
      expect(byDefault.totalCount).toBe(101);
      expect(byDefault.data).toHaveLength(100);
      expect(byDefault.data[99].userName).toBe('bulk-100');
      expect((await list('filter[userName][CO]=bulk-&page[limit]=1000')).data).toHaveLength(101);
      expect((await list('filter[userName][CO]=bulk-&page[offset]=100')).data.map((u) => u.userName)).toEqual(['bulk-101']);
    });

    it('projects with fields and excludeFields', async () => {
      const alice = fixtures['qf-alice'];
      expect((await list('filter[userName][EQ]=qf-alice&fields=userName,_id')).data).toEqual([{ _id: alice._id, userName: 'qf-alice' }]);
      expect((await list('filter[userName][EQ]=qf-alice&fields=email&fields=externalId')).data).toEqual([
        { email: 'alice@example.com', externalId: 'ext-alice' },
      ]);
      const excluded = await list('filter[userName][EQ]=qf-alice&excludeFields=_created,_modified,_id,email');
      expect(excluded.data).toEqual([
        { externalId: 'ext-alice', system: false, userName: 'qf-alice', displayName: 'Zoe', active: true, invitationPending: false },
      ]);
      const everything = await list(`filter[userName][EQ]=qf-alice&fields=${PROJECTABLE.join(',')}`);
      const { system: _system, ...withoutSystem } = alice;
      expect(everything.data).toEqual([withoutSystem]);
    });

    it.each([
      ['an unknown field', 'filter[nickname][EQ]=x', 'filter[nickname][EQ]'],
      ['password as a filter field', 'filter[password][EQ]=x', 'filter[password][EQ]'],
      ['an unknown operator', 'filter[userName][LIKE]=x', 'filter[userName][LIKE]'],
      ['SW on userName', 'filter[userName][SW]=qf', 'filter[userName][SW]'],
      ['IN on userName', 'filter[userName][IN]=a,b', 'filter[userName][IN]'],
      ['PR on email', 'filter[email][PR]=true', 'filter[email][PR]'],
      ['EQ on externalId', 'filter[externalId][EQ]=ext-alice', 'filter[externalId][EQ]'],
      ['CO on _id', `filter[_id][CO]=abc`, 'filter[_id][CO]'],
      ['EQ on _created', 'filter[_created][EQ]=2026-01-01T00:00:00Z', 'filter[_created][EQ]'],
      ['a malformed filter', 'filter[userName]=x', 'filter[userName]'],
      ['a bad UUID with EQ', 'filter[_id][EQ]=42', 'filter[_id][EQ]'],
      ['a bad UUID in IN', `filter[_id][IN]=${UNKNOWN_ID},nope`, 'filter[_id][IN]'],
      ['a bad boolean for active', 'filter[active][EQ]=yes', 'filter[active][EQ]'],
      ['a bad boolean for system', 'filter[system][EQ]=1', 'filter[system][EQ]'],
      ['a bad boolean for invitationPending', 'filter[invitationPending][EQ]=TRUE', 'filter[invitationPending][EQ]'],
      ['a bad boolean for externalId PR', 'filter[externalId][PR]=maybe', 'filter[externalId][PR]'],
      ['a bad date-time', 'filter[_created][LT]=yesterday', 'filter[_created][LT]'],
      ['a date-time without zone', 'filter[_modified][GT]=2026-01-01T00:00:00', 'filter[_modified][GT]'],
      ['an impossible date', 'filter[_modified][LT]=2026-02-30T00:00:00Z', 'filter[_modified][LT]'],
      ['an empty CO value', 'filter[email][CO]=', 'filter[email][CO]'],
      ['a repeated EQ', 'filter[userName][EQ]=a&filter[userName][EQ]=b', 'filter[userName][EQ]'],
      ['a negative offset', 'page[offset]=-1', 'page[offset]'],
      ['an offset that is not a number', 'page[offset]=first', 'page[offset]'],
      ['a limit over 1000', 'page[limit]=1001', 'page[limit]'],
      ['a limit of 0', 'page[limit]=0', 'page[limit]'],
      ['an unknown sort', 'sort=email', 'sort'],
      ['a sort on system', 'sort=-system', 'sort'],
      ['two sorts', 'sort=userName,-_created', 'sort'],
      ['a projection of system', 'fields=system', 'fields'],
      ['a projection of invitationExpiry', 'fields=userName,invitationExpiry', 'fields'],
      ['a projection of password', 'fields=password', 'fields'],
      ['an exclusion of system', 'excludeFields=system', 'excludeFields'],
      ['an exclusion of password', 'excludeFields=password', 'excludeFields'],
      ['an unknown projected field', 'fields=nickname', 'fields'],
      ['fields with excludeFields', 'fields=userName&excludeFields=_id', 'excludeFields'],
      ['an unknown parameter', 'limit=5', 'limit'],
    ])('refuses %s with 400 naming the parameter', async (_case, query, parameter) => {
      const response = await get(`${BASE}?${query}`);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(problemPaths(response)).toEqual([parameter]);
    });

    it('reports every bad parameter of a request at once', async () => {
      const response = await get(`${BASE}?filter[nope][EQ]=1&page[limit]=x&sort=-nope`);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(['filter[nope][EQ]', 'page[limit]', 'sort']);
    });
  });

  describe('replace', () => {
    const full = {
      displayName: 'Full User',
      email: 'full@example.com',
      active: true,
      externalId: 'ext-full',
      unixHomeDirectory: '/home/full',
      unixUserName: 'full',
      userPrincipalName: 'full@EXAMPLE.COM',
    };

    it('replaces every field, clearing absent optional ones, keeping the password, and bumps the ETag', async () => {
      const user = await create({ userName: 'to-replace', ...full, password: 'replace-password' });
      const response = await put(user._id, { userName: 'replaced', displayName: 'Replaced', _id: UNKNOWN_ID, _created: '2000-01-01T00:00:00.000Z' });
      expect(response.statusCode).toBe(200);
      expect(response.headers.etag).toBe('"2"');
      const body: User = response.json();
      expect(body).toEqual({
        _id: user._id,
        _created: user._created,
        _modified: expect.any(String),
        system: false,
        userName: 'replaced',
        displayName: 'Replaced',
        active: true,
        invitationPending: false,
      });
      expect(body._modified >= user._modified).toBe(true);
      expect(await read(user._id)).toEqual(body);
      expect((await login('replaced', 'replace-password')).statusCode).toBe(200);
      expect((await login('to-replace', 'replace-password')).statusCode).toBe(401);
    });

    it('accepts back what it read, system and invitationPending included', async () => {
      const user = await create({ userName: 'read-back', ...full, externalId: 'ext-read-back', password: 'read-back-password' });
      const response = await put(user._id, user);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ ...user, _modified: response.json()._modified });
    });

    it('sets a given password, which then works for login while the old one does not', async () => {
      const user = await create({ userName: 'new-password', password: 'old-password' });
      const response = await put(user._id, { userName: 'new-password', password: 'brand-new-password' });
      expect(response.statusCode).toBe(200);
      expect(response.body).not.toContain('brand-new-password');
      expect((await login('new-password', 'brand-new-password')).statusCode).toBe(200);
      expect((await login('new-password', 'old-password')).statusCode).toBe(401);
    });

    it.each([
      ['shorter than 8 characters', 'pw-short', 'pw-short-renamed', 'short'],
      ['equal to the new userName ignoring case', 'pw-same', 'PW-Same-Renamed', 'pw-same-renamed'],
    ])('refuses a password %s with 400 at /password, keeping the old one', async (_case, userName, newUserName, password) => {
      const user = await create({ userName, password: 'kept-password' });
      const response = await put(user._id, { userName: newUserName, password });
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(['/password']);
      expect(await read(user._id)).toEqual(user);
      expect((await login(userName, 'kept-password')).statusCode).toBe(200);
    });

    it('answers 412 when If-Match names another version, and changes nothing; 200 when it matches', async () => {
      const user = await create({ userName: 'guarded', password: 'guarded-password' });
      const stale = await put(user._id, { userName: 'guarded-2' }, { 'if-match': '"7"' });
      expect(stale.statusCode).toBe(412);
      expect((await read(user._id)).userName).toBe('guarded');
      const current = await put(user._id, { userName: 'guarded-2' }, { 'if-match': '"1"' });
      expect(current.statusCode).toBe(200);
      expect(current.headers.etag).toBe('"2"');
    });

    it('answers 404 for an unknown id and for an id that is not a UUID', async () => {
      expect((await put(UNKNOWN_ID, { userName: 'nobody' })).statusCode).toBe(404);
      expect((await put('nobody', { userName: 'nobody' })).statusCode).toBe(404);
    });

    it('answers 409 for a userName taken ignoring case and for an externalId taken', async () => {
      await create({ userName: 'Taken-Name', externalId: 'taken-external', password: 'taken-password' });
      const user = await create({ userName: 'wants-taken', password: 'wants-password' });
      expect((await put(user._id, { userName: 'taken-NAME' })).statusCode).toBe(409);
      expect((await put(user._id, { userName: 'wants-taken', externalId: 'taken-external' })).statusCode).toBe(409);
      expect(await read(user._id)).toEqual(user);
    });

    it('validates the body like a create', async () => {
      const user = await create({ userName: 'replace-invalid', password: 'replace-invalid-password' });
      const noName = await put(user._id, { displayName: 'No name' });
      expect(problemPaths(noName)).toEqual(['/userName']);
      const badEmail = await put(user._id, { userName: 'replace-invalid', email: 'nope' });
      expect(badEmail.statusCode).toBe(400);
      expect(problemPaths(badEmail)).toEqual(['/email']);
      const unknown = await put(user._id, { userName: 'replace-invalid', nickname: 'x' });
      expect(problemPaths(unknown)).toEqual(['/nickname']);
      expect(await read(user._id)).toEqual(user);
    });

    it('refuses to change system, either way, with 400 at /system', async () => {
      const user = await create({ userName: 'not-system', password: 'not-system-password' });
      const promoted = await put(user._id, { userName: 'not-system', system: true });
      expect(promoted.statusCode).toBe(400);
      expect(problemPaths(promoted)).toEqual(['/system']);
      const admin = await adminId();
      const demoted = await put(admin, { userName: ADMIN_USER, displayName: 'Administrator', system: false });
      expect(demoted.statusCode).toBe(400);
      expect(problemPaths(demoted)).toEqual(['/system']);
      expect((await read(admin)).system).toBe(true);
      expect((await read(user._id)).system).toBe(false);
    });

    it("keeps a pending invitation's expiry when the replace leaves it out", async () => {
      const expiry = new Date(Date.now() + 30 * 24 * 3600 * 1000).toISOString();
      const invited = await create({ userName: 'invited-replaced', invitationPending: true, invitationExpiry: expiry });
      const response = await put(invited._id, { userName: 'invited-replaced', displayName: 'Invited', invitationPending: true });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ displayName: 'Invited', invitationPending: true, invitationExpiry: expiry });
      expect('invitationToken' in response.json()).toBe(false);
    });

    it('refuses a password for a user whose invitation is pending, with 400 at /password', async () => {
      const invited = await create({ userName: 'invited-no-password', invitationPending: true });
      const response = await put(invited._id, { userName: 'invited-no-password', password: 'chosen-by-admin' });
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(['/password']);
    });

    it('refuses a null password with 400 at /password, on replace and on patch', async () => {
      const user = await create({ userName: 'null-password', password: 'null-password-secret' });
      const replaced = await put(user._id, { userName: 'null-password', password: null });
      expect(replaced.statusCode).toBe(400);
      expect(problemPaths(replaced)).toEqual(['/password']);
      const patched = await hub.inject({
        method: 'PATCH',
        url: `${BASE}/${user._id}`,
        headers: auth,
        payload: [{ op: 'add', path: '/password', value: null }],
      });
      expect(patched.statusCode).toBe(400);
      expect(problemPaths(patched)).toEqual(['/password']);
    });

    it('refuses to change invitationPending, either way, with 400 at /invitationPending', async () => {
      const user = await create({ userName: 'not-invited', password: 'not-invited-password' });
      const invite = await put(user._id, { userName: 'not-invited', invitationPending: true });
      expect(invite.statusCode).toBe(400);
      expect(problemPaths(invite)).toEqual(['/invitationPending']);
      const invited = await create({ userName: 'still-invited', invitationPending: true });
      const complete = await put(invited._id, { userName: 'still-invited', invitationPending: false });
      expect(complete.statusCode).toBe(400);
      expect(problemPaths(complete)).toEqual(['/invitationPending']);
      expect((await read(invited._id)).invitationPending).toBe(true);
    });

    it('refuses to make the system user inactive with 403, and changes nothing', async () => {
      const admin = await adminId();
      const before = await read(admin);
      const response = await put(admin, { userName: ADMIN_USER, displayName: 'Administrator', active: false });
      expect(response.statusCode).toBe(403);
      expect(response.json().detail).toBe("User 'admin' is a system user and cannot be deactivated");
      expect(await read(admin)).toEqual(before);
      expect((await login(ADMIN_USER, ADMIN_PASSWORD)).statusCode).toBe(200);
    });
  });

  describe('patch', () => {
    let patched = 0;

    it('applies add, replace and remove, accepting application/json too, and bumps the ETag', async () => {
      const user = await create({ userName: 'to-patch', displayName: 'Before', email: 'before@example.com', password: 'to-patch-password' });
      const replaced = await patch(user._id, [{ op: 'replace', path: '/email', value: 'after@example.com' }]);
      expect(replaced.statusCode).toBe(200);
      expect(replaced.headers.etag).toBe('"2"');
      expect(replaced.json()).toEqual({ ...user, email: 'after@example.com', _modified: replaced.json()._modified });
      const removed = await patch(user._id, [{ op: 'remove', path: '/displayName' }], { 'content-type': 'application/json' });
      expect(removed.statusCode).toBe(200);
      expect('displayName' in removed.json()).toBe(false);
      const added = await patch(user._id, [
        { op: 'add', path: '/unixUserName', value: 'patched' },
        { op: 'add', path: '/unixHomeDirectory', value: '/home/patched' },
      ]);
      expect(added.statusCode).toBe(200);
      expect(added.headers.etag).toBe('"4"');
      expect(await read(user._id)).toEqual({
        ...user,
        displayName: undefined,
        email: 'after@example.com',
        unixUserName: 'patched',
        unixHomeDirectory: '/home/patched',
        _modified: added.json()._modified,
      });
      expect((await login('to-patch', 'to-patch-password')).statusCode).toBe(200);
    });

    it('sets a password given with add /password, which then works for login', async () => {
      const user = await create({ userName: 'patch-password', password: 'patch-old-password' });
      const response = await patch(user._id, [{ op: 'add', path: '/password', value: 'patch-new-password' }]);
      expect(response.statusCode).toBe(200);
      expect(response.body).not.toContain('patch-new-password');
      expect((await login('patch-password', 'patch-new-password')).statusCode).toBe(200);
      expect((await login('patch-password', 'patch-old-password')).statusCode).toBe(401);
    });

    it('patches a pending invitation, keeping it pending with its expiry', async () => {
      const invited = await create({ userName: 'patch-invited', invitationPending: true });
      const response = await patch(invited._id, [{ op: 'add', path: '/displayName', value: 'Invited' }]);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ ...invited, invitationToken: undefined, displayName: 'Invited', _modified: response.json()._modified });
    });

    it('ignores operations on server-owned fields', async () => {
      const user = await create({ userName: 'patch-owned', password: 'patch-owned-password' });
      const response = await patch(user._id, [
        { op: 'replace', path: '/_id', value: UNKNOWN_ID },
        { op: 'replace', path: '/_created', value: '2000-01-01T00:00:00.000Z' },
        { op: 'replace', path: '/userName', value: 'patch-owned-2' },
      ]);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ _id: user._id, _created: user._created, userName: 'patch-owned-2' });
    });

    it('is all or nothing: a failing operation changes nothing', async () => {
      const user = await create({ userName: 'patch-atomic', displayName: 'Kept', password: 'patch-atomic-password' });
      const response = await patch(user._id, [
        { op: 'replace', path: '/displayName', value: 'Lost' },
        { op: 'remove', path: '/email' },
      ]);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(['/1']);
      expect(await read(user._id)).toEqual(user);
    });

    it.each([
      ['replace /email with a non-email', [{ op: 'replace', path: '/email', value: 'not-an-email' }], '/email'],
      ['replace /userName with an invalid name', [{ op: 'replace', path: '/userName', value: 'not valid!' }], '/userName'],
      ['remove /userName', [{ op: 'remove', path: '/userName' }], '/userName'],
      ['add an unknown field', [{ op: 'add', path: '/nickname', value: 'x' }], '/nickname'],
      ['replace /active with a string', [{ op: 'replace', path: '/active', value: 'no' }], '/active'],
      ['add a relative /unixHomeDirectory', [{ op: 'add', path: '/unixHomeDirectory', value: 'home' }], '/unixHomeDirectory'],
      ['add a too short /password', [{ op: 'add', path: '/password', value: 'short' }], '/password'],
      ['replace /system with true', [{ op: 'replace', path: '/system', value: true }], '/system'],
      ['replace /invitationPending with true', [{ op: 'replace', path: '/invitationPending', value: true }], '/invitationPending'],
    ])('validates the result like a replace: %s is 400 and changes nothing', async (_case, operations, path) => {
      const user = await create({ userName: `patch-valid-${++patched}`, email: 'kept@example.com', password: 'patch-valid-password' });
      const response = await patch(user._id, [{ op: 'add', path: '/displayName', value: 'Changed' }, ...operations]);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual([path]);
      expect(await read(user._id)).toEqual(user);
    });

    it.each([
      ['a body that is not an array', { op: 'add' }, ['']],
      ['an operation outside add, remove and replace', [{ op: 'copy', from: '/email', path: '/displayName' }], ['/0/op', '/0/from']],
      ['a path that is not a JSON Pointer', [{ op: 'remove', path: 'displayName' }], ['/0/path']],
      ['a replace without a value', [{ op: 'replace', path: '/displayName' }], ['/0/value']],
    ])('refuses %s', async (_case, operations, paths) => {
      const user = await create({ userName: `bad-patch-${++patched}`, password: 'bad-patch-password' });
      const response = await patch(user._id, operations);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(paths);
    });

    it('honours If-Match and answers 404, 409 and 415 as a replace does', async () => {
      await create({ userName: 'Patch-Taken', password: 'patch-taken-password' });
      const user = await create({ userName: 'patch-guarded', password: 'patch-guarded-password' });
      const operations = [{ op: 'add', path: '/displayName', value: 'x' }];
      expect((await patch(user._id, operations, { 'if-match': '"2"' })).statusCode).toBe(412);
      expect(await read(user._id)).toEqual(user);
      expect((await patch(user._id, operations, { 'if-match': '"1"' })).statusCode).toBe(200);
      expect((await patch(UNKNOWN_ID, [])).statusCode).toBe(404);
      expect((await patch('not-a-uuid', [])).statusCode).toBe(404);
      expect((await patch(user._id, [{ op: 'replace', path: '/userName', value: 'patch-TAKEN' }])).statusCode).toBe(409);
      expect((await patch(user._id, [], { 'content-type': 'application/merge-patch+json' })).statusCode).toBe(415);
    });

    it('refuses to deactivate the system user with 403', async () => {
      const admin = await adminId();
      const response = await patch(admin, [{ op: 'replace', path: '/active', value: false }]);
      expect(response.statusCode).toBe(403);
      expect((await read(admin)).active).toBe(true);
    });
  });

  describe('deactivation', () => {
    it("makes the user's existing token fail with 401 at once, and its login fail with 401", async () => {
      const user = await create({ userName: 'deactivated', password: 'deactivated-password' });
      const token = await hub.login('deactivated', 'deactivated-password');
      expect((await hub.inject({ method: 'GET', url: ME, headers: bearer(token) })).statusCode).toBe(200);
      expect((await hub.inject({ method: 'GET', url: ME, headers: bearer(token) })).statusCode).toBe(200);
      expect((await patch(user._id, [{ op: 'replace', path: '/active', value: false }])).statusCode).toBe(200);
      const refused = await hub.inject({ method: 'GET', url: ME, headers: bearer(token) });
      expect(refused.statusCode).toBe(401);
      expect(refused.json().detail).toContain('no longer exists or is inactive');
      expect((await hub.inject({ method: 'GET', url: BASE, headers: bearer(token) })).statusCode).toBe(401);
      expect((await login('deactivated', 'deactivated-password')).statusCode).toBe(401);
    });

    it('is undone by reactivating the user', async () => {
      const user = await create({ userName: 'reactivated', active: false, password: 'reactivated-password' });
      expect((await login('reactivated', 'reactivated-password')).statusCode).toBe(401);
      expect((await patch(user._id, [{ op: 'replace', path: '/active', value: true }])).statusCode).toBe(200);
      expect((await login('reactivated', 'reactivated-password')).statusCode).toBe(200);
    });
  });

  describe('delete', () => {
    it('deletes with {msg}, then answers 404', async () => {
      const user = await create({ userName: 'short-lived', password: 'short-lived-password' });
      const response = await remove(user._id);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ msg: "User 'short-lived' deleted" });
      expect((await get(`${BASE}/${user._id}`)).statusCode).toBe(404);
      expect((await remove(user._id)).statusCode).toBe(404);
      expect(await names('filter[userName][EQ]=short-lived')).toEqual([]);
      expect((await login('short-lived', 'short-lived-password')).statusCode).toBe(401);
    });

    it('answers 404 for an id that is not a UUID', async () => {
      expect((await remove('short-lived')).statusCode).toBe(404);
    });

    it('honours If-Match', async () => {
      const user = await create({ userName: 'delete-guarded', password: 'delete-guarded-password' });
      expect((await remove(user._id, { 'if-match': '"2"' })).statusCode).toBe(412);
      expect((await get(`${BASE}/${user._id}`)).statusCode).toBe(200);
      expect((await remove(user._id, { 'if-match': '"1"' })).statusCode).toBe(200);
    });

    it('refuses to delete the system user with 403', async () => {
      const admin = await adminId();
      const response = await remove(admin);
      expect(response.statusCode).toBe(403);
      expect(response.json().detail).toBe("User 'admin' is a system user and cannot be deleted");
      expect((await read(admin)).userName).toBe(ADMIN_USER);
    });

    it("removes the user's group memberships", async () => {
      const user = await create({ userName: 'member-deleted', password: 'member-deleted-password' });
      const other = await create({ userName: 'member-kept', password: 'member-kept-password' });
      const group = await createGroup('deleted-members');
      await addMember(group, user._id);
      await addMember(group, other._id);
      const members = async () => {
        const response = await get(`${GROUPS}/${group}/members`);
        expect(response.statusCode).toBe(200);
        return response.json<{ id: string }[]>().map((member) => member.id);
      };
      expect((await members()).sort()).toEqual([user._id, other._id].sort());
      expect((await remove(user._id)).statusCode).toBe(200);
      expect(await members()).toEqual([other._id]);
    });

    it("makes the deleted user's token fail with 401 on the next request", async () => {
      const user = await create({ userName: 'token-deleted', password: 'token-deleted-password' });
      const token = await hub.login('token-deleted', 'token-deleted-password');
      expect((await hub.inject({ method: 'GET', url: ME, headers: bearer(token) })).statusCode).toBe(200);
      expect((await remove(user._id)).statusCode).toBe(200);
      expect((await hub.inject({ method: 'GET', url: ME, headers: bearer(token) })).statusCode).toBe(401);
    });
  });

  describe('groups of a user', () => {
    let user: User;
    const groups: Record<string, string> = {};
    const memberships = async (query = ''): Promise<Membership[]> => {
      const response = await get(`${BASE}/${user._id}/groups${query ? `?${query}` : ''}`);
      expect(response.statusCode).toBe(200);
      return response.json();
    };

    beforeAll(async () => {
      user = await create({ userName: 'grouped', password: 'grouped-password' });
      for (const name of ['ug-beta', 'ug-alpha', 'UG-Gamma', 'ug-delta', 'ug-epsilon']) groups[name] = await createGroup(name);
      await addMember(groups['ug-beta'], user._id); // direct
      await addMember(groups['ug-alpha'], groups['ug-beta']); // indirect through ug-beta
      await addMember(groups['UG-Gamma'], groups['ug-alpha']); // indirect, two levels up
      await addMember(groups['ug-delta'], user._id); // direct, and also through ug-beta: direct wins
      await addMember(groups['ug-delta'], groups['ug-beta']);
    });

    it('lists direct and indirect groups, each once, sorted by name ignoring case', async () => {
      expect(await memberships()).toEqual([
        { membershipType: 'indirect', id: groups['ug-alpha'], name: 'ug-alpha' },
        { membershipType: 'direct', id: groups['ug-beta'], name: 'ug-beta' },
        { membershipType: 'direct', id: groups['ug-delta'], name: 'ug-delta' },
        { membershipType: 'indirect', id: groups['UG-Gamma'], name: 'UG-Gamma' },
      ]);
    });

    it('filters membershipType with EQ', async () => {
      expect((await memberships('filter[membershipType][EQ]=direct')).map((m) => m.name)).toEqual(['ug-beta', 'ug-delta']);
      expect((await memberships('filter[membershipType][EQ]=indirect')).map((m) => m.name)).toEqual(['ug-alpha', 'UG-Gamma']);
    });

    it('answers an empty array for a user in no group', async () => {
      const loner = await create({ userName: 'loner', password: 'loner-password' });
      const response = await get(`${BASE}/${loner._id}/groups`);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual([]);
    });

    it('answers 404 for an unknown user and for an id that is not a UUID', async () => {
      expect((await get(`${BASE}/${UNKNOWN_ID}/groups`)).statusCode).toBe(404);
      expect((await get(`${BASE}/grouped/groups`)).statusCode).toBe(404);
    });

    it.each([
      ['page[limit]=1', 'page[limit]'],
      ['page[offset]=1', 'page[offset]'],
      ['sort=name', 'sort'],
      ['fields=name', 'fields'],
      ['filter[membershipType][EQ]=both', 'filter[membershipType][EQ]'],
      ['filter[name][EQ]=ug-beta', 'filter[name][EQ]'],
      ['filter[membershipType][CO]=direct', 'filter[membershipType][CO]'],
    ])('refuses %s with 400 naming %s', async (query, parameter) => {
      const response = await get(`${BASE}/${user._id}/groups?${query}`);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual([parameter]);
    });
  });

  describe('unix details', () => {
    it('gives unixUserName as the userName, with the principal name and home directory', async () => {
      const user = await create({
        userName: 'Unix.User',
        unixUserName: 'unixuser',
        userPrincipalName: 'unix.user@EXAMPLE.COM',
        unixHomeDirectory: '/home/unixuser',
        password: 'unix-user-password',
      });
      const response = await get(`${BASE}/${user._id}/unix`);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ userName: 'unixuser', userPrincipalName: 'unix.user@EXAMPLE.COM', unixHomeDirectory: '/home/unixuser' });
    });

    it('falls back to the userName and leaves absent values out', async () => {
      const user = await create({ userName: 'Plain.User', password: 'plain-user-password' });
      const response = await get(`${BASE}/${user._id}/unix`);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ userName: 'Plain.User' });
    });

    it('follows changes to the user', async () => {
      const user = await create({ userName: 'unix-changing', unixUserName: 'before', password: 'unix-changing-password' });
      await patch(user._id, [
        { op: 'remove', path: '/unixUserName' },
        { op: 'add', path: '/unixHomeDirectory', value: '/srv/home' },
      ]);
      expect((await get(`${BASE}/${user._id}/unix`)).json()).toEqual({ userName: 'unix-changing', unixHomeDirectory: '/srv/home' });
    });

    it('answers 404 for an unknown user and for an id that is not a UUID', async () => {
      expect((await get(`${BASE}/${UNKNOWN_ID}/unix`)).statusCode).toBe(404);
      expect((await get(`${BASE}/nobody/unix`)).statusCode).toBe(404);
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
      ['GET', `${BASE}/${UNKNOWN_ID}/groups`],
      ['GET', `${BASE}/${UNKNOWN_ID}/unix`],
    ] as const)('%s %s answers 401', async (method, url) => {
      const response = await hub.inject({ method, url, payload: method === 'POST' || method === 'PUT' ? {} : method === 'PATCH' ? [] : undefined });
      expect(response.statusCode).toBe(401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="hub"');
    });
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { freezeClock } from '../support/test-clock.js';
import { basic, bearer, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

/**
 * Issue 25, item 6: no one can lock anyone out (api-map §1, smart lockout). Failures from
 * addresses where the user never logged in lock the name there only; an address (IPv4, or IPv6
 * /64) where they logged in within HUB_LOGIN_FAMILIAR_DAYS keeps a count of its own, in the
 * database, so that every hub on it agrees.
 */
const PASSWORD = 'a-familiar-addresses-password';
const DAY = 24 * 3600 * 1000;

let sequence = 0;
const unique = (prefix: string) => `${prefix}-${(sequence += 1)}`;

describe('familiar addresses: no one can lock anyone out', () => {
  let hub: TestHub;
  const logs: Record<string, unknown>[] = [];
  const admin = () => bearer(hub.adminToken);
  const login = (on: TestHub, username: string, password: string, remoteAddress: string, forwardedFor?: string): Promise<InjectResponse> =>
    on.inject({
      method: 'POST',
      url: '/api/v2/auth/login',
      payload: { username, password },
      remoteAddress,
      ...(forwardedFor && { headers: { 'x-forwarded-for': forwardedFor } }),
    });
  const createUser = async (): Promise<string> => {
    const userName = unique('familiar');
    const created = await hub.inject({ method: 'POST', url: '/api/v2/auth/users', headers: admin(), payload: { userName, password: PASSWORD } });
    expect(created.statusCode).toBe(201);
    return userName;
  };
  /** `times` wrong passwords for `userName` from `address`, each a 401 or, once the name is locked there, a 429. */
  const attack = async (on: TestHub, userName: string, address: string, times = 10) => {
    for (let attempt = 0; attempt < times; attempt++) expect([401, 429]).toContain((await login(on, userName, 'a-wrong-password', address)).statusCode);
  };
  const lastSuccess = async (userName: string): Promise<Date[]> =>
    (
      await hub.app
        .get(DataSource)
        .query<{ last_success: Date }[]>('SELECT last_success FROM login_familiar_addresses JOIN users ON users.id = user_id WHERE users.user_name = $1', [
          userName,
        ])
    ).map((row) => row.last_success);

  beforeAll(async () => {
    hub = await startTestHub({ logs });
  });
  afterEach(() => {
    jest.restoreAllMocks();
  });
  afterAll(() => hub?.close());

  it('keeps a user logging in from 127.0.0.2 while 127.0.0.1 tries to lock them out, HTTP Basic included', async () => {
    const userName = await createUser();
    expect((await login(hub, userName, PASSWORD, '127.0.0.2')).statusCode).toBe(200);
    await attack(hub, userName, '127.0.0.1');
    // Locked where the failures came from, and at every address the user never logged in from.
    const refused = await login(hub, userName, PASSWORD, '127.0.0.1');
    expect([refused.statusCode, refused.json<{ detail: string }>().detail]).toEqual([429, 'Too many failed logins for this user name; try again later']);
    expect((await login(hub, userName, PASSWORD, '198.51.100.7')).statusCode).toBe(429);
    // Never where the user logs in.
    expect((await login(hub, userName, PASSWORD, '127.0.0.2')).statusCode).toBe(200);
    const viaBasic = await hub.inject({ method: 'GET', url: '/api/v2/auth/me', headers: basic(userName, PASSWORD), remoteAddress: '127.0.0.2' });
    expect(viaBasic.statusCode).toBe(200);
    // That success clears its own count only, never the lock at unfamiliar addresses.
    expect((await login(hub, userName, PASSWORD, '127.0.0.1')).statusCode).toBe(429);
  });

  it('gives each familiar address a count of its own: five failures there lock it there only', async () => {
    const userName = await createUser();
    for (const address of ['127.0.0.2', '127.0.0.3']) expect((await login(hub, userName, PASSWORD, address)).statusCode).toBe(200);
    await attack(hub, userName, '127.0.0.2', 5);
    expect((await login(hub, userName, PASSWORD, '127.0.0.2')).statusCode).toBe(429);
    expect((await login(hub, userName, PASSWORD, '127.0.0.3')).statusCode).toBe(200);
    // Failures at a familiar address are not the unfamiliar addresses' count.
    expect((await login(hub, userName, PASSWORD, '198.51.100.8')).statusCode).toBe(200);
    // Four failures and a success there: the success clears that count.
    await attack(hub, userName, '127.0.0.3', 4);
    expect((await login(hub, userName, PASSWORD, '127.0.0.3')).statusCode).toBe(200);
    await attack(hub, userName, '127.0.0.3', 4);
    expect((await login(hub, userName, PASSWORD, '127.0.0.3')).statusCode).toBe(200);
  });

  it('takes an IPv6 address as its /64', async () => {
    const userName = await createUser();
    expect((await login(hub, userName, PASSWORD, '2001:db8:1:2::10')).statusCode).toBe(200);
    await attack(hub, userName, '2001:db8:9:9::1');
    expect((await login(hub, userName, PASSWORD, '2001:db8:1:2:aaaa::99')).statusCode).toBe(200);
    expect((await login(hub, userName, PASSWORD, '2001:db8:1:3::10')).statusCode).toBe(429);
  });

  it(`forgets an address ${30} days (HUB_LOGIN_FAMILIAR_DAYS) after the last success there, and writes a success at most once a day`, async () => {
    const clock = freezeClock(hub);
    const userName = await createUser();
    expect((await login(hub, userName, PASSWORD, '127.0.0.2')).statusCode).toBe(200);
    const [first] = await lastSuccess(userName);
    // HTTP Basic checks the password at each request: within a day, none of them writes.
    clock.advance(DAY - 60_000);
    for (let request = 0; request < 3; request++) {
      const response = await hub.inject({ method: 'GET', url: '/api/v2/auth/me', headers: basic(userName, PASSWORD), remoteAddress: '127.0.0.2' });
      expect(response.statusCode).toBe(200);
    }
    expect(await lastSuccess(userName)).toEqual([first]);
    clock.advance(60_000);
    expect((await login(hub, userName, PASSWORD, '127.0.0.2')).statusCode).toBe(200);
    const [refreshed] = await lastSuccess(userName);
    expect(refreshed.getTime() - first.getTime()).toBe(DAY);
    // 30 days after that success, the address is like any other.
    clock.advance(30 * DAY);
    await attack(hub, userName, '127.0.0.1', 5);
    expect((await login(hub, userName, PASSWORD, '127.0.0.2')).statusCode).toBe(429);
  });

  it('lets an administrator lift every lock of a name, at familiar addresses too', async () => {
    const userName = await createUser();
    expect((await login(hub, userName, PASSWORD, '127.0.0.2')).statusCode).toBe(200);
    await attack(hub, userName, '127.0.0.2', 5);
    await attack(hub, userName, '127.0.0.1', 5);
    const id = (await hub.inject({ method: 'GET', url: `/api/v2/auth/users?filter[userName][EQ]=${userName}`, headers: admin() })).json<{
      data: { _id: string }[];
    }>().data[0]._id;
    expect((await hub.inject({ method: 'POST', url: `/api/v2/auth/users/${id}/unlock`, headers: admin() })).statusCode).toBe(200);
    for (const address of ['127.0.0.1', '127.0.0.2']) expect((await login(hub, userName, PASSWORD, address)).statusCode).toBe(200);
  });

  it('warns once that a login came with an X-Forwarded-For header from a peer HUB_TRUSTED_PROXIES does not list', async () => {
    const userName = await createUser();
    for (let request = 0; request < 2; request++) expect((await login(hub, userName, PASSWORD, '10.1.2.3', '203.0.113.9')).statusCode).toBe(200);
    const warnings = logs.filter((line) => String(line.msg).includes('HUB_TRUSTED_PROXIES does not list 10.1.2.3'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0].msg).toContain('add it to HUB_TRUSTED_PROXIES');
  });

  it('is kept in the database: another hub on it knows where the user logs in', async () => {
    const other = await startTestHub({ databaseUrl: hub.databaseUrl });
    try {
      const userName = await createUser();
      expect((await login(hub, userName, PASSWORD, '127.0.0.2')).statusCode).toBe(200);
      await attack(other, userName, '127.0.0.1');
      expect((await login(other, userName, PASSWORD, '127.0.0.1')).statusCode).toBe(429);
      expect((await login(other, userName, PASSWORD, '127.0.0.2')).statusCode).toBe(200);
      expect((await login(hub, userName, PASSWORD, '127.0.0.2')).statusCode).toBe(200);
    } finally {
      await other.close();
    }
  });
});

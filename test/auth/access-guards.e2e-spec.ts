import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { JwtService } from '@nestjs/jwt';
import { DataSource } from 'typeorm';
import { AccessModelGuards1795351000000 } from '../../migrations/1795351000000-AccessModelGuards.js';
import { ADMIN_PASSWORD, ADMIN_USER, bearer, JWT_SECRET, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

/**
 * Issue 13, identity: no right gained around the binding guard (another user's password, active,
 * externalId, unixUserName; a group's members), tokens that end (revoked by a password change, a
 * reset, a deactivation, a deletion; none without exp), logins limited per client address as well
 * as per name, an administrator's unlock, and unixUserName unique.
 */

type Headers = Record<string, string>;
interface Permission {
  object: string;
  objectMatcher: 'simple' | 'glob';
  actions: string[];
  effect: 'Allow' | 'Deny';
}

const PASSWORD = 'an-access-guards-password';
const NEW_PASSWORD = 'another-access-guards-password';
const PER_ADDRESS = 8;
const PROXY = '10.0.0.1';
const allow = (object: string, actions: string[]): Permission => ({ object, objectMatcher: 'simple', actions, effect: 'Allow' });
const on = (collection: string, actions: string[]) => [allow(collection, actions), allow(`${collection}/*`, actions)];
const USER_MANAGER = on('/Users', ['Read', 'Create', 'Update']);
const GROUP_MANAGER = on('/Groups', ['Read', 'Update']);

let sequence = 0;
const unique = (prefix: string) => `${prefix}-${(sequence += 1)}`;
/** A documentation address (RFC 5737) no other test logs in from. */
const newAddress = () => `198.51.100.${(sequence += 1) % 250}`;

describe('access guards of identity', () => {
  let hub: TestHub;
  let adminId: string;
  let administratorRole: string;
  const admin = (): Headers => bearer(hub.adminToken);
  const call = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, headers: Headers, payload?: unknown) =>
    hub.inject({ method, url, headers, ...(payload !== undefined && { payload: payload as object }) });
  const created = (response: InjectResponse, field: 'id' | '_id' = '_id'): string => {
    expect(response.statusCode).toBe(201);
    return response.json()[field] as string;
  };
  const patchUser = (id: string, as: Headers, operations: object[]) => call('PATCH', `/api/v2/auth/users/${id}`, as, operations);
  const me = (token: string) => call('GET', '/api/v2/auth/me', bearer(token));
  const login = (username: string, password: string, remoteAddress = '127.0.0.1', forwardedFor?: string) =>
    hub.inject({
      method: 'POST',
      url: '/api/v2/auth/login',
      payload: { username, password },
      remoteAddress,
      ...(forwardedFor && { headers: { 'x-forwarded-for': forwardedFor } }),
    });
  const createUser = async (fields: Record<string, unknown> = {}): Promise<{ id: string; userName: string }> => {
    const userName = unique('guarded');
    return { id: created(await call('POST', '/api/v2/auth/users', admin(), { userName, password: PASSWORD, ...fields })), userName };
  };
  const bind = async (role: string, principal: string) =>
    created(await call('POST', '/api/v2/rbac/rolebindings', admin(), { role, principal, namespace: '*' }), 'id');
  const createRole = async (permissions: Permission[]) =>
    created(await call('POST', '/api/v2/rbac/roles', admin(), { name: unique('role'), permissions }), 'id');
  /** A user with a role of `permissions` in `*`, and its bearer header. */
  const userWith = async (permissions: Permission[]): Promise<{ id: string; userName: string; as: Headers }> => {
    const user = await createUser();
    await bind(await createRole(permissions), user.id);
    return { ...user, as: bearer(await hub.login(user.userName, PASSWORD)) };
  };
  const createGroup = async () => created(await call('POST', '/api/v2/auth/groups', admin(), { name: unique('group') }));
  const addMember = (group: string, member: string, as: Headers) => call('PATCH', `/api/v2/auth/groups/${group}/members`, as, [{ op: 'add', id: member }]);

  beforeAll(async () => {
    hub = await startTestHub({ env: { HUB_LOGIN_MAX_FAILURES_PER_ADDRESS: String(PER_ADDRESS), HUB_TRUSTED_PROXIES: PROXY } });
    adminId = (await call('GET', '/api/v2/auth/me', admin())).json()._id;
    const roles = await call('GET', '/api/v2/rbac/roles?filter[name][EQ]=HubAdministrator', admin());
    administratorRole = roles.json().data[0].id;
  });
  afterAll(() => hub?.close());

  describe('no escalation around the binding guard', () => {
    /** A user who holds HubAdministrator through a group inside a group. */
    const nestedAdministrator = async () => {
      const [outer, inner] = [await createGroup(), await createGroup()];
      await bind(administratorRole, outer);
      expect((await addMember(outer, inner, admin())).statusCode).toBe(200);
      const user = await createUser();
      expect((await addMember(inner, user.id, admin())).statusCode).toBe(200);
      return { ...user, inner, outer };
    };

    it.each<[string, object]>([
      ['password', { op: 'add', path: '/password', value: NEW_PASSWORD }],
      ['active', { op: 'replace', path: '/active', value: false }],
    ])('refuses a user manager setting the %s of a user who holds a role they may not hand out (nested groups included)', async (field, operation) => {
      const manager = await userWith(USER_MANAGER);
      const target = await nestedAdministrator();
      const response = await patchUser(target.id, manager.as, [operation]);
      expect(response.statusCode).toBe(403);
      expect(response.json().detail).toContain(`changing the ${field} of user '${target.userName}'`);
      expect(response.json().detail).toContain("role 'HubAdministrator'");
      expect((await login(target.userName, PASSWORD, newAddress())).statusCode).toBe(200);
      expect((await call('GET', `/api/v2/auth/users/${target.id}`, admin())).json()).toMatchObject({ active: true });
    });

    it('lets a user manager reset the password of a user whose roles they may hand out, and of a user without roles', async () => {
      const role = await createRole(on('/Pipelines', ['Read']));
      const manager = await userWith([...USER_MANAGER, allow(`/Roles/${role}`, ['Use'])]);
      const [bound, plain] = [await createUser(), await createUser()];
      await bind(role, bound.id);
      for (const target of [bound, plain]) {
        expect((await patchUser(target.id, manager.as, [{ op: 'add', path: '/password', value: NEW_PASSWORD }])).statusCode).toBe(200);
        expect((await login(target.userName, NEW_PASSWORD, newAddress())).statusCode).toBe(200);
      }
    });

    it('refuses anyone but the bootstrap administrator their password, another administrator included', async () => {
      const other = await userWith([]);
      await bind(administratorRole, other.id);
      const otherToken = bearer(await hub.login(other.userName, PASSWORD));
      const response = await patchUser(adminId, otherToken, [{ op: 'add', path: '/password', value: NEW_PASSWORD }]);
      expect(response.statusCode).toBe(403);
      expect(response.json().detail).toContain('changed only by themself');
      expect((await login(ADMIN_USER, ADMIN_PASSWORD, newAddress())).statusCode).toBe(200);
    });

    it('refuses a group manager adding themself to a group inside one bound to HubAdministrator, and any member change there', async () => {
      const manager = await userWith(GROUP_MANAGER);
      const { inner, outer } = await nestedAdministrator();
      for (const group of [inner, outer]) {
        const response = await addMember(group, manager.id, manager.as);
        expect(response.statusCode).toBe(403);
        expect(response.json().detail).toContain("role 'HubAdministrator'");
      }
      const removal = await call('PATCH', `/api/v2/auth/groups/${outer}/members`, manager.as, [{ op: 'remove', id: inner }]);
      expect(removal.statusCode).toBe(403);
      const evaluation = await call('POST', '/api/v2/rbac/evaluate', manager.as, [{ object: '/Roles', action: 'Create' }]);
      expect(evaluation.json()).toEqual(['Deny']);
      // A group without roles is theirs to manage.
      expect((await addMember(await createGroup(), manager.id, manager.as)).statusCode).toBe(200);
    });

    it('lets only an administrator set externalId, on creation or change', async () => {
      const manager = await userWith(USER_MANAGER);
      const refused = await call('POST', '/api/v2/auth/users', manager.as, { userName: unique('linked'), password: PASSWORD, externalId: 'idp|refused' });
      expect(refused.statusCode).toBe(403);
      expect(refused.json().detail).toContain('only an administrator');
      const target = await createUser();
      expect((await patchUser(target.id, manager.as, [{ op: 'add', path: '/externalId', value: 'idp|refused' }])).statusCode).toBe(403);
      expect((await call('GET', `/api/v2/auth/users/${target.id}`, admin())).json().externalId).toBeUndefined();
      expect((await patchUser(target.id, admin(), [{ op: 'add', path: '/externalId', value: 'idp|linked' }])).statusCode).toBe(200);
      expect((await createUser({ externalId: 'idp|created' })).id).toBeDefined();
    });
  });

  describe('identity is the administrator’s to give', () => {
    it('refuses a user manager their own unixUserName (403), and another user’s, on creation or change', async () => {
      const manager = await userWith(USER_MANAGER);
      const own = await patchUser(manager.id, manager.as, [{ op: 'add', path: '/unixUserName', value: 'taken-over' }]);
      expect([own.statusCode, own.json().detail]).toEqual([
        403,
        `Not allowed: only an administrator (Use on role 'HubAdministrator' in every namespace) may set the unixUserName of user '${manager.userName}' (jobs run as that host account)`,
      ]);
      const replaced = await call('PUT', `/api/v2/auth/users/${manager.id}`, manager.as, { userName: manager.userName, unixUserName: 'taken-over' });
      expect(replaced.statusCode).toBe(403);
      expect((await call('GET', `/api/v2/auth/users/${manager.id}`, admin())).json().unixUserName).toBeUndefined();
      const target = await createUser();
      expect((await patchUser(target.id, manager.as, [{ op: 'add', path: '/unixUserName', value: 'taken-over' }])).statusCode).toBe(403);
      const creation = await call('POST', '/api/v2/auth/users', manager.as, { userName: unique('named'), password: PASSWORD, unixUserName: 'taken-over' });
      expect(creation.statusCode).toBe(403);
      // Everything else of their own stays theirs to change, and an administrator gives the name.
      expect((await patchUser(manager.id, manager.as, [{ op: 'add', path: '/displayName', value: 'Manager' }])).statusCode).toBe(200);
      expect((await patchUser(manager.id, admin(), [{ op: 'add', path: '/unixUserName', value: unique('given') }])).statusCode).toBe(200);
      // A body that sends back the name as read changes nothing, and is not refused.
      const read = (await call('GET', `/api/v2/auth/users/${manager.id}`, manager.as)).json();
      expect((await call('PUT', `/api/v2/auth/users/${manager.id}`, manager.as, { userName: read.userName, unixUserName: read.unixUserName })).statusCode).toBe(
        200,
      );
    });
  });

  describe('tokens that end', () => {
    it('revokes every token of a user when they change their password, the one that changed it included', async () => {
      const user = await createUser();
      const [first, second] = [await hub.login(user.userName, PASSWORD), await hub.login(user.userName, PASSWORD)];
      const change = await call('PUT', '/api/v2/auth/me/password', bearer(first), { currentPassword: PASSWORD, newPassword: NEW_PASSWORD });
      expect(change.statusCode).toBe(200);
      for (const token of [first, second]) {
        const response = await me(token);
        expect(response.statusCode).toBe(401);
        expect(response.json().detail).toContain('revoked');
      }
      expect((await me(await hub.login(user.userName, NEW_PASSWORD))).statusCode).toBe(200);
    });

    it("revokes them on an administrator's reset", async () => {
      const user = await createUser();
      const token = await hub.login(user.userName, PASSWORD);
      expect((await me(token)).statusCode).toBe(200);
      expect((await patchUser(user.id, admin(), [{ op: 'add', path: '/password', value: NEW_PASSWORD }])).statusCode).toBe(200);
      expect((await me(token)).statusCode).toBe(401);
      expect((await me(await hub.login(user.userName, NEW_PASSWORD))).statusCode).toBe(200);
    });

    it('revokes them on active: false, for good: reactivating does not revive them', async () => {
      const user = await createUser();
      const token = await hub.login(user.userName, PASSWORD);
      expect((await patchUser(user.id, admin(), [{ op: 'replace', path: '/active', value: false }])).statusCode).toBe(200);
      expect((await me(token)).statusCode).toBe(401);
      expect((await patchUser(user.id, admin(), [{ op: 'replace', path: '/active', value: true }])).statusCode).toBe(200);
      expect((await me(token)).statusCode).toBe(401);
      expect((await me(await hub.login(user.userName, PASSWORD))).statusCode).toBe(200);
    });

    it('revokes them on deletion', async () => {
      const user = await createUser();
      const token = await hub.login(user.userName, PASSWORD);
      expect((await me(token)).statusCode).toBe(200);
      expect((await call('DELETE', `/api/v2/auth/users/${user.id}`, admin())).statusCode).toBe(200);
      expect((await me(token)).statusCode).toBe(401);
    });

    it('keeps tokens across changes that do not revoke them (display name)', async () => {
      const user = await createUser();
      const token = await hub.login(user.userName, PASSWORD);
      expect((await patchUser(user.id, admin(), [{ op: 'add', path: '/displayName', value: 'Renamed' }])).statusCode).toBe(200);
      expect((await me(token)).statusCode).toBe(200);
    });

    it('refuses a well-signed token without exp, and one without the token version', async () => {
      const user = await createUser();
      const signer = new JwtService({ secret: JWT_SECRET });
      const claims = { sub: user.id, userName: user.userName, groups: [], iss: 'hub' };
      const forever = await signer.signAsync({ ...claims, tokenVersion: 0 });
      const unversioned = await signer.signAsync(claims, { expiresIn: 600 });
      const genuine = await signer.signAsync({ ...claims, tokenVersion: 0 }, { expiresIn: 600 });
      const noExp = await me(forever);
      expect(noExp.statusCode).toBe(401);
      expect(noExp.json().detail).toContain('no expiry');
      expect((await me(unversioned)).statusCode).toBe(401);
      expect((await me(genuine)).statusCode).toBe(200);
    });
  });

  describe('login limits and unlock', () => {
    it(`refuses an address's logins after ${PER_ADDRESS} failures, whatever the names, with 429 and Retry-After; other addresses log in`, async () => {
      const user = await createUser();
      const address = newAddress();
      for (let attempt = 0; attempt < PER_ADDRESS; attempt += 1) expect((await login(unique('sprayed'), 'wrong-password', address)).statusCode).toBe(401);
      const refused = await login(user.userName, PASSWORD, address);
      expect(refused.statusCode).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.json().detail).toContain('from this address');
      expect((await login(user.userName, PASSWORD, newAddress())).statusCode).toBe(200);
      // HTTP Basic is checked like a login, from the same address.
      const basic = `Basic ${Buffer.from(`${user.userName}:${PASSWORD}`).toString('base64')}`;
      const viaBasic = await hub.inject({ method: 'GET', url: '/api/v2/auth/me', headers: { authorization: basic }, remoteAddress: address });
      expect(viaBasic.statusCode).toBe(429);
    });

    it(`counts the X-Forwarded-For address only behind a trusted proxy (${PROXY})`, async () => {
      const user = await createUser();
      const client = newAddress();
      for (let attempt = 0; attempt < PER_ADDRESS; attempt += 1) expect((await login(unique('proxied'), 'wrong-password', PROXY, client)).statusCode).toBe(401);
      expect((await login(user.userName, PASSWORD, PROXY, client)).statusCode).toBe(429);
      // Another client behind the same proxy, and a client claiming the refused address directly, are not refused.
      expect((await login(user.userName, PASSWORD, PROXY, newAddress())).statusCode).toBe(200);
      expect((await login(user.userName, PASSWORD, newAddress(), client)).statusCode).toBe(200);
    });

    it("lets an administrator unlock an account its name's failures locked", async () => {
      const user = await createUser();
      for (let attempt = 0; attempt < 5; attempt += 1) expect((await login(user.userName, 'wrong-password', newAddress())).statusCode).toBe(401);
      expect((await login(user.userName, PASSWORD, newAddress())).statusCode).toBe(429);
      const unlock = await call('POST', `/api/v2/auth/users/${user.id}/unlock`, admin());
      expect(unlock.statusCode).toBe(200);
      expect(unlock.json().msg).toContain('unlocked');
      expect((await login(user.userName, PASSWORD, newAddress())).statusCode).toBe(200);
    });

    it('refuses the unlock of an administrator to a user manager, and 404s an unknown user', async () => {
      const manager = await userWith(USER_MANAGER);
      const response = await call('POST', `/api/v2/auth/users/${adminId}/unlock`, manager.as);
      expect(response.statusCode).toBe(403);
      expect((await call('POST', '/api/v2/auth/users/6f1c4b1e-0000-4000-8000-000000000000/unlock', admin())).statusCode).toBe(404);
    });
  });

  describe('unixUserName is unique', () => {
    // Unix user names are lower case (the DTO's pattern), so exact uniqueness is uniqueness ignoring case.
    it('refuses a second user with the same unixUserName (409), on creation and on change', async () => {
      const unixUserName = unique('jdoe');
      await createUser({ unixUserName });
      const duplicate = await call('POST', '/api/v2/auth/users', admin(), { userName: unique('dup'), password: PASSWORD, unixUserName });
      expect(duplicate.statusCode).toBe(409);
      expect(duplicate.json().detail).toContain(unixUserName);
      const other = await createUser();
      expect((await patchUser(other.id, admin(), [{ op: 'add', path: '/unixUserName', value: unixUserName }])).statusCode).toBe(409);
      expect((await patchUser(other.id, admin(), [{ op: 'add', path: '/unixUserName', value: `${unixUserName}-2` }])).statusCode).toBe(200);
    });

    it('is made unique by the migration on a database that holds duplicates: the oldest user keeps the name', async () => {
      const dataSource = hub.app.get(DataSource);
      const runner = dataSource.createQueryRunner();
      try {
        const [older, newer] = [await createUser(), await createUser()];
        const migration = new AccessModelGuards1795351000000();
        await migration.down(runner);
        await dataSource.query(`UPDATE users SET unix_user_name = 'shared', created = now() - interval '1 day' WHERE id = $1`, [older.id]);
        await dataSource.query(`UPDATE users SET unix_user_name = 'shared' WHERE id = $1`, [newer.id]);
        await migration.up(runner);
        const rows: { id: string; unix_user_name: string | null }[] = await dataSource.query('SELECT id, unix_user_name FROM users WHERE id = ANY($1)', [
          [older.id, newer.id],
        ]);
        expect(Object.fromEntries(rows.map((row) => [row.id, row.unix_user_name]))).toEqual({ [older.id]: 'shared', [newer.id]: null });
      } finally {
        await runner.release();
      }
    });
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { LoginThrottle } from '../../src/auth/login-throttle.js';
import { ADMIN_PASSWORD, ADMIN_USER, basic, bearer, claimsOf, type InjectResponse, startTestHub, type TestHub } from '../support/test-hub.js';
import { freezeClock } from '../support/test-clock.js';

const AUTH = '/api/v2/auth';
const LOGIN = `${AUTH}/login`;
const ME = `${AUTH}/me`;
const CLAIMS = `${AUTH}/claims`;
const PASSWORD = `${AUTH}/me/password`;
const ACCOUNTS = `${AUTH}/accounts`;
const USERS = `${AUTH}/users`;
const GROUPS = `${AUTH}/groups`;

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const DAY = 24 * 60 * MINUTE;
const LOCKOUT = 15 * MINUTE;

let sequence = 0;
/** A user name no other test uses. */
function unique(prefix: string): string {
  sequence += 1;
  return `${prefix}-${sequence}`;
}

function errorPaths(response: InjectResponse): string[] {
  return ((response.json().errors ?? []) as { path: string }[]).map((error) => error.path).sort();
}

function errorMessages(response: InjectResponse): string {
  return ((response.json().errors ?? []) as { message: string }[]).map((error) => error.message).join('; ');
}

/** Requests against one hub, as its administrator unless told otherwise. */
function client(hub: () => TestHub) {
  const admin = () => bearer(hub().adminToken);
  return {
    login: (username: string, password: string) => hub().inject({ method: 'POST', url: LOGIN, payload: { username, password } }),
    createUser: (payload: Record<string, unknown>) => hub().inject({ method: 'POST', url: USERS, headers: admin(), payload }),
    getUser: (id: string) => hub().inject({ method: 'GET', url: `${USERS}/${id}`, headers: admin() }),
    replaceUser: (id: string, payload: Record<string, unknown>) => hub().inject({ method: 'PUT', url: `${USERS}/${id}`, headers: admin(), payload }),
    patchUser: (id: string, payload: Record<string, unknown>[]) => hub().inject({ method: 'PATCH', url: `${USERS}/${id}`, headers: admin(), payload }),
    changePassword: (token: string, payload: Record<string, unknown>) => hub().inject({ method: 'PUT', url: PASSWORD, headers: bearer(token), payload }),
    accept: (payload: Record<string, unknown>) => hub().inject({ method: 'POST', url: ACCOUNTS, payload }),
    /** Creates an active user with a password and returns its id. */
    async addUser(userName: string, password: string): Promise<string> {
      const response = await this.createUser({ userName, password });
      expect(response.statusCode).toBe(201);
      return response.json()._id as string;
    },
    /** Creates a pending invitation and returns the user's id and the invitation token. */
    async invite(userName: string, fields: Record<string, unknown> = {}): Promise<{ id: string; token: string; expiry: string }> {
      const response = await this.createUser({ userName, invitationPending: true, ...fields });
      expect(response.statusCode).toBe(201);
      const body = response.json();
      return { id: body._id as string, token: body.invitationToken as string, expiry: body.invitationExpiry as string };
    },
    /** Fails `times` logins for `userName`, each expected to be a plain 401. */
    async failLogins(userName: string, times: number): Promise<void> {
      for (let attempt = 1; attempt <= times; attempt++) {
        const response = await this.login(userName, `wrong-password-${attempt}`);
        expect(response.statusCode).toBe(401);
      }
    },
  };
}

describe('accounts', () => {
  let hub: TestHub;
  const logs: Record<string, unknown>[] = [];
  const api = client(() => hub);

  beforeAll(async () => {
    hub = await startTestHub({ logs });
  });
  afterAll(() => hub.close());
  afterEach(() => {
    jest.restoreAllMocks();
  });

  describe('login', () => {
    it('issues a token for an hour with the claims sub, userName, transitive groups, iat, exp and iss "hub"', async () => {
      const id = await api.addUser('grouped-user', 'grouped-password');
      const inner = (await hub.inject({ method: 'POST', url: GROUPS, headers: bearer(hub.adminToken), payload: { name: 'inner-group' } })).json()._id;
      const outer = (await hub.inject({ method: 'POST', url: GROUPS, headers: bearer(hub.adminToken), payload: { name: 'outer-group' } })).json()._id;
      for (const [group, member] of [
        [inner, id],
        [outer, inner],
      ]) {
        const response = await hub.inject({
          method: 'PATCH',
          url: `${GROUPS}/${group}/members`,
          headers: bearer(hub.adminToken),
          payload: [{ op: 'add', id: member }],
        });
        expect(response.statusCode).toBe(200);
      }
      const response = await api.login('grouped-user', 'grouped-password');
      expect(response.statusCode).toBe(200);
      expect(response.json().expiresIn).toBe(3600);
      const claims = claimsOf(response.json().token);
      expect(Object.keys(claims).sort()).toEqual(['exp', 'groups', 'iat', 'iss', 'sub', 'tokenVersion', 'userName']);
      expect(claims).toMatchObject({ sub: id, userName: 'grouped-user', iss: 'hub' });
      expect([...(claims.groups as string[])].sort()).toEqual([inner, outer].sort());
      expect((claims.exp as number) - (claims.iat as number)).toBe(3600);
    });

    it('puts an empty groups list in the token of a user without groups', async () => {
      const id = await api.addUser('lonely-user', 'lonely-password');
      const response = await api.login('lonely-user', 'lonely-password');
      expect(claimsOf(response.json().token)).toMatchObject({ sub: id, userName: 'lonely-user', groups: [], iss: 'hub' });
    });

    it('refuses a deactivated user with 401 and rejects its existing token at once', async () => {
      const id = await api.addUser('deactivated-user', 'deactivated-password');
      const token = await hub.login('deactivated-user', 'deactivated-password');
      expect((await hub.inject({ method: 'GET', url: ME, headers: bearer(token) })).statusCode).toBe(200);
      const patched = await api.patchUser(id, [{ op: 'replace', path: '/active', value: false }]);
      expect(patched.statusCode).toBe(200);
      expect(patched.json().active).toBe(false);
      expect((await hub.inject({ method: 'GET', url: ME, headers: bearer(token) })).statusCode).toBe(401);
      expect((await api.login('deactivated-user', 'deactivated-password')).statusCode).toBe(401);
    });
  });

  describe('lockout', () => {
    it('locks a user name after 5 failures: even the right password gets 429 with a Retry-After that counts down', async () => {
      const clock = freezeClock(hub);
      await api.addUser('locked-user', 'locked-password');
      await api.failLogins('locked-user', 5);
      const locked = await api.login('locked-user', 'locked-password');
      expect(locked.statusCode).toBe(429);
      expect(locked.headers['retry-after']).toBe('900');
      expect(locked.headers['content-type']).toContain('application/problem+json');
      expect(locked.json()).toMatchObject({ status: 429, title: 'Too Many Requests' });
      expect(locked.json().detail).toContain('Too many failed logins');
      clock.advance(5 * MINUTE);
      expect((await api.login('locked-user', 'locked-password')).headers['retry-after']).toBe('600');
      clock.advance(10 * MINUTE - SECOND);
      const lastSecond = await api.login('locked-user', 'locked-password');
      expect(lastSecond.statusCode).toBe(429);
      expect(lastSecond.headers['retry-after']).toBe('1');
    });

    it('checks guesses sent in parallel one at a time: 20 wrong logins at once give five 401s and fifteen 429s', async () => {
      freezeClock(hub);
      await api.addUser('parallel-target', 'parallel-password');
      const responses = await Promise.all(Array.from({ length: 20 }, (_, n) => api.login('parallel-target', `guess-${n}`)));
      const statuses = responses.map((response) => response.statusCode);
      expect(statuses.filter((status) => status === 401)).toHaveLength(5);
      expect(statuses.filter((status) => status === 429)).toHaveLength(15);
      expect((await api.login('parallel-target', 'parallel-password')).statusCode).toBe(429);
    });

    it('lets a script make parallel HTTP Basic requests with the right password', async () => {
      await api.addUser('parallel-script', 'parallel-script-password');
      const responses = await Promise.all(
        Array.from({ length: 8 }, () => hub.inject({ method: 'GET', url: '/api/v2/auth/me', headers: basic('parallel-script', 'parallel-script-password') })),
      );
      expect(responses.map((response) => response.statusCode)).toEqual(Array<number>(8).fill(200));
    });

    it('does not lock before the 5th failure', async () => {
      freezeClock(hub);
      await api.addUser('four-failures', 'four-failures-password');
      await api.failLogins('four-failures', 4);
      expect((await api.login('four-failures', 'four-failures-password')).statusCode).toBe(200);
    });

    it('compares user names ignoring case: failures on "Bob" lock "bob"', async () => {
      freezeClock(hub);
      await api.addUser('bob', 'bob-password');
      await api.failLogins('Bob', 3);
      await api.failLogins('BOB', 2);
      expect((await api.login('bob', 'bob-password')).statusCode).toBe(429);
      expect((await api.login('boB', 'bob-password')).statusCode).toBe(429);
    });

    it('throttles unknown user names exactly like existing ones', async () => {
      freezeClock(hub);
      await api.addUser('existing-name', 'existing-password');
      const attempts = async (userName: string) => {
        const replies: unknown[] = [];
        for (let attempt = 0; attempt < 6; attempt++) {
          const response = await api.login(userName, 'a-wrong-password');
          const { detail, status, title } = response.json();
          replies.push({ status, title, detail, retryAfter: response.headers['retry-after'] });
        }
        return replies;
      };
      const existing = await attempts('existing-name');
      const unknown = await attempts('unknown-name');
      expect(unknown).toEqual(existing);
      expect(existing.map((reply) => (reply as { status: number }).status)).toEqual([401, 401, 401, 401, 401, 429]);
    });

    it('locks only the failing name: another user still logs in', async () => {
      freezeClock(hub);
      await api.addUser('victim-user', 'victim-password');
      await api.addUser('bystander-user', 'bystander-password');
      await api.failLogins('victim-user', 5);
      expect((await api.login('victim-user', 'victim-password')).statusCode).toBe(429);
      expect((await api.login('bystander-user', 'bystander-password')).statusCode).toBe(200);
    });

    it('lets the right password in again once the lockout is over, and that login starts a new count', async () => {
      const clock = freezeClock(hub);
      await api.addUser('patient-user', 'patient-password');
      await api.failLogins('patient-user', 5);
      expect((await api.login('patient-user', 'patient-password')).statusCode).toBe(429);
      clock.advance(LOCKOUT + SECOND);
      expect((await api.login('patient-user', 'patient-password')).statusCode).toBe(200);
      await api.failLogins('patient-user', 4);
      expect((await api.login('patient-user', 'patient-password')).statusCode).toBe(200);
    });

    it('forgets the failures on a successful login before the 5th', async () => {
      freezeClock(hub);
      await api.addUser('forgiven-user', 'forgiven-password');
      await api.failLogins('forgiven-user', 4);
      expect((await api.login('forgiven-user', 'forgiven-password')).statusCode).toBe(200);
      await api.failLogins('forgiven-user', 4);
      expect((await api.login('forgiven-user', 'forgiven-password')).statusCode).toBe(200);
    });

    it('does not lock for failures spread over more than 15 minutes', async () => {
      const clock = freezeClock(hub);
      await api.addUser('slow-guesser', 'slow-guesser-password');
      await api.failLogins('slow-guesser', 4);
      clock.advance(16 * MINUTE);
      await api.failLogins('slow-guesser', 4);
      expect((await api.login('slow-guesser', 'slow-guesser-password')).statusCode).toBe(200);
    });

    it('counts failed HTTP Basic credentials and refuses Basic with 429 while the name is locked', async () => {
      freezeClock(hub);
      await api.addUser('basic-user', 'basic-password');
      for (let attempt = 0; attempt < 5; attempt++) {
        expect((await hub.inject({ method: 'GET', url: ME, headers: basic('basic-user', 'wrong-password') })).statusCode).toBe(401);
      }
      const locked = await hub.inject({ method: 'GET', url: ME, headers: basic('basic-user', 'basic-password') });
      expect(locked.statusCode).toBe(429);
      expect(locked.headers['retry-after']).toBe('900');
      expect((await api.login('basic-user', 'basic-password')).statusCode).toBe(429);
    });

    it('adds failed HTTP Basic credentials and failed logins up', async () => {
      freezeClock(hub);
      await api.addUser('mixed-user', 'mixed-password');
      await api.failLogins('mixed-user', 3);
      for (let attempt = 0; attempt < 2; attempt++) {
        expect((await hub.inject({ method: 'GET', url: ME, headers: basic('mixed-user', 'wrong-password') })).statusCode).toBe(401);
      }
      expect((await api.login('mixed-user', 'mixed-password')).statusCode).toBe(429);
    });

    it('prunes the rows of names that are neither locked nor recently failed', async () => {
      const clock = freezeClock(hub);
      await api.failLogins('prune-locked', 5);
      await api.failLogins('prune-failed', 2);
      const throttle = hub.app.get(LoginThrottle);
      const rows = async () => {
        const found = await hub.app
          .get(DataSource)
          .query<{ name_key: string }[]>('SELECT name_key FROM login_failures WHERE name_key LIKE $1 ORDER BY name_key', ['prune-%']);
        return found.map((row) => row.name_key);
      };
      clock.advance(LOCKOUT - MINUTE);
      await throttle.prune();
      expect(await rows()).toEqual(['prune-failed', 'prune-locked']);
      clock.advance(MINUTE + SECOND);
      expect(await throttle.prune()).toBeGreaterThanOrEqual(2);
      expect(await rows()).toEqual([]);
    });
  });

  describe('claims', () => {
    it('returns exactly the verified claims of the bearer token', async () => {
      const id = await api.addUser('claims-user', 'claims-password');
      const token = await hub.login('claims-user', 'claims-password');
      const response = await hub.inject({ method: 'GET', url: CLAIMS, headers: bearer(token) });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ claims: claimsOf(token) });
      expect(Object.keys(response.json().claims).sort()).toEqual(['exp', 'groups', 'iat', 'iss', 'sub', 'tokenVersion', 'userName']);
      expect(response.json().claims).toMatchObject({ sub: id, userName: 'claims-user', groups: [], iss: 'hub' });
    });

    it('returns for HTTP Basic the claims a login would issue, without iat and exp', async () => {
      const id = await api.addUser('basic-claims', 'basic-claims-password');
      const response = await hub.inject({ method: 'GET', url: CLAIMS, headers: basic('basic-claims', 'basic-claims-password') });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ claims: { sub: id, userName: 'basic-claims', groups: [], iss: 'hub' } });
    });

    it('requires credentials', async () => {
      const response = await hub.inject({ method: 'GET', url: CLAIMS });
      expect(response.statusCode).toBe(401);
    });
  });

  describe('password change', () => {
    it('replaces the password: the old one fails and the new one works', async () => {
      await api.addUser('changer', 'old-password');
      const token = await hub.login('changer', 'old-password');
      const response = await api.changePassword(token, { currentPassword: 'old-password', newPassword: 'new-password' });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ msg: expect.any(String) });
      expect((await api.login('changer', 'old-password')).statusCode).toBe(401);
      expect((await api.login('changer', 'new-password')).statusCode).toBe(200);
    });

    it('refuses a wrong current password with 400 at /currentPassword and keeps the password', async () => {
      await api.addUser('forgetful', 'forgetful-password');
      const token = await hub.login('forgetful', 'forgetful-password');
      const response = await api.changePassword(token, { currentPassword: 'not-my-password', newPassword: 'another-password' });
      expect(response.statusCode).toBe(400);
      expect(errorPaths(response)).toEqual(['/currentPassword']);
      expect((await api.login('forgetful', 'forgetful-password')).statusCode).toBe(200);
      expect((await api.login('forgetful', 'another-password')).statusCode).toBe(401);
    });

    it('counts wrong current passwords as failed logins: after 5, password changes and logins get 429', async () => {
      freezeClock(hub);
      await api.addUser('guessed', 'guessed-password');
      const token = await hub.login('guessed', 'guessed-password');
      for (let attempt = 0; attempt < 5; attempt++) {
        expect((await api.changePassword(token, { currentPassword: `wrong-${attempt}`, newPassword: 'another-password' })).statusCode).toBe(400);
      }
      const change = await api.changePassword(token, { currentPassword: 'guessed-password', newPassword: 'another-password' });
      expect(change.statusCode).toBe(429);
      expect(change.headers['retry-after']).toBe('900');
      expect((await api.login('guessed', 'guessed-password')).statusCode).toBe(429);
    });

    it.each([
      ['a new password shorter than 8 characters', () => ({ newPassword: 'short-7' }), ['/newPassword'], 'newPassword must be at least 8 characters long'],
      [
        'a new password equal to the user name, ignoring case',
        (userName: string) => ({ newPassword: userName.toUpperCase() }),
        ['/newPassword'],
        'newPassword must not be the user name',
      ],
      ['an empty new password', () => ({ newPassword: '' }), ['/newPassword'], 'newPassword'],
      ['a missing new password', () => ({ newPassword: undefined }), ['/newPassword'], 'newPassword'],
      ['a missing current password', () => ({ currentPassword: undefined }), ['/currentPassword'], 'currentPassword'],
      ['an unknown property', () => ({ confirmPassword: 'fresh-password' }), ['/confirmPassword'], 'confirmPassword'],
    ])('refuses %s with 400 naming the field, keeping the password', async (_case, change, paths, messagePart) => {
      const userName = unique('policy-checked');
      await api.addUser(userName, 'policy-password');
      const token = await hub.login(userName, 'policy-password');
      const response = await api.changePassword(token, { currentPassword: 'policy-password', newPassword: 'fresh-password', ...change(userName) });
      expect(response.statusCode).toBe(400);
      expect(errorPaths(response)).toEqual(paths);
      expect(errorMessages(response)).toContain(messagePart);
      expect((await api.login(userName, 'policy-password')).statusCode).toBe(200);
    });

    it('accepts a new password of exactly 8 characters', async () => {
      await api.addUser('eight-chars', 'eight-chars-password');
      const token = await hub.login('eight-chars', 'eight-chars-password');
      expect((await api.changePassword(token, { currentPassword: 'eight-chars-password', newPassword: '12345678' })).statusCode).toBe(200);
      expect((await api.login('eight-chars', '12345678')).statusCode).toBe(200);
    });
  });

  describe('invitations', () => {
    it('creates an invitation with a token shown once and an expiry 7 days after now', async () => {
      const clock = freezeClock(hub, new Date('2031-03-04T05:06:07.089Z'));
      const response = await api.createUser({ userName: 'invitee', invitationPending: true });
      expect(response.statusCode).toBe(201);
      const created = response.json();
      expect(created).toMatchObject({ userName: 'invitee', invitationPending: true, invitationExpiry: clock.at(7 * DAY).toISOString() });
      expect(created.invitationToken).toEqual(expect.stringMatching(/^[A-Za-z0-9_-]{40,}$/));
      const read = await api.getUser(created._id);
      expect(read.json()).toMatchObject({ invitationPending: true, invitationExpiry: clock.at(7 * DAY).toISOString() });
      expect(read.json()).not.toHaveProperty('invitationToken');
      expect(read.body).not.toContain(created.invitationToken);
    });

    it('keeps a given invitationExpiry in the future', async () => {
      const expiry = new Date(Date.now() + 2 * DAY).toISOString();
      const { id, expiry: created } = await api.invite('dated-invitee', { invitationExpiry: expiry });
      expect(created).toBe(expiry);
      expect((await api.getUser(id)).json().invitationExpiry).toBe(expiry);
    });

    it.each([
      ['an invitationExpiry in the past', { invitationPending: true, invitationExpiry: '2000-01-01T00:00:00.000Z' }, ['/invitationExpiry']],
      [
        'an invitationExpiry with invitationPending false',
        { invitationPending: false, password: 'a-fine-password', invitationExpiry: '2999-01-01T00:00:00.000Z' },
        ['/invitationExpiry'],
      ],
      ['an invitationExpiry without invitationPending', { password: 'a-fine-password', invitationExpiry: '2999-01-01T00:00:00.000Z' }, ['/invitationExpiry']],
      ['a password with invitationPending true', { invitationPending: true, password: 'a-fine-password' }, ['/password']],
      ['no password without invitationPending', {}, ['/password']],
      ['no password with invitationPending false', { invitationPending: false }, ['/password']],
    ])('refuses to create a user with %s', async (_case, fields, paths) => {
      const userName = unique('refused-invitee');
      const response = await api.createUser({ userName, ...fields });
      expect(response.statusCode).toBe(400);
      expect(errorPaths(response)).toEqual(paths);
      await api.invite(userName); // Nothing was created under that name.
    });

    it('keeps an invited user from logging in', async () => {
      await api.invite('waiting-invitee');
      expect((await api.login('waiting-invitee', 'any-password')).statusCode).toBe(401);
    });

    it('completes an invitation with POST /accounts, without a bearer token, after which the chosen password logs in', async () => {
      const { id, token } = await api.invite('new-invitee');
      const response = await api.accept({ token, userName: 'chosen-name', displayName: 'Chosen Name', password: 'chosen-password' });
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body).toMatchObject({ _id: id, userName: 'chosen-name', displayName: 'Chosen Name', invitationPending: false, active: true });
      expect(body).not.toHaveProperty('invitationExpiry');
      expect(body).not.toHaveProperty('invitationToken');
      expect(response.body).not.toContain('chosen-password');
      expect((await api.getUser(id)).json()).toMatchObject({ userName: 'chosen-name', invitationPending: false });
      const login = await api.login('chosen-name', 'chosen-password');
      expect(login.statusCode).toBe(200);
      expect(claimsOf(login.json().token)).toMatchObject({ sub: id, userName: 'chosen-name' });
    });

    it('accepts a token only once: the second use is 400 at /token', async () => {
      const { token } = await api.invite('once-invitee');
      expect((await api.accept({ token, userName: 'once-invitee', displayName: 'Once', password: 'once-password' })).statusCode).toBe(200);
      const again = await api.accept({ token, userName: 'twice-invitee', displayName: 'Twice', password: 'twice-password' });
      expect(again.statusCode).toBe(400);
      expect(errorPaths(again)).toEqual(['/token']);
      expect((await api.login('twice-invitee', 'twice-password')).statusCode).toBe(401);
      expect((await api.login('once-invitee', 'once-password')).statusCode).toBe(200);
    });

    it('refuses an unknown token with 400 at /token', async () => {
      const { token } = await api.invite('wrong-token-invitee');
      const response = await api.accept({ token: `${token}x`, userName: 'wrong-token-invitee', displayName: 'Wrong', password: 'wrong-token-password' });
      expect(response.statusCode).toBe(400);
      expect(errorPaths(response)).toEqual(['/token']);
    });

    it('refuses an expired invitation with 400 and leaves the user pending', async () => {
      const clock = freezeClock(hub);
      const { id, token } = await api.invite('late-invitee');
      clock.advance(7 * DAY + SECOND);
      const response = await api.accept({ token, userName: 'late-invitee', displayName: 'Late', password: 'late-password' });
      expect(response.statusCode).toBe(400);
      expect(errorPaths(response)).toEqual(['/token']);
      expect(errorMessages(response)).toContain('expired');
      expect((await api.getUser(id)).json()).toMatchObject({ invitationPending: true });
      expect((await api.login('late-invitee', 'late-password')).statusCode).toBe(401);
    });

    it('accepts an invitation until just before it expires', async () => {
      const clock = freezeClock(hub);
      const { token } = await api.invite('just-in-time');
      clock.advance(7 * DAY - SECOND);
      expect((await api.accept({ token, userName: 'just-in-time', displayName: 'Just', password: 'just-in-time-password' })).statusCode).toBe(200);
    });

    it("lets an admin move a pending invitation's expiry with PATCH", async () => {
      const clock = freezeClock(hub);
      const { id, token } = await api.invite('extended-invitee');
      const later = clock.at(30 * DAY).toISOString();
      const patched = await api.patchUser(id, [{ op: 'replace', path: '/invitationExpiry', value: later }]);
      expect(patched.statusCode).toBe(200);
      expect(patched.json()).toMatchObject({ invitationPending: true, invitationExpiry: later });
      clock.advance(8 * DAY);
      expect((await api.accept({ token, userName: 'extended-invitee', displayName: 'Extended', password: 'extended-password' })).statusCode).toBe(200);
    });

    it.each([
      ['invitationPending', { op: 'replace', path: '/invitationPending', value: false }, '/invitationPending'],
      ['invitationExpiry into the past', { op: 'replace', path: '/invitationExpiry', value: '2000-01-01T00:00:00.000Z' }, '/invitationExpiry'],
    ])('refuses a PATCH of %s on a pending invitation with 400', async (_case, operation, path) => {
      const { id, expiry } = await api.invite(unique('patched-invitee'));
      const response = await api.patchUser(id, [operation]);
      expect(response.statusCode).toBe(400);
      expect(errorPaths(response)).toEqual([path]);
      expect((await api.getUser(id)).json()).toMatchObject({ invitationPending: true, invitationExpiry: expiry });
    });

    it('accepts a jwtSubject equal to the externalId an administrator set, next to the password the account needs', async () => {
      const { id, token } = await api.invite('external-invitee', { externalId: 'idp|external-42' });
      const response = await api.accept({
        token,
        userName: 'external-invitee',
        displayName: 'External',
        password: 'external-password',
        jwtSubject: 'idp|external-42',
      });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ externalId: 'idp|external-42', invitationPending: false });
      expect((await api.getUser(id)).json()).toMatchObject({ externalId: 'idp|external-42', invitationPending: false });
      expect((await api.login('external-invitee', 'external-password')).statusCode).toBe(200);
    });

    it('refuses a jwtSubject the invitee chooses (400): only an administrator sets externalId', async () => {
      const { id, token } = await api.invite('self-linking-invitee');
      const accept = (jwtSubject: string) =>
        api.accept({ token, userName: 'self-linking-invitee', displayName: 'Self', password: 'self-linking-password', jwtSubject });
      const response = await accept('idp|someone-else');
      expect(response.statusCode).toBe(400);
      expect(errorPaths(response)).toEqual(['/jwtSubject']);
      expect((await api.getUser(id)).json()).toMatchObject({ invitationPending: true });
      expect((await api.getUser(id)).json().externalId).toBeUndefined();
    });

    it.each([
      ['no password', {}],
      ['jwtSubject alone', { jwtSubject: 'idp|only' }],
      ['a null password', { password: null }],
      ['a null jwtSubject and no password', { jwtSubject: null }],
    ])('refuses an account with %s (400 naming /password), and the token still works afterwards', async (_case, fields) => {
      const { token } = await api.invite(unique('undecided'));
      const response = await api.accept({ token, userName: unique('undecided'), displayName: 'Undecided', ...fields });
      expect(response.statusCode).toBe(400);
      expect(errorPaths(response)).toContain('/password');
      expect((await api.accept({ token, userName: unique('decided'), displayName: 'Decided', password: 'decided-password' })).statusCode).toBe(200);
    });

    it('refuses a null jwtSubject with 400 at /jwtSubject', async () => {
      const { token } = await api.invite(unique('null-subject'));
      const response = await api.accept({ token, userName: unique('null-subject'), displayName: 'Null', password: 'null-subject-password', jwtSubject: null });
      expect(response.statusCode).toBe(400);
      expect(errorPaths(response)).toEqual(['/jwtSubject']);
    });

    it('lets exactly one of ten concurrent acceptances of one token through', async () => {
      const { token } = await api.invite('raced-invitee');
      const responses = await Promise.all(
        Array.from({ length: 10 }, (_, n) => api.accept({ token, userName: `raced-${n}`, displayName: 'Raced', password: 'raced-password' })),
      );
      expect(responses.map((r) => r.statusCode).sort()).toEqual([200, ...Array<number>(9).fill(400)]);
    });

    it.each([
      ['shorter than 8 characters', 'short', 'password must be at least 8 characters long'],
      ['equal to the user name, ignoring case', 'WEAK-INVITEE', 'password must not be the user name'],
    ])('refuses a password %s with 400 at /password, and the token still works afterwards', async (_case, password, messagePart) => {
      const { token } = await api.invite(unique('weak'));
      const response = await api.accept({ token, userName: 'weak-invitee', displayName: 'Weak', password });
      expect(response.statusCode).toBe(400);
      expect(errorPaths(response)).toEqual(['/password']);
      expect(errorMessages(response)).toContain(messagePart);
      const accepted = await api.accept({ token, userName: unique('strong'), displayName: 'Strong', password: 'a-strong-password' });
      expect(accepted.statusCode).toBe(200);
    });

    it('answers 409 for a user name taken by another user, ignoring case, and the token still works afterwards', async () => {
      await api.addUser('taken-name', 'taken-password');
      const { id, token } = await api.invite('clashing-invitee');
      const clash = await api.accept({ token, userName: 'Taken-Name', displayName: 'Clash', password: 'clash-password' });
      expect(clash.statusCode).toBe(409);
      expect((await api.getUser(id)).json()).toMatchObject({ userName: 'clashing-invitee', invitationPending: true });
      expect((await api.login('taken-name', 'taken-password')).statusCode).toBe(200);
      expect((await api.accept({ token, userName: 'free-name', displayName: 'Free', password: 'clash-password' })).statusCode).toBe(200);
    });

    it.each([
      ['no token', { token: undefined }, ['/token']],
      ['an empty token', { token: '' }, ['/token']],
      ['no userName', { userName: undefined }, ['/userName']],
      ['an invalid userName', { userName: 'has space' }, ['/userName']],
      ['no displayName', { displayName: undefined }, ['/displayName']],
      ['an unknown property', { email: 'x@example.com' }, ['/email']],
    ])('refuses an account request with %s with 400, leaving the token usable', async (_case, fields, paths) => {
      const { token } = await api.invite(unique('incomplete'));
      const payload = { token, userName: 'incomplete-invitee', displayName: 'Incomplete', password: 'incomplete-password', ...fields };
      const response = await api.accept(payload);
      expect(response.statusCode).toBe(400);
      expect(errorPaths(response)).toEqual(paths);
      const completed = await api.accept({ token, userName: unique('complete'), displayName: 'Complete', password: 'complete-password' });
      expect(completed.statusCode).toBe(200);
    });

    it('never writes an invitation token to the log', async () => {
      const { token } = await api.invite('logged-invitee');
      await api.accept({ token: token.slice(0, 20), userName: 'logged-invitee', displayName: 'Logged', password: 'logged-password' });
      expect((await api.accept({ token, userName: 'logged-invitee', displayName: 'Logged', password: 'logged-password' })).statusCode).toBe(200);
      expect(logs.some((line) => line.url === ACCOUNTS)).toBe(true);
      const written = JSON.stringify(logs);
      expect(written).not.toContain(token);
      expect(written).not.toContain(token.slice(0, 20));
    });
  });

  describe('system user', () => {
    const adminId = async () => (await hub.inject({ method: 'GET', url: ME, headers: bearer(hub.adminToken) })).json()._id as string;

    it('cannot be deleted', async () => {
      const response = await hub.inject({ method: 'DELETE', url: `${USERS}/${await adminId()}`, headers: bearer(hub.adminToken) });
      expect(response.statusCode).toBe(403);
      expect((await api.login(ADMIN_USER, ADMIN_PASSWORD)).statusCode).toBe(200);
    });

    it('cannot be deactivated', async () => {
      const id = await adminId();
      const response = await api.patchUser(id, [{ op: 'replace', path: '/active', value: false }]);
      expect(response.statusCode).toBe(403);
      expect((await api.getUser(id)).json().active).toBe(true);
      expect((await api.login(ADMIN_USER, ADMIN_PASSWORD)).statusCode).toBe(200);
    });
  });
});

describe('accounts with HUB_LOGIN_FAILURE_LIMIT=2, HUB_LOGIN_LOCKOUT=60 and HUB_PASSWORD_MIN_LENGTH=12', () => {
  let hub: TestHub;
  const api = client(() => hub);

  beforeAll(async () => {
    hub = await startTestHub({ env: { HUB_LOGIN_FAILURE_LIMIT: '2', HUB_LOGIN_LOCKOUT: '60', HUB_PASSWORD_MIN_LENGTH: '12' } });
  });
  afterAll(() => hub.close());
  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('locks a name after the configured number of failures for the configured time', async () => {
    const clock = freezeClock(hub);
    await api.addUser('configured-user', 'configured-password');
    await api.failLogins('configured-user', 1);
    expect((await api.login('configured-user', 'configured-password')).statusCode).toBe(200);
    await api.failLogins('configured-user', 2);
    const locked = await api.login('configured-user', 'configured-password');
    expect(locked.statusCode).toBe(429);
    expect(locked.headers['retry-after']).toBe('60');
    clock.advance(60 * SECOND + SECOND);
    expect((await api.login('configured-user', 'configured-password')).statusCode).toBe(200);
  });

  it('counts failures within the configured time only', async () => {
    const clock = freezeClock(hub);
    await api.addUser('spread-user', 'spread-password');
    await api.failLogins('spread-user', 1);
    clock.advance(61 * SECOND);
    await api.failLogins('spread-user', 1);
    expect((await api.login('spread-user', 'spread-password')).statusCode).toBe(200);
  });

  it.each([
    ['refuses 11 characters', 'elevenchars', 400],
    ['accepts 12 characters', 'twelve-chars', 201],
  ])('on creating a user %s', async (_case, password, status) => {
    const response = await api.createUser({ userName: `created-${password.length}`, password });
    expect(response.statusCode).toBe(status);
    if (status === 400) {
      expect(errorPaths(response)).toEqual(['/password']);
      expect(errorMessages(response)).toContain('at least 12 characters');
    }
  });

  it('on replacing a user refuses an 11-character password and accepts a 12-character one', async () => {
    const id = await api.addUser('replaced-user', 'replaced-password');
    const short = await api.replaceUser(id, { userName: 'replaced-user', password: 'elevenchars' });
    expect(short.statusCode).toBe(400);
    expect(errorPaths(short)).toEqual(['/password']);
    expect((await api.login('replaced-user', 'replaced-password')).statusCode).toBe(200);
    expect((await api.replaceUser(id, { userName: 'replaced-user', password: 'twelve-chars' })).statusCode).toBe(200);
    expect((await api.login('replaced-user', 'twelve-chars')).statusCode).toBe(200);
  });

  it('on changing a password refuses 11 characters and accepts 12', async () => {
    await api.addUser('changing-user', 'changing-password');
    const token = await hub.login('changing-user', 'changing-password');
    const short = await api.changePassword(token, { currentPassword: 'changing-password', newPassword: 'elevenchars' });
    expect(short.statusCode).toBe(400);
    expect(errorPaths(short)).toEqual(['/newPassword']);
    expect(errorMessages(short)).toContain('newPassword must be at least 12 characters long');
    expect((await api.changePassword(token, { currentPassword: 'changing-password', newPassword: 'twelve-chars' })).statusCode).toBe(200);
    expect((await api.login('changing-user', 'twelve-chars')).statusCode).toBe(200);
  });

  it('on accepting an invitation refuses 11 characters and accepts 12', async () => {
    const { token } = await api.invite('configured-invitee');
    const short = await api.accept({ token, userName: 'configured-invitee', displayName: 'Configured', password: 'elevenchars' });
    expect(short.statusCode).toBe(400);
    expect(errorPaths(short)).toEqual(['/password']);
    expect((await api.accept({ token, userName: 'configured-invitee', displayName: 'Configured', password: 'twelve-chars' })).statusCode).toBe(200);
  });
});

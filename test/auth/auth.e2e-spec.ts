import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { JwtService } from '@nestjs/jwt';
import { DataSource } from 'typeorm';
import { ADMIN_PASSWORD, ADMIN_USER, basic, bearer, claimsOf, JWT_SECRET, startTestHub, type TestHub } from '../support/test-hub.js';

const LOGIN = '/api/v2/auth/login';
const ME = '/api/v2/auth/me';
const USER_FIELDS = ['_id', '_created', '_modified', 'system', 'userName', 'displayName', 'active', 'invitationPending'];

describe('auth', () => {
  let hub: TestHub;
  const logs: Record<string, unknown>[] = [];

  /** Adds a user straight to the database, with a password hashed the way the hub hashes them. */
  async function insertUser(userName: string, password: string | null, fields: { active?: boolean; invitationPending?: boolean } = {}): Promise<string> {
    const { hash } = await import('argon2');
    const rows: { id: string }[] = await hub.app
      .get(DataSource)
      .query('INSERT INTO users (user_name, password_hash, active, invitation_pending, version) VALUES ($1, $2, $3, $4, 1) RETURNING id', [
        userName,
        password === null ? null : await hash(password),
        fields.active ?? true,
        fields.invitationPending ?? false,
      ]);
    return rows[0].id;
  }

  beforeAll(async () => {
    hub = await startTestHub({ logs });
  });
  afterAll(() => hub.close());

  describe('login', () => {
    it('returns a token and its lifetime in seconds', async () => {
      const response = await hub.inject({ method: 'POST', url: LOGIN, payload: { username: ADMIN_USER, password: ADMIN_PASSWORD } });
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(Object.keys(body).sort()).toEqual(['expiresIn', 'token']);
      expect(body.expiresIn).toBe(3600);
      const me = (await hub.inject({ method: 'GET', url: ME, headers: bearer(body.token) })).json();
      const claims = claimsOf(body.token);
      expect(claims).toMatchObject({ sub: me._id, userName: ADMIN_USER, groups: [], iss: 'hub' });
      expect((claims.exp as number) - (claims.iat as number)).toBe(3600);
    });

    it('takes the user name in any case', async () => {
      const response = await hub.inject({ method: 'POST', url: LOGIN, payload: { username: 'ADMIN', password: ADMIN_PASSWORD } });
      expect(response.statusCode).toBe(200);
    });

    it('refuses a wrong password and an unknown user alike, with 401', async () => {
      const wrong = await hub.inject({ method: 'POST', url: LOGIN, payload: { username: ADMIN_USER, password: 'not-the-password' } });
      const unknown = await hub.inject({ method: 'POST', url: LOGIN, payload: { username: 'nobody', password: 'whatever' } });
      for (const response of [wrong, unknown]) {
        expect(response.statusCode).toBe(401);
        expect(response.headers['content-type']).toContain('application/problem+json');
        expect(response.json().detail).toBe('Invalid user name or password');
      }
    });

    it('refuses inactive users and users whose invitation is pending', async () => {
      await insertUser('inactive-user', 'inactive-password', { active: false });
      await insertUser('invited-user', null, { invitationPending: true });
      expect((await hub.inject({ method: 'POST', url: LOGIN, payload: { username: 'inactive-user', password: 'inactive-password' } })).statusCode).toBe(401);
      expect((await hub.inject({ method: 'POST', url: LOGIN, payload: { username: 'invited-user', password: '' } })).statusCode).toBe(400);
      expect((await hub.inject({ method: 'POST', url: LOGIN, payload: { username: 'invited-user', password: 'anything' } })).statusCode).toBe(401);
    });

    it.each([
      ['no user name', { password: 'x' }, ['/username']],
      ['an empty password', { username: 'admin', password: '' }, ['/password']],
      ['a user name that is not a string', { username: 7, password: 'x' }, ['/username']],
      ['an unknown property', { username: 'admin', password: 'x', remember: true }, ['/remember']],
      ['the wrong spelling of username', { userName: 'admin', password: 'x' }, ['/userName', '/username']],
    ])('refuses %s with 400 naming the field', async (_case, payload, paths) => {
      const response = await hub.inject({ method: 'POST', url: LOGIN, payload });
      expect(response.statusCode).toBe(400);
      expect((response.json().errors as { path: string }[]).map((e) => e.path).sort()).toEqual(paths);
    });

    it('refuses a body that is not JSON', async () => {
      const response = await hub.inject({
        method: 'POST',
        url: LOGIN,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'username=admin',
      });
      expect(response.statusCode).toBe(415);
    });

    it('never writes passwords or tokens to the log', async () => {
      const secret = 'hunter2-must-not-leak';
      await hub.inject({ method: 'POST', url: LOGIN, payload: { username: ADMIN_USER, password: secret } });
      const token = await hub.login(ADMIN_USER, ADMIN_PASSWORD);
      await hub.inject({ method: 'GET', url: ME, headers: bearer(token) });
      const written = JSON.stringify(logs);
      expect(logs.some((line) => line.msg === 'request' && line.url === LOGIN)).toBe(true);
      expect(written).not.toContain(secret);
      expect(written).not.toContain(ADMIN_PASSWORD);
      expect(written).not.toContain(token);
    });
  });

  describe('me', () => {
    it('returns the caller with exactly the user fields, never a password', async () => {
      const response = await hub.inject({ method: 'GET', url: ME, headers: bearer(hub.adminToken) });
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(Object.keys(body).sort()).toEqual([...USER_FIELDS].sort());
      expect(body).toMatchObject({ userName: ADMIN_USER, displayName: 'Administrator', system: true, active: true, invitationPending: false });
      expect(response.body).not.toMatch(/password|hash|version/i);
      expect(response.headers.etag).toBe('"1"');
    });

    it('answers 304 to If-None-Match with the current ETag', async () => {
      const response = await hub.inject({ method: 'GET', url: ME, headers: { ...bearer(hub.adminToken), 'if-none-match': '"1"' } });
      expect(response.statusCode).toBe(304);
      expect(response.body).toBe('');
    });

    it('projects with fields and excludeFields over exactly the userField values', async () => {
      const included = await hub.inject({ method: 'GET', url: `${ME}?fields=userName,displayName`, headers: bearer(hub.adminToken) });
      expect(included.json()).toEqual({ userName: ADMIN_USER, displayName: 'Administrator' });
      const excluded = await hub.inject({ method: 'GET', url: `${ME}?excludeFields=_created,_modified,_id`, headers: bearer(hub.adminToken) });
      expect(Object.keys(excluded.json()).sort()).toEqual(['active', 'displayName', 'invitationPending', 'system', 'userName']);
      for (const query of ['fields=system', 'fields=password', 'excludeFields=invitationExpiry', 'fields=userName&excludeFields=_id', 'userName=admin']) {
        const response = await hub.inject({ method: 'GET', url: `${ME}?${query}`, headers: bearer(hub.adminToken) });
        expect(response.statusCode).toBe(400);
      }
    });

    it('accepts HTTP Basic credentials, checked like a login', async () => {
      const ok = await hub.inject({ method: 'GET', url: ME, headers: basic('Admin', ADMIN_PASSWORD) });
      expect(ok.statusCode).toBe(200);
      expect(ok.json().userName).toBe(ADMIN_USER);
      expect((await hub.inject({ method: 'GET', url: ME, headers: basic(ADMIN_USER, 'wrong') })).statusCode).toBe(401);
      const noColon = await hub.inject({ method: 'GET', url: ME, headers: { authorization: `Basic ${Buffer.from('admin').toString('base64')}` } });
      expect(noColon.statusCode).toBe(401);
      expect(noColon.json().detail).toContain('<user name>:<password>');
    });
  });

  describe('tokens', () => {
    const claims = async () => {
      const me = (await hub.inject({ method: 'GET', url: ME, headers: bearer(hub.adminToken) })).json();
      return { sub: me._id as string, userName: ADMIN_USER, groups: [], tokenVersion: 0 };
    };

    it.each([
      ['no Authorization header', undefined],
      ['an empty bearer token', 'Bearer '],
      ['a token that is not a JWT', 'Bearer not-a-token'],
      ['an unsupported scheme', 'Digest username="admin"'],
      ['a huge header', `Bearer ${'x'.repeat(8000)}`],
    ])('answer 401 with %s', async (_case, authorization) => {
      const response = await hub.inject({ method: 'GET', url: ME, headers: authorization === undefined ? {} : { authorization } });
      expect(response.statusCode).toBe(401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="hub"');
      expect(response.json()).toMatchObject({ status: 401, title: 'Unauthorized' });
    });

    it('refuse an expired token, one from another issuer and one signed with another secret', async () => {
      const now = Math.floor(Date.now() / 1000);
      const signer = new JwtService({ secret: JWT_SECRET });
      const expired = await signer.signAsync({ ...(await claims()), iss: 'hub', iat: now - 7200, exp: now - 3600 });
      const foreign = await signer.signAsync({ ...(await claims()), iss: 'elsewhere' }, { expiresIn: 600 });
      const forged = await new JwtService({ secret: 'another-secret-of-at-least-thirty-two-characters' }).signAsync(
        { ...(await claims()), iss: 'hub' },
        { expiresIn: 600 },
      );
      const genuine = await signer.signAsync({ ...(await claims()), iss: 'hub' }, { expiresIn: 600 });
      for (const token of [expired, foreign, forged]) {
        expect((await hub.inject({ method: 'GET', url: ME, headers: bearer(token) })).statusCode).toBe(401);
      }
      expect((await hub.inject({ method: 'GET', url: ME, headers: bearer(genuine) })).statusCode).toBe(200);
    });

    it('refuse a token once it expires, though it was accepted (and its verification kept) before', async () => {
      const signer = new JwtService({ secret: JWT_SECRET });
      // Expiring at the start of a second at least 1 s away, so that it is good for its first requests.
      const exp = Math.floor(Date.now() / 1000) + 2;
      const token = await signer.signAsync({ ...(await claims()), iss: 'hub', exp });
      expect((await hub.inject({ method: 'GET', url: ME, headers: bearer(token) })).statusCode).toBe(200);
      expect((await hub.inject({ method: 'GET', url: ME, headers: bearer(token) })).statusCode).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, exp * 1000 - Date.now() + 50));
      const expired = await hub.inject({ method: 'GET', url: ME, headers: bearer(token) });
      expect(expired.statusCode).toBe(401);
      expect(expired.json()).toMatchObject({ detail: 'The bearer token is invalid or has expired; log in again' });
    });

    it('refuse a kept token that was tampered with: its signature no longer matches', async () => {
      const genuine = await new JwtService({ secret: JWT_SECRET }).signAsync({ ...(await claims()), iss: 'hub' }, { expiresIn: 600 });
      expect((await hub.inject({ method: 'GET', url: ME, headers: bearer(genuine) })).statusCode).toBe(200);
      const [header, payload, signature] = genuine.split('.');
      const raised = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), userName: 'someone-else' })).toString(
        'base64url',
      );
      expect((await hub.inject({ method: 'GET', url: ME, headers: bearer(`${header}.${raised}.${signature}`) })).statusCode).toBe(401);
    });

    it('refuse an unsigned token', async () => {
      const encode = (part: object) => Buffer.from(JSON.stringify(part)).toString('base64url');
      const unsigned = `${encode({ alg: 'none', typ: 'JWT' })}.${encode({ ...(await claims()), iss: 'hub', exp: Math.floor(Date.now() / 1000) + 600 })}.`;
      expect((await hub.inject({ method: 'GET', url: ME, headers: bearer(unsigned) })).statusCode).toBe(401);
    });

    it('stop working once their user is deactivated, even by a change made outside the hub', async () => {
      const id = await insertUser('soon-inactive', 'soon-inactive-password');
      const token = await hub.login('soon-inactive', 'soon-inactive-password');
      const me = () => hub.inject({ method: 'GET', url: ME, headers: bearer(token) });
      expect((await me()).statusCode).toBe(200);
      expect((await me()).statusCode).toBe(200); // Served from the cache of callers now.
      await hub.app.get(DataSource).query('UPDATE users SET active = false WHERE id = $1', [id]);
      // The database announces the change (NOTIFY at commit); the hub drops its cached caller.
      const deadline = Date.now() + 2000;
      let response = await me();
      while (response.statusCode === 200 && Date.now() < deadline) response = await me();
      expect(response.statusCode).toBe(401);
      expect(response.json().detail).toContain('no longer exists or is inactive');
      await hub.app.get(DataSource).query('UPDATE users SET active = true WHERE id = $1', [id]);
      const reactivated = Date.now() + 2000;
      while ((await me()).statusCode === 401 && Date.now() < reactivated);
      expect((await me()).statusCode).toBe(200);
    });

    it('stop working once their user is deleted', async () => {
      const id = await insertUser('soon-deleted', 'soon-deleted-password');
      const token = await hub.login('soon-deleted', 'soon-deleted-password');
      expect((await hub.inject({ method: 'GET', url: ME, headers: bearer(token) })).statusCode).toBe(200);
      await hub.app.get(DataSource).query('DELETE FROM users WHERE id = $1', [id]);
      const deadline = Date.now() + 2000;
      let status = 200;
      while (status !== 401 && Date.now() < deadline) status = (await hub.inject({ method: 'GET', url: ME, headers: bearer(token) })).statusCode;
      expect(status).toBe(401);
    });
  });

  describe('with HUB_TOKEN_TTL set', () => {
    it('issues tokens of that lifetime', async () => {
      const short = await startTestHub({ env: { HUB_TOKEN_TTL: '120' } });
      try {
        const response = await short.inject({ method: 'POST', url: LOGIN, payload: { username: ADMIN_USER, password: ADMIN_PASSWORD } });
        expect(response.json().expiresIn).toBe(120);
        const tokenClaims = claimsOf(response.json().token);
        expect((tokenClaims.exp as number) - (tokenClaims.iat as number)).toBe(120);
      } finally {
        await short.close();
      }
    });
  });
});

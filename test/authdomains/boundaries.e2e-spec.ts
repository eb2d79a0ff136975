import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { bearer, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

/**
 * What a caller with some rights must not learn or do beyond them (found by review): a secret
 * taken over with its credential, namespaces named in refusals, bindings of namespaces the
 * caller may not read; and concurrent changes that once starved the connection pool.
 */

const PASSWORD = 'a-boundaries-user-password';
type Headers = Record<string, string>;

describe('auth domains, credentials and bindings at the edges of a caller’s rights', () => {
  let hub: TestHub;
  let admin: Headers;
  let bob: { id: string; as: Headers };
  let alice: { id: string; as: Headers };
  const namespaces: Record<string, string> = {};
  let domain: string;

  const call = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, as: Headers = admin): Promise<InjectResponse> => {
    const contentType = payload === undefined ? {} : { 'content-type': method === 'PATCH' ? 'application/json-patch+json' : 'application/json' };
    return hub.inject({ method, url, headers: { ...as, ...contentType }, ...(payload !== undefined && { payload: JSON.stringify(payload) }) });
  };
  const created = async (url: string, payload: unknown): Promise<Record<string, unknown> & { _id: string; id: string }> => {
    const response = await call('POST', url, payload);
    expect([url, response.statusCode, response.body]).toEqual([url, 201, response.body]);
    return response.json();
  };
  /** A user whose own role gives these permissions in a namespace (by name). */
  const userWith = async (userName: string, grants: { object: string; actions: string[]; namespace: string }[]) => {
    const user = await created('/api/v2/auth/users', { userName, password: PASSWORD });
    for (const [index, grant] of grants.entries()) {
      const role = await created('/api/v2/rbac/roles', {
        name: `${userName}-${index}`,
        permissions: [{ object: grant.object, objectMatcher: 'simple', actions: grant.actions, effect: 'Allow' }],
      });
      await created('/api/v2/rbac/rolebindings', { role: role.id, principal: user._id, namespace: grant.namespace });
    }
    return { id: user._id, as: bearer(await hub.login(userName, PASSWORD)) };
  };

  beforeAll(async () => {
    hub = await startTestHub();
    admin = bearer(hub.adminToken);
    for (const name of ['open', 'secret']) namespaces[name] = (await created('/api/v2/namespaces', { name }))._id;
    domain = (await created('/api/v2/authdomains/authdomains', { name: 'Warehouse', namespace: 'open', allowPersonalCredentials: true }))._id;
    bob = await userWith('bob', [
      { object: '/Credentials/*', actions: ['Read', 'Update'], namespace: 'open' },
      { object: '/AuthDomains/*', actions: ['Read', 'Update'], namespace: 'open' },
      { object: '/ExecutionProfileBindings/*', actions: ['Read', 'Update'], namespace: 'open' },
      { object: '/ExecutionProfiles', actions: ['Read'], namespace: '*' },
    ]);
    alice = await userWith('alice', [{ object: '/AuthDomains/*', actions: ['Read'], namespace: 'open' }]);
  }, 60_000);
  afterAll(() => hub?.close());

  describe('a credential given to another principal', () => {
    it('loses its data, so that a manager cannot read a secret by taking the credential over', async () => {
      const secret = await created('/api/v2/authdomains/credentials', {
        authDomainId: domain,
        principal: alice.id,
        label: 'alice own',
        type: 'Internal',
        data: { password: 'ALICESECRET' },
      });
      const taken = await call('PATCH', `/api/v2/authdomains/credentials/${secret._id}`, [{ op: 'replace', path: '/principal', value: bob.id }], bob.as);
      expect(taken.statusCode).toBe(200);
      expect(taken.body).not.toContain('ALICESECRET');
      expect(taken.json()).toMatchObject({ principal: bob.id, data: {} });
      await call('PATCH', `/api/v2/authdomains/credentials/${secret._id}`, [{ op: 'replace', path: '/principal', value: alice.id }], bob.as);
      expect((await call('GET', `/api/v2/authdomains/credentials/${secret._id}`, undefined, alice.as)).json()).toMatchObject({ data: {} });
    });

    it('keeps its data when the body gives new data with the new principal', async () => {
      const credential = await created('/api/v2/authdomains/credentials', {
        authDomainId: domain,
        principal: alice.id,
        label: 'handed',
        type: 'Internal',
        data: { a: 'old' },
      });
      const handed = await call('PUT', `/api/v2/authdomains/credentials/${credential._id}`, {
        authDomainId: domain,
        principal: bob.id,
        label: 'handed',
        type: 'Internal',
        data: { a: 'new' },
      });
      expect(handed.statusCode).toBe(200);
      expect((await call('GET', `/api/v2/authdomains/credentials/${credential._id}`, undefined, bob.as)).json()).toMatchObject({ data: { a: 'new' } });
    });
  });

  it('lets its own principal turn an Internal credential into a Vault one by patch', async () => {
    const own = await created('/api/v2/authdomains/credentials', {
      authDomainId: domain,
      principal: alice.id,
      label: 'to vault',
      type: 'Internal',
      data: { a: 'b' },
    });
    const patched = await call(
      'PATCH',
      `/api/v2/authdomains/credentials/${own._id}`,
      [
        { op: 'replace', path: '/type', value: 'Vault' },
        { op: 'add', path: '/vaultPath', value: 'secret/data/alice' },
        { op: 'remove', path: '/data' },
      ],
      alice.as,
    );
    expect([patched.statusCode, patched.body]).toEqual([200, patched.body]);
    expect(patched.json()).toMatchObject({ type: 'Vault', vaultPath: 'secret/data/alice' });
    expect(patched.json().data).toBeUndefined();
  });

  describe('refusals name no namespace the caller did not', () => {
    it('answers a move of an auth domain to a namespace that does not exist like one to a namespace the caller may not create in', async () => {
      const url = `/api/v2/authdomains/authdomains/${domain}`;
      const toSecret = await call('PATCH', url, [{ op: 'replace', path: '/namespace', value: 'secret' }], bob.as);
      const toNowhere = await call('PATCH', url, [{ op: 'replace', path: '/namespace', value: 'nowhere' }], bob.as);
      expect([toSecret.statusCode, toNowhere.statusCode]).toEqual([403, 403]);
      expect(toSecret.json().detail).toBe("Not allowed: Create on /AuthDomains in namespace 'secret'");
      expect(toNowhere.json().detail).toBe("Not allowed: Create on /AuthDomains in namespace 'nowhere'");
    });

    it('answers a move of a binding to another namespace without naming it, whether it exists or not', async () => {
      const profile = await created('/api/v2/execution-profiles/execprofiles', { name: 'Mover' });
      const binding = await created('/api/v2/execution-profiles/bindings', { executionProfileId: profile._id, namespaceId: namespaces.open });
      const url = `/api/v2/execution-profiles/bindings/${binding.id}`;
      const toSecret = await call('PATCH', url, [{ op: 'replace', path: '/namespaceId', value: namespaces.secret }], bob.as);
      const unknown = '6f1c4b1e-0000-4000-8000-000000000000';
      const toNowhere = await call('PATCH', url, [{ op: 'replace', path: '/namespaceId', value: unknown }], bob.as);
      expect([toSecret.statusCode, toNowhere.statusCode]).toEqual([403, 403]);
      expect(toSecret.json().detail).toBe(`Not allowed: Create on /ExecutionProfileBindings in namespace ${namespaces.secret}`);
      expect(toNowhere.json().detail).toBe(`Not allowed: Create on /ExecutionProfileBindings in namespace ${unknown}`);
    });

    it('answers a binding of a profile the caller may not use the same, whether the profile exists or not', async () => {
      const creator = await userWith('creator', [{ object: '/ExecutionProfileBindings', actions: ['Create'], namespace: 'open' }]);
      const profile = await created('/api/v2/execution-profiles/execprofiles', { name: 'Unusable' });
      const unknown = '6f1c4b1e-0000-4000-8000-000000000001';
      for (const executionProfileId of [profile._id, unknown]) {
        const response = await call('POST', '/api/v2/execution-profiles/bindings', { executionProfileId, namespaceId: namespaces.open }, creator.as);
        expect([response.statusCode, response.json().detail]).toEqual([403, `Not allowed: Use on /ExecutionProfiles/${executionProfileId} in every namespace`]);
      }
    });
  });

  it('shows nothing of the bindings of a namespace the caller may not read through isDefaultFor and hasBindingTo', async () => {
    const hidden = await created('/api/v2/execution-profiles/execprofiles', { name: 'Hidden' });
    await created('/api/v2/execution-profiles/bindings', { executionProfileId: hidden._id, namespaceId: namespaces.secret, isDefault: true });
    for (const query of ['isDefaultFor=secret', `isDefaultFor=${namespaces.secret}`, 'hasBindingTo=secret', 'filter[hasBindingTo][ALL]=secret']) {
      const response = await call('GET', `/api/v2/execution-profiles/execprofiles?${query}`, undefined, bob.as);
      expect([query, response.statusCode, response.json().totalCount]).toEqual([query, 200, 0]);
    }
    const asAdmin = await call('GET', '/api/v2/execution-profiles/execprofiles?isDefaultFor=secret');
    expect(asAdmin.json()).toMatchObject({ totalCount: 1, data: [{ name: 'Hidden' }] });
  });

  describe('many concurrent changes', () => {
    it('all complete when they outnumber the connection pool: auth domain patches', async () => {
      const responses = await Promise.all(
        Array.from({ length: 16 }, (_, index) =>
          call('PATCH', `/api/v2/authdomains/authdomains/${domain}`, [{ op: 'add', path: '/description', value: `take ${index}` }], bob.as),
        ),
      );
      expect(responses.map((response) => response.statusCode).filter((status) => status !== 200 && status !== 409)).toEqual([]);
      expect(responses.filter((response) => response.statusCode === 200).length).toBeGreaterThan(0);
    }, 30_000);

    it('all complete when they outnumber the connection pool: personal credential patches by their owner', async () => {
      const own = await created('/api/v2/authdomains/credentials', { authDomainId: domain, principal: alice.id, label: 'busy', type: 'Internal' });
      const began = Date.now();
      const responses = await Promise.all(
        Array.from({ length: 16 }, (_, index) =>
          call('PATCH', `/api/v2/authdomains/credentials/${own._id}`, [{ op: 'replace', path: '/label', value: `busy ${index}` }], alice.as),
        ),
      );
      expect(responses.map((response) => response.statusCode).filter((status) => status !== 200 && status !== 409)).toEqual([]);
      // A pool starved by transactions waiting for each other would answer only after pg-pool's 10 s timeout.
      expect(Date.now() - began).toBeLessThan(8_000);
    }, 30_000);
  });
});

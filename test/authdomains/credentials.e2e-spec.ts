import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { bearer, claimsOf, problemPaths, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

interface Credential {
  _id: string;
  _created: string;
  _modified: string;
  authDomainId: string;
  principal: string;
  disabled: boolean;
  label: string;
  type: 'Internal' | 'Vault';
  rank: { value: number };
  vaultPath?: string;
  data?: Record<string, string>;
}

type CredentialItem = Omit<Credential, 'rank' | 'data'> & { rank: number };

interface CredentialList {
  totalCount: number;
  data: CredentialItem[];
  authDomains: Record<string, string>;
}

interface Permission {
  object: string;
  objectMatcher: string;
  actions: string[];
  effect: string;
}

interface User {
  id: string;
  as: Headers;
}

type Headers = Record<string, string>;

const DOMAINS = '/api/v2/authdomains/authdomains';
const CREDENTIALS = '/api/v2/authdomains/credentials';
const MINE = '/api/v2/authdomains/me/credentials';
const NAMESPACES = '/api/v2/namespaces';
const USERS = '/api/v2/auth/users';
const GROUPS = '/api/v2/auth/groups';
const ROLES = '/api/v2/rbac/roles';
const BINDINGS = '/api/v2/rbac/rolebindings';
const UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-000000000000';
const PASSWORD = 'a-credentials-user-password';
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

const allow = (object: string, actions: string[]): Permission => ({ object, objectMatcher: 'simple', actions, effect: 'Allow' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A small seeded generator, so that a failing random run can be replayed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('credentials', () => {
  let hub: TestHub;
  let auth: Headers;
  let adminId: string;

  const sql = <T = unknown>(query: string, parameters: unknown[] = []): Promise<T> => hub.app.get(DataSource).query(query, parameters);
  const get = (url: string, as: Headers = auth) => hub.inject({ method: 'GET', url, headers: as });

  const postCredential = (payload: unknown, as: Headers = auth) => hub.inject({ method: 'POST', url: CREDENTIALS, headers: as, payload: payload as object });
  const createCredential = async (payload: object, as: Headers = auth): Promise<Credential> => {
    const response = await postCredential(payload, as);
    expect(response.statusCode).toBe(201);
    return response.json();
  };
  const readCredential = async (id: string, as: Headers = auth): Promise<Credential> => {
    const response = await get(`${CREDENTIALS}/${id}`, as);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const putCredential = (id: string, payload: object, headers: Headers = {}, as: Headers = auth) =>
    hub.inject({ method: 'PUT', url: `${CREDENTIALS}/${id}`, headers: { ...as, ...headers }, payload });
  const patchCredential = (id: string, operations: unknown, headers: Headers = {}, as: Headers = auth) =>
    hub.inject({
      method: 'PATCH',
      url: `${CREDENTIALS}/${id}`,
      headers: { ...as, 'content-type': 'application/json-patch+json', ...headers },
      payload: JSON.stringify(operations),
    });
  const deleteCredential = (id: string, headers: Headers = {}, as: Headers = auth) =>
    hub.inject({ method: 'DELETE', url: `${CREDENTIALS}/${id}`, headers: { ...as, ...headers } });
  const setRank = (id: string, definition: object, as: Headers = auth) =>
    hub.inject({ method: 'PUT', url: `${CREDENTIALS}/${id}/rank`, headers: as, payload: definition });
  const moved = async (id: string, definition: object, as: Headers = auth): Promise<void> => {
    const response = await setRank(id, definition, as);
    expect(response.statusCode).toBe(200);
  };
  const listCredentials = async (query: string, as: Headers = auth): Promise<CredentialList> => {
    const response = await get(`${CREDENTIALS}?${query}`, as);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const listMine = async (query: string, as: Headers): Promise<CredentialList> => {
    const response = await get(`${MINE}?${query}`, as);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const resolve = (domainId: string, as: Headers) => get(`${DOMAINS}/${domainId}/credential`, as);

  const createNamespace = async (name: string): Promise<void> => {
    const response = await hub.inject({ method: 'POST', url: NAMESPACES, headers: auth, payload: { name } });
    expect(response.statusCode).toBe(201);
  };
  const createDomain = async (name: string, namespace: string, allowPersonalCredentials = false): Promise<string> => {
    const response = await hub.inject({ method: 'POST', url: DOMAINS, headers: auth, payload: { name, namespace, allowPersonalCredentials } });
    expect(response.statusCode).toBe(201);
    return response.json()._id;
  };
  const createUser = async (userName: string): Promise<string> => {
    const response = await hub.inject({ method: 'POST', url: USERS, headers: auth, payload: { userName, password: PASSWORD } });
    expect(response.statusCode).toBe(201);
    return response.json()._id;
  };
  /** A user with no bindings, and its bearer header. */
  const userWithToken = async (userName: string): Promise<User> => {
    const id = await createUser(userName);
    return { id, as: bearer(await hub.login(userName, PASSWORD)) };
  };
  const createGroup = async (name: string): Promise<string> => {
    const response = await hub.inject({ method: 'POST', url: GROUPS, headers: auth, payload: { name } });
    expect(response.statusCode).toBe(201);
    return response.json()._id;
  };
  const changeMembers = async (groupId: string, op: 'add' | 'remove', memberId: string): Promise<void> => {
    const response = await hub.inject({
      method: 'PATCH',
      url: `${GROUPS}/${groupId}/members`,
      headers: { ...auth, 'content-type': 'application/json' },
      payload: JSON.stringify([{ op, id: memberId }]),
    });
    expect(response.statusCode).toBe(200);
  };
  const createRole = async (name: string, permissions: Permission[]): Promise<string> => {
    const response = await hub.inject({ method: 'POST', url: ROLES, headers: auth, payload: { name, permissions } });
    expect(response.statusCode).toBe(201);
    return response.json().id;
  };
  const bind = async (role: string, principal: string, namespace: string): Promise<void> => {
    const response = await hub.inject({ method: 'POST', url: BINDINGS, headers: auth, payload: { role, principal, namespace } });
    expect(response.statusCode).toBe(201);
  };

  /** The credentials of a domain, best first, as the list sorted by rank gives them. */
  const ranked = async (domainId: string): Promise<CredentialItem[]> =>
    (await listCredentials(`filter[authDomain][EQ]=${domainId}&sort=rank&page[limit]=1000`)).data;
  const order = async (domainId: string): Promise<string[]> => (await ranked(domainId)).map((credential) => credential.label);
  const expectStrictOrder = (items: CredentialItem[]) => {
    for (const item of items) expect(Number.isInteger(item.rank)).toBe(true);
    for (let i = 1; i < items.length; i += 1) expect(items[i].rank).toBeGreaterThan(items[i - 1].rank);
  };
  const internal = (authDomainId: string, principal: string, label: string, extra: object = {}) => ({
    authDomainId,
    principal,
    label,
    type: 'Internal',
    data: { secret: `secret of ${label}` },
    ...extra,
  });
  /** Creates credentials of the administrator in a domain, one after the other (each last), by label. */
  const seed = async (domainId: string, labels: string[]): Promise<Record<string, string>> => {
    const ids: Record<string, string> = {};
    for (const label of labels) ids[label] = (await createCredential(internal(domainId, adminId, label)))._id;
    return ids;
  };

  beforeAll(async () => {
    hub = await startTestHub();
    auth = bearer(hub.adminToken);
    adminId = claimsOf(hub.adminToken).sub as string;
    await createNamespace('cr-one');
    await createNamespace('cr-two');
  });
  afterAll(() => hub.close());

  describe('create, read, replace, patch and delete', () => {
    let domainId: string;
    let otherDomainId: string;
    let owner: User;

    beforeAll(async () => {
      domainId = await createDomain('Warehouse', 'cr-one');
      otherDomainId = await createDomain('Elsewhere', 'cr-one');
      owner = await userWithToken('cr-owner');
    });

    it('creates with 201, an ETag and its Location, the rank as {value}, and no data for a caller other than its principal', async () => {
      const response = await postCredential({ ...internal(domainId, owner.id, 'warehouse service'), data: { username: 'etl', password: 's3cret' } });
      expect(response.statusCode).toBe(201);
      const body: Credential = response.json();
      expect(body).toEqual({
        _id: expect.any(String),
        _created: expect.any(String),
        _modified: expect.any(String),
        authDomainId: domainId,
        principal: owner.id,
        disabled: false,
        label: 'warehouse service',
        type: 'Internal',
        rank: { value: expect.any(Number) },
      });
      expect(Number.isInteger(body.rank.value)).toBe(true);
      expect(body._created).toMatch(ISO_DATE_TIME);
      expect(response.headers.etag).toBe('"1"');
      expect(response.headers.location).toBe(`${CREDENTIALS}/${body._id}`);
      const readBack = await get(`${CREDENTIALS}/${body._id}`);
      expect(readBack.statusCode).toBe(200);
      expect(readBack.headers.etag).toBe('"1"');
      expect(readBack.json()).toEqual(body);
    });

    it('shows the data to its own principal, who reads it without any permission', async () => {
      const created = await createCredential({ ...internal(domainId, owner.id, 'owned'), data: { token: 'abc' } });
      expect('data' in created).toBe(false);
      const asOwner = await readCredential(created._id, owner.as);
      expect(asOwner).toEqual({ ...created, data: { token: 'abc' } });
      expect('data' in (await readCredential(created._id))).toBe(false);
    });

    it("shows the data in the create reply when the caller is the credential's principal", async () => {
      const created = await createCredential({ ...internal(domainId, adminId, 'admin own'), data: { token: 'mine' }, disabled: true });
      expect(created).toMatchObject({ principal: adminId, disabled: true, data: { token: 'mine' } });
    });

    it('reads an id given in upper case, and answers 404 for an unknown id and for one that is not a UUID', async () => {
      const created = await createCredential(internal(domainId, adminId, 'upper'));
      expect((await readCredential(created._id.toUpperCase())).label).toBe('upper');
      const unknown = await get(`${CREDENTIALS}/${UNKNOWN_ID}`);
      expect(unknown.statusCode).toBe(404);
      expect(unknown.headers['content-type']).toContain('application/problem+json');
      expect((await get(`${CREDENTIALS}/not-a-uuid`)).statusCode).toBe(404);
    });

    it('replaces every client field, keeps the stored data when the body has none, keeps the rank, and bumps the ETag', async () => {
      const created = await createCredential({ ...internal(domainId, owner.id, 'to-replace'), data: { password: 'kept' } });
      await sleep(5);
      const response = await putCredential(
        created._id,
        { authDomainId: domainId, principal: owner.id, label: 'replaced', type: 'Internal', disabled: true, _id: UNKNOWN_ID, _created: 'x' },
        { 'if-match': '"1"' },
      );
      expect(response.statusCode).toBe(200);
      expect(response.headers.etag).toBe('"2"');
      const body: Credential = response.json();
      expect(body).toEqual({ ...created, label: 'replaced', disabled: true, _modified: body._modified });
      expect(body._modified > created._modified).toBe(true);
      expect((await readCredential(created._id, owner.as)).data).toEqual({ password: 'kept' });
    });

    it('replaces the data when the body has it, and moves the credential when the body has a rank', async () => {
      const created = await createCredential({ ...internal(domainId, owner.id, 'new-data'), data: { password: 'old' } });
      const response = await putCredential(created._id, {
        ...internal(domainId, owner.id, 'new-data'),
        data: { password: 'new', user: 'u' },
        rank: { position: 'High' },
      });
      expect(response.statusCode).toBe(200);
      expect('data' in response.json()).toBe(false);
      expect((await readCredential(created._id, owner.as)).data).toEqual({ password: 'new', user: 'u' });
      expect((await ranked(domainId))[0]._id).toBe(created._id);
    });

    it('patches with add, replace and remove, accepting application/json too, keeping the data it does not show', async () => {
      const created = await createCredential({ ...internal(domainId, owner.id, 'to-patch'), data: { password: 'patched-around' } });
      const replaced = await patchCredential(created._id, [
        { op: 'replace', path: '/label', value: 'patched' },
        { op: 'replace', path: '/disabled', value: true },
      ]);
      expect(replaced.statusCode).toBe(200);
      expect(replaced.headers.etag).toBe('"2"');
      expect(replaced.json()).toEqual({ ...created, label: 'patched', disabled: true, _modified: replaced.json()._modified });
      const removed = await patchCredential(created._id, [{ op: 'remove', path: '/disabled' }], { 'content-type': 'application/json' });
      expect(removed.statusCode).toBe(200);
      expect(removed.json().disabled).toBe(false);
      expect('data' in removed.json()).toBe(false);
      expect(removed.json().rank).toEqual(created.rank);
      expect((await readCredential(created._id, owner.as)).data).toEqual({ password: 'patched-around' });
      const added = await patchCredential(created._id, [{ op: 'add', path: '/data', value: { password: 'set by admin' } }]);
      expect(added.statusCode).toBe(200);
      expect('data' in added.json()).toBe(false);
      expect((await readCredential(created._id, owner.as)).data).toEqual({ password: 'set by admin' });
    });

    it('moves a credential by patching its rank', async () => {
      const created = await createCredential(internal(domainId, adminId, 'patch-rank'));
      const response = await patchCredential(created._id, [{ op: 'replace', path: '/rank', value: { position: 'High' } }]);
      expect(response.statusCode).toBe(200);
      const first = (await ranked(domainId))[0];
      expect(first._id).toBe(created._id);
      expect(response.json().rank).toEqual({ value: first.rank });
    });

    it('refuses to move a credential to another auth domain, by PUT or by PATCH', async () => {
      const created = await createCredential(internal(domainId, adminId, 'stays'));
      const replaced = await putCredential(created._id, internal(otherDomainId, adminId, 'stays'));
      expect(replaced.statusCode).toBe(400);
      expect(problemPaths(replaced)).toEqual(['/authDomainId']);
      const patched = await patchCredential(created._id, [{ op: 'replace', path: '/authDomainId', value: otherDomainId }]);
      expect(patched.statusCode).toBe(400);
      expect(problemPaths(patched)).toEqual(['/authDomainId']);
      expect((await readCredential(created._id)).authDomainId).toBe(domainId);
    });

    it('honours If-Match on PUT, PATCH and DELETE with 412, changing nothing', async () => {
      const created = await createCredential(internal(domainId, adminId, 'guarded'));
      expect((await putCredential(created._id, internal(domainId, adminId, 'guarded-2'), { 'if-match': '"2"' })).statusCode).toBe(412);
      expect((await patchCredential(created._id, [{ op: 'replace', path: '/label', value: 'guarded-3' }], { 'if-match': '"5"' })).statusCode).toBe(412);
      const deleted = await deleteCredential(created._id, { 'if-match': '"3"' });
      expect(deleted.statusCode).toBe(412);
      expect(deleted.headers['content-type']).toContain('application/problem+json');
      expect((await readCredential(created._id)).label).toBe('guarded');
      expect((await patchCredential(created._id, [{ op: 'replace', path: '/label', value: 'guarded-4' }], { 'if-match': '"1"' })).statusCode).toBe(200);
      expect((await deleteCredential(created._id, { 'if-match': '"2"' })).statusCode).toBe(200);
    });

    it('deletes with {msg}, then answers 404', async () => {
      const created = await createCredential(internal(domainId, owner.id, 'short-lived'));
      const response = await deleteCredential(created._id);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ msg: "Credential 'short-lived' deleted" });
      expect((await get(`${CREDENTIALS}/${created._id}`)).statusCode).toBe(404);
      expect((await get(`${CREDENTIALS}/${created._id}`, owner.as)).statusCode).toBe(404);
      expect((await deleteCredential(created._id)).statusCode).toBe(404);
    });

    it('answers 404 to PUT, PATCH, DELETE and a rank move of an unknown credential', async () => {
      expect((await putCredential(UNKNOWN_ID, internal(domainId, adminId, 'x'))).statusCode).toBe(404);
      expect((await patchCredential(UNKNOWN_ID, [])).statusCode).toBe(404);
      expect((await deleteCredential(UNKNOWN_ID)).statusCode).toBe(404);
      expect((await setRank(UNKNOWN_ID, { position: 'High' })).statusCode).toBe(404);
      expect((await setRank('not-a-uuid', { position: 'High' })).statusCode).toBe(404);
    });

    it.each<[string, (domain: string) => object, string[]]>([
      ['no authDomainId', (d) => ({ ...internal(d, UNKNOWN_ID, 'x'), authDomainId: undefined }), ['/authDomainId']],
      ['an authDomainId that is not a UUID', (d) => ({ ...internal(d, UNKNOWN_ID, 'x'), authDomainId: 'warehouse' }), ['/authDomainId']],
      ['no principal', (d) => ({ ...internal(d, UNKNOWN_ID, 'x'), principal: undefined }), ['/principal']],
      ['a principal that is a user name', (d) => internal(d, 'admin', 'x'), ['/principal']],
      ['no label', (d) => ({ ...internal(d, UNKNOWN_ID, 'x'), label: undefined }), ['/label']],
      ['an empty label', (d) => internal(d, UNKNOWN_ID, ''), ['/label']],
      ['a label of 257 characters', (d) => internal(d, UNKNOWN_ID, 'l'.repeat(257)), ['/label']],
      ['no type', (d) => ({ ...internal(d, UNKNOWN_ID, 'x'), type: undefined }), ['/type']],
      ['an unknown type', (d) => ({ ...internal(d, UNKNOWN_ID, 'x'), type: 'Plain' }), ['/type']],
      ['a disabled that is not a boolean', (d) => ({ ...internal(d, UNKNOWN_ID, 'x'), disabled: 'no' }), ['/disabled']],
      ['data that is not an object', (d) => ({ ...internal(d, UNKNOWN_ID, 'x'), data: 'secret' }), ['/data']],
      ['data with a value that is not a string', (d) => ({ ...internal(d, UNKNOWN_ID, 'x'), data: { port: 5432 } }), ['/data']],
      ['data with an empty key', (d) => ({ ...internal(d, UNKNOWN_ID, 'x'), data: { '': 'v' } }), ['/data']],
      [
        'data with 65 entries',
        (d) => ({ ...internal(d, UNKNOWN_ID, 'x'), data: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) }),
        ['/data'],
      ],
      ['data with a NUL character', (d) => ({ ...internal(d, UNKNOWN_ID, 'x'), data: { k: 'a\u0000b' } }), ['/data/k']],
      ['a rank that is not an object', (d) => ({ ...internal(d, UNKNOWN_ID, 'x'), rank: 3 }), ['/rank']],
      ['an unknown rank position', (d) => ({ ...internal(d, UNKNOWN_ID, 'x'), rank: { position: 'Top' } }), ['/rank/position']],
      ['an unknown property', (d) => ({ ...internal(d, UNKNOWN_ID, 'x'), owner: 'me' }), ['/owner']],
    ])('refuses %s with 400 naming the field', async (_case, payload, paths) => {
      const response = await postCredential(payload(domainId));
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json()).toMatchObject({ status: 400, title: 'Bad Request' });
      for (const path of paths) expect(problemPaths(response)).toContain(path);
    });

    it('refuses a principal that is no user or group with 400 at /principal', async () => {
      const response = await postCredential(internal(domainId, UNKNOWN_ID, 'nobody'));
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(['/principal']);
      const created = await createCredential(internal(domainId, adminId, 'to-unknown'));
      const replaced = await putCredential(created._id, internal(domainId, UNKNOWN_ID, 'to-unknown'));
      expect(problemPaths(replaced)).toEqual(['/principal']);
      expect((await readCredential(created._id)).principal).toBe(adminId);
    });

    it('refuses an unknown authDomainId with 400 at /authDomainId to an administrator, and creates nothing', async () => {
      const response = await postCredential(internal(UNKNOWN_ID, adminId, 'no-domain'));
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(['/authDomainId']);
      expect(response.json().detail).toContain(`No auth domain has the id ${UNKNOWN_ID}`);
      expect(await sql('SELECT id FROM credentials WHERE label = $1', ['no-domain'])).toEqual([]);
    });

    it('answers an unknown authDomainId from a user without bindings with 403, as for a domain they may not read, whoever the principal', async () => {
      const own = await postCredential(internal(UNKNOWN_ID, owner.id, 'own-no-domain'), owner.as);
      expect(own.statusCode).toBe(403);
      expect(own.json().detail).toBe(`Not allowed: Read on /AuthDomains/${UNKNOWN_ID} in the namespace of authDomain ${UNKNOWN_ID}`);
      const others = await postCredential(internal(UNKNOWN_ID, adminId, 'others-no-domain'), owner.as);
      expect(others.statusCode).toBe(403);
      expect(others.json().detail).toContain('Not allowed: Create on /Credentials');
    });

    describe('types', () => {
      it('stores a Vault credential with its vaultPath and no data', async () => {
        const created = await createCredential({ authDomainId: domainId, principal: owner.id, label: 'in vault', type: 'Vault', vaultPath: 'secret/data/wh' });
        expect(created).toMatchObject({ type: 'Vault', vaultPath: 'secret/data/wh' });
        const asOwner = await readCredential(created._id, owner.as);
        expect(asOwner.vaultPath).toBe('secret/data/wh');
        expect('data' in asOwner).toBe(false);
        expect(await sql('SELECT sealed_data FROM credentials WHERE id = $1', [created._id])).toEqual([{ sealed_data: null }]);
      });

      it.each<[string, object, string[]]>([
        ['a Vault credential without vaultPath', { type: 'Vault' }, ['/vaultPath']],
        ['a Vault credential with an empty vaultPath', { type: 'Vault', vaultPath: '' }, ['/vaultPath']],
        ['a Vault credential with data', { type: 'Vault', vaultPath: 'secret/x', data: { a: 'b' } }, ['/data']],
        ['an Internal credential with a vaultPath', { type: 'Internal', vaultPath: 'secret/x' }, ['/vaultPath']],
      ])('refuses %s with 400', async (_case, fields, paths) => {
        const response = await postCredential({ authDomainId: domainId, principal: owner.id, label: 'typed', ...fields });
        expect(response.statusCode).toBe(400);
        expect(problemPaths(response)).toEqual(paths);
      });

      it('applies the same rules to a replace, and turns an Internal credential into a Vault one', async () => {
        const created = await createCredential({ ...internal(domainId, owner.id, 'retyped'), data: { a: 'b' } });
        const noPath = await putCredential(created._id, { authDomainId: domainId, principal: owner.id, label: 'retyped', type: 'Vault' });
        expect(problemPaths(noPath)).toEqual(['/vaultPath']);
        const withData = await putCredential(created._id, {
          authDomainId: domainId,
          principal: owner.id,
          label: 'retyped',
          type: 'Vault',
          vaultPath: 'v',
          data: { a: 'b' },
        });
        expect(problemPaths(withData)).toEqual(['/data']);
        const vault = await putCredential(created._id, { authDomainId: domainId, principal: owner.id, label: 'retyped', type: 'Vault', vaultPath: 'secret/v' });
        expect(vault.statusCode).toBe(200);
        const asOwner = await readCredential(created._id, owner.as);
        expect(asOwner).toMatchObject({ type: 'Vault', vaultPath: 'secret/v' });
        expect('data' in asOwner).toBe(false);
        const pathOnInternal = await patchCredential(created._id, [{ op: 'replace', path: '/type', value: 'Internal' }]);
        expect(problemPaths(pathOnInternal)).toEqual(['/vaultPath']);
      });
    });
  });

  describe('secrets', () => {
    let domainId: string;
    let holder: User;
    let credential: Credential;
    const SECRET = 'correct-horse-battery-staple';

    beforeAll(async () => {
      domainId = await createDomain('Secrets', 'cr-one');
      holder = await userWithToken('cr-holder');
      const role = await createRole('cr-secret-user', [allow('/AuthDomains/*', ['Use'])]);
      await bind(role, holder.id, 'cr-one');
      credential = await createCredential({ ...internal(domainId, holder.id, 'holder secret'), data: { password: SECRET, user: 'holder' } });
    });

    it('never shows data in the items of the credential list', async () => {
      const page = await listCredentials(`filter[authDomain][EQ]=${domainId}`);
      expect(page.data.map((item) => item._id)).toEqual([credential._id]);
      expect(Object.keys(page.data[0]).sort()).toEqual(['_created', '_id', '_modified', 'authDomainId', 'disabled', 'label', 'principal', 'rank', 'type']);
    });

    it("never shows data in the items of the caller's own list, though the caller is their principal", async () => {
      const page = await listMine('', holder.as);
      expect(page.data.map((item) => item._id)).toEqual([credential._id]);
      expect('data' in page.data[0]).toBe(false);
      expect(JSON.stringify(page)).not.toContain(SECRET);
    });

    it('never shows data in a GET, PUT or PATCH reply to a caller other than its principal', async () => {
      const read = await get(`${CREDENTIALS}/${credential._id}`);
      expect('data' in read.json()).toBe(false);
      const replaced = await putCredential(credential._id, { authDomainId: domainId, principal: holder.id, label: 'holder secret', type: 'Internal' });
      expect(replaced.statusCode).toBe(200);
      expect('data' in replaced.json()).toBe(false);
      const patched = await patchCredential(credential._id, [{ op: 'replace', path: '/label', value: 'holder secret' }]);
      expect(patched.statusCode).toBe(200);
      expect('data' in patched.json()).toBe(false);
      for (const response of [read, replaced, patched]) expect(response.body).not.toContain(SECRET);
    });

    it('shows the data to its principal, in a GET reply and through resolve', async () => {
      expect((await readCredential(credential._id, holder.as)).data).toEqual({ password: SECRET, user: 'holder' });
      const resolved = await resolve(domainId, holder.as);
      expect(resolved.statusCode).toBe(200);
      expect(resolved.json()).toMatchObject({ _id: credential._id, data: { password: SECRET, user: 'holder' } });
    });

    it('stores data sealed: the column holds neither the plaintext nor its JSON, and equal data seals differently', async () => {
      const twin = await createCredential({ ...internal(domainId, adminId, 'twin'), data: { password: SECRET, user: 'holder' } });
      const rows: { id: string; sealed_data: Buffer }[] = await sql('SELECT id, sealed_data FROM credentials WHERE id = ANY($1) ORDER BY label', [
        [credential._id, twin._id],
      ]);
      expect(rows).toHaveLength(2);
      for (const { sealed_data: sealed } of rows) {
        expect(Buffer.isBuffer(sealed)).toBe(true);
        expect(sealed.includes(SECRET)).toBe(false);
        expect(sealed.includes('password')).toBe(false);
        expect(sealed.toString('latin1')).not.toContain(SECRET);
        expect(sealed.length).toBeGreaterThan(JSON.stringify({ password: SECRET, user: 'holder' }).length);
      }
      expect(rows[0].sealed_data.equals(rows[1].sealed_data)).toBe(false);
      const [{ text }]: { text: string }[] = await sql("SELECT encode(sealed_data, 'escape') AS text FROM credentials WHERE id = $1", [credential._id]);
      expect(text).not.toContain(SECRET);
    });

    it('keeps the stored data through a replace without data (checked through resolve)', async () => {
      const replaced = await putCredential(credential._id, { authDomainId: domainId, principal: holder.id, label: 'relabelled', type: 'Internal' });
      expect(replaced.statusCode).toBe(200);
      expect((await resolve(domainId, holder.as)).json()).toMatchObject({ label: 'relabelled', data: { password: SECRET, user: 'holder' } });
    });
  });

  describe('query credentials', () => {
    let main: string;
    let other: string;
    const fixtures: Credential[] = [];
    const principals: Record<string, string> = {};
    let reader: User;

    beforeAll(async () => {
      main = await createDomain('List Main', 'cr-one');
      other = await createDomain('list other', 'cr-two');
      principals['lq-Charlie'] = await createUser('lq-Charlie');
      principals['lq-alpha'] = await createUser('lq-alpha');
      principals['lq-Bravo'] = await createGroup('lq-Bravo');
      principals['lq-delta'] = await createUser('lq-delta');
      for (const [label, principal, rank] of [
        ['lm-1', 'lq-Charlie', undefined],
        ['lm-2', 'lq-alpha', { position: 'High' }],
        ['lm-3', 'lq-Bravo', undefined],
        ['lm-4', 'lq-delta', undefined],
      ] as const) {
        fixtures.push(await createCredential(internal(main, principals[principal], label, rank ? { rank } : {})));
        await sleep(3);
      }
      await createCredential(internal(other, principals['lq-alpha'], 'lo-1'));
      const touched = await patchCredential(fixtures[0]._id, [{ op: 'replace', path: '/disabled', value: true }]);
      expect(touched.statusCode).toBe(200);
      fixtures[0] = touched.json();
      reader = await userWithToken('lq-reader');
      await bind(await createRole('lq-credential-reader', [allow('/Credentials', ['Read']), allow('/Credentials/*', ['Read'])]), reader.id, 'cr-one');
    });
    const labels = async (query: string, as: Headers = auth): Promise<string[]> =>
      (await listCredentials(`filter[authDomain][EQ]=${main}&${query}`, as)).data.map((item) => item.label);

    it('requires filter[authDomain][EQ]: 400 without it', async () => {
      const response = await get(CREDENTIALS);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(problemPaths(response)).toEqual(['filter[authDomain][EQ]']);
      const withOthers = await get(`${CREDENTIALS}?filter[principal][EQ]=${principals['lq-alpha']}`);
      expect(withOthers.statusCode).toBe(400);
      expect(problemPaths(withOthers)).toEqual(['filter[authDomain][EQ]']);
    });

    it("lists a domain's credentials best rank first, with integer ranks, no data, and the domain's name in authDomains", async () => {
      const page = await listCredentials(`filter[authDomain][EQ]=${main}`);
      expect(page.totalCount).toBe(4);
      expect(page.data.map((item) => item.label)).toEqual(['lm-2', 'lm-1', 'lm-3', 'lm-4']);
      expect(page.authDomains).toEqual({ [main]: 'List Main' });
      expectStrictOrder(page.data);
      for (const item of page.data) {
        const fixture = fixtures.find((credential) => credential._id === item._id) as Credential;
        const { data: _data, rank, ...fields } = fixture;
        expect(item).toEqual({ ...fields, rank: rank.value });
      }
      expect(page.data.find((item) => item.label === 'lm-3')?.principal).toBe(principals['lq-Bravo']);
    });

    it('answers a domain without credentials, or an unknown one, with an empty list', async () => {
      const empty = await createDomain('Empty', 'cr-one');
      expect(await listCredentials(`filter[authDomain][EQ]=${empty}`)).toEqual({ totalCount: 0, data: [], authDomains: {} });
      expect(await listCredentials(`filter[authDomain][EQ]=${UNKNOWN_ID}`)).toEqual({ totalCount: 0, data: [], authDomains: {} });
    });

    it('filters authDomain with EQ', async () => {
      const page = await listCredentials(`filter[authDomain][EQ]=${other}`);
      expect(page.data.map((item) => item.label)).toEqual(['lo-1']);
      expect(page.authDomains).toEqual({ [other]: 'list other' });
      expect((await listCredentials(`filter[authDomain][EQ]=${main.toUpperCase()}`)).totalCount).toBe(4);
    });

    it('filters namespace with EQ and IN', async () => {
      expect(await labels('filter[namespace][EQ]=cr-one')).toEqual(['lm-2', 'lm-1', 'lm-3', 'lm-4']);
      expect(await labels('filter[namespace][EQ]=cr-two')).toEqual([]);
      expect(await labels('filter[namespace][IN]=cr-two,cr-one')).toHaveLength(4);
      expect(await labels('filter[namespace][IN]=cr-two&filter[namespace][IN]=default')).toEqual([]);
      expect((await listCredentials(`filter[authDomain][EQ]=${other}&filter[namespace][IN]=cr-two`)).totalCount).toBe(1);
    });

    it('filters principal with EQ and with IN, comma-separated or repeated, users and groups alike', async () => {
      expect(await labels(`filter[principal][EQ]=${principals['lq-alpha']}`)).toEqual(['lm-2']);
      expect(await labels(`filter[principal][EQ]=${principals['lq-Bravo']}`)).toEqual(['lm-3']);
      expect(await labels(`filter[principal][IN]=${principals['lq-delta']},${principals['lq-alpha']}`)).toEqual(['lm-2', 'lm-4']);
      expect(await labels(`filter[principal][IN]=${principals['lq-Charlie']}&filter[principal][IN]=${principals['lq-Bravo']}`)).toEqual(['lm-1', 'lm-3']);
      expect(await labels(`filter[principal][EQ]=${adminId}`)).toEqual([]);
    });

    it('filters created with LT and GT, both exclusive, exactly at a value the API returned', async () => {
      const pivot = fixtures[2];
      expect(await labels(`filter[created][LT]=${pivot._created}`)).toEqual(['lm-2', 'lm-1']);
      expect(await labels(`filter[created][GT]=${pivot._created}`)).toEqual(['lm-4']);
      expect(await labels(`filter[created][GT]=${fixtures[0]._created}&filter[created][LT]=${fixtures[3]._created}`)).toEqual(['lm-2', 'lm-3']);
      expect(await labels('filter[created][GT]=2000-01-01T00:00:00%2B05:00')).toHaveLength(4);
    });

    it('filters modified with LT and GT', async () => {
      const touched = fixtures[0];
      expect(touched._modified > fixtures[3]._modified).toBe(true);
      expect(await labels(`filter[modified][GT]=${fixtures[3]._modified}`)).toEqual(['lm-1']);
      expect(await labels(`filter[modified][LT]=${touched._modified}`)).toEqual(['lm-2', 'lm-3', 'lm-4']);
      expect(await labels(`filter[modified][LT]=${fixtures[0]._created}`)).toEqual([]);
    });

    it.each([
      ['rank', ['lm-2', 'lm-1', 'lm-3', 'lm-4']],
      ['-rank', ['lm-4', 'lm-3', 'lm-1', 'lm-2']],
      ['_created', ['lm-1', 'lm-2', 'lm-3', 'lm-4']],
      ['-_created', ['lm-4', 'lm-3', 'lm-2', 'lm-1']],
      ['_modified', ['lm-2', 'lm-3', 'lm-4', 'lm-1']],
      ['-_modified', ['lm-1', 'lm-4', 'lm-3', 'lm-2']],
      ['principal', ['lm-2', 'lm-3', 'lm-1', 'lm-4']],
      ['-principal', ['lm-4', 'lm-1', 'lm-3', 'lm-2']],
    ])('sorts by %s', async (sort, expected) => {
      expect(await labels(`sort=${sort}`)).toEqual(expected);
    });

    it('sorts by authDomainId and -authDomainId (one domain: the same items, in opposite orders)', async () => {
      const ascending = await labels('sort=authDomainId');
      expect([...ascending].sort()).toEqual(['lm-1', 'lm-2', 'lm-3', 'lm-4']);
      expect(await labels('sort=-authDomainId')).toEqual([...ascending].reverse());
    });

    it('pages with page[offset] and page[limit], totalCount counting every match', async () => {
      const first = await listCredentials(`filter[authDomain][EQ]=${main}&page[limit]=2`);
      expect(first.totalCount).toBe(4);
      expect(first.data.map((item) => item.label)).toEqual(['lm-2', 'lm-1']);
      const last = await listCredentials(`filter[authDomain][EQ]=${main}&page[offset]=3&page[limit]=2`);
      expect(last.data.map((item) => item.label)).toEqual(['lm-4']);
      expect(await listCredentials(`filter[authDomain][EQ]=${main}&page[offset]=10`)).toEqual({ totalCount: 4, data: [], authDomains: {} });
    });

    it.each([
      ['authDomain with IN', 'filter[authDomain][IN]={main}', 'filter[authDomain][IN]'],
      ['an authDomain that is not a UUID', 'filter[authDomain][EQ]=List%20Main', 'filter[authDomain][EQ]'],
      ['a repeated authDomain', 'filter[authDomain][EQ]={main}&filter[authDomain][EQ]={main}', 'filter[authDomain][EQ]'],
      ['a principal that is not a UUID', 'filter[authDomain][EQ]={main}&filter[principal][EQ]=lq-alpha', 'filter[principal][EQ]'],
      ['a principal IN value that is not a UUID', 'filter[authDomain][EQ]={main}&filter[principal][IN]={main},x', 'filter[principal][IN]'],
      ['an operator principal does not take', 'filter[authDomain][EQ]={main}&filter[principal][CO]=a', 'filter[principal][CO]'],
      ['an operator namespace does not take', 'filter[authDomain][EQ]={main}&filter[namespace][SW]=cr', 'filter[namespace][SW]'],
      ['an unknown field', 'filter[authDomain][EQ]={main}&filter[label][EQ]=lm-1', 'filter[label][EQ]'],
      ['the spelling _created', 'filter[authDomain][EQ]={main}&filter[_created][LT]=2026-01-01T00:00:00Z', 'filter[_created][LT]'],
      ['a bad date-time', 'filter[authDomain][EQ]={main}&filter[created][GT]=soon', 'filter[created][GT]'],
      ['an operator created does not take', 'filter[authDomain][EQ]={main}&filter[modified][EQ]=2026-01-01T00:00:00Z', 'filter[modified][EQ]'],
      ['an unknown sort', 'filter[authDomain][EQ]={main}&sort=label', 'sort'],
      ['a sort by name', 'filter[authDomain][EQ]={main}&sort=-name', 'sort'],
      ['two sorts', 'filter[authDomain][EQ]={main}&sort=rank,_created', 'sort'],
      ['a limit over 1000', 'filter[authDomain][EQ]={main}&page[limit]=1001', 'page[limit]'],
      ['a negative offset', 'filter[authDomain][EQ]={main}&page[offset]=-2', 'page[offset]'],
      ['an unknown parameter', 'filter[authDomain][EQ]={main}&authDomain={main}', 'authDomain'],
    ])('refuses %s with 400 naming the parameter', async (_case, query, parameter) => {
      const response = await get(`${CREDENTIALS}?${query.replaceAll('{main}', main)}`);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual([parameter]);
    });

    it('needs Read on /Credentials somewhere: a user without bindings gets 403', async () => {
      const nobody = await userWithToken('lq-nobody');
      const response = await get(`${CREDENTIALS}?filter[authDomain][EQ]=${main}`, nobody.as);
      expect(response.statusCode).toBe(403);
      expect(response.json().detail).toContain('Not allowed: Read on /Credentials');
    });

    it('shows a user allowed to read credentials in one namespace only those, without data', async () => {
      const page = await listCredentials(`filter[authDomain][EQ]=${main}`, reader.as);
      expect(page).toEqual(await listCredentials(`filter[authDomain][EQ]=${main}`));
      expect(await listCredentials(`filter[authDomain][EQ]=${other}`, reader.as)).toEqual({ totalCount: 0, data: [], authDomains: {} });
      const single = await readCredential(fixtures[1]._id, reader.as);
      expect(single).toEqual(fixtures[1]);
      expect('data' in single).toBe(false);
      const lo = (await listCredentials(`filter[authDomain][EQ]=${other}`)).data[0];
      expect((await get(`${CREDENTIALS}/${lo._id}`, reader.as)).statusCode).toBe(404);
    });
  });

  describe("query the caller's own credentials", () => {
    let me: User;
    let domains: Record<string, string>;
    const mine: Record<string, Credential> = {};

    beforeAll(async () => {
      me = await userWithToken('mine-user');
      const stranger = await createUser('mine-stranger');
      const group = await createGroup('mine-group');
      await changeMembers(group, 'add', me.id);
      domains = { b: await createDomain('mine-B', 'cr-two'), c: await createDomain('mine-C', 'default'), a: await createDomain('Mine-a', 'cr-one') };
      for (const [label, domain, value] of [
        ['me-1', 'b', 300],
        ['me-2', 'c', 100],
        ['me-3', 'a', 200],
      ] as const) {
        mine[label] = await createCredential(internal(domains[domain], me.id, label, { rank: { value } }));
        await sleep(3);
      }
      await createCredential(internal(domains.b, stranger, 'stranger', { rank: { value: 1 } }));
      await createCredential(internal(domains.b, group, 'group', { rank: { value: 2 } }));
      await createCredential(internal(domains.a, adminId, 'admin'));
      const touched = await patchCredential(mine['me-1']._id, [{ op: 'replace', path: '/label', value: 'me-1' }]);
      expect(touched.statusCode).toBe(200);
      mine['me-1'] = touched.json();
    });
    const labels = async (query: string): Promise<string[]> => (await listMine(query, me.as)).data.map((item) => item.label);

    it('lists only the credentials whose principal is the caller, in every domain, best rank first, with authDomains and no data', async () => {
      const page = await listMine('', me.as);
      expect(page.totalCount).toBe(3);
      expect(page.data.map((item) => item.label)).toEqual(['me-2', 'me-3', 'me-1']);
      expect(page.data.map((item) => item.rank)).toEqual([100, 200, 300]);
      expect(page.authDomains).toEqual({ [domains.a]: 'Mine-a', [domains.b]: 'mine-B', [domains.c]: 'mine-C' });
      for (const item of page.data) {
        expect('data' in item).toBe(false);
        expect(item.principal).toBe(me.id);
      }
    });

    it('is open to any signed-in user, answering an empty list to one without credentials', async () => {
      const nobody = await userWithToken('mine-nobody');
      expect(await listMine('', nobody.as)).toEqual({ totalCount: 0, data: [], authDomains: {} });
      expect((await listMine(`filter[authDomain][EQ]=${domains.a}`, auth)).data.map((item) => item.label)).toEqual(['admin']);
      expect((await hub.inject({ method: 'GET', url: MINE })).statusCode).toBe(401);
    });

    it('filters authDomain with EQ, optionally', async () => {
      const page = await listMine(`filter[authDomain][EQ]=${domains.b}`, me.as);
      expect(page.data.map((item) => item.label)).toEqual(['me-1']);
      expect(page.authDomains).toEqual({ [domains.b]: 'mine-B' });
    });

    it('filters namespace with EQ and IN', async () => {
      expect(await labels('filter[namespace][EQ]=cr-one')).toEqual(['me-3']);
      expect(await labels('filter[namespace][IN]=cr-one,cr-two')).toEqual(['me-3', 'me-1']);
      expect(await labels('filter[namespace][IN]=cr-two&filter[namespace][IN]=default')).toEqual(['me-2', 'me-1']);
    });

    it('filters created and modified with LT and GT', async () => {
      expect(await labels(`filter[created][GT]=${mine['me-1']._created}`)).toEqual(['me-2', 'me-3']);
      expect(await labels(`filter[created][LT]=${mine['me-3']._created}`)).toEqual(['me-2', 'me-1']);
      expect(await labels(`filter[modified][GT]=${mine['me-3']._modified}`)).toEqual(['me-1']);
      expect(await labels(`filter[modified][LT]=${mine['me-1']._modified}`)).toEqual(['me-2', 'me-3']);
    });

    it.each([
      ['rank', ['me-2', 'me-3', 'me-1']],
      ['-rank', ['me-1', 'me-3', 'me-2']],
      ['_created', ['me-1', 'me-2', 'me-3']],
      ['-_created', ['me-3', 'me-2', 'me-1']],
      ['_modified', ['me-2', 'me-3', 'me-1']],
      ['-_modified', ['me-1', 'me-3', 'me-2']],
      // The domains in the order of their names, ignoring case: Mine-a, mine-B, mine-C.
      ['authDomainId', ['me-3', 'me-1', 'me-2']],
      ['-authDomainId', ['me-2', 'me-1', 'me-3']],
    ])('sorts by %s', async (sort, expected) => {
      expect(await labels(`sort=${sort}`)).toEqual(expected);
    });

    it('pages', async () => {
      const page = await listMine('page[offset]=1&page[limit]=1', me.as);
      expect(page.totalCount).toBe(3);
      expect(page.data.map((item) => item.label)).toEqual(['me-3']);
      expect(page.authDomains).toEqual({ [domains.a]: 'Mine-a' });
    });

    it.each([
      ['a principal filter', 'filter[principal][EQ]={me}', 'filter[principal][EQ]'],
      ['a sort by principal', 'sort=principal', 'sort'],
      ['authDomain with IN', 'filter[authDomain][IN]={me}', 'filter[authDomain][IN]'],
      ['an authDomain that is not a UUID', 'filter[authDomain][EQ]=mine-B', 'filter[authDomain][EQ]'],
      ['a bad date-time', 'filter[created][LT]=today', 'filter[created][LT]'],
      ['an unknown field', 'filter[label][CO]=me', 'filter[label][CO]'],
      ['a limit of 0', 'page[limit]=0', 'page[limit]'],
    ])('refuses %s with 400 naming the parameter', async (_case, query, parameter) => {
      const response = await get(`${MINE}?${query.replaceAll('{me}', me.id)}`, me.as);
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual([parameter]);
    });
  });

  describe('personal credentials', () => {
    let personal: string;
    let notPersonal: string;
    let personalElsewhere: string;
    let carol: User;
    let dave: User;

    beforeAll(async () => {
      personal = await createDomain('personal-yes', 'cr-one', true);
      notPersonal = await createDomain('personal-no', 'cr-one', false);
      personalElsewhere = await createDomain('personal-elsewhere', 'cr-two', true);
      const role = await createRole('cr-namespace-user', [allow('/AuthDomains', ['Read', 'Use']), allow('/AuthDomains/*', ['Read', 'Use'])]);
      carol = await userWithToken('cr-carol');
      dave = await userWithToken('cr-dave');
      await bind(role, carol.id, 'cr-one');
      await bind(role, dave.id, 'cr-one');
    });

    it('lets a user create a credential of their own in a domain that allows it, seeing its data', async () => {
      const response = await postCredential({ ...internal(personal, carol.id, 'carol own'), data: { pin: '1234' } }, carol.as);
      expect(response.statusCode).toBe(201);
      expect(response.json()).toMatchObject({ principal: carol.id, authDomainId: personal, label: 'carol own', data: { pin: '1234' } });
      expect(response.headers.location).toBe(`${CREDENTIALS}/${response.json()._id}`);
    });

    it("refuses a user's own credential with 403 in a domain that does not allow personal credentials", async () => {
      const response = await postCredential(internal(notPersonal, carol.id, 'carol refused'), carol.as);
      expect(response.statusCode).toBe(403);
      expect(response.json().detail).toContain("Auth domain 'personal-no' does not allow personal credentials");
      expect((await listCredentials(`filter[authDomain][EQ]=${notPersonal}`)).totalCount).toBe(0);
    });

    it('refuses a credential of their own with 403 in a domain the user may not read', async () => {
      const response = await postCredential(internal(personalElsewhere, carol.id, 'carol elsewhere'), carol.as);
      expect(response.statusCode).toBe(403);
      const nobody = await userWithToken('cr-no-bindings');
      const fromNobody = await postCredential(internal(personal, nobody.id, 'nobody own'), nobody.as);
      expect(fromNobody.statusCode).toBe(403);
      expect(fromNobody.json().detail).toContain(`Not allowed: Read on /AuthDomains/${personal}`);
      expect((await listCredentials(`filter[authDomain][EQ]=${personalElsewhere}`)).totalCount).toBe(0);
    });

    // Denials never name a namespace learnt from a resource (the caller may not be allowed to know
    // it); the check that a personal credential's domain is readable names the domain's namespace.
    it('does not name the namespace of a domain the user may not read when refusing their own credential there', async () => {
      const nobody = await userWithToken('cr-no-bindings-2');
      const response = await postCredential(internal(personalElsewhere, nobody.id, 'nobody elsewhere'), nobody.as);
      expect(response.statusCode).toBe(403);
      expect(response.json().detail).not.toContain('cr-two');
    });

    it('refuses with 403 a credential for another principal, user or group', async () => {
      const forDave = await postCredential(internal(personal, dave.id, 'carol for dave'), carol.as);
      expect(forDave.statusCode).toBe(403);
      expect(forDave.json().detail).toContain('Not allowed: Create on /Credentials');
      const group = await createGroup('cr-carols-group');
      await changeMembers(group, 'add', carol.id);
      expect((await postCredential(internal(personal, group, 'carol for group'), carol.as)).statusCode).toBe(403);
      expect((await listCredentials(`filter[authDomain][EQ]=${personal}&filter[principal][IN]=${dave.id},${group}`)).totalCount).toBe(0);
    });

    it('lets the user read, patch, replace, move and delete their own credential', async () => {
      await createCredential(internal(personal, adminId, 'admin first', { rank: { position: 'High' } }));
      const own = await createCredential({ ...internal(personal, carol.id, 'carol managed'), data: { pin: '1' } }, carol.as);
      expect(await readCredential(own._id, carol.as)).toEqual(own);

      const patched = await patchCredential(own._id, [{ op: 'replace', path: '/label', value: 'carol patched' }], {}, carol.as);
      expect(patched.statusCode).toBe(200);
      expect(patched.json()).toMatchObject({ label: 'carol patched', data: { pin: '1' } });

      const replaced = await putCredential(own._id, { ...internal(personal, carol.id, 'carol replaced'), data: { pin: '2' } }, { 'if-match': '"2"' }, carol.as);
      expect(replaced.statusCode).toBe(200);
      expect(replaced.json()).toMatchObject({ label: 'carol replaced', data: { pin: '2' } });

      const rank = await setRank(own._id, { position: 'High' }, carol.as);
      expect(rank.statusCode).toBe(200);
      expect(rank.json()).toEqual({ msg: "Credential 'carol replaced' moved in auth domain 'personal-yes'" });
      expect((await order(personal))[0]).toBe('carol replaced');

      expect((await listMine(`filter[authDomain][EQ]=${personal}`, carol.as)).data.map((item) => item.label)).toContain('carol replaced');
      const deleted = await deleteCredential(own._id, {}, carol.as);
      expect(deleted.statusCode).toBe(200);
      expect(deleted.json()).toEqual({ msg: "Credential 'carol replaced' deleted" });
      expect((await get(`${CREDENTIALS}/${own._id}`)).statusCode).toBe(404);
    });

    it('refuses with 403 to give their own credential to another principal, changing nothing', async () => {
      const own = await createCredential(internal(personal, carol.id, 'carol keeps'), carol.as);
      const response = await putCredential(own._id, internal(personal, dave.id, 'carol keeps'), {}, carol.as);
      expect(response.statusCode).toBe(403);
      const patched = await patchCredential(own._id, [{ op: 'replace', path: '/principal', value: dave.id }], {}, carol.as);
      expect(patched.statusCode).toBe(403);
      expect((await readCredential(own._id)).principal).toBe(carol.id);
    });

    it("answers 404 to every operation on another user's credential", async () => {
      const daves = await createCredential(internal(personal, dave.id, 'dave only'));
      expect((await get(`${CREDENTIALS}/${daves._id}`, carol.as)).statusCode).toBe(404);
      expect((await putCredential(daves._id, internal(personal, carol.id, 'stolen'), {}, carol.as)).statusCode).toBe(404);
      expect((await patchCredential(daves._id, [{ op: 'replace', path: '/principal', value: carol.id }], {}, carol.as)).statusCode).toBe(404);
      expect((await setRank(daves._id, { position: 'High' }, carol.as)).statusCode).toBe(404);
      expect((await deleteCredential(daves._id, {}, carol.as)).statusCode).toBe(404);
      expect((await readCredential(daves._id)).principal).toBe(dave.id);
      expect((await readCredential(daves._id, dave.as)).label).toBe('dave only');
    });

    it("does not let the user list the domain's credentials", async () => {
      expect((await get(`${CREDENTIALS}?filter[authDomain][EQ]=${personal}`, carol.as)).statusCode).toBe(403);
    });

    it('in a domain without personal credentials, lets the user read and delete the credential given to them, but not change or move it', async () => {
      const given = await createCredential({ ...internal(notPersonal, carol.id, 'given to carol'), data: { k: 'v' } });
      expect((await readCredential(given._id, carol.as)).data).toEqual({ k: 'v' });
      expect((await patchCredential(given._id, [{ op: 'replace', path: '/label', value: 'x' }], {}, carol.as)).statusCode).toBe(403);
      expect((await setRank(given._id, { position: 'Low' }, carol.as)).statusCode).toBe(403);
      expect((await readCredential(given._id)).label).toBe('given to carol');
      expect((await deleteCredential(given._id, {}, carol.as)).statusCode).toBe(200);
    });
  });

  describe('resolve', () => {
    let domainId: string;
    let ulla: User;
    let inner: string;
    let outer: string;
    const ids: Record<string, string> = {};

    beforeAll(async () => {
      domainId = await createDomain('Resolved', 'cr-one');
      ulla = await userWithToken('rs-ulla');
      const stranger = await createUser('rs-stranger');
      inner = await createGroup('rs-inner');
      outer = await createGroup('rs-outer');
      await changeMembers(inner, 'add', ulla.id);
      await changeMembers(outer, 'add', inner);
      await bind(await createRole('rs-user', [allow('/AuthDomains/*', ['Use'])]), ulla.id, 'cr-one');
      for (const [label, principal] of [
        ['stranger', stranger],
        ['outer', outer],
        ['inner', inner],
        ['own', ulla.id],
      ]) {
        ids[label] = (await createCredential({ ...internal(domainId, principal, label), data: { who: label } }))._id;
      }
    });
    const resolved = async (as: Headers = ulla.as): Promise<Credential> => {
      const response = await resolve(domainId, as);
      expect(response.statusCode).toBe(200);
      return response.json();
    };
    const disable = async (label: string, disabled: boolean) => {
      expect((await patchCredential(ids[label], [{ op: 'replace', path: '/disabled', value: disabled }])).statusCode).toBe(200);
    };

    it("returns the best-ranked credential among the caller's and their groups', through a group in a group, with its data", async () => {
      expect(await order(domainId)).toEqual(['stranger', 'outer', 'inner', 'own']);
      const best = await resolved();
      expect(best).toEqual({ ...(await readCredential(ids.outer)), data: { who: 'outer' } });
      expect(best.rank).toEqual({ value: expect.any(Number) });
    });

    it('skips disabled credentials', async () => {
      await disable('outer', true);
      expect((await resolved()).label).toBe('inner');
      await disable('inner', true);
      expect(await resolved()).toMatchObject({ label: 'own', data: { who: 'own' } });
      await disable('inner', false);
      expect((await resolved()).label).toBe('inner');
      await disable('outer', false);
    });

    it('follows the ranking', async () => {
      await moved(ids.own, { position: 'High' });
      expect((await resolved()).label).toBe('own');
      await moved(ids.own, { position: 'Low' });
      await moved(ids.inner, { position: 'Above', above: ids.outer });
      expect((await resolved()).label).toBe('inner');
      await moved(ids.inner, { position: 'Below', below: ids.outer });
      expect((await resolved()).label).toBe('outer');
    });

    it('follows a change of group membership on the next request', async () => {
      await changeMembers(outer, 'remove', inner);
      expect((await resolved()).label).toBe('inner');
      await changeMembers(inner, 'remove', ulla.id);
      expect((await resolved()).label).toBe('own');
      await changeMembers(inner, 'add', ulla.id);
      await changeMembers(outer, 'add', inner);
      expect((await resolved()).label).toBe('outer');
    });

    it('answers 404 when neither the caller nor any of their groups holds an enabled credential there', async () => {
      const response = await resolve(domainId, auth);
      expect(response.statusCode).toBe(404);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json().detail).toBe("Neither you nor any of your groups holds an enabled credential in auth domain 'Resolved'");
      for (const label of ['outer', 'inner', 'own']) await disable(label, true);
      expect((await resolve(domainId, ulla.as)).statusCode).toBe(404);
      for (const label of ['outer', 'inner', 'own']) await disable(label, false);
      expect((await resolved()).label).toBe('outer');
    });

    it('resolves a Vault credential to its vaultPath, without data', async () => {
      const vaultDomain = await createDomain('Resolved vault', 'cr-one');
      await createCredential({ authDomainId: vaultDomain, principal: ulla.id, label: 'vaulted', type: 'Vault', vaultPath: 'secret/ulla' });
      const response = await resolve(vaultDomain, ulla.as);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ label: 'vaulted', vaultPath: 'secret/ulla' });
      expect('data' in response.json()).toBe(false);
    });

    it('answers 404 for an unknown domain', async () => {
      expect((await resolve(UNKNOWN_ID, auth)).statusCode).toBe(404);
      expect((await resolve(UNKNOWN_ID, ulla.as)).statusCode).toBe(404);
      expect((await resolve('not-a-uuid', auth)).statusCode).toBe(404);
    });

    it('needs Use on the domain: 404 to a user who may not read it, 403 to one who may only read it', async () => {
      const nobody = await userWithToken('rs-nobody');
      await changeMembers(inner, 'add', nobody.id);
      const hidden = await resolve(domainId, nobody.as);
      expect(hidden.statusCode).toBe(404);
      expect(hidden.body).not.toContain('outer');
      const reader = await userWithToken('rs-reader');
      await changeMembers(inner, 'add', reader.id);
      await bind(await createRole('rs-domain-reader', [allow('/AuthDomains/*', ['Read'])]), reader.id, 'cr-one');
      const denied = await resolve(domainId, reader.as);
      expect(denied.statusCode).toBe(403);
      expect(denied.json().detail).toContain(`Not allowed: Use on /AuthDomains/${domainId}`);
    });
  });

  describe('ranking', () => {
    it('appends a credential created without a rank, and places one created with a rank', async () => {
      const domainId = await createDomain('rank-create', 'cr-one');
      const ids = await seed(domainId, ['n1', 'n2', 'n3']);
      expect(await order(domainId)).toEqual(['n1', 'n2', 'n3']);
      const withRank = (label: string, rank: object) => createCredential(internal(domainId, adminId, label, { rank }));
      await withRank('top', { position: 'High' });
      await withRank('bottom', { position: 'Low' });
      expect(await order(domainId)).toEqual(['top', 'n1', 'n2', 'n3', 'bottom']);
      await withRank('middle', { position: 'Mid' });
      expect(await order(domainId)).toEqual(['top', 'n1', 'middle', 'n2', 'n3', 'bottom']);
      await withRank('above-n3', { position: 'Above', above: ids.n3 });
      await withRank('below-n1', { position: 'Below', below: ids.n1 });
      await withRank('between', { position: 'Between', above: ids.n2, below: ids.n3 });
      expect(await order(domainId)).toEqual(['top', 'n1', 'below-n1', 'middle', 'n2', 'between', 'above-n3', 'n3', 'bottom']);
      const valued = await withRank('valued', { value: -(2 ** 40) });
      expect(valued.rank).toEqual({ value: -(2 ** 40) });
      await createCredential(internal(domainId, adminId, 'last'));
      const items = await ranked(domainId);
      expect(items.map((item) => item.label)).toEqual(['valued', 'top', 'n1', 'below-n1', 'middle', 'n2', 'between', 'above-n3', 'n3', 'bottom', 'last']);
      expectStrictOrder(items);
    });

    it('refuses a bad rank in a create body with 400 at /rank/..., and 409 for a value held, creating nothing', async () => {
      const domainId = await createDomain('rank-create-bad', 'cr-one');
      const ids = await seed(domainId, ['only']);
      const held = (await readCredential(ids.only)).rank.value;
      const unknown = await postCredential(internal(domainId, adminId, 'bad', { rank: { position: 'Above', above: UNKNOWN_ID } }));
      expect(unknown.statusCode).toBe(400);
      expect(problemPaths(unknown)).toEqual(['/rank/above']);
      const missing = await postCredential(internal(domainId, adminId, 'bad', { rank: { position: 'Between', above: ids.only } }));
      expect(problemPaths(missing)).toEqual(['/rank/below']);
      const both = await postCredential(internal(domainId, adminId, 'bad', { rank: { position: 'Low', value: 4 } }));
      expect(problemPaths(both)).toEqual(['/rank/value']);
      const taken = await postCredential(internal(domainId, adminId, 'bad', { rank: { value: held } }));
      expect(taken.statusCode).toBe(409);
      expect(taken.json().detail).toContain(`Rank ${held} is held by another credential of this auth domain`);
      expect(await order(domainId)).toEqual(['only']);
    });

    describe('moves', () => {
      let domainId: string;
      let ids: Record<string, string>;
      let elsewhere: string;

      beforeAll(async () => {
        domainId = await createDomain('rank-moves', 'cr-one');
        ids = await seed(domainId, ['k1', 'k2', 'k3', 'k4', 'k5']);
        const otherDomain = await createDomain('rank-moves-other', 'cr-one');
        elsewhere = (await seed(otherDomain, ['far']))['far'];
      });

      it('answers {msg}', async () => {
        const response = await setRank(ids.k3, { position: 'Mid' });
        expect(response.statusCode).toBe(200);
        expect(response.json()).toEqual({ msg: "Credential 'k3' moved in auth domain 'rank-moves'" });
      });

      it.each<[string, (ids: Record<string, string>) => object, string, string[]]>([
        ['High puts it first', () => ({ position: 'High' }), 'k5', ['k5', 'k1', 'k2', 'k3', 'k4']],
        ['Low puts it last', () => ({ position: 'Low' }), 'k5', ['k1', 'k2', 'k3', 'k4', 'k5']],
        ['Mid puts it in the middle of the others', () => ({ position: 'Mid' }), 'k1', ['k2', 'k3', 'k1', 'k4', 'k5']],
        ['Above puts it directly above another', (i) => ({ position: 'Above', above: i.k2 }), 'k1', ['k1', 'k2', 'k3', 'k4', 'k5']],
        ['Above the first puts it first', (i) => ({ position: 'Above', above: i.k1 }), 'k4', ['k4', 'k1', 'k2', 'k3', 'k5']],
        ['Below puts it directly below another', (i) => ({ position: 'Below', below: i.k3 }), 'k4', ['k1', 'k2', 'k3', 'k4', 'k5']],
        ['Below the last puts it last', (i) => ({ position: 'Below', below: i.k5 }), 'k2', ['k1', 'k3', 'k4', 'k5', 'k2']],
        ['Between neighbours puts it between them', (i) => ({ position: 'Between', above: i.k3, below: i.k4 }), 'k2', ['k1', 'k3', 'k2', 'k4', 'k5']],
        ['an upper-case reference works alike', (i) => ({ position: 'Above', above: i.k1.toUpperCase() }), 'k5', ['k5', 'k1', 'k3', 'k2', 'k4']],
      ])('%s', async (_case, definition, label, expected) => {
        await moved(ids[label], definition(ids));
        const items = await ranked(domainId);
        expect(items.map((item) => item.label)).toEqual(expected);
        expectStrictOrder(items);
      });

      it('Between credentials that are not neighbours puts it strictly between them', async () => {
        await moved(ids.k5, { position: 'Low' });
        expect(await order(domainId)).toEqual(['k1', 'k3', 'k2', 'k4', 'k5']);
        await moved(ids.k4, { position: 'Between', above: ids.k1, below: ids.k5 });
        const labels = await order(domainId);
        expect(labels.indexOf('k4')).toBeGreaterThan(labels.indexOf('k1'));
        expect(labels.indexOf('k4')).toBeLessThan(labels.indexOf('k5'));
        expect([...labels].sort()).toEqual(['k1', 'k2', 'k3', 'k4', 'k5']);
      });

      it('a value sets the rank itself, the same value again included', async () => {
        await moved(ids.k3, { value: -7 });
        expect((await readCredential(ids.k3)).rank).toEqual({ value: -7 });
        expect((await ranked(domainId))[0]).toMatchObject({ label: 'k3', rank: -7 });
        await moved(ids.k3, { value: -7 });
        await moved(ids.k3, { value: MAX_SAFE });
        const items = await ranked(domainId);
        expect(items[items.length - 1]).toMatchObject({ label: 'k3', rank: MAX_SAFE });
      });

      it('answers 409 for a value held by another credential of the domain, but takes one held in another domain', async () => {
        const before = await ranked(domainId);
        const held = before[1];
        const response = await setRank(ids.k3, { value: held.rank });
        expect(response.statusCode).toBe(409);
        expect(response.headers['content-type']).toContain('application/problem+json');
        expect(response.json().detail).toContain(`Rank ${held.rank} is held by another credential of this auth domain`);
        expect(await ranked(domainId)).toEqual(before);
        await moved(elsewhere, { value: 4242 });
        expect(before.some((item) => item.rank === 4242)).toBe(false);
        await moved(ids.k3, { value: 4242 });
        expect((await readCredential(ids.k3)).rank).toEqual({ value: 4242 });
      });

      it.each<[string, (ids: Record<string, string>, far: string) => object, string[]]>([
        ['neither a position nor a value', () => ({}), ['/position']],
        ['a null position and value', () => ({ position: null, value: null }), ['/position']],
        ['Above without above', () => ({ position: 'Above' }), ['/above']],
        ['Below without below', () => ({ position: 'Below' }), ['/below']],
        ['Between without below', (i) => ({ position: 'Between', above: i.k2 }), ['/below']],
        ['Between without above', (i) => ({ position: 'Between', below: i.k2 }), ['/above']],
        ['Between with neither', () => ({ position: 'Between' }), ['/above', '/below']],
        ['High with an above', (i) => ({ position: 'High', above: i.k2 }), ['/above']],
        ['Below with an above', (i) => ({ position: 'Below', below: i.k2, above: i.k4 }), ['/above']],
        ['a position and a value together', () => ({ position: 'High', value: 5 }), ['/value']],
        ['a value with an above', (i) => ({ value: 5, above: i.k2 }), ['/value']],
        ['an unknown position', () => ({ position: 'Top' }), ['/position']],
        ['a value that is not an integer', () => ({ value: 1.5 }), ['/value']],
        ['a value that is a string', () => ({ value: '5' }), ['/value']],
        ['a value beyond what JSON numbers hold exactly', () => ({ value: 2 ** 53 }), ['/value']],
        ['an above that is not a UUID', () => ({ position: 'Above', above: 'k2' }), ['/above']],
        ['an unknown above', () => ({ position: 'Above', above: UNKNOWN_ID }), ['/above']],
        ['an unknown below', () => ({ position: 'Below', below: UNKNOWN_ID }), ['/below']],
        ['a below in another auth domain', (_i, far) => ({ position: 'Below', below: far }), ['/below']],
        ['an above in another auth domain, in Between', (i, far) => ({ position: 'Between', above: far, below: i.k2 }), ['/above']],
        ['itself as above', (i) => ({ position: 'Above', above: i.k1 }), ['/above']],
        ['itself as below', (i) => ({ position: 'Below', below: i.k1 }), ['/below']],
        ['itself as below in Between', (i) => ({ position: 'Between', above: i.k2, below: i.k1 }), ['/below']],
        ['the same credential as above and below', (i) => ({ position: 'Between', above: i.k2, below: i.k2 }), ['/above']],
      ])('refuses %s with 400, moving nothing', async (_case, definition, paths) => {
        const before = await ranked(domainId);
        const response = await setRank(ids.k1, definition(ids, elsewhere));
        expect(response.statusCode).toBe(400);
        expect(response.headers['content-type']).toContain('application/problem+json');
        expect(problemPaths(response)).toEqual(paths);
        expect(await ranked(domainId)).toEqual(before);
      });

      it('refuses Between in the wrong order (above ranking worse than below) with 400', async () => {
        const before = await ranked(domainId);
        const [better, , worse] = before.filter((item) => item._id !== ids.k1);
        const response = await setRank(ids.k1, { position: 'Between', above: worse._id, below: better._id });
        expect(response.statusCode).toBe(400);
        expect(problemPaths(response)).toEqual(['/above']);
        expect(await ranked(domainId)).toEqual(before);
        await moved(ids.k1, { position: 'Between', above: better._id, below: worse._id });
      });
    });

    it('renumbers when no gap is left: Between ranks 1 and 2 succeeds, in order, with distinct ranks', async () => {
      const domainId = await createDomain('rank-gaps', 'cr-one');
      const ids = await seed(domainId, ['g1', 'g2', 'g3', 'g4']);
      await moved(ids.g1, { value: 1 });
      await moved(ids.g2, { value: 2 });
      expect((await ranked(domainId)).map((item) => [item.label, item.rank]).slice(0, 2)).toEqual([
        ['g1', 1],
        ['g2', 2],
      ]);
      await moved(ids.g3, { position: 'Between', above: ids.g1, below: ids.g2 });
      const items = await ranked(domainId);
      expect(items.map((item) => item.label)).toEqual(['g1', 'g3', 'g2', 'g4']);
      expectStrictOrder(items);
      expect(new Set(items.map((item) => item.rank)).size).toBe(4);
      // No integer lies between 1 and 2: one of them must have moved.
      expect([items[0].rank, items[2].rank]).not.toEqual([1, 2]);
      await moved(ids.g4, { position: 'Above', above: ids.g3 });
      expect(await order(domainId)).toEqual(['g1', 'g4', 'g3', 'g2']);
    });

    // A renumbering rewrites the ranks of the whole domain without bumping their versions: a
    // conditional GET then answers 304 Not Modified for a credential whose rank has changed.
    it('changes the ETag of the credentials whose rank a renumbering changed', async () => {
      const domainId = await createDomain('rank-gaps-etag', 'cr-one');
      const ids = await seed(domainId, ['t1', 't2', 't3']);
      await moved(ids.t1, { value: 1 });
      await moved(ids.t2, { value: 2 });
      const before = await get(`${CREDENTIALS}/${ids.t2}`);
      expect(before.json().rank).toEqual({ value: 2 });
      await moved(ids.t3, { position: 'Between', above: ids.t1, below: ids.t2 });
      const after = await get(`${CREDENTIALS}/${ids.t2}`);
      expect(after.json().rank).not.toEqual({ value: 2 });
      expect(after.headers.etag).not.toBe(before.headers.etag);
      expect((await get(`${CREDENTIALS}/${ids.t2}`, { ...auth, 'if-none-match': String(before.headers.etag) })).statusCode).toBe(200);
    });

    it('keeps a strict order when one gap takes 40 placements in a row, by create and by move', async () => {
      const domainId = await createDomain('rank-gap-40', 'cr-one');
      const ids = await seed(domainId, ['a', 'b']);
      let below = ids.b;
      const expected: string[] = ['b'];
      for (let i = 1; i <= 40; i += 1) {
        below = (await createCredential(internal(domainId, adminId, `x${i}`, { rank: { position: 'Between', above: ids.a, below } })))._id;
        expected.unshift(`x${i}`);
      }
      let items = await ranked(domainId);
      expect(items.map((item) => item.label)).toEqual(['a', ...expected]);
      expectStrictOrder(items);

      const simulated = items.map((item) => item._id);
      for (let i = 0; i < 40; i += 1) {
        const mover = simulated[simulated.length - 1 - (i % 4)] === simulated[1] ? simulated[2] : simulated[simulated.length - 1 - (i % 4)];
        await moved(mover, { position: 'Between', above: ids.a, below: simulated[1] });
        simulated.splice(simulated.indexOf(mover), 1);
        simulated.splice(1, 0, mover);
      }
      items = await ranked(domainId);
      expect(items.map((item) => item._id)).toEqual(simulated);
      expectStrictOrder(items);
    });

    it('renumbers at the ends of the range: Low after the greatest rank and High before the least', async () => {
      const domainId = await createDomain('rank-edges', 'cr-one');
      const ids = await seed(domainId, ['e1', 'e2']);
      await moved(ids.e2, { value: MAX_SAFE });
      await createCredential(internal(domainId, adminId, 'after-max'));
      await moved(ids.e1, { value: -MAX_SAFE });
      await createCredential(internal(domainId, adminId, 'before-min', { rank: { position: 'High' } }));
      const items = await ranked(domainId);
      expect(items.map((item) => item.label)).toEqual(['before-min', 'e1', 'e2', 'after-max']);
      expectStrictOrder(items);
      for (const item of items) expect(Math.abs(item.rank)).toBeLessThanOrEqual(MAX_SAFE);
    });

    it('keeps a strict total order under 50 concurrent moves over 10 credentials', async () => {
      const domainId = await createDomain('rank-race', 'cr-one');
      const labels = Array.from({ length: 10 }, (_, i) => `r${i}`);
      const ids = Object.values(await seed(domainId, labels));
      const random = seeded(20261122);
      const pick = () => ids[Math.floor(random() * ids.length)];
      const moves = Array.from({ length: 50 }, () => {
        const id = pick();
        const others = ids.filter((other) => other !== id);
        const another = () => others[Math.floor(random() * others.length)];
        const kind = Math.floor(random() * 7);
        const definition = [
          { position: 'High' },
          { position: 'Low' },
          { position: 'Mid' },
          { position: 'Above', above: another() },
          { position: 'Below', below: another() },
          { position: 'Between', above: another(), below: another() },
          { value: Math.floor(random() * 8) * 1000 },
        ][kind];
        return { id, definition };
      });
      const responses = await Promise.all(moves.map(({ id, definition }) => setRank(id, definition)));
      responses.forEach((response: InjectResponse, index) => {
        const { definition } = moves[index];
        if (response.statusCode === 200) return;
        // Only a Between whose two references are in the wrong order (or the same), or a value held at that moment, may fail.
        if ('value' in definition) expect(response.statusCode).toBe(409);
        else {
          expect((definition as { position: string }).position).toBe('Between');
          expect(response.statusCode).toBe(400);
          expect(problemPaths(response)).toEqual(['/above']);
        }
        expect(response.headers['content-type']).toContain('application/problem+json');
      });
      expect(responses.filter((response) => response.statusCode === 200).length).toBeGreaterThanOrEqual(30);
      const items = await ranked(domainId);
      expect(items.map((item) => item._id).sort()).toEqual([...ids].sort());
      expectStrictOrder(items);
      const [{ distinct }]: { distinct: string }[] = await sql('SELECT count(DISTINCT rank) AS distinct FROM credentials WHERE auth_domain_id = $1', [
        domainId,
      ]);
      expect(Number(distinct)).toBe(10);
    });

    it('gives distinct ranks to credentials created at once with the same position', async () => {
      const domainId = await createDomain('rank-race-create', 'cr-one');
      await seed(domainId, ['existing']);
      const responses = await Promise.all(
        Array.from({ length: 12 }, (_, i) => postCredential(internal(domainId, adminId, `c${i}`, { rank: { position: i % 2 === 0 ? 'High' : 'Mid' } }))),
      );
      expect(responses.map((response) => response.statusCode)).toEqual(Array(12).fill(201));
      const items = await ranked(domainId);
      expect(items).toHaveLength(13);
      expectStrictOrder(items);
    });
  });

  describe('deleting principals and domains', () => {
    it("deletes a user's credentials in every domain with the user, and no others", async () => {
      const first = await createDomain('gone-user-1', 'cr-one');
      const second = await createDomain('gone-user-2', 'cr-two');
      const leaving = await createUser('cr-leaving');
      const doomed = [
        (await createCredential(internal(first, leaving, 'leaving-1')))._id,
        (await createCredential({ authDomainId: second, principal: leaving, label: 'leaving-2', type: 'Vault', vaultPath: 'v' }))._id,
      ];
      const kept = (await createCredential(internal(first, adminId, 'staying')))._id;
      const response = await hub.inject({ method: 'DELETE', url: `${USERS}/${leaving}`, headers: auth });
      expect(response.statusCode).toBe(200);
      for (const id of doomed) expect((await get(`${CREDENTIALS}/${id}`)).statusCode).toBe(404);
      expect(await sql('SELECT id FROM credentials WHERE principal_id = $1', [leaving])).toEqual([]);
      expect((await listCredentials(`filter[authDomain][EQ]=${first}`)).data.map((item) => item._id)).toEqual([kept]);
    });

    it("deletes a group's credentials with the group", async () => {
      const domainId = await createDomain('gone-group', 'cr-one');
      const group = await createGroup('cr-leaving-group');
      const doomed = (await createCredential(internal(domainId, group, 'group-cred')))._id;
      const response = await hub.inject({ method: 'DELETE', url: `${GROUPS}/${group}`, headers: auth });
      expect(response.statusCode).toBe(200);
      expect((await get(`${CREDENTIALS}/${doomed}`)).statusCode).toBe(404);
      expect((await listCredentials(`filter[authDomain][EQ]=${domainId}`)).totalCount).toBe(0);
    });

    it("deletes a domain's credentials with the domain", async () => {
      const domainId = await createDomain('gone-domain', 'cr-one');
      const ids = Object.values(await seed(domainId, ['d1', 'd2', 'd3']));
      const response = await hub.inject({ method: 'DELETE', url: `${DOMAINS}/${domainId}`, headers: auth });
      expect(response.statusCode).toBe(200);
      for (const id of ids) expect((await get(`${CREDENTIALS}/${id}`)).statusCode).toBe(404);
      expect(await listCredentials(`filter[authDomain][EQ]=${domainId}`)).toEqual({ totalCount: 0, data: [], authDomains: {} });
      expect((await resolve(domainId, auth)).statusCode).toBe(404);
    });
  });

  describe('concurrent changes', () => {
    // Each replace holds its domain's ranking lock while it looks its principal up on another pooled
    // connection: as many concurrent replaces as the pool has connections wait for each other
    // until the pool's acquisition timeout (10 s) fails them with 500.
    it('completes concurrent replaces of the credentials of one domain', async () => {
      const domainId = await createDomain('replace-race', 'cr-one');
      const ids = Object.values(
        await seed(
          domainId,
          Array.from({ length: 12 }, (_, i) => `p${i}`),
        ),
      );
      const responses = await Promise.all(ids.map((id, i) => putCredential(id, internal(domainId, adminId, `replaced-${i}`))));
      expect(responses.map((response) => response.statusCode)).toEqual(Array(12).fill(200));
    });
  });

  describe('without credentials', () => {
    it.each([
      ['GET', `${CREDENTIALS}?filter[authDomain][EQ]=${UNKNOWN_ID}`],
      ['GET', MINE],
      ['POST', CREDENTIALS],
      ['GET', `${CREDENTIALS}/${UNKNOWN_ID}`],
      ['PUT', `${CREDENTIALS}/${UNKNOWN_ID}`],
      ['PATCH', `${CREDENTIALS}/${UNKNOWN_ID}`],
      ['DELETE', `${CREDENTIALS}/${UNKNOWN_ID}`],
      ['PUT', `${CREDENTIALS}/${UNKNOWN_ID}/rank`],
      ['GET', `${DOMAINS}/${UNKNOWN_ID}/credential`],
    ] as const)('%s %s answers 401', async (method, url) => {
      const response = await hub.inject({ method, url, payload: method === 'GET' || method === 'DELETE' ? undefined : {} });
      expect(response.statusCode).toBe(401);
    });
  });
});

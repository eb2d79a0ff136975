import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { bearer, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

/**
 * Issue 13, access control: matching that never backtracks (globs on RE2, extglob refused, long
 * objects and non-id path segments refused before matching), and item-level Deny honoured by every
 * list exactly as by single reads.
 */

type Matcher = 'simple' | 'glob' | 'regex';
interface Permission {
  object: string;
  objectMatcher: Matcher;
  actions: string[];
  effect: 'Allow' | 'Deny';
}
type Headers = Record<string, string>;

const PASSWORD = 'an-access-model-password';
const allow = (object: string, objectMatcher: Matcher = 'simple'): Permission => ({ object, objectMatcher, actions: ['Read'], effect: 'Allow' });
const deny = (object: string, objectMatcher: Matcher = 'simple'): Permission => ({ object, objectMatcher, actions: ['Read'], effect: 'Deny' });
/** Read on a collection and on every item of it. */
const readAll = (collection: string): Permission[] => [allow(collection), allow(`${collection}/*`)];

let sequence = 0;
const unique = (prefix: string) => `${prefix}-${(sequence += 1)}`;

describe('the access model: matching and lists', () => {
  let hub: TestHub;
  const admin = (): Headers => bearer(hub.adminToken);
  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, headers: Headers, payload?: unknown) =>
    hub.inject({ method, url, headers, ...(payload !== undefined && { payload: payload as object }) });
  const created = (response: InjectResponse, field: 'id' | '_id'): string => {
    expect(response.statusCode).toBe(201);
    return response.json()[field] as string;
  };
  const createRole = (permissions: Permission[]) => call('POST', '/api/v2/rbac/roles', admin(), { name: unique('role'), permissions });
  /** A new user with a new role of `permissions` bound in `namespace`, and its bearer header. */
  const userWith = async (permissions: Permission[], namespace = '*'): Promise<{ id: string; as: Headers }> => {
    const userName = unique('viewer');
    const id = created(await call('POST', '/api/v2/auth/users', admin(), { userName, password: PASSWORD }), '_id');
    const role = created(await createRole(permissions), 'id');
    created(await call('POST', '/api/v2/rbac/rolebindings', admin(), { role, principal: id, namespace }), 'id');
    return { id, as: bearer(await hub.login(userName, PASSWORD)) };
  };
  const ids = async (url: string, as: Headers, field: 'id' | '_id' | 'jobId' = 'id'): Promise<string[]> => {
    const response = await call('GET', url, as);
    expect(response.statusCode).toBe(200);
    return response.json<{ data: Record<string, string>[] }>().data.map((item) => item[field]);
  };

  beforeAll(async () => {
    hub = await startTestHub();
  });
  afterAll(() => hub?.close());

  describe('matching never backtracks', () => {
    it.each(['/ClusterJobs/+(+(a))b', '/ClusterJobs/*(a|aa)b', '/Pipelines/?(x)', '/Pipelines/@(a|b)', '/Pipelines/!(a)'])(
      'refuses the glob %s at role creation with a 400 naming the pattern',
      async (object) => {
        const response = await createRole([{ ...allow(object, 'glob'), actions: ['Read'] }]);
        expect(response.statusCode).toBe(400);
        expect(response.json().errors).toEqual([{ path: '/permissions/0/object', message: expect.stringContaining(`'${object}'`) }]);
        expect(response.json().detail).toContain('extglob');
      },
    );

    it('matches a glob that picomatch backtracked on against a 1,000-character object, and denies', async () => {
      const viewer = await userWith([allow('/ClusterJobs/*a*a*a*a*a*a*a*a*a*a*b', 'glob'), allow('/ClusterJobs/(a|a)*b', 'regex')]);
      const response = await call('POST', '/api/v2/rbac/evaluate', viewer.as, [
        { object: `/ClusterJobs/${'a'.repeat(987)}`, action: 'Read' },
        { object: `/ClusterJobs/${'a'.repeat(986)}b`, action: 'Read' },
      ]);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual(['Deny', 'Allow']);
    });

    it('refuses an object path longer than 1,024 characters with a 400', async () => {
      const response = await call('POST', '/api/v2/rbac/evaluate', admin(), [{ object: `/ClusterJobs/${'a'.repeat(1012)}`, action: 'Read' }]);
      expect(response.statusCode).toBe(400);
    });

    it('answers 404 to a path id that is not an id before building an object from it, whatever the roles', async () => {
      // A glob role that picomatch compiled to a backtracking expression took 13 s on this request.
      const viewer = await userWith([allow('/ClusterJobs/**/a*a*a*a*a*a*a*a*a*a*a*b', 'glob')]);
      const response = await call('GET', `/api/v2/cluster/jobs/${'a'.repeat(31)}c`, viewer.as);
      expect(response.statusCode).toBe(404);
      expect(response.json().detail).toBe('The jobId in the path is not an id: not found');
    });
  });

  describe('an item-level Deny hides the item from every list that can show it', () => {
    let jobs: string[];

    beforeAll(async () => {
      const standard = await call('GET', '/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard', admin());
      const profile = standard.json<{ data: { _id: string }[] }>().data[0]._id;
      const submit = async () =>
        created(
          await call('POST', '/api/v2/cluster/jobs', admin(), {
            name: unique('denied-job'),
            namespace: 'default',
            executionProfileId: profile,
            task: { command: 'true' },
          }),
          'id',
        );
      jobs = [await submit(), await submit()];
    });

    it.each<[string, (job: string) => Permission]>([
      ['simple, exact', (job) => deny(`/ClusterJobs/${job}`)],
      ['glob', (job) => deny(`/ClusterJobs/${job.slice(0, 8)}*`, 'glob')],
      ['regex', (job) => deny(`/ClusterJobs/${job.slice(0, 8)}[-0-9a-f]+`, 'regex')],
    ])('jobs and executions, by a %s Deny', async (_kind, denial) => {
      const [hidden, shown] = jobs;
      const viewer = await userWith([...readAll('/ClusterJobs'), denial(hidden)]);
      expect((await call('GET', `/api/v2/cluster/jobs/${hidden}`, viewer.as)).statusCode).toBe(404);
      expect((await call('GET', `/api/v2/cluster/jobs/${shown}`, viewer.as)).statusCode).toBe(200);
      const listed = await ids('/api/v2/cluster/jobs?page[limit]=1000', viewer.as);
      expect(listed).toContain(shown);
      expect(listed).not.toContain(hidden);
      const executions = await ids('/api/v2/cluster/executions?page[limit]=1000', viewer.as, 'jobId');
      expect(executions).toContain(shown);
      expect(executions).not.toContain(hidden);
      expect(await ids(`/api/v2/cluster/executions?filter[jobId][EQ]=${hidden}`, viewer.as)).toEqual([]);
      const [execution] = await ids(`/api/v2/cluster/executions?filter[jobId][EQ]=${hidden}`, admin());
      expect((await call('GET', `/api/v2/cluster/executions/${execution}`, viewer.as)).statusCode).toBe(404);
    });

    it('jobs, by a Deny bound in another namespace only: none hidden, as single reads', async () => {
      const elsewhere = unique('elsewhere');
      created(await call('POST', '/api/v2/namespaces', admin(), { name: elsewhere }), '_id');
      const viewer = await userWith(readAll('/ClusterJobs'));
      const role = created(await createRole([deny(`/ClusterJobs/${jobs[0]}`)]), 'id');
      created(await call('POST', '/api/v2/rbac/rolebindings', admin(), { role, principal: viewer.id, namespace: elsewhere }), 'id');
      expect((await call('GET', `/api/v2/cluster/jobs/${jobs[0]}`, viewer.as)).statusCode).toBe(200);
      expect(await ids('/api/v2/cluster/jobs?page[limit]=1000', viewer.as)).toEqual(expect.arrayContaining(jobs));
    });

    it('namespaces', async () => {
      const [hidden, shown] = [unique('hidden-ns'), unique('shown-ns')];
      const hiddenId = created(await call('POST', '/api/v2/namespaces', admin(), { name: hidden }), '_id');
      const shownId = created(await call('POST', '/api/v2/namespaces', admin(), { name: shown }), '_id');
      const viewer = await userWith([...readAll('/Namespaces'), deny(`/Namespaces/${hiddenId}`)]);
      expect((await call('GET', `/api/v2/namespaces/${hiddenId}`, viewer.as)).statusCode).toBe(404);
      const listed = await ids('/api/v2/namespaces?page[limit]=1000', viewer.as, '_id');
      expect(listed).toContain(shownId);
      expect(listed).not.toContain(hiddenId);
    });

    it('auth domains', async () => {
      const domain = async () =>
        created(await call('POST', '/api/v2/authdomains/authdomains', admin(), { name: unique('domain'), namespace: 'default' }), '_id');
      const [hidden, shown] = [await domain(), await domain()];
      const viewer = await userWith([...readAll('/AuthDomains'), deny(`/AuthDomains/${hidden}`)]);
      expect((await call('GET', `/api/v2/authdomains/authdomains/${hidden}`, viewer.as)).statusCode).toBe(404);
      const listed = await ids('/api/v2/authdomains/authdomains?page[limit]=1000', viewer.as, '_id');
      expect(listed).toContain(shown);
      expect(listed).not.toContain(hidden);
    });

    it('role bindings', async () => {
      const viewer = await userWith(readAll('/RoleBindings'));
      const before = await ids('/api/v2/rbac/rolebindings?page[limit]=1000', viewer.as);
      const [hidden, shown] = before;
      const denying = await userWith([...readAll('/RoleBindings'), deny(`/RoleBindings/${hidden}`)]);
      const listed = await ids('/api/v2/rbac/rolebindings?page[limit]=1000', denying.as);
      expect(listed).toContain(shown);
      expect(listed).not.toContain(hidden);
      // A Deny bound in a namespace hides nothing of `*` (bindings in every namespace), as their single reads.
      const inNamespace = await userWith(readAll('/RoleBindings'));
      const role = created(await createRole([deny(`/RoleBindings/${hidden}`)]), 'id');
      created(await call('POST', '/api/v2/rbac/rolebindings', admin(), { role, principal: inNamespace.id, namespace: 'default' }), 'id');
      expect(await ids('/api/v2/rbac/rolebindings?page[limit]=1000', inNamespace.as)).toEqual(expect.arrayContaining(before));
    });

    it.each<[string, string, (name: string) => unknown, 'id' | '_id']>([
      ['users', '/api/v2/auth/users', (name) => ({ userName: name, password: PASSWORD }), '_id'],
      ['groups', '/api/v2/auth/groups', (name) => ({ name }), '_id'],
      ['roles', '/api/v2/rbac/roles', (name) => ({ name }), 'id'],
    ])('%s (outside namespaces: Denies bound in *)', async (_kind, url, body, field) => {
      const collection = { '/api/v2/auth/users': '/Users', '/api/v2/auth/groups': '/Groups', '/api/v2/rbac/roles': '/Roles' }[url] as string;
      const make = async () => created(await call('POST', url, admin(), body(unique('listed'))), field);
      const [hidden, shown, elsewhere] = [await make(), await make(), await make()];
      const viewer = await userWith([...readAll(collection), deny(`${collection}/${hidden}`)]);
      // A Deny bound in a namespace does not apply outside namespaces, for single reads or lists.
      const role = created(await createRole([deny(`${collection}/${elsewhere}`)]), 'id');
      created(await call('POST', '/api/v2/rbac/rolebindings', admin(), { role, principal: viewer.id, namespace: 'default' }), 'id');
      expect((await call('GET', `${url}/${hidden}`, viewer.as)).statusCode).toBe(404);
      expect((await call('GET', `${url}/${elsewhere}`, viewer.as)).statusCode).toBe(200);
      const listed = await ids(`${url}?page[limit]=1000`, viewer.as, field);
      expect(listed).toEqual(expect.arrayContaining([shown, elsewhere]));
      expect(listed).not.toContain(hidden);
    });

    it('execution profiles and cluster nodes (outside namespaces)', async () => {
      const profiles = await ids('/api/v2/execution-profiles/execprofiles?page[limit]=1000', admin(), '_id');
      const nodes = await ids('/api/v2/cluster/nodes?page[limit]=1000', admin());
      expect(profiles.length).toBeGreaterThan(0);
      expect(nodes.length).toBeGreaterThan(0);
      const viewer = await userWith([
        ...readAll('/ExecutionProfiles'),
        ...readAll('/ClusterNodes'),
        deny(`/ExecutionProfiles/${profiles[0]}`),
        deny(`/ClusterNodes/${nodes[0]}`),
      ]);
      expect((await call('GET', `/api/v2/execution-profiles/execprofiles/${profiles[0]}`, viewer.as)).statusCode).toBe(404);
      expect((await call('GET', `/api/v2/cluster/nodes/${nodes[0]}`, viewer.as)).statusCode).toBe(404);
      expect(await ids('/api/v2/execution-profiles/execprofiles?page[limit]=1000', viewer.as, '_id')).toEqual(profiles.slice(1));
      expect(await ids('/api/v2/cluster/nodes?page[limit]=1000', viewer.as)).toEqual(nodes.slice(1));
    });

    it('a collection-wide Deny of the items (simple /X/*) hides them all, the collection still readable', async () => {
      const viewer = await userWith([allow('/ClusterJobs'), deny('/ClusterJobs/*')]);
      expect(await ids('/api/v2/cluster/jobs?page[limit]=1000', viewer.as)).toEqual([]);
    });
  });
});

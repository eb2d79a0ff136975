import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { bearer, enterableTempDir, startTestHub, type TestHub } from '../support/test-hub.js';
import { DEFINITIONS, expectProblem, libraryClient, ordersCsv, PUBLISHED, untilStatus, writeData, type Headers } from './support.js';

jest.setTimeout(60_000);

/**
 * Publishing on a local hub that does not run as root (simulated as the cluster's own spec does: the
 * code path is the real one, asked of process.getuid). Its workers would run as the hub's own user,
 * so api-map §9 lets only administrators publish there: anyone else, even holding Create on
 * /PublishedLibraries and Use on the profile, is refused with the cluster's 403 and nothing is
 * published (api-map §9 "Workloads started for a user", docs/libraries.md "Access").
 */
describe('publishing on a local hub that does not run as root', () => {
  let hub: TestHub;
  let admin: Headers;
  let api: ReturnType<typeof libraryClient>;
  let standardId: string;
  let definition: string;
  let publisher: Headers;

  beforeAll(async () => {
    const root = enterableTempDir('hub-libraries-non-root-');
    writeData(join(root, 'sales'), 'orders.csv', ordersCsv());
    const getuid = jest.spyOn(process, 'getuid').mockReturnValue(1000);
    try {
      hub = await startTestHub({ env: { HUB_LIBRARY_ROOTS: root, HUB_MAX_RUNNING_JOBS_PER_USER: '0', HUB_LOCAL_SLOTS: '4' } });
    } finally {
      getuid.mockRestore();
    }
    admin = bearer(hub.adminToken);
    api = libraryClient(hub);
    standardId = (await api.get('/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard', admin)).json<{ data: { _id: string }[] }>().data[0]._id;
    const defined = await api.post(DEFINITIONS, { name: 'sales', namespace: 'default', engine: 'csv', path: join(root, 'sales') }, admin);
    definition = defined.json<{ _id: string }>()._id;
    // Everything publishing asks of the caller but being an administrator.
    const password = 'a-publisher-password';
    const user = (await api.post('/api/v2/auth/users', { userName: 'publisher', password }, admin)).json<{ _id: string }>();
    const role = await api.post(
      '/api/v2/rbac/roles',
      {
        name: 'library-publisher',
        permissions: [
          { object: '/PublishedLibraries', actions: ['Create', 'Read'], objectMatcher: 'simple', effect: 'Allow' },
          { object: '/PublishedLibraries/*', actions: ['Read', 'Delete'], objectMatcher: 'simple', effect: 'Allow' },
          { object: '/ExecutionProfiles/*', actions: ['Use'], objectMatcher: 'simple', effect: 'Allow' },
        ],
      },
      admin,
    );
    expect(role.statusCode).toBe(201);
    const binding = await api.post('/api/v2/rbac/rolebindings', { role: role.json<{ id: string }>().id, principal: user._id, namespace: 'default' }, admin);
    expect(binding.statusCode).toBe(201);
    publisher = bearer(await hub.login('publisher', password));
  });
  afterAll(async () => {
    await hub?.close();
  });

  const published = async () => (await hub.app.get(DataSource).query('SELECT count(*)::int AS n FROM published_libraries'))[0].n as number;
  const workerJobs = async () =>
    (await hub.app.get(DataSource).query(`SELECT count(*)::int AS n FROM cluster_jobs WHERE properties ? 'publishedLibraryId'`))[0].n as number;

  it('refuses a publisher who is no administrator with 403 as the cluster words it, publishing nothing', async () => {
    const refused = await api.post(PUBLISHED, { libraryDefinitionId: definition, executionProfileId: standardId }, publisher);
    expectProblem(refused, 403);
    expect(refused.json<{ detail: string }>().detail).toMatch(
      /^Only holders of HubAdministrator may submit work to this hub: it does not run as root.*run the hub as root/,
    );
    expect([await published(), await workerJobs()]).toEqual([0, 0]);
  });

  it('lets an administrator publish there, the workers running as the hub itself', async () => {
    const response = await api.post(PUBLISHED, { libraryDefinitionId: definition, executionProfileId: standardId }, admin);
    expect([response.statusCode, response.body]).toEqual([201, expect.any(String)]);
    const library = response.json<{ id: string }>().id;
    await untilStatus(hub, library, admin);
    const records = await api.get(`${PUBLISHED}/${library}/datasets/orders/records?limit=2&orderby=id`, admin);
    expect([records.statusCode, records.json<{ values: unknown[][] }>().values.map((row) => row[0])]).toEqual([200, [1, 2]]);
    expect((await api.del(`${PUBLISHED}/${library}`, admin)).statusCode).toBe(200);
    expect(await published()).toBe(0);
  });
});

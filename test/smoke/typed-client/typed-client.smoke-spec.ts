import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import createClient, { type Client } from 'openapi-fetch';
import { ADMIN_PASSWORD, ADMIN_USER, startHub, type HubProcess } from '../../../fuzz/hub-process.js';
// Generated from the hub's OpenAPI document by `npm run openapi` (CI compiles this file against it).
import type { paths } from './hub-api.js';

/**
 * A client generated from the hub's own OpenAPI document (openapi-typescript) drives the running
 * hub through openapi-fetch: the document is complete and typed enough for a real client.
 */
describe('a TypeScript client generated from the OpenAPI document', () => {
  let hub: HubProcess;
  let client: Client<paths>;
  let headers: { authorization: string };

  beforeAll(async () => {
    hub = await startHub(process.env.TEST_DATABASE_URL);
    client = createClient<paths>({ baseUrl: hub.url });
  });
  afterAll(() => hub?.stop());

  it('logs in', async () => {
    const { data, response } = await client.POST('/api/v2/auth/login', { body: { username: ADMIN_USER, password: ADMIN_PASSWORD } });
    expect(response.status).toBe(200);
    headers = { authorization: `Bearer ${data?.token}` };
  });

  it('creates, lists with a filter, and patches a namespace; sets a nullable field to null', async () => {
    const created = await client.POST('/api/v2/namespaces', { headers, body: { name: 'typed-client', description: null } });
    expect(created.response.status).toBe(201);
    const id = created.data?._id ?? '';

    const listed = await client.GET('/api/v2/namespaces', { headers, params: { query: { 'filter[name][CO]': 'typed', sort: '-_created' } } });
    expect(listed.data).toMatchObject({ totalCount: 1, data: [{ _id: id, name: 'typed-client' }] });

    const patched = await client.PATCH('/api/v2/namespaces/{id}', {
      headers: { ...headers, 'if-match': created.response.headers.get('etag') ?? '' },
      params: { path: { id } },
      body: [{ op: 'add', path: '/description', value: 'Typed' }],
    });
    expect(patched.response.status).toBe(200);
    expect(patched.data?.description).toBe('Typed');
  });

  it('creates a user whose optional fields are null, as their types allow', async () => {
    const { data, response } = await client.POST('/api/v2/auth/users', {
      headers,
      body: { userName: 'typed-user', password: 'a-long-password', displayName: null, email: null, active: null },
    });
    expect(response.status).toBe(201);
    expect(data?.active).toBe(true);
  });

  it('submits a job with the Standard profile of the default namespace, found by a filtered list', async () => {
    const profiles = await client.GET('/api/v2/execution-profiles/execprofiles', { headers, params: { query: { 'filter[name][EQ]': 'Standard' } } });
    const executionProfileId = profiles.data?.data[0]?._id ?? '';
    const submitted = await client.POST('/api/v2/cluster/jobs', {
      headers,
      body: {
        name: 'typed-job',
        namespace: 'default',
        executionProfileId,
        task: { command: 'true', args: [], envVars: [{ name: 'GREETING', value: 'hi' }] },
        priority: null,
      },
    });
    expect(submitted.response.status).toBe(201);
    const job = await client.GET('/api/v2/cluster/jobs/{jobId}', { headers, params: { path: { jobId: submitted.data?.id ?? '' } } });
    expect(job.data).toMatchObject({ name: 'typed-job' });
  });
});

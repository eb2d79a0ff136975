import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { bearer, startTestHub, type TestHub } from './test-hub.js';

describe('harness', () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await startTestHub();
  });
  afterAll(() => hub.close());

  it('boots a hub on its own database', async () => {
    const response = await hub.inject({ method: 'GET', url: '/api/v2/namespaces', headers: bearer(hub.adminToken) });
    expect(response.statusCode).toBe(200);
  });
});

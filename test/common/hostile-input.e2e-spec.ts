import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { bearer, problemPaths, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

/** A reply to bad input stays under this whatever the input (api-map §0). */
const MAX_PROBLEM_BYTES = 64 * 1024;

function expectSmallProblem(response: InjectResponse, status = 400): { detail: string; errors?: unknown[] } {
  expect(response.statusCode).toBe(status);
  expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
  expect(response.rawPayload.length).toBeLessThan(MAX_PROBLEM_BYTES);
  const problem = response.json<{ type: string; title: string; status: number; detail: string; msg: string; errors?: unknown[] }>();
  expect(problem).toMatchObject({ type: 'about:blank', title: expect.any(String), status, detail: expect.any(String), msg: problem.detail });
  return problem;
}

/** `count` arrays nested two deep, `[[[]],[[]],…]`: 5 bytes an item. */
const nestedArrays = (count: number) => Array.from({ length: count }, () => [[]]);

describe('hostile input', () => {
  let hub: TestHub;
  let auth: Record<string, string>;

  beforeAll(async () => {
    hub = await startTestHub();
    auth = bearer(hub.adminToken);
  });
  afterAll(() => hub.close());

  const post = (url: string, payload: unknown) => hub.inject({ method: 'POST', url, headers: auth, payload: payload as Record<string, unknown> });

  describe('null where the document does not allow it', () => {
    it('is a 400 naming the field on POST /rbac/evaluate and /rbac/explain, not a 500', async () => {
      const evaluate = await post('/api/v2/rbac/evaluate', [{ object: '/Users', action: 'Read', namespace: null }]);
      expectSmallProblem(evaluate);
      expect(problemPaths(evaluate)).toEqual(['/0/namespace']);
      expect(evaluate.json().detail).toContain('namespace must not be null');

      const me = await hub.inject({ method: 'GET', url: '/api/v2/auth/me', headers: auth });
      const explain = await post('/api/v2/rbac/explain', [{ object: '/Users', action: 'Read', namespace: null, user: me.json()._id }]);
      expectSmallProblem(explain);
      expect(problemPaths(explain)).toEqual(['/0/namespace']);
    });

    it('is a 400 on an optional field that is not nullable, as on a required one', async () => {
      const optional = await post('/api/v2/namespaces', { name: 'nulls', isDefault: null });
      expectSmallProblem(optional);
      expect(problemPaths(optional)).toEqual(['/isDefault']);
      const required = await post('/api/v2/namespaces', { name: null });
      expectSmallProblem(required);
      expect(problemPaths(required)).toEqual(['/name']);
    });

    it('is a value of the fields the document marks nullable: it clears them', async () => {
      const created = await post('/api/v2/auth/users', { userName: 'nullable', password: 'a-long-password', displayName: 'N', email: null, active: null });
      expect(created.statusCode).toBe(201);
      const { _id } = created.json<{ _id: string }>();
      const replaced = await hub.inject({
        method: 'PUT',
        url: `/api/v2/auth/users/${_id}`,
        headers: auth,
        payload: { userName: 'nullable', displayName: null, email: null },
      });
      expect(replaced.statusCode).toBe(200);
      expect(replaced.json()).not.toHaveProperty('displayName');
    });

    it('is a 400 in nested objects too, at its path', async () => {
      const submitted = await post('/api/v2/cluster/jobs', { name: 'n', namespace: 'default', task: { command: null } });
      expectSmallProblem(submitted);
      expect(problemPaths(submitted)).toContain('/task/command');
    });
  });

  describe('a validation problem stays small whatever the input', () => {
    it.each([
      ['constraints of POST /execution-profiles/execprofiles', '/api/v2/execution-profiles/execprofiles', { name: 'deep', constraints: nestedArrays(10_000) }],
      ['permissions of POST /rbac/roles', '/api/v2/rbac/roles', { name: 'deep', permissions: nestedArrays(10_000) }],
      [
        'task.envVars of POST /cluster/jobs',
        '/api/v2/cluster/jobs',
        { name: 'deep', namespace: 'default', task: { command: 'true', envVars: nestedArrays(10_000) } },
      ],
    ])('answers 10,000 nested arrays in %s with one small problem', async (_label, url, body) => {
      expect(JSON.stringify(body).length).toBeLessThan(60_000);
      const response = await post(url, body);
      const problem = expectSmallProblem(response);
      expect(problem.errors?.length).toBeLessThanOrEqual(50);
    });

    it('lists at most 50 errors and says how many there were', async () => {
      const items = Array.from({ length: 1000 }, () => ({ object: 1, action: 2 }));
      const response = await post('/api/v2/rbac/evaluate', items);
      const problem = expectSmallProblem(response);
      expect(problem.errors).toHaveLength(50);
      expect(problem.detail).toContain('(2000 problems; errors lists the first 50)');
    });

    it('cuts what the client wrote into the reply: a 500 KB property name', async () => {
      const response = await post('/api/v2/namespaces', { name: 'long', ['k'.repeat(500_000)]: 1 });
      expectSmallProblem(response);
      expect(problemPaths(response)[0].length).toBeLessThanOrEqual(256);
    });

    it('cuts control characters, which JSON writes six bytes each', async () => {
      const response = await post('/api/v2/namespaces', { name: 'ctl', ['\u0001'.repeat(150_000)]: 1 });
      expectSmallProblem(response);
    });
  });
});

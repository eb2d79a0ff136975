import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ModulesContainer } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { HubDatabase } from '../../src/common/database/hub-database.js';
import { HealthService } from '../../src/observability/health.service.js';
import { ACTIONS, ROUTE_OPTIONS, type RouteOptions } from '../../src/common/http/route.decorator.js';
import { bearer, startTestHub, type TestHub } from '../support/test-hub.js';

interface Operation {
  operationId: string;
  summary?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string; schema?: { enum?: string[] } }[];
  responses: Record<string, { content?: Record<string, { schema?: unknown; example?: { msg?: string } }> }>;
  'x-hub-permission'?: unknown;
}

describe('HTTP machinery', () => {
  let hub: TestHub;
  let auth: Record<string, string>;

  beforeAll(async () => {
    hub = await startTestHub();
    auth = bearer(hub.adminToken);
  });
  afterAll(() => hub.close());

  describe('errors', () => {
    it('answers an unknown route with a 404 problem', async () => {
      const response = await hub.inject({ method: 'GET', url: '/api/v2/nothing-here?x=1', headers: auth });
      expect(response.statusCode).toBe(404);
      expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(response.json()).toEqual({
        type: 'about:blank',
        title: 'Not Found',
        status: 404,
        detail: 'No route GET /api/v2/nothing-here',
        msg: 'No route GET /api/v2/nothing-here',
        requestId: response.headers['x-request-id'],
      });
    });

    it('answers a body over 1 MiB with 413', async () => {
      const payload = JSON.stringify({ name: 'x', description: 'y'.repeat(1_100_000) });
      const response = await hub.inject({ method: 'POST', url: '/api/v2/namespaces', headers: { ...auth, 'content-type': 'application/json' }, payload });
      expect(response.statusCode).toBe(413);
      expect(response.json().detail).toBe('The request body is larger than the 1048576 bytes allowed');
    });

    it('answers malformed JSON with 400, and an empty JSON body too', async () => {
      const malformed = await hub.inject({ method: 'POST', url: '/api/v2/namespaces', headers: { ...auth, 'content-type': 'application/json' }, payload: '{' });
      expect(malformed.statusCode).toBe(400);
      expect(malformed.json().detail).toMatch(/JSON/);
      const empty = await hub.inject({ method: 'POST', url: '/api/v2/namespaces', headers: { ...auth, 'content-type': 'application/json' }, payload: '' });
      expect(empty.statusCode).toBe(400);
    });

    it('answers an unknown media type with 415 naming it', async () => {
      const response = await hub.inject({
        method: 'PUT',
        url: '/api/v2/namespaces/x',
        headers: { ...auth, 'content-type': 'application/xml' },
        payload: '<x/>',
      });
      expect(response.statusCode).toBe(415);
      expect(response.json().detail).toContain('application/xml');
    });

    it('refuses query parameters a route does not declare, on every kind of route', async () => {
      const id = (await hub.inject({ method: 'GET', url: '/api/v2/namespaces?filter[name][EQ]=default', headers: auth })).json().data[0]._id as string;
      const requests = [
        { method: 'GET', url: `/api/v2/namespaces/${id}?fields=name` },
        { method: 'PUT', url: `/api/v2/namespaces/${id}?force=true`, payload: { name: 'default', isDefault: true } },
        { method: 'PATCH', url: `/api/v2/namespaces/${id}?dryRun=1`, payload: [] },
        { method: 'DELETE', url: `/api/v2/namespaces/${id}?cascade=true` },
        { method: 'POST', url: '/api/v2/namespaces?upsert=true', payload: { name: 'never-created' } },
        { method: 'POST', url: '/api/v2/auth/login?remember=1', payload: { username: 'admin', password: 'x' } },
        { method: 'GET', url: '/health/ready?verbose=1' },
      ] as const;
      for (const { method, url, ...rest } of requests) {
        const response = await hub.inject({ method, url, headers: auth, ...('payload' in rest ? { payload: rest.payload } : {}) });
        expect([url, response.statusCode]).toEqual([url, 400]);
        expect(response.json().errors[0].path).toBe(url.split('?')[1].split('=')[0]);
      }
      expect((await hub.inject({ method: 'GET', url: `/api/v2/namespaces/${id}`, headers: auth })).json().name).toBe('default');
      expect((await hub.inject({ method: 'GET', url: '/api/v2/namespaces?filter[name][EQ]=never-created', headers: auth })).json().totalCount).toBe(0);
    });

    it('refuses NUL characters in a body, naming where they are', async () => {
      const response = await hub.inject({
        method: 'POST',
        url: '/api/v2/namespaces',
        headers: { ...auth, 'content-type': 'application/json' },
        payload: '{"name":"nul","description":"a\\u0000b"}',
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().errors).toEqual([{ path: '/description', message: 'The request body at /description must not contain NUL characters' }]);
      const basic = { authorization: `Basic ${Buffer.from('ad\0min:x').toString('base64')}` };
      expect((await hub.inject({ method: 'GET', url: '/api/v2/auth/me', headers: basic })).statusCode).toBe(401);
    });

    it('never answers bad input with a 500', async () => {
      const requests = [
        { method: 'GET', url: '/api/v2/namespaces?filter[name][EQ]=%00' },
        { method: 'GET', url: '/api/v2/namespaces?filter[description][CO]=%F0%9F%92%A9%00' },
        { method: 'GET', url: '/api/v2/namespaces?page[offset]=99999999999999999999' },
        { method: 'GET', url: '/api/v2/namespaces?page[offset]=2147483647' },
        { method: 'GET', url: '/api/v2/namespaces?filter[_created][GT]=9999-12-31T23:59:59.999999999%2B15:59' },
        { method: 'GET', url: '/api/v2/namespaces?filter[_created][LT]=0000-01-01T00:00:00Z' },
        { method: 'GET', url: '/api/v2/namespaces?sort[]=name' },
        { method: 'GET', url: '/api/v2/namespaces/%ZZ' },
        { method: 'GET', url: `/api/v2/namespaces/${'9'.repeat(5000)}` },
        { method: 'POST', url: '/api/v2/namespaces', payload: '{"name":"nul","description":"a\\u0000b"}' },
        { method: 'POST', url: '/api/v2/namespaces', payload: '{"name":"proto","__proto__":{"x":1}}' },
        { method: 'POST', url: '/api/v2/namespaces', payload: '{"name":"deep","description":' + '['.repeat(5000) + ']'.repeat(5000) + '}' },
        { method: 'POST', url: '/api/v2/namespaces', payload: '{"name":["a"]}' },
        { method: 'PATCH', url: '/api/v2/namespaces/6f1c4b1e-0000-4000-8000-000000000000', payload: '[{"op":"add","path":"/~2","value":1}]' },
        { method: 'PUT', url: '/api/v2/namespaces/6f1c4b1e-0000-4000-8000-000000000000', payload: '{"name":"x","isDefault":null}' },
        { method: 'GET', url: '/api/v2/auth/me?fields=' },
        { method: 'POST', url: '/api/v2/auth/login', payload: '{"username":' + '{"a":'.repeat(100) + '1' + '}'.repeat(100) + ',"password":"x"}' },
        { method: 'DELETE', url: '/api/v2/namespaces/6f1c4b1e-0000-4000-8000-000000000000', headers: { 'if-match': 'W/"1", garbage' } },
      ];
      for (const { method, url, payload, headers } of requests as { method: 'GET'; url: string; payload?: string; headers?: Record<string, string> }[]) {
        const response = await hub.inject({ method, url, headers: { ...auth, 'content-type': 'application/json', ...headers }, payload });
        expect([`${method} ${url.slice(0, 80)}`, response.statusCode < 500]).toEqual([`${method} ${url.slice(0, 80)}`, true]);
        expect(response.headers['content-type']).toMatch(/application\/(problem\+)?json/);
      }
    });
  });

  describe('request ids', () => {
    it('echoes a client X-Request-Id and makes one otherwise', async () => {
      const given = await hub.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': 'trace-42.a:b' } });
      expect(given.headers['x-request-id']).toBe('trace-42.a:b');
      const made = await hub.inject({ method: 'GET', url: '/health/live' });
      expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('replaces an X-Request-Id that is not a sane token', async () => {
      for (const bad of ['has spaces', 'x'.repeat(129), 'line\\nbreak']) {
        const response = await hub.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': bad } });
        expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      }
    });
  });

  describe('health', () => {
    it('is live and ready without credentials', async () => {
      const live = await hub.inject({ method: 'GET', url: '/health/live' });
      expect([live.statusCode, live.json()]).toEqual([200, { status: 'ok' }]);
      const ready = await hub.inject({ method: 'GET', url: '/health/ready' });
      expect([ready.statusCode, ready.json()]).toEqual([200, { status: 'ok', checks: { database: 'up', migrations: 'applied' } }]);
    });

    it('is not ready once shutting down, nor when a migration of this release is missing', async () => {
      const draining = await startTestHub();
      try {
        await draining.app.get(DataSource).query(`DELETE FROM migrations WHERE name = 'ChangeNotifications1795330000000'`);
        const missing = await draining.inject({ method: 'GET', url: '/health/ready' });
        expect([missing.statusCode, missing.json().detail]).toEqual([503, 'Not ready: the database lacks migrations of this release']);
        draining.app.get(HealthService).beforeApplicationShutdown();
        const closing = await draining.inject({ method: 'GET', url: '/health/ready' });
        expect([closing.statusCode, closing.json().detail]).toEqual([503, 'Not ready: the hub is shutting down']);
      } finally {
        await draining.close();
      }
    });

    it('is not ready when the database does not answer', async () => {
      const broken = await startTestHub();
      try {
        await broken.app.get(HubDatabase).dataSource.destroy();
        const response = await broken.inject({ method: 'GET', url: '/health/ready' });
        expect(response.statusCode).toBe(503);
        expect(response.json().detail).toBe('Not ready: the database does not answer');
        expect((await broken.inject({ method: 'GET', url: '/health/live' })).statusCode).toBe(200);
      } finally {
        await broken.close();
      }
    });
  });

  describe('metrics', () => {
    it('needs credentials', async () => {
      expect((await hub.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    });

    it('counts requests and their latency per route pattern, with process metrics', async () => {
      await hub.inject({ method: 'GET', url: '/api/v2/namespaces?page[limit]=1', headers: auth });
      await hub.inject({ method: 'GET', url: '/api/v2/namespaces/6f1c4b1e-0000-4000-8000-000000000000', headers: auth });
      await hub.inject({ method: 'GET', url: '/no/such/route', headers: auth });
      const response = await hub.inject({ method: 'GET', url: '/metrics', headers: auth });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
      const text = response.body;
      expect(text).toMatch(/^hub_http_requests_total\{method="GET",route="\/api\/v2\/namespaces",status_code="200"\} [1-9]/m);
      expect(text).toMatch(/^hub_http_requests_total\{method="GET",route="\/api\/v2\/namespaces\/:id",status_code="404"\} [1-9]\d*$/m);
      expect(text).toMatch(/^hub_http_requests_total\{method="GET",route="unmatched",status_code="404"\} [1-9]\d*$/m);
      expect(text).toMatch(/^hub_http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/api\/v2\/namespaces",status_code="200"\} \d+$/m);
      expect(text).toMatch(/^hub_process_cpu_user_seconds_total \d/m);
      expect(text).toMatch(/^hub_access_decisions_total\{decision="Allow",purpose="Request"\} [1-9]\d*$/m);
      expect(text).toMatch(/^hub_audit_records_pending \d+$/m);
      expect(text).toMatch(/^hub_audit_records_lost_total 0$/m);
      expect(text).toMatch(/^hub_nodejs_heap_size_used_bytes \d/m);
    });
  });

  describe('routes', () => {
    /** Every handler of every controller, with its `@Route` options (undefined when it has none). */
    function routes(): { name: string; options: RouteOptions | undefined; path: string }[] {
      const found: { name: string; options: RouteOptions | undefined; path: string }[] = [];
      for (const module of hub.app.get(ModulesContainer).values()) {
        for (const wrapper of module.controllers.values()) {
          const prototype = (wrapper.metatype?.prototype ?? {}) as Record<string, unknown>;
          const base = String(Reflect.getMetadata('path', wrapper.metatype as object) ?? '');
          for (const name of Object.getOwnPropertyNames(prototype)) {
            const handler = prototype[name];
            if (name === 'constructor' || typeof handler !== 'function' || Reflect.getMetadata('method', handler) === undefined) continue;
            const options = Reflect.getMetadata(ROUTE_OPTIONS, handler) as RouteOptions | undefined;
            found.push({ name: `${wrapper.name}.${name}`, options, path: `/${base}/${options?.path ?? ''}`.replace(/\/+/g, '/').replace(/\/$/, '') });
          }
        }
      }
      return found;
    }

    it('are all declared with @Route, so each states who may call it', () => {
      const all = routes();
      expect(all.length).toBeGreaterThanOrEqual(40);
      expect(all.filter((route) => !route.options?.access).map((route) => route.name)).toEqual([]);
    });

    it('each declare a permission the access guard checks, but for the public and self-service routes of api-map §0 and §6', () => {
      const byKind = (kind: 'public' | 'self') =>
        routes()
          .filter((route) => route.options && kind in route.options.access && !('object' in route.options.access))
          .map((route) => `${route.options?.method} ${route.path}`)
          .sort();
      expect(byKind('public')).toEqual([
        'GET /api/v2/cluster/version',
        'GET /health/live',
        'GET /health/ready',
        'POST /api/v2/auth/accounts',
        'POST /api/v2/auth/login',
      ]);
      expect(byKind('self')).toEqual([
        // A link session is its owner's alone (api-map §8): the service answers anyone else 404.
        'DELETE /api/v2/linksessions/sessions/:sessionId',
        'GET /api/v2/auth/claims',
        'GET /api/v2/auth/me',
        'GET /api/v2/authdomains/me/credentials',
        'GET /api/v2/linksessions/configurations',
        'GET /api/v2/linksessions/me/sessions',
        'GET /api/v2/linksessions/sessions/:sessionId',
        'GET /api/v2/linksessions/sessions/:sessionId/logs/:logname',
        'POST /api/v2/rbac/evaluate',
        'PUT /api/v2/auth/me/password',
        'PUT /api/v2/linksessions/sessions/:sessionId/heartbeat',
      ]);
      for (const { name, options, path } of routes()) {
        const access = options?.access;
        if (!access || !('object' in access)) continue;
        expect({ name, object: access.object }).toEqual({ name, object: expect.stringMatching(/^\/[A-Z][A-Za-z]+(\/\{[A-Za-z]+\})?$/) });
        expect(ACTIONS).toContain(access.action);
        for (const [, parameter] of access.object.matchAll(/\{([^}]+)\}/g))
          expect({ name, path }).toEqual({ name, path: expect.stringContaining(`:${parameter}`) });
        if (typeof access.self === 'string') expect({ name, path }).toEqual({ name, path: expect.stringContaining(`:${access.self}`) });
        // The owner of a resource is known only from a resource the namespace source looks up.
        if (typeof access.self === 'object' && 'owner' in access.self)
          expect({ name, namespace: access.namespace }).toEqual({ name, namespace: expect.objectContaining({ resource: expect.any(String) }) });
        if (access.namespace && 'param' in access.namespace)
          expect({ name, path }).toEqual({ name, path: expect.stringContaining(`:${access.namespace.param}`) });
      }
    });
  });

  describe('OpenAPI', () => {
    let document: {
      components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
      paths: Record<string, Record<string, Operation>>;
    };
    const operations = () =>
      Object.entries(document.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ path, method, operation })));

    beforeAll(async () => {
      const response = await hub.inject({ method: 'GET', url: '/api/openapi.json' });
      expect(response.statusCode).toBe(200);
      document = response.json();
    });

    it('describes every route with a summary, a unique operation id and a tag', () => {
      const ids = operations().map(({ operation }) => operation.operationId);
      expect(ids).toEqual(
        expect.arrayContaining([
          'login',
          'getCurrentUser',
          'queryNamespaces',
          'createNamespace',
          'getNamespace',
          'replaceNamespace',
          'patchNamespace',
          'deleteNamespace',
          'live',
          'ready',
          'renderMetrics',
        ]),
      );
      expect(new Set(ids).size).toBe(ids.length);
      for (const { operation } of operations()) {
        expect(operation.summary).toBeTruthy();
        expect(operation.tags?.length).toBe(1);
      }
    });

    it('declares the bearer scheme, and credentials and a permission on every non-public route', () => {
      expect(document.components.securitySchemes.bearerAuth).toEqual({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: expect.any(String) });
      expect(document.components.securitySchemes.basicAuth).toMatchObject({ type: 'http', scheme: 'basic' });
      const publicRoutes = ['/api/v2/auth/login', '/api/v2/auth/accounts', '/api/v2/cluster/version', '/health/live', '/health/ready'];
      for (const { path, operation } of operations()) {
        if (publicRoutes.includes(path)) {
          expect(operation.security).toEqual([]);
        } else {
          expect(operation.security).toEqual(expect.arrayContaining([{ bearerAuth: [] }, { basicAuth: [] }]));
          expect(operation['x-hub-permission']).toBeDefined();
        }
      }
      expect(document.paths['/api/v2/namespaces/{id}'].get['x-hub-permission']).toEqual({ object: '/Namespaces/{id}', action: 'Read' });
    });

    it('documents a 400 on every operation: a body example where there is a body, a query example elsewhere', () => {
      for (const { method, operation } of operations()) {
        const example = operation.responses['400']?.content?.['application/problem+json']?.example as { errors?: { path: string }[] } | undefined;
        expect(example?.errors?.[0].path).toBe(['post', 'put', 'patch'].includes(method) ? '/name' : 'filter[nam][EQ]');
      }
    });

    it('uses named schemas and documents errors as problem details with examples', () => {
      expect(Object.keys(document.components.schemas)).toEqual(
        expect.arrayContaining([
          'NamespaceDto',
          'ProjectedNamespaceListDto',
          'NamespaceInputDto',
          'UserDto',
          'LoginRequestDto',
          'LoginResponseDto',
          'MessageDto',
          'ProblemDetailsDto',
        ]),
      );
      const create = document.paths['/api/v2/namespaces'].post;
      expect(Object.keys(create.responses).sort()).toEqual(['201', '400', '401', '403', '409', '413', '414', '415', '429', '431', '503']);
      const conflict = create.responses['409'].content?.['application/problem+json'];
      expect(conflict?.schema).toEqual({ $ref: '#/components/schemas/ProblemDetailsDto' });
      expect(conflict?.example?.msg).toContain('already exists');
      expect(Object.keys(document.paths['/api/v2/auth/login'].post.responses).sort()).toEqual(['200', '400', '401', '413', '414', '415', '429', '431', '503']);
    });

    it('lists every filter, paging and sort parameter of a list operation', () => {
      const parameters = document.paths['/api/v2/namespaces'].get.parameters ?? [];
      const names = parameters.map((parameter) => parameter.name);
      expect(names).toEqual(
        expect.arrayContaining([
          'filter[name][EQ]',
          'filter[name][CO]',
          'filter[name][SW]',
          'filter[_created][LT]',
          'filter[_id][IN]',
          'page[offset]',
          'page[limit]',
          'sort',
          'fields',
          'excludeFields',
        ]),
      );
      expect(parameters.find((parameter) => parameter.name === 'sort')?.schema?.enum).toEqual([
        'name',
        '-name',
        '_created',
        '-_created',
        '_modified',
        '-_modified',
      ]);
    });

    it('serves the interactive documentation', async () => {
      const response = await hub.inject({ method: 'GET', url: '/api/docs' });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toContain('text/html');
    });
  });
});

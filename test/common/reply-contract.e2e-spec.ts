import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { ReplyContract, type ContractDocument, type ContractReply } from '../../fuzz/reply-contract.js';
import { ConflictError } from '../../src/common/errors/hub-errors.js';
import { problemBody } from '../../src/common/errors/problem.filter.js';
import { Versioned } from '../../src/common/http/entity-tag.js';
import { NamespacesService } from '../../src/namespaces/namespaces.service.js';
import { bearer, startTestHub, type TestHub } from '../support/test-hub.js';

/**
 * The check of every reply against the hub's OpenAPI document (test/support/test-hub.ts with
 * fuzz/reply-contract.ts): faults are planted here, in the spec only, by making the namespaces
 * service answer what the document does not describe; the harness must fail the request, naming
 * the operation and what is wrong.
 */
/** The harness's failures, which a run that times the suite without the check (`HUB_TEST_REPLY_CHECK=off`, or `report`) does not make. */
const whenChecking = (process.env.HUB_TEST_REPLY_CHECK ?? 'on') === 'on' ? describe : describe.skip;

describe('every reply checked against the OpenAPI document', () => {
  let hub: TestHub;
  let namespaceUrl: string;
  let document: ContractDocument;

  const getNamespace = () => hub.inject({ method: 'GET', url: namespaceUrl, headers: bearer(hub.adminToken) });

  /** Makes the service's reply to a read of a namespace what `change` makes of the true one. */
  const plant = (change: (body: Record<string, unknown>) => Record<string, unknown>) => {
    const service = hub.app.get(NamespacesService);
    const get = service.get.bind(service);
    jest.spyOn(service, 'get').mockImplementation(async (caller, id) => {
      const reply = await get(caller, id);
      return new Versioned(change({ ...reply.body }), reply.version) as unknown as typeof reply;
    });
  };

  beforeAll(async () => {
    hub = await startTestHub();
    const list = await hub.inject({ method: 'GET', url: '/api/v2/namespaces?filter[name][EQ]=default', headers: bearer(hub.adminToken) });
    namespaceUrl = `/api/v2/namespaces/${list.json<{ data: { _id: string }[] }>().data[0]._id}`;
    document = (await hub.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
  });
  afterEach(() => {
    jest.restoreAllMocks();
  });
  afterAll(() => hub.close());

  whenChecking('the harness', () => {
    it('passes a reply the document describes', async () => {
      expect((await getNamespace()).statusCode).toBe(200);
    });

    it('fails a reply with a field the schema does not allow, naming the operation and the field', async () => {
      plant((body) => ({ ...body, planted: 'not in the document' }));
      await expect(getNamespace()).rejects.toThrow(
        /GET \/api\/v2\/namespaces\/\{id\} \(getNamespace\) answered 200:\n {2}- \(the body\) must NOT have additional properties 'planted'/,
      );
    });

    it('fails a reply that leaves out a required field', async () => {
      plant(({ name: _name, ...body }) => body);
      await expect(getNamespace()).rejects.toThrow(
        /GET \/api\/v2\/namespaces\/\{id\} \(getNamespace\) answered 200:\n {2}- \(the body\) must have required property 'name'/,
      );
    });

    it('fails a field of the wrong type', async () => {
      plant((body) => ({ ...body, isDefault: 'yes' }));
      await expect(getNamespace()).rejects.toThrow(/\/isDefault must be boolean/);
    });

    it('fails a status the operation does not document, problems included', async () => {
      jest.spyOn(hub.app.get(NamespacesService), 'get').mockRejectedValue(new ConflictError('a planted conflict'));
      await expect(getNamespace()).rejects.toThrow(
        /\(getNamespace\) answered 409:\n {2}- status 409 is not documented \(documented: 200, 304, 400, 401, 403, 404, 414, 429, 431, 503\)/,
      );
    });

    it('checks a request no route takes as a problem', async () => {
      const response = await hub.inject({ method: 'GET', url: '/api/v2/no-such-route' });
      expect(response.statusCode).toBe(404);
    });
  });

  describe('the contract', () => {
    const reply = (overrides: Partial<ContractReply>): ContractReply => ({
      method: 'GET',
      route: '/api/v2/namespaces/:id',
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8', etag: '"1"' },
      body: JSON.stringify({
        _id: '0b8a4c1e-3f64-4a43-9d2f-5d0f3f0c9a11',
        _created: '2026-11-27T10:00:00.000Z',
        _modified: '2026-11-27T10:00:00.000Z',
        name: 'n',
        isDefault: false,
      }),
      ...overrides,
    });

    it('takes the reply above as valid', () => {
      expect(new ReplyContract(document).check(reply({})).violations).toEqual([]);
    });

    it('fails an undocumented content type, and a documented header left out', () => {
      const contract = new ReplyContract(document);
      expect(contract.check(reply({ headers: { 'content-type': 'text/html' } })).violations).toEqual([
        'content type "text/html" is not documented (documented: application/json)',
        'header ETag is documented as required but absent',
      ]);
    });

    it('checks raw bytes for their status and media type only', () => {
      const contract = new ReplyContract(document);
      const log = {
        route: '/api/v2/cluster/executions/:jobExecutionId/tasks/:taskName/logs/:logname',
        headers: { 'content-type': 'application/octet-stream' },
      };
      expect(contract.check(reply({ ...log, body: Buffer.from([0xff, 0x00, 0x7b]) })).violations).toEqual([]);
      expect(contract.check(reply({ ...log, status: 201, body: '' })).violations[0]).toMatch(/^status 201 is not documented/);
    });

    it('takes a media type a documented range covers (a stored result, raw, as its own type), and no other', () => {
      const contract = new ReplyContract(document);
      const result = { route: '/api/v2/pipelines/runs/:pipelineRunId/nodes/:nodeName/results/:resultName', body: 'a,b\n' };
      expect(contract.check(reply({ ...result, headers: { 'content-type': 'text/csv' } })).violations).toEqual([]);
      const log = { route: '/api/v2/cluster/executions/:jobExecutionId/tasks/:taskName/logs/:logname', body: 'a,b\n' };
      expect(contract.check(reply({ ...log, headers: { 'content-type': 'text/csv' } })).violations[0]).toMatch(/^content type "text\/csv" is not documented/);
    });

    it('leaves out only the routes outside the document, and takes a request no route took for a problem', () => {
      const contract = new ReplyContract(document);
      expect(contract.check(reply({ route: '/api/docs/*', headers: { 'content-type': 'text/css' }, body: 'body {}' })).checked).toBe(false);
      expect(contract.check(reply({ route: '/api/v2/not-documented' })).violations).toEqual(['the route is not in the document']);
      expect(contract.check(reply({ route: undefined, status: 200 })).violations).toEqual([
        'status 200 to a request no route took',
        'content type "application/json", not application/problem+json',
      ]);
    });

    it("leaves a session's own reply through the proxy unchecked, and checks the hub's own replies there as problems", () => {
      const contract = new ReplyContract(document);
      const proxy = { route: '/api/v2/linksessions/sessions/:sessionId/proxy/*', headers: { 'content-type': 'text/html' }, body: '<p>the session</p>' };
      expect(contract.check(reply({ ...proxy, forwarded: true })).checked).toBe(false);
      expect(contract.check(reply({ ...proxy, status: 404 })).violations).toEqual(['content type "text/html", not application/problem+json']);
      expect(contract.check(reply({ ...proxy, status: 200 })).violations).toEqual([
        'status 200 made by the hub on a route that forwards, not a refusal',
        'content type "text/html", not application/problem+json',
      ]);
      const problem = JSON.stringify(problemBody('r', { status: 503, detail: 'Link session x is Pending, not Ready' }));
      const refusal = contract.check(reply({ ...proxy, status: 503, headers: { 'content-type': 'application/problem+json; charset=utf-8' }, body: problem }));
      expect(refusal).toEqual({ checked: true, operation: "GET /api/v2/linksessions/sessions/{sessionId}/proxy/* (the hub's own reply)", violations: [] });
    });

    it('finds the template of a concrete path, a fixed segment before a parameter', () => {
      const contract = new ReplyContract(document);
      expect(contract.routeOf('GET', '/api/v2/auth/users/0b8a4c1e-3f64-4a43-9d2f-5d0f3f0c9a11')).toBe('/api/v2/auth/users/{userId}');
      expect(contract.routeOf('GET', '/api/v2/namespaces?page[limit]=1')).toBe('/api/v2/namespaces');
      expect(contract.routeOf('GET', '/api/v2/nowhere')).toBeUndefined();
    });
  });
});

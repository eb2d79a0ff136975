import { chmodSync, copyFileSync, mkdirSync, symlinkSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { LibraryOperationsService } from '../../src/libraries/library-operations.service.js';
import { poll } from '../support/poll.js';
import { freezeClock } from '../support/test-clock.js';
import { bearer, enterableTempDir, startTestHub, type TestHub } from '../support/test-hub.js';
import {
  DEFINITIONS,
  expectProblem,
  libraryClient,
  makeUser,
  ordersCsv,
  peopleJsonl,
  PUBLISHED,
  untilStatus,
  workerPid,
  workerRows,
  writeData,
  type Headers,
} from './support.js';

const LEGACY = { 'accept-version': '2.3.0.461' };

/** A Parquet library (orders.parquet) and a DuckDB database (a table and a view), made with DuckDB itself from the orders CSV. */
async function writeDuckDBFixtures(root: string): Promise<void> {
  mkdirSync(join(root, 'parquet'), { mode: 0o755 });
  const instance = await DuckDBInstance.create(join(root, 'warehouse.duckdb'));
  const connection = await instance.connect();
  await connection.run(`CREATE TABLE orders AS SELECT * FROM read_csv('${join(root, 'sales', 'orders.csv')}')`);
  await connection.run(`CREATE VIEW big_orders AS SELECT * FROM orders WHERE amount >= 1000`);
  await connection.run(`COPY orders TO '${join(root, 'parquet', 'orders.parquet')}' (FORMAT parquet)`);
  connection.closeSync();
  instance.closeSync();
  chmodSync(join(root, 'warehouse.duckdb'), 0o644);
  chmodSync(join(root, 'parquet', 'orders.parquet'), 0o644);
  writeData(join(root, 'sas'), 'class.sas7bdat', '');
  copyFileSync(join(import.meta.dirname, '..', 'fixtures', 'libraries', 'sas7bdat', 'class.sas7bdat'), join(root, 'sas', 'class.sas7bdat'));
}

jest.setTimeout(60_000);

describe('published libraries', () => {
  let hub: TestHub;
  let admin: Headers;
  let api: ReturnType<typeof libraryClient>;
  let root: string;
  let standardId: string;
  let csvDefinition: string;
  let library: string;
  let consumer: Headers;
  let stranger: Headers;

  const records = (query: string, headers: Headers = admin, extra: Headers = {}) =>
    api.get(`${PUBLISHED}/${library}/datasets/orders/records?${query}`, headers, extra);
  const define = async (body: Record<string, unknown>) => {
    const response = await api.post(DEFINITIONS, body, admin);
    expect([response.statusCode, response.body]).toEqual([201, expect.any(String)]);
    return response.json<{ _id: string }>()._id;
  };

  beforeAll(async () => {
    root = enterableTempDir('hub-libraries-');
    writeData(join(root, 'sales'), 'orders.csv', ordersCsv());
    writeData(join(root, 'sales'), 'customers.csv', 'id,name\n1,Ann\n2,Bob\n');
    writeData(join(root, 'sales'), 'readme.txt', 'not a member');
    writeData(join(root, 'people'), 'people.jsonl', peopleJsonl());
    writeData(`${root}-x`, 'outside.csv', 'a\n1\n');
    symlinkSync(`${root}-x`, join(root, 'escape'));
    await writeDuckDBFixtures(root);
    hub = await startTestHub({ env: { HUB_LIBRARY_ROOTS: root, HUB_MAX_RUNNING_JOBS_PER_USER: '0', HUB_LIBRARY_ASYNC_AFTER_MS: '0', HUB_LOCAL_SLOTS: '16' } });
    admin = bearer(hub.adminToken);
    api = libraryClient(hub);
    standardId = (await api.get('/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard', admin)).json<{ data: { _id: string }[] }>().data[0]._id;
    await api.post('/api/v2/namespaces', { name: 'other' }, admin);
    consumer = (await makeUser(hub, admin, 'library-consumer', [{ role: 'PublishedLibraryConsumer', namespace: 'default' }])).headers;
    stranger = (await makeUser(hub, admin, 'library-stranger', [{ role: 'PublishedLibraryConsumer', namespace: 'other' }])).headers;
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await hub?.close();
  });

  it('names every §4.6 operation as its operationId, with the bearerAuth scheme', async () => {
    const document = (await api.get('/api/openapi.json', {})).json<{
      paths: Record<string, Record<string, { operationId: string; security: Record<string, unknown>[] }>>;
      components: { securitySchemes: Record<string, unknown> };
    }>();
    const operations = Object.entries(document.paths).flatMap(([path, methods]) => Object.values(methods).map((operation) => ({ path, ...operation })));
    const names = [
      'queryPublishedLibraries',
      'getPublishedLibrary',
      'queryLibraryMembers',
      'getDatasetMetadata',
      'getRecords',
      'validateFilter',
      'getDistinctValues',
      'getServerStatus',
      'restartWorker',
      'listAsyncOperations',
      'deleteAsyncOperation',
      'getAsyncOperationStatus',
      'getAsyncOperationResult',
    ];
    for (const name of names) {
      const operation = operations.find((candidate) => candidate.operationId === name);
      expect([name, operation?.security]).toEqual([name, expect.arrayContaining([{ bearerAuth: [] }])]);
    }
    expect(operations.find((operation) => operation.operationId === 'restartWorker')?.path).toBe(
      '/api/v2/libraries/published/{id}/workers/{worker-index}/restart',
    );
    expect(document.components.securitySchemes.bearerAuth).toEqual(expect.objectContaining({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }));
  });

  describe('definitions', () => {
    it('creates, reads, lists, replaces, patches and deletes', async () => {
      csvDefinition = await define({ name: 'sales', namespace: 'default', engine: 'csv', path: join(root, 'sales') });
      const read = await api.get(`${DEFINITIONS}/${csvDefinition}`, admin);
      expect(read.json()).toEqual({
        _id: csvDefinition,
        _created: expect.any(String),
        _modified: expect.any(String),
        name: 'sales',
        namespace: 'default',
        engine: 'csv',
        path: join(root, 'sales'),
        options: {},
      });
      const people = await define({
        name: 'people',
        namespace: 'default',
        engine: 'json',
        path: join(root, 'people'),
        options: { format: 'newline_delimited' },
      });
      const listed = (query: string) =>
        api.get(`${DEFINITIONS}?${query}`, admin).then((response) => response.json<{ totalCount: number; data: { name: string }[] }>());
      expect((await listed('sort=-name')).data.map((item) => item.name)).toEqual(['sales', 'people']);
      expect((await listed('filter[name][CO]=eop')).data.map((item) => item.name)).toEqual(['people']);
      expect((await listed('filter[name][SW]=sa')).data.map((item) => item.name)).toEqual(['sales']);
      expect((await listed('filter[engine][EQ]=json')).totalCount).toBe(1);
      expect((await listed('filter[namespace][IN]=other,default')).totalCount).toBe(2);
      expect((await listed('filter[namespace][EQ]=other')).totalCount).toBe(0);
      expectProblem(await api.get(`${DEFINITIONS}?filter[path][EQ]=x`, admin), 400, 'filter[path][EQ]');
      const patched = await api.patch(`${DEFINITIONS}/${people}`, [{ op: 'replace', path: '/name', value: 'persons' }], admin);
      expect([patched.statusCode, patched.json<{ name: string }>().name]).toEqual([200, 'persons']);
      const replaced = await api.put(`${DEFINITIONS}/${people}`, { name: 'people', namespace: 'default', engine: 'json', path: join(root, 'people') }, admin);
      expect([replaced.statusCode, replaced.json<{ options: unknown }>().options]).toEqual([200, {}]);
      expectProblem(
        await api.post(DEFINITIONS, { name: 'sales', namespace: 'default', engine: 'csv', path: join(root, 'sales') }, admin),
        409,
        "'sales' already",
      );
      expect((await api.del(`${DEFINITIONS}/${people}`, admin)).statusCode).toBe(200);
      expectProblem(await api.get(`${DEFINITIONS}/${people}`, admin), 404);
    });

    it('refuses paths outside HUB_LIBRARY_ROOTS, after links, and other bad input, naming the field', async () => {
      const refused = async (body: Record<string, unknown>, path: string) => {
        const response = await api.post(DEFINITIONS, { name: 'bad', namespace: 'default', engine: 'csv', ...body }, admin);
        expectProblem(response, 400);
        expect(response.json<{ errors: { path: string }[] }>().errors.map((error) => error.path)).toContain(path);
      };
      await refused({ path: `${root}-x` }, '/path');
      await refused({ path: join(root, 'escape') }, '/path');
      await refused({ path: `${root}/sales/../../etc` }, '/path');
      await refused({ path: 'relative/sales' }, '/path');
      await refused({}, '/path');
      await refused({ path: join(root, 'sales'), engine: 'excel' }, '/engine');
      await refused({ path: join(root, 'sales'), namespace: 'nowhere' }, '/namespace');
      await refused({ engine: 'postgres' }, '/options/authDomainId');
      await refused(
        { engine: 'postgres', path: join(root, 'sales'), options: { authDomainId: '6f1c4b1e-0000-4000-8000-000000000000' } },
        '/options/authDomainId',
      );
      await refused({ path: join(root, 'sales'), options: { authDomainId: 'x' } }, '/options/authDomainId');
    });

    it('needs the permissions of /LibraryDefinitions', async () => {
      expectProblem(await api.get(DEFINITIONS, consumer), 403);
      expectProblem(await api.post(DEFINITIONS, { name: 'mine', namespace: 'default', engine: 'csv', path: join(root, 'sales') }, consumer), 403);
      expectProblem(await api.get(`${DEFINITIONS}/${csvDefinition}`, consumer), 404);
    });
  });

  describe('publishing', () => {
    it('refuses what api-map §5 refuses, publishing nothing', async () => {
      const limited = await api.post('/api/v2/execution-profiles/execprofiles', { name: 'Limited', properties: { maxRunSeconds: 60 } }, admin);
      const limitedId = limited.json<{ _id: string }>()._id;
      await api.post(
        '/api/v2/execution-profiles/bindings',
        {
          executionProfileId: limitedId,
          namespaceId: (await api.get('/api/v2/namespaces?filter[name][EQ]=default', admin)).json<{ data: { _id: string }[] }>().data[0]._id,
        },
        admin,
      );
      expectProblem(await api.post(PUBLISHED, { libraryDefinitionId: csvDefinition, executionProfileId: limitedId }, admin), 400, 'maxRunSeconds');
      expectProblem(await api.post(PUBLISHED, { libraryDefinitionId: '6f1c4b1e-0000-4000-8000-000000000000', executionProfileId: standardId }, admin), 400);
      expectProblem(await api.post(PUBLISHED, { libraryDefinitionId: csvDefinition, executionProfileId: standardId, workers: 0 }, admin), 400, 'workers');
      expectProblem(await api.post(PUBLISHED, { libraryDefinitionId: csvDefinition, executionProfileId: standardId, workers: 1.5 }, admin), 400, 'workers');
      const missing = await define({ name: 'missing', namespace: 'default', engine: 'csv', path: join(root, 'not-yet') });
      const unreadable = await api.post(PUBLISHED, { libraryDefinitionId: missing, executionProfileId: standardId }, admin);
      expectProblem(unreadable, 400, 'path');
      expect(unreadable.json<{ errors: { path: string }[] }>().errors[0].path).toBe('path');
      expectProblem(await api.post(PUBLISHED, { libraryDefinitionId: csvDefinition, executionProfileId: standardId }, consumer), 403);
      expect((await hub.app.get(DataSource).query('SELECT count(*)::int AS n FROM published_libraries'))[0].n).toBe(0);
    });

    it('publishes on a pool of worker jobs that become ready', async () => {
      const published = await api.post(PUBLISHED, { libraryDefinitionId: csvDefinition, executionProfileId: standardId, workers: 2 }, admin);
      expect([published.statusCode, published.body]).toEqual([201, expect.any(String)]);
      library = published.json<{ id: string }>().id;
      expect(published.json()).toEqual({
        id: library,
        libraryDefinitionId: csvDefinition,
        name: 'sales',
        namespace: 'default',
        executionProfileId: standardId,
      });
      expect(published.headers['content-version']).toBe('2026.0.0');
      const status = await untilStatus(hub, library, admin);
      expect(status).toEqual({
        startTime: expect.any(String),
        poolSize: 2,
        failedWorkerCount: 0,
        workers: {
          '0': expect.objectContaining({ state: 'ready', startTime: expect.any(String), node: expect.any(String) }),
          '1': expect.objectContaining({ state: 'ready' }),
        },
        description: { name: 'sales', engine: 'csv', path: join(root, 'sales') },
      });
      const jobs: { task_name: string; properties: Record<string, string>; type: string; priority: number }[] = await hub.app
        .get(DataSource)
        .query(
          `SELECT task->>'name' AS task_name, properties, type, priority FROM cluster_jobs WHERE properties->>'publishedLibraryId' = $1 ORDER BY properties->>'workerIndex'`,
          [library],
        );
      expect(jobs.map((job) => [job.task_name, job.type, job.priority, job.properties.workerIndex])).toEqual([
        ['worker', 'service', 50, '0'],
        ['worker', 'service', 50, '1'],
      ]);
      expectProblem(await api.post(PUBLISHED, { libraryDefinitionId: csvDefinition, executionProfileId: standardId }, admin), 409);
      expectProblem(await api.del(`${DEFINITIONS}/${csvDefinition}`, admin), 409, 'published');
    });
  });

  describe('operations', () => {
    it('lists, gets and shows published libraries in both versions', async () => {
      const list = await api.get(`${PUBLISHED}?filter[name][ST]=SA&sort=-name`, admin);
      expect(list.json()).toEqual({
        totalCount: 1,
        data: [{ id: library, libraryDefinitionId: csvDefinition, name: 'sales', namespace: 'default', executionProfileId: standardId }],
      });
      const legacy = await api.get(`${PUBLISHED}/${library}`, admin, LEGACY);
      expect([legacy.headers['content-version'], legacy.json()]).toEqual([
        '2.3.0.461',
        { id: library, libraryDefinitionId: csvDefinition, name: 'sales', namespace: 'default' },
      ]);
      const status = await api.get(`${PUBLISHED}/${library}/status`, admin, LEGACY);
      expect(status.json()).toEqual(expect.objectContaining({ workerPoolSize: 2 }));
      expect(status.json()).not.toHaveProperty('poolSize');
      const unknown = await api.get(`${PUBLISHED}/${library}`, admin, { 'accept-version': '9.9' });
      expectProblem(unknown, 400, 'Accept-Version');
      expect(unknown.headers['content-version']).toBe('2026.0.0');
      expect((await api.get(`${PUBLISHED}/${library}/nothing`, admin)).headers['content-version']).toBe('2026.0.0');
    });

    it('lists members with their filters, sorts and paging', async () => {
      const members = (query = '') => api.get(`${PUBLISHED}/${library}/members?${query}`, consumer).then((response) => response.json());
      expect(await members()).toEqual({
        totalCount: 2,
        data: [
          { name: 'customers', type: 'DATA' },
          { name: 'orders', type: 'DATA' },
        ],
      });
      expect(await members('sort=-name&page[limit]=1')).toEqual({ totalCount: 2, data: [{ name: 'orders', type: 'DATA' }] });
      expect(await members('filter[name][ST]=ORD')).toEqual({ totalCount: 1, data: [{ name: 'orders', type: 'DATA' }] });
      expect((await members('filter[name][CO]=tom')).totalCount).toBe(1);
      expect((await members('filter[name][EQ]=orders')).totalCount).toBe(1);
      expect((await members('filter[type][IN]=VIEW,CATALOG')).totalCount).toBe(0);
      expect((await members('filter[type][EQ]=DATA&sort=type')).totalCount).toBe(2);
      expectProblem(await api.get(`${PUBLISHED}/${library}/members?filter[type][EQ]=TABLE`, consumer), 400);
    });

    it('answers metadata with exact nobs and typed fields', async () => {
      const metadata = await api.get(`${PUBLISHED}/${library}/datasets/orders`, consumer);
      expect(metadata.statusCode).toBe(200);
      expect(metadata.json()).toMatchObject({ name: 'orders', engine: 'csv', nobs: 1000, type: 'DATA' });
      expect(metadata.json<{ fields: { name: string; type: string }[] }>().fields.map((field) => [field.name, field.type])).toEqual([
        ['id', 'number'],
        ['region', 'string'],
        ['amount', 'number'],
        ['day', 'date'],
        ['paid', 'boolean'],
      ]);
      expectProblem(await api.get(`${PUBLISHED}/${library}/datasets/readme`, consumer), 404);
    });

    it('answers records: fields, orderby, offset, limit', async () => {
      const page = await records('fields=id,region&orderby=-id&limit=3', consumer);
      expect(page.json()).toEqual({
        fields: [expect.objectContaining({ name: 'id', type: 'number' }), expect.objectContaining({ name: 'region', type: 'string' })],
        values: [
          [1000, 'north'],
          [999, "o'west"],
          [998, 'east'],
        ],
      });
      expect((await records('fields=id&fields=paid&orderby=id&offset=5&limit=2')).json<{ values: unknown[] }>().values).toEqual([
        [6, true],
        [7, false],
      ]);
      expect((await records('limit=0')).json<{ values: unknown[] }>().values).toEqual([]);
      expect((await records('')).json<{ values: unknown[] }>().values).toHaveLength(1000);
      expect((await records('fields=day&orderby=day,-id&limit=1')).json<{ values: unknown[] }>().values).toEqual([['2020-01-01']]);
    });

    it.each([
      ['amount > 1485', 10],
      ["region = 'north' and amount < 30", 4],
      ["region = 'o''west'", 250],
      ['id between 10 and 19', 10],
      ['id in (1, 2, 3)', 3],
      ["region contains 'ort'", 250],
      ["region like 's%'", 250],
      ["day = '01JAN2020'd", 32],
      ["not region = 'north' and id le 8", 6],
      ["region = 'x'' or 1=1 --'", 0],
      ['id is missing', 0],
    ])('filters %s to %i records', async (filter, count) => {
      const response = await records(`fields=id&limit=100000&filter=${encodeURIComponent(filter)}`, consumer);
      expect([response.statusCode, response.json<{ values: unknown[] }>().values?.length]).toEqual([200, count]);
    });

    it('refuses bad queries with 400 and the parser’s message, which validateFilter gives as msg', async () => {
      for (const query of ['limit=100001', 'limit=-1', 'limit=1.5', 'offset=x', 'allowAsync=maybe', 'fields=nosuch', 'orderby=nosuch', 'filter=a&filter=b'])
        expectProblem(await records(query), 400);
      for (const filter of ['amount >', 'nosuch = 1', "region = 'a'; drop table x", 'lower(region) = 1', "day = '31FEB2020'd"]) {
        const refused = await records(`filter=${encodeURIComponent(filter)}`);
        expectProblem(refused, 400);
        const detail = refused.json<{ detail: string }>().detail;
        const validated = await api.text(`${PUBLISHED}/${library}/datasets/orders/validate-filter`, filter, consumer);
        expect([validated.statusCode, validated.json()]).toEqual([200, { ok: false, msg: detail }]);
      }
      expect((await api.text(`${PUBLISHED}/${library}/datasets/orders/validate-filter`, 'id > 3', consumer)).json()).toEqual({ ok: true });
      expectProblem(await api.text(`${PUBLISHED}/${library}/datasets/orders/validate-filter`, '', consumer), 400);
      expect((await api.text(`${PUBLISHED}/${library}/datasets/orders/validate-filter`, '', consumer, LEGACY)).json()).toEqual({ ok: true });
      expectProblem(await api.text(`${PUBLISHED}/${library}/datasets/readme/validate-filter`, 'id > 3', consumer), 404);
      expect((await records('fields=id')).statusCode).toBe(200);
    });

    it('answers distinct values, ascending, at most maxValues each', async () => {
      const distinct = await api.get(`${PUBLISHED}/${library}/datasets/orders/distinct-values?maxValues=2&timeout=30`, consumer);
      expect(distinct.json()).toEqual({
        id: [1, 2],
        region: ['east', 'north'],
        amount: [1.5, 3],
        day: ['2020-01-01', '2020-01-02'],
        paid: [false, true],
      });
      expectProblem(await api.get(`${PUBLISHED}/${library}/datasets/orders/distinct-values?maxValues=1.5`, consumer), 400, 'maxValues');
    });

    it('keeps others out: the list needs Read somewhere, a library elsewhere is 404, unpublish and restart need more', async () => {
      expectProblem(await api.get(PUBLISHED, (await makeUser(hub, admin, 'library-nobody', [])).headers), 403);
      expect((await api.get(PUBLISHED, stranger)).json()).toEqual({ totalCount: 0, data: [] });
      expectProblem(await records('limit=1', stranger), 404);
      expectProblem(await api.del(`${PUBLISHED}/${library}`, consumer), 403);
      expectProblem(await api.post(`${PUBLISHED}/${library}/workers/0/restart`, undefined, consumer), 403);
    });
  });

  describe('engines', () => {
    it.each([
      ['parquet', 'parquet', ['orders'], 'orders', "id > 990 and region = 'north'", 3],
      ['duckdb', 'warehouse.duckdb', ['big_orders', 'orders'], 'big_orders', 'amount >= 1200', 201],
      ['json', 'people', ['people'], 'people', 'age is missing or age > 30', 2],
      ['sas7bdat', 'sas', ['class'], 'class', 'score is missing', 1],
    ])('publishes a %s library and answers its members and records', async (engine, place, members, dataset, filter, count) => {
      const path = join(root, place);
      const definition = await define({ name: `${engine}-library`, namespace: 'default', engine, path });
      const published = await api.post(PUBLISHED, { libraryDefinitionId: definition, executionProfileId: standardId }, admin);
      expect([published.statusCode, published.body]).toEqual([201, expect.any(String)]);
      const id = published.json<{ id: string }>().id;
      await untilStatus(hub, id, admin);
      const listed = await api.get(`${PUBLISHED}/${id}/members`, consumer);
      expect(listed.json<{ data: { name: string }[] }>().data.map((member) => member.name)).toEqual(members);
      const response = await api.get(`${PUBLISHED}/${id}/datasets/${dataset}/records?limit=100000&filter=${encodeURIComponent(filter)}`, consumer);
      expect([response.statusCode, response.json<{ values: unknown[] }>().values?.length]).toEqual([200, count]);
      expect((await api.del(`${PUBLISHED}/${id}`, admin)).statusCode).toBe(200);
    });
  });

  describe('postgres', () => {
    it('publishes a schema through an auth domain: the credential reaches the worker from the hub, never its job', async () => {
      const database = new URL(hub.databaseUrl).pathname.slice(1);
      await hub.app.get(DataSource).query(`CREATE SCHEMA lib_pg; CREATE TABLE lib_pg.people (id integer, name text);
        INSERT INTO lib_pg.people VALUES (1, 'Ann'), (2, 'Bob'), (3, NULL); CREATE VIEW lib_pg.named AS SELECT * FROM lib_pg.people WHERE name IS NOT NULL`);
      const domain = (await api.post('/api/v2/authdomains/authdomains', { name: 'warehouse', namespace: 'default' }, admin)).json<{ _id: string }>()._id;
      const adminId = (await api.get('/api/v2/auth/me', admin)).json<{ _id: string }>()._id;
      const secret = 'a-password-no-reply-may-show';
      const credential = await api.post(
        '/api/v2/authdomains/credentials',
        {
          authDomainId: domain,
          principal: adminId,
          label: 'warehouse',
          type: 'Internal',
          data: { host: '127.0.0.1', port: '5432', username: 'postgres', password: secret, dbname: database },
        },
        admin,
      );
      expect([credential.statusCode, credential.body]).toEqual([201, expect.any(String)]);
      const definition = await define({ name: 'warehouse', namespace: 'default', engine: 'postgres', options: { authDomainId: domain, schema: 'lib_pg' } });
      const published = await api.post(PUBLISHED, { libraryDefinitionId: definition, executionProfileId: standardId }, admin);
      expect([published.statusCode, published.body]).toEqual([201, expect.any(String)]);
      const id = published.json<{ id: string }>().id;
      await untilStatus(hub, id, admin);
      expect((await api.get(`${PUBLISHED}/${id}/members`, consumer)).json()).toEqual({
        totalCount: 2,
        data: [
          { name: 'named', type: 'VIEW' },
          { name: 'people', type: 'DATA' },
        ],
      });
      const page = await api.get(`${PUBLISHED}/${id}/datasets/people/records?orderby=id&filter=${encodeURIComponent('name is missing or id = 1')}`, consumer);
      expect(page.json<{ values: unknown[] }>().values).toEqual([
        [1, 'Ann'],
        [3, null],
      ]);
      const jobs: { task: unknown }[] = await hub.app.get(DataSource).query(`SELECT task FROM cluster_jobs WHERE properties->>'publishedLibraryId' = $1`, [id]);
      expect(JSON.stringify(jobs)).not.toContain(secret);
      expect((await api.get(`${DEFINITIONS}/${definition}`, admin)).body).not.toContain(secret);
      expect((await api.del(`${PUBLISHED}/${id}`, admin)).statusCode).toBe(200);
    });
  });

  describe('asynchronous operations', () => {
    it('answers 202 with an operation that completes with the synchronous reply, then is reaped', async () => {
      const sync = await records('orderby=id&limit=50&filter=id%20%3E%2010');
      const accepted = await records('orderby=id&limit=50&filter=id%20%3E%2010&allowAsync=true');
      expect([accepted.statusCode, Object.keys(accepted.json())]).toEqual([202, ['operationId']]);
      const { operationId } = accepted.json<{ operationId: string }>();
      expect(accepted.headers.location).toBe(`${PUBLISHED}/${library}/operations/${operationId}`);
      expect(accepted.headers['content-version']).toBe('2026.0.0');
      const status = await poll(
        async () =>
          (await api.get(`${PUBLISHED}/${library}/operations/${operationId}`, consumer)).json<{
            state: string;
            events: { type: string }[];
            reapTime?: string;
          }>(),
        (current) => current.state === 'completed',
        'the operation to complete',
      );
      expect(status).toMatchObject({ method: 'getRecords', parameters: { name: 'orders', orderby: 'id', limit: '50' } });
      expect(status.events.map((event) => event.type)).toEqual(['queued', 'running', 'completed']);
      expect((await api.get(`${PUBLISHED}/${library}/operations/${operationId}/result`, consumer)).json()).toEqual(sync.json());
      expect(Object.keys((await api.get(`${PUBLISHED}/${library}/operations`, consumer)).json())).toEqual([operationId]);
      // Reaped once its reap time has come, not before.
      const clock = freezeClock(hub, new Date(Date.parse(status.reapTime as string) - 1000));
      const operations = hub.app.get(LibraryOperationsService);
      expect(await operations.reap()).toBe(0);
      await clock.tick(1000);
      expect(await operations.reap()).toBe(1);
      jest.restoreAllMocks();
      expectProblem(await api.get(`${PUBLISHED}/${library}/operations/${operationId}`, consumer), 404);
      expectProblem(await api.get(`${PUBLISHED}/${library}/operations/${operationId}/result`, consumer), 404);
    });

    it('cancels and deletes a running operation: {msg, id, data}, then 404', async () => {
      const accepted = await records('limit=100000&allowAsync=true&orderby=-amount');
      const { operationId } = accepted.json<{ operationId: string }>();
      const deleted = await api.del(`${PUBLISHED}/${library}/operations/${operationId}`, consumer);
      expect(deleted.json()).toEqual({ msg: expect.any(String), id: operationId, data: expect.objectContaining({ method: 'getRecords' }) });
      expectProblem(await api.del(`${PUBLISHED}/${library}/operations/${operationId}`, consumer), 404);
      expectProblem(await api.get(`${PUBLISHED}/${library}/operations/${operationId}`, consumer), 404);
    });
  });

  describe('the pool', () => {
    it('restarts one worker: a new process and startTime, failedWorkerCount unchanged', async () => {
      const before = await untilStatus(hub, library, admin);
      const [first] = await workerRows(hub, library);
      expectProblem(await api.post(`${PUBLISHED}/${library}/workers/5/restart`, undefined, admin), 404);
      expectProblem(await api.post(`${PUBLISHED}/${library}/workers/x/restart`, undefined, admin), 400);
      const restarted = await api.post(`${PUBLISHED}/${library}/workers/0/restart`, undefined, admin);
      expect([restarted.statusCode, restarted.json()]).toEqual([200, { msg: expect.stringContaining('restart') }]);
      expect(restarted.headers['content-version']).toBe('2026.0.0');
      const after = await untilStatus(
        hub,
        library,
        admin,
        (status) => status.workers['0'].state === 'ready' && status.workers['0'].startTime !== before.workers['0'].startTime,
      );
      expect(after.failedWorkerCount).toBe(0);
      expect((await workerRows(hub, library))[0].jobId).not.toBe(first.jobId);
      expect((await hub.app.get(DataSource).query('SELECT status FROM cluster_jobs WHERE id = $1', [first.jobId]))[0].status).toBe('dead');
    });

    it('replaces a worker whose process is killed, counting it in failedWorkerCount', async () => {
      const [, second] = await workerRows(hub, library);
      const pid = workerPid(second.secret as string);
      expect(pid).toBeDefined();
      process.kill(pid as number, 'SIGKILL');
      const status = await untilStatus(
        hub,
        library,
        admin,
        (current) => current.failedWorkerCount === 1 && current.workers['1'].state === 'ready',
        'worker 1 replaced',
      );
      expect(status.failedWorkerCount).toBe(1);
      expect((await workerRows(hub, library))[1].jobId).not.toBe(second.jobId);
      expect((await records('limit=1&fields=id&orderby=id')).json<{ values: unknown[] }>().values).toEqual([[1]]);
    });

    it('does not restart in a loop a worker that ends before it is ever ready: it waits for the 60 s retry', async () => {
      writeData(root, 'broken.duckdb', 'this is no DuckDB database');
      const definition = await define({ name: 'broken', namespace: 'default', engine: 'duckdb', path: join(root, 'broken.duckdb') });
      const clock = freezeClock(hub);
      const published = await api.post(PUBLISHED, { libraryDefinitionId: definition, executionProfileId: standardId }, admin);
      const id = published.json<{ id: string }>().id;
      // The status may show the worker's new state a moment before the library's count (its row is
      // kept per hub until the end's transaction has committed and the hub forgets it).
      const failed = await untilStatus(
        hub,
        id,
        admin,
        (status) => status.workers['0'].state === 'failed' && status.failedWorkerCount === 1,
        'the broken worker failed, and counted',
      );
      expect(failed.failedWorkerCount).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const jobs = () => hub.app.get(DataSource).query<unknown[]>(`SELECT id FROM cluster_jobs WHERE properties->>'publishedLibraryId' = $1`, [id]);
      expect(await jobs()).toHaveLength(1);
      await clock.tick(60_000);
      jest.restoreAllMocks();
      await untilStatus(hub, id, admin, (status) => status.failedWorkerCount === 2 && status.workers['0'].state === 'failed', 'the broken worker tried again');
      expect(await jobs()).toHaveLength(2);
      expect((await api.del(`${PUBLISHED}/${id}`, admin)).statusCode).toBe(200);
    }, 90_000);

    it('unpublishes: 200 {msg}, everything below is 404, the worker jobs end dead', async () => {
      const workers = await workerRows(hub, library);
      const response = await api.del(`${PUBLISHED}/${library}`, admin);
      expect([response.statusCode, response.json()]).toEqual([200, { msg: expect.stringContaining('unpublished') }]);
      expectProblem(await api.get(`${PUBLISHED}/${library}`, admin), 404);
      expectProblem(await records('limit=1'), 404);
      expectProblem(await api.get(`${PUBLISHED}/${library}/status`, consumer), 404);
      const statuses: { status: string }[] = await hub.app
        .get(DataSource)
        .query('SELECT status FROM cluster_jobs WHERE id = ANY($1)', [workers.map((worker) => worker.jobId)]);
      expect(statuses.map((job) => job.status)).toEqual(['dead', 'dead']);
      expect((await api.del(`${DEFINITIONS}/${csvDefinition}`, admin)).statusCode).toBe(200);
    });
  });
});

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { AuditLog } from '../../src/rbac/audit-log.js';
import { bearer, problemPaths, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

interface Entry {
  _id: string;
  _created: string;
  _modified: string;
  name: string;
  namespace: string;
  _type: 'Pipeline' | 'Folder';
  folderId?: string;
  folderPath: string;
  spec?: Record<string, unknown>;
}

interface EntryList {
  totalCount: number;
  data: Entry[];
}

type Headers = Record<string, string>;

const BASE = '/api/v2/pipelines/entries';
const UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-000000000000';
const PASSWORD = 'a-pipeline-user-password';
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SPEC = {
  nodes: [
    {
      name: 'extract',
      connections: { onSuccess: ['load'] },
      inputs: { resources: { src: { type: 'git', repo: 'file:///srv/git/etl.git', branchOrTag: 'main', depth: 1, relativePath: 'src' } } },
      task: { type: 'rawexec', command: 'python3', args: ['src/extract.py'], envVars: [{ name: 'DAY', value: 'today' }] },
      meta: { retries: 2 },
    },
    { name: 'load', outputs: { artifacts: { report: { path: 'out/report.csv', contentType: 'text/csv' } } }, task: { type: 'rawexec', command: 'true' } },
  ],
  meta: { owner: 'data team' },
  keepGoing: false,
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('pipeline entries', () => {
  let hub: TestHub;
  let auth: Headers;

  const sql = <T = unknown>(query: string, parameters: unknown[] = []): Promise<T> => hub.app.get(DataSource).query(query, parameters);
  const get = (url: string, headers: Headers = auth) => hub.inject({ method: 'GET', url, headers });
  const post = (payload: unknown, headers: Headers = auth) => hub.inject({ method: 'POST', url: BASE, headers, payload: payload as object });
  const create = async (body: object, headers: Headers = auth): Promise<Entry> => {
    const response = await post(body, headers);
    expect([response.statusCode, response.body]).toEqual([201, expect.any(String)]);
    return response.json();
  };
  const folder = (name: string, namespace: string, folderId?: string) => create({ name, namespace, _type: 'Folder', ...(folderId && { folderId }) });
  const pipeline = (name: string, namespace: string, folderId?: string) => create({ name, namespace, ...(folderId && { folderId }), spec: SPEC });
  const read = async (id: string): Promise<Entry> => {
    const response = await get(`${BASE}/${id}`);
    expect(response.statusCode).toBe(200);
    return response.json();
  };
  const put = (id: string, payload: object, headers: Headers = {}, as: Headers = auth) =>
    hub.inject({ method: 'PUT', url: `${BASE}/${id}`, headers: { ...as, ...headers }, payload });
  const patch = (id: string, operations: unknown, headers: Headers = {}, as: Headers = auth) =>
    hub.inject({
      method: 'PATCH',
      url: `${BASE}/${id}`,
      headers: { ...as, 'content-type': 'application/json-patch+json', ...headers },
      payload: JSON.stringify(operations),
    });
  const remove = (id: string, headers: Headers = {}, as: Headers = auth) =>
    hub.inject({ method: 'DELETE', url: `${BASE}/${id}`, headers: { ...as, ...headers } });
  const list = async (query: string, as: Headers = auth): Promise<EntryList> => {
    const response = await get(`${BASE}?${query}`, as);
    expect([response.statusCode, response.body]).toEqual([200, expect.any(String)]);
    return response.json();
  };
  const names = async (query: string, as: Headers = auth): Promise<string[]> => (await list(query, as)).data.map((entry) => entry.name);
  const expectProblem = (response: InjectResponse, status: number, detail?: string) => {
    expect([response.statusCode, response.headers['content-type']]).toEqual([status, 'application/problem+json; charset=utf-8']);
    if (detail) expect(response.json().detail).toContain(detail);
  };

  const createNamespace = async (name: string): Promise<string> => {
    const response = await hub.inject({ method: 'POST', url: '/api/v2/namespaces', headers: auth, payload: { name } });
    expect(response.statusCode).toBe(201);
    return response.json()._id;
  };

  beforeAll(async () => {
    hub = await startTestHub();
    auth = bearer(hub.adminToken);
    for (const name of ['pe-one', 'pe-two', 'pe-list', 'pe-tree', 'pe-other']) await createNamespace(name);
  });
  afterAll(() => hub.close());

  describe('create', () => {
    it('returns 201 with the pipeline, an ETag and its Location, and reads back the same', async () => {
      const response = await post({ name: 'nightly-etl', namespace: 'pe-one', _type: 'Pipeline', spec: SPEC });
      expect(response.statusCode).toBe(201);
      const body: Entry = response.json();
      expect(body).toEqual({
        _id: expect.any(String),
        _created: expect.stringMatching(ISO_DATE_TIME),
        _modified: body._created,
        name: 'nightly-etl',
        namespace: 'pe-one',
        _type: 'Pipeline',
        folderPath: '/',
        spec: SPEC,
      });
      expect('folderId' in body).toBe(false);
      expect(response.headers.etag).toBe('"1"');
      expect(response.headers.location).toBe(`${BASE}/${body._id}`);
      const readBack = await get(`${BASE}/${body._id}`);
      expect([readBack.statusCode, readBack.headers.etag, readBack.json()]).toEqual([200, '"1"', body]);
    });

    it('makes a Pipeline when _type is absent, which may have no spec, and a folder without one', async () => {
      expect(await create({ name: 'draft', namespace: 'pe-one' })).toMatchObject({ _type: 'Pipeline', folderPath: '/' });
      const created = await folder('reports', 'pe-one');
      expect(created).toEqual({ ...created, _type: 'Folder', folderPath: '/', namespace: 'pe-one' });
      expect('spec' in created).toBe(false);
    });

    it('saves a pipeline that validate reports problems of (a draft)', async () => {
      const draft = await create({ name: 'broken-draft', namespace: 'pe-one', spec: { nodes: [{ connections: { onSuccess: ['nowhere'] } }] } });
      expect(draft.spec).toEqual({ nodes: [{ connections: { onSuccess: ['nowhere'] } }] });
    });

    it('ignores server-owned fields and folderPath', async () => {
      const body = await create({
        name: 'owned',
        namespace: 'pe-one',
        _id: UNKNOWN_ID,
        _created: '2000-01-01T00:00:00.000Z',
        _modified: 'x',
        folderPath: '/elsewhere',
      });
      expect([body._id === UNKNOWN_ID, body._created.startsWith('2000'), body.folderPath]).toEqual([false, false, '/']);
    });

    it.each([
      ['no name', { namespace: 'pe-one' }, '/name'],
      ['an empty name', { name: '', namespace: 'pe-one' }, '/name'],
      ['a name with a slash', { name: 'a/b', namespace: 'pe-one' }, '/name'],
      ['a name of 129 characters', { name: 'a'.repeat(129), namespace: 'pe-one' }, '/name'],
      ['no namespace', { name: 'x' }, '/namespace'],
      ['a namespace that is a number', { name: 'x', namespace: 7 }, '/namespace'],
      ['an unknown _type', { name: 'x', namespace: 'pe-one', _type: 'Job' }, '/_type'],
      ['a folderId that is not a UUID', { name: 'x', namespace: 'pe-one', folderId: 'top' }, '/folderId'],
      ['a spec that is not an object', { name: 'x', namespace: 'pe-one', spec: [] }, '/spec'],
      ['nodes that are not an array', { name: 'x', namespace: 'pe-one', spec: { nodes: {} } }, '/spec/nodes'],
      ['a node name that is not a string', { name: 'x', namespace: 'pe-one', spec: { nodes: [{ name: 5 }] } }, '/spec/nodes/0/name'],
      ['a null node name', { name: 'x', namespace: 'pe-one', spec: { nodes: [{ name: null }] } }, '/spec/nodes/0/name'],
      [
        'a task of another type',
        { name: 'x', namespace: 'pe-one', spec: { nodes: [{ name: 'a', task: { type: 'docker', command: 'x' } }] } },
        '/spec/nodes/0/task/type',
      ],
      [
        'a connection that is not a list',
        { name: 'x', namespace: 'pe-one', spec: { nodes: [{ name: 'a', connections: { onSuccess: 'b' } }] } },
        '/spec/nodes/0/connections/onSuccess',
      ],
      [
        'an unknown connection kind',
        { name: 'x', namespace: 'pe-one', spec: { nodes: [{ name: 'a', connections: { onMaybe: ['b'] } }] } },
        '/spec/nodes/0/connections/onMaybe',
      ],
      [
        'an input that is not git',
        { name: 'x', namespace: 'pe-one', spec: { nodes: [{ name: 'a', inputs: { resources: { src: { type: 'svn', repo: 'x' } } } }] } },
        '/spec/nodes/0/inputs/resources',
      ],
      [
        'an input with an unknown property',
        { name: 'x', namespace: 'pe-one', spec: { nodes: [{ name: 'a', inputs: { resources: { src: { type: 'git', repo: 'x', token: 's' } } } }] } },
        '/spec/nodes/0/inputs/resources',
      ],
      [
        'an input with a null property',
        { name: 'x', namespace: 'pe-one', spec: { nodes: [{ name: 'a', inputs: { resources: { src: { type: 'git', repo: null } } } }] } },
        '/spec/nodes/0/inputs/resources',
      ],
      [
        'an artifact without a path',
        { name: 'x', namespace: 'pe-one', spec: { nodes: [{ name: 'a', outputs: { artifacts: { r: {} } } }] } },
        '/spec/nodes/0/outputs/artifacts',
      ],
      ['a keepGoing that is not a boolean', { name: 'x', namespace: 'pe-one', spec: { keepGoing: 'yes' } }, '/spec/keepGoing'],
      ['an unknown property', { name: 'x', namespace: 'pe-one', owner: 'me' }, '/owner'],
    ])('refuses %s with 400 naming the field', async (_case, payload, path) => {
      const response = await post(payload);
      expectProblem(response, 400);
      expect(problemPaths(response)).toContain(path);
    });

    it('refuses a folder with a spec, an unknown namespace and a folderId that is no folder of the namespace, creating nothing', async () => {
      const withSpec = await post({ name: 'spec-folder', namespace: 'pe-one', _type: 'Folder', spec: SPEC });
      expectProblem(withSpec, 400, 'A folder carries no spec');
      expect(problemPaths(withSpec)).toEqual(['/spec']);
      const nowhere = await post({ name: 'nowhere', namespace: 'no-such-namespace' });
      expectProblem(nowhere, 400, "No namespace is named 'no-such-namespace'");
      expect(problemPaths(nowhere)).toEqual(['/namespace']);
      expectProblem(await post({ name: 'in-unknown', namespace: 'pe-one', folderId: UNKNOWN_ID }), 400, 'is in the entry');
      const aPipeline = await pipeline('not-a-folder', 'pe-one');
      expectProblem(await post({ name: 'in-pipeline', namespace: 'pe-one', folderId: aPipeline._id }), 400, 'is a pipeline, not a folder');
      const elsewhere = await folder('elsewhere', 'pe-two');
      expectProblem(await post({ name: 'cross', namespace: 'pe-one', folderId: elsewhere._id }), 400, 'is in the entry');
      expect([await names('filter[name][EQ]=spec-folder'), await names('filter[name][EQ]=nowhere')]).toEqual([[], []]);
      expect((await list('filter[name][EQ]=in-unknown')).totalCount).toBe(0);
    });

    it('refuses a duplicate name in the same folder of a namespace, ignoring case, with 409; takes it elsewhere', async () => {
      await pipeline('Shared', 'pe-one');
      expectProblem(await post({ name: 'sHARED', namespace: 'pe-one', _type: 'Folder' }), 409, "An entry named 'sHARED' already exists");
      const inside = await folder('holder', 'pe-one');
      expect((await pipeline('shared', 'pe-one', inside._id)).folderPath).toBe('/holder');
      expect((await pipeline('shared', 'pe-two')).namespace).toBe('pe-two');
      expectProblem(await post({ name: 'SHARED', namespace: 'pe-one', folderId: inside._id }), 409);
    });
  });

  describe('get', () => {
    it('answers 404 for an unknown id and for an id that is not a UUID, and 304 to a current ETag', async () => {
      expectProblem(await get(`${BASE}/${UNKNOWN_ID}`), 404);
      expectProblem(await get(`${BASE}/not-a-uuid`), 404);
      const entry = await pipeline('cached', 'pe-one');
      expect((await get(`${BASE}/${entry._id}`, { ...auth, 'if-none-match': '"1"' })).statusCode).toBe(304);
      expect((await get(`${BASE}/${entry._id.toUpperCase()}`)).json()).toEqual(entry);
    });

    it('keeps only the fields named in fields, or drops those in excludeFields', async () => {
      const container = await folder('projected', 'pe-one');
      const entry = await pipeline('projected-pipeline', 'pe-one', container._id);
      expect((await get(`${BASE}/${entry._id}?fields=name,folderPath,folderId`)).json()).toEqual({
        name: 'projected-pipeline',
        folderPath: '/projected',
        folderId: container._id,
      });
      expect((await get(`${BASE}/${entry._id}?fields=_type&fields=_id`)).json()).toEqual({ _id: entry._id, _type: 'Pipeline' });
      const excluded = (await get(`${BASE}/${entry._id}?excludeFields=_created,_modified,folderId`)).json();
      expect(excluded).toEqual({ _id: entry._id, name: entry.name, namespace: 'pe-one', _type: 'Pipeline', folderPath: '/projected', spec: SPEC });
      const unknown = await get(`${BASE}/${entry._id}?fields=spec`);
      expectProblem(unknown, 400, 'unknown field spec');
      expect(problemPaths(unknown)).toEqual(['fields']);
      expectProblem(await get(`${BASE}/${entry._id}?fields=name&excludeFields=_id`), 400);
    });
  });

  describe('replace', () => {
    it('replaces the client fields, ignores server-owned ones and bumps the ETag and _modified', async () => {
      const entry = await pipeline('to-replace', 'pe-one');
      await sleep(5);
      const spec = { nodes: [{ name: 'only', task: { type: 'rawexec', command: 'true' } }] };
      const response = await put(entry._id, { ...entry, _id: UNKNOWN_ID, _created: 'x', name: 'replaced', spec }, { 'if-match': '"1"' });
      expect([response.statusCode, response.headers.etag]).toEqual([200, '"2"']);
      const body: Entry = response.json();
      expect(body).toEqual({ ...entry, _modified: body._modified, name: 'replaced', spec });
      expect(body._modified > entry._modified).toBe(true);
      expect(await read(entry._id)).toEqual(body);
    });

    it('keeps the type when _type is absent, drops a spec not given, and answers 409 to a change of _type', async () => {
      const entry = await pipeline('keeps-type', 'pe-one');
      const replaced = await put(entry._id, { name: 'keeps-type', namespace: 'pe-one' });
      expect(replaced.json()).toMatchObject({ _type: 'Pipeline' });
      expect('spec' in replaced.json()).toBe(false);
      expectProblem(await put(entry._id, { name: 'keeps-type', namespace: 'pe-one', _type: 'Folder' }), 409, 'an entry keeps its _type');
      const container = await folder('stays-folder', 'pe-one');
      expectProblem(await put(container._id, { name: 'stays-folder', namespace: 'pe-one', _type: 'Pipeline', spec: SPEC }), 409);
      expectProblem(await put(container._id, { name: 'stays-folder', namespace: 'pe-one', spec: SPEC }), 400, 'A folder carries no spec');
      expect(await read(container._id)).toEqual(container);
    });

    it('answers 412 on another version, 400 on a bad body and 404 on an unknown id, changing nothing', async () => {
      const entry = await pipeline('guarded', 'pe-one');
      expectProblem(await put(entry._id, { name: 'guarded-2', namespace: 'pe-one' }, { 'if-match': '"7"' }), 412);
      const invalid = await put(entry._id, { name: '', namespace: 'pe-one' });
      expectProblem(invalid, 400);
      expect(problemPaths(invalid)).toEqual(['/name']);
      expect(problemPaths(await put(entry._id, { name: 'guarded', namespace: 'no-such-namespace' }))).toEqual(['/namespace']);
      expectProblem(await put(UNKNOWN_ID, { name: 'x', namespace: 'pe-one' }), 404);
      expect(await read(entry._id)).toEqual(entry);
    });

    it('answers 409 for a name taken in the folder, and allows a change of case of its own name', async () => {
      await pipeline('Taken', 'pe-one');
      const entry = await pipeline('renamed-later', 'pe-one');
      expectProblem(await put(entry._id, { name: 'tAKEN', namespace: 'pe-one' }), 409, "An entry named 'tAKEN' already exists");
      expect((await put(entry._id, { name: 'Renamed-Later', namespace: 'pe-one' })).json().name).toBe('Renamed-Later');
    });

    it('moves a pipeline to another namespace, into a folder of that namespace only', async () => {
      const entry = await pipeline('travels', 'pe-one');
      const target = await folder('arrivals', 'pe-two');
      expectProblem(await put(entry._id, { name: 'travels', namespace: 'pe-one', folderId: target._id }), 400, 'is in the entry');
      const moved = await put(entry._id, { name: 'travels', namespace: 'pe-two', folderId: target._id, spec: SPEC });
      expect(moved.json()).toMatchObject({ namespace: 'pe-two', folderId: target._id, folderPath: '/arrivals' });
    });
  });

  describe('patch', () => {
    it('applies add, replace and remove, ignoring _id, _created, _modified and folderPath, and bumps the ETag', async () => {
      const entry = await pipeline('to-patch', 'pe-one');
      const patched = await patch(entry._id, [
        { op: 'replace', path: '/spec/nodes/1/task/command', value: 'false' },
        { op: 'add', path: '/spec/nodes/0/connections/onError', value: ['load'] },
        { op: 'remove', path: '/spec/meta' },
        { op: 'replace', path: '/_id', value: UNKNOWN_ID },
        { op: 'replace', path: '/_created', value: '2000-01-01T00:00:00.000Z' },
        { op: 'remove', path: '/_modified' },
        { op: 'replace', path: '/folderPath', value: '/nowhere' },
      ]);
      expect([patched.statusCode, patched.headers.etag]).toEqual([200, '"2"']);
      const body: Entry = patched.json();
      expect(body).toMatchObject({ _id: entry._id, _created: entry._created, folderPath: '/' });
      expect(body.spec).toEqual({
        nodes: [
          { ...SPEC.nodes[0], connections: { onSuccess: ['load'], onError: ['load'] } },
          { ...SPEC.nodes[1], task: { type: 'rawexec', command: 'false' } },
        ],
        keepGoing: false,
      });
      expect(await read(entry._id)).toEqual(body);
    });

    it('answers 409 to a change of _type, 400 to a result a replace would refuse, and 400 to an impossible patch', async () => {
      const entry = await pipeline('patch-type', 'pe-one');
      expectProblem(await patch(entry._id, [{ op: 'replace', path: '/_type', value: 'Folder' }]), 409, 'an entry keeps its _type');
      expect(problemPaths(await patch(entry._id, [{ op: 'remove', path: '/name' }]))).toEqual(['/name']);
      expectProblem(await patch(entry._id, [{ op: 'replace', path: '/spec/nodes/9/name', value: 'x' }]), 400);
      const container = await folder('patch-folder', 'pe-one');
      expectProblem(await patch(container._id, [{ op: 'add', path: '/spec', value: { nodes: [] } }]), 400, 'A folder carries no spec');
      expect(await read(entry._id)).toEqual(entry);
    });
  });

  describe('folders', () => {
    it('gives each entry the path of the folder that holds it, which follows renames and moves of any folder above', async () => {
      const a = await folder('a', 'pe-tree');
      const b = await folder('b', 'pe-tree', a._id);
      const c = await folder('c', 'pe-tree', b._id);
      const deep = await pipeline('deep', 'pe-tree', c._id);
      const inB = await pipeline('in-b', 'pe-tree', b._id);
      expect([b.folderPath, c.folderPath, deep.folderPath, inB.folderPath]).toEqual(['/a', '/a/b', '/a/b/c', '/a/b']);
      expect(deep.folderId).toBe(c._id);

      const renamed = await patch(a._id, [{ op: 'replace', path: '/name', value: 'root' }]);
      expect(renamed.json()).toMatchObject({ name: 'root', folderPath: '/' });
      expect((await read(deep._id)).folderPath).toBe('/root/b/c');
      expect((await read(inB._id)).folderPath).toBe('/root/b');
      expect((await get(`${BASE}/${deep._id}`, { ...auth, 'if-none-match': '"1"' })).statusCode).toBe(200);

      const movedUp = await put(b._id, { name: 'b', namespace: 'pe-tree' });
      expect(movedUp.json()).toMatchObject({ folderPath: '/' });
      expect('folderId' in movedUp.json()).toBe(false);
      expect((await read(deep._id)).folderPath).toBe('/b/c');
      expect((await read(c._id)).folderPath).toBe('/b');

      const movedDown = await patch(b._id, [{ op: 'add', path: '/folderId', value: a._id }]);
      expect(movedDown.json()).toMatchObject({ folderId: a._id, folderPath: '/root' });
      expect((await read(deep._id)).folderPath).toBe('/root/b/c');
      expect(await names(`filter[namespace][EQ]=pe-tree&filter[folderPath][EQ]=/root/b&sort=name`)).toEqual(['c', 'in-b']);
      expect(await names(`filter[namespace][EQ]=pe-tree&filter[folderPath][EQ]=/`)).toEqual(['root']);
    });

    it('refuses a folder moving into itself or below itself with 400, changing nothing', async () => {
      const top = await folder('top', 'pe-tree');
      const middle = await folder('middle', 'pe-tree', top._id);
      const bottom = await folder('bottom', 'pe-tree', middle._id);
      const itself = await patch(top._id, [{ op: 'add', path: '/folderId', value: top._id }]);
      expectProblem(itself, 400, 'A folder cannot move into itself or below itself');
      expect(problemPaths(itself)).toEqual(['/folderId']);
      expectProblem(await put(top._id, { name: 'top', namespace: 'pe-tree', folderId: bottom._id }), 400, 'below itself');
      expectProblem(await put(middle._id, { name: 'middle', namespace: 'pe-tree', folderId: middle._id }), 400, 'into itself');
      expect(await read(top._id)).toEqual(top);
      expect((await read(bottom._id)).folderPath).toBe('/top/middle');
    });

    it('keeps the tree whole under concurrent moves and renames: no cycle, no stale path', async () => {
      const left = await folder('race-left', 'pe-tree');
      const right = await folder('race-right', 'pe-tree');
      const [leftInRight, rightInLeft] = await Promise.all([
        patch(left._id, [{ op: 'add', path: '/folderId', value: right._id }]),
        patch(right._id, [{ op: 'add', path: '/folderId', value: left._id }]),
      ]);
      expect([leftInRight.statusCode, rightInLeft.statusCode].sort()).toEqual([200, 400]);
      const tops = await names('filter[namespace][EQ]=pe-tree&filter[name][ST]=race-&filter[folderPath][EQ]=/');
      expect(tops).toHaveLength(1);

      const renamed = await folder('race-renamed', 'pe-tree');
      const [, ...created] = await Promise.all([
        patch(renamed._id, [{ op: 'replace', path: '/name', value: 'race-renamed-2' }]),
        ...['one', 'two', 'three'].map((name) => post({ name, namespace: 'pe-tree', folderId: renamed._id })),
      ]);
      for (const response of created) expect(response.statusCode).toBe(201);
      const doomed = await folder('race-doomed', 'pe-tree');
      const [deleted, inside] = await Promise.all([remove(doomed._id), post({ name: 'late', namespace: 'pe-tree', folderId: doomed._id })]);
      // Either the folder went first (and the create found no folder) or the entry did (and the folder was not empty).
      expect([
        [200, 400],
        [409, 201],
      ]).toContainEqual([deleted.statusCode, inside.statusCode]);
      expect((await list(`filter[folderId][EQ]=${renamed._id}`)).data.map((entry) => entry.folderPath)).toEqual([
        '/race-renamed-2',
        '/race-renamed-2',
        '/race-renamed-2',
      ]);
    });

    it('moves a pipeline between folders and refuses a name taken in its new folder', async () => {
      const left = await folder('left', 'pe-tree');
      const right = await folder('right', 'pe-tree');
      const entry = await pipeline('mover', 'pe-tree', left._id);
      await pipeline('MOVER', 'pe-tree', right._id);
      expectProblem(await patch(entry._id, [{ op: 'replace', path: '/folderId', value: right._id }]), 409);
      expect((await patch(entry._id, [{ op: 'remove', path: '/folderId' }])).json()).toMatchObject({ folderPath: '/' });
    });

    it('refuses to delete a folder that holds entries, or to move it to another namespace, with 409', async () => {
      const full = await folder('full', 'pe-tree');
      const inside = await pipeline('inside', 'pe-tree', full._id);
      expectProblem(await remove(full._id), 409, "Folder 'full' still holds entries");
      expectProblem(await put(full._id, { name: 'full', namespace: 'pe-other' }), 409, 'only when empty');
      expect((await remove(inside._id)).json()).toEqual({ msg: "Pipeline 'inside' deleted" });
      expect((await put(full._id, { name: 'full', namespace: 'pe-other' })).json()).toMatchObject({ namespace: 'pe-other', folderPath: '/' });
      expect((await remove(full._id)).json()).toEqual({ msg: "Folder 'full' deleted" });
      expectProblem(await get(`${BASE}/${full._id}`), 404);
    });
  });

  describe('delete', () => {
    it('deletes a pipeline, honours If-Match and answers 404 afterwards', async () => {
      const entry = await pipeline('doomed', 'pe-one');
      expectProblem(await remove(entry._id, { 'if-match': '"9"' }), 412);
      expect((await remove(entry._id, { 'if-match': '"1"' })).statusCode).toBe(200);
      expectProblem(await remove(entry._id), 404);
    });

    it('keeps a namespace that holds entries from being deleted', async () => {
      const id = await createNamespace('pe-held');
      const entry = await pipeline('holding', 'pe-held');
      const refused = await hub.inject({ method: 'DELETE', url: `/api/v2/namespaces/${id}`, headers: auth });
      expectProblem(refused, 409, '1 pipeline entries');
      await remove(entry._id);
      expect((await hub.inject({ method: 'DELETE', url: `/api/v2/namespaces/${id}`, headers: auth })).statusCode).toBe(200);
    });
  });

  describe('query', () => {
    let reports: Entry;
    let daily: Entry;
    const made: Entry[] = [];

    beforeAll(async () => {
      reports = await folder('Reports', 'pe-list');
      made.push(reports);
      for (const [name, folderId] of [
        ['alpha', undefined],
        ['Beta', reports._id],
        ['gamma-report', reports._id],
        ['delta', undefined],
      ] as const) {
        await sleep(3);
        made.push(await pipeline(name, 'pe-list', folderId));
      }
      await sleep(3);
      daily = await folder('daily', 'pe-list', reports._id);
      made.push(daily);
      await sleep(3);
      made.push(await pipeline('alpha', 'pe-other'));
      await sleep(3);
      // Modified last: the first entry made.
      await patch(made[1]._id, [{ op: 'replace', path: '/spec/keepGoing', value: true }]);
    });

    const inList = 'filter[namespace][EQ]=pe-list';

    it('lists the namespace sorted by name (ignoring case) by default, with the total', async () => {
      const page = await list(inList);
      expect(page.totalCount).toBe(6);
      expect(page.data.map((entry) => entry.name)).toEqual(['alpha', 'Beta', 'daily', 'delta', 'gamma-report', 'Reports']);
      expect(page.data[0]).toEqual(await read(made[1]._id));
    });

    it.each([
      ['name EQ', 'filter[name][EQ]=Beta', ['Beta']],
      ['name CO, ignoring case', 'filter[name][CO]=REPORT', ['gamma-report', 'Reports']],
      ['name ST, ignoring case', 'filter[name][ST]=d', ['daily', 'delta']],
      ['_type EQ Folder', 'filter[_type][EQ]=Folder', ['daily', 'Reports']],
      ['_type EQ Pipeline', 'filter[_type][EQ]=Pipeline', ['alpha', 'Beta', 'delta', 'gamma-report']],
      ['folderPath EQ /', 'filter[folderPath][EQ]=/', ['alpha', 'delta', 'Reports']],
      ['folderPath EQ /Reports', 'filter[folderPath][EQ]=/Reports', ['Beta', 'daily', 'gamma-report']],
    ])('filters by %s', async (_case, query, expected) => {
      const page = await list(`${inList}&${query}`);
      expect([page.data.map((entry) => entry.name), page.totalCount]).toEqual([expected, expected.length]);
    });

    it('filters by folderId, _id IN and namespace IN', async () => {
      expect(await names(`filter[folderId][EQ]=${reports._id}`)).toEqual(['Beta', 'daily', 'gamma-report']);
      expect(await names(`filter[_id][IN]=${made[1]._id},${daily._id}`)).toEqual(['alpha', 'daily']);
      expect(await names(`filter[_id][IN]=${made[1]._id}&filter[_id][IN]=${made[6]._id}`)).toEqual(['alpha', 'alpha']);
      const both = await list('filter[namespace][IN]=pe-list,PE-OTHER&filter[name][EQ]=alpha');
      expect([both.totalCount, both.data.map((entry) => entry.namespace).sort()]).toEqual([2, ['pe-list', 'pe-other']]);
      expect(await list('filter[namespace][EQ]=no-such-namespace')).toEqual({ totalCount: 0, data: [] });
    });

    it('filters by _created and _modified LT and GT, exactly at the values the API returned', async () => {
      const [, first, second, third] = made;
      expect(await names(`${inList}&filter[_created][GT]=${first._created}&filter[_created][LT]=${third._created}`)).toEqual(['Beta']);
      expect(await names(`${inList}&filter[_created][LT]=${second._created}&sort=_created`)).toEqual(['Reports', 'alpha']);
      const latest = (await read(first._id))._modified;
      expect(await names(`${inList}&filter[_modified][GT]=${daily._modified}`)).toEqual(['alpha']);
      expect(await names(`${inList}&filter[_modified][LT]=${latest}&filter[_type][EQ]=Folder`)).toEqual(['daily', 'Reports']);
    });

    it.each([
      ['name', ['alpha', 'Beta', 'daily', 'delta', 'gamma-report', 'Reports']],
      ['-name', ['Reports', 'gamma-report', 'delta', 'daily', 'Beta', 'alpha']],
      ['_created', ['Reports', 'alpha', 'Beta', 'gamma-report', 'delta', 'daily']],
      ['-_created', ['daily', 'delta', 'gamma-report', 'Beta', 'alpha', 'Reports']],
      ['_modified', ['Reports', 'Beta', 'gamma-report', 'delta', 'daily', 'alpha']],
      ['-_modified', ['alpha', 'daily', 'delta', 'gamma-report', 'Beta', 'Reports']],
    ])('sorts by %s', async (sort, expected) => {
      expect(await names(`${inList}&sort=${sort}`)).toEqual(expected);
    });

    it('pages, the total counting every match', async () => {
      const page = await list(`${inList}&sort=name&page[offset]=2&page[limit]=2`);
      expect([page.totalCount, page.data.map((entry) => entry.name)]).toEqual([6, ['daily', 'delta']]);
      expect((await list(`${inList}&page[offset]=100`)).data).toEqual([]);
    });

    it('keeps its total exact through creates, moves between namespaces and deletes', async () => {
      const total = async (namespace: string, type = '') => (await list(`filter[namespace][EQ]=${namespace}${type}`)).totalCount;
      const other = await total('pe-other');
      const passing = await pipeline('passing', 'pe-list');
      expect([await total('pe-list'), await total('pe-list', '&filter[_type][EQ]=Pipeline')]).toEqual([7, 5]);
      await put(passing._id, { name: 'passing', namespace: 'pe-other' });
      expect([await total('pe-list'), await total('pe-other')]).toEqual([6, other + 1]);
      await remove(passing._id);
      expect([await total('pe-list'), await total('pe-other'), await total('pe-list', '&filter[_type][EQ]=Folder')]).toEqual([6, other, 2]);
      const [{ n }]: { n: string }[] = await sql(
        "SELECT coalesce(sum(n), 0) AS n FROM pipeline_entry_counts c JOIN namespaces s ON s.id = c.namespace_id WHERE s.name = 'pe-list'",
      );
      expect(Number(n)).toBe(6);
    });

    it.each([
      ['an unknown field', 'filter[owner][EQ]=x', 'filter[owner][EQ]'],
      ['an operator the field does not take', 'filter[folderPath][CO]=x', 'filter[folderPath][CO]'],
      ['a _type outside the enumeration', 'filter[_type][EQ]=Job', 'filter[_type][EQ]'],
      ['a folderId that is not a UUID', 'filter[folderId][EQ]=top', 'filter[folderId][EQ]'],
      ['a date that is not one', 'filter[_created][LT]=yesterday', 'filter[_created][LT]'],
      ['an unknown sort', 'sort=folderPath', 'sort'],
      ['a limit over 1000', 'page[limit]=1001', 'page[limit]'],
      ['a projection, which the list does not take', 'fields=name', 'fields'],
    ])('refuses %s with 400 naming the parameter', async (_case, query, path) => {
      const response = await get(`${BASE}?${query}`);
      expectProblem(response, 400);
      expect(problemPaths(response)).toEqual([path]);
    });
  });

  describe('access', () => {
    let developer: { id: string; as: Headers };
    let reader: { id: string; as: Headers };
    let inOne: Entry;
    let inTwo: Entry;

    const role = async (name: string): Promise<string> => {
      const response = await get(`/api/v2/rbac/roles?filter[name][EQ]=${name}`);
      return response.json().data[0].id;
    };
    const userIn = async (userName: string, roleName: string, namespace: string) => {
      const created = await hub.inject({ method: 'POST', url: '/api/v2/auth/users', headers: auth, payload: { userName, password: PASSWORD } });
      expect(created.statusCode).toBe(201);
      const id = created.json()._id;
      const bound = await hub.inject({
        method: 'POST',
        url: '/api/v2/rbac/rolebindings',
        headers: auth,
        payload: { role: await role(roleName), principal: id, namespace },
      });
      expect(bound.statusCode).toBe(201);
      return { id, as: bearer(await hub.login(userName, PASSWORD)) };
    };

    beforeAll(async () => {
      await createNamespace('pe-acl-one');
      await createNamespace('pe-acl-two');
      inOne = await pipeline('acl-pipeline', 'pe-acl-one');
      inTwo = await pipeline('acl-pipeline', 'pe-acl-two');
      developer = await userIn('pe-developer', 'PipelineDeveloper', 'pe-acl-one');
      reader = await userIn('pe-reader', 'NamespaceUser', 'pe-acl-one');
    });

    it('lets a PipelineDeveloper write entries in their namespace, and lists only that namespace', async () => {
      const made = await create({ name: 'dev-made', namespace: 'pe-acl-one', _type: 'Folder' }, developer.as);
      const inside = await create({ name: 'dev-inside', namespace: 'pe-acl-one', folderId: made._id, spec: SPEC }, developer.as);
      expect((await patch(inside._id, [{ op: 'replace', path: '/name', value: 'dev-renamed' }], {}, developer.as)).statusCode).toBe(200);
      expect((await remove(inside._id, {}, developer.as)).statusCode).toBe(200);
      const page = await list('filter[name][ST]=acl', developer.as);
      expect(page).toEqual({ totalCount: 1, data: [expect.objectContaining({ _id: inOne._id })] });
      expect((await list('filter[namespace][EQ]=pe-acl-two', developer.as)).totalCount).toBe(0);
      const validated = await hub.inject({ method: 'POST', url: `${BASE}/validate`, headers: developer.as, payload: { namespace: 'pe-acl-one', spec: SPEC } });
      expect(validated.json()).toEqual({ errors: [] });
    });

    it('denies what the role does not give, and hides entries of other namespaces as not found', async () => {
      expectProblem(await post({ name: 'dev-elsewhere', namespace: 'pe-acl-two' }, developer.as), 403, 'Not allowed: Create on /Pipelines');
      expectProblem(await get(`${BASE}/${inTwo._id}`, developer.as), 404);
      expectProblem(await put(inTwo._id, { name: 'x', namespace: 'pe-acl-two' }, {}, developer.as), 404);
      expectProblem(await put(inOne._id, { name: 'acl-pipeline', namespace: 'pe-acl-two' }, {}, developer.as), 403, 'Create on /Pipelines');
      expect((await read(inOne._id)).namespace).toBe('pe-acl-one');
      expect((await get(`${BASE}/${inOne._id}`, reader.as)).statusCode).toBe(200);
      expectProblem(await patch(inOne._id, [{ op: 'replace', path: '/name', value: 'x' }], {}, reader.as), 403, 'Not allowed: Update on /Pipelines/');
      expectProblem(await remove(inOne._id, {}, reader.as), 403);
      expectProblem(await post({ name: 'reader-made', namespace: 'pe-acl-one' }, reader.as), 403);
      const validated = await hub.inject({ method: 'POST', url: `${BASE}/validate`, headers: reader.as, payload: { namespace: 'pe-acl-two', spec: SPEC } });
      expectProblem(validated, 403);
    });

    it('refuses the list to a user who may read entries nowhere, and audits every decision', async () => {
      const created = await hub.inject({ method: 'POST', url: '/api/v2/auth/users', headers: auth, payload: { userName: 'pe-nobody', password: PASSWORD } });
      const nobody = bearer(await hub.login('pe-nobody', PASSWORD));
      expectProblem(await get(BASE, nobody), 403, 'Not allowed: Read on /Pipelines in any namespace');
      await list('', developer.as);
      await hub.app.get(AuditLog).flush();
      const audit = async (query: string) => (await get(`/api/v2/rbac/audit?${query}`)).json<{ decision: string; purpose: string; object: string }[]>();
      const denied = await audit(`filter[userId][EQ]=${created.json()._id}&filter[object][EQ]=/Pipelines`);
      expect(denied).toEqual([expect.objectContaining({ decision: 'Deny', purpose: 'Request' })]);
      const narrowed = await audit(`filter[userId][EQ]=${developer.id}&filter[object][EQ]=/Pipelines&filter[purpose][EQ]=Filter`);
      expect(narrowed.length).toBeGreaterThan(0);
    });

    it('leaves out of the list the entries an item-level Deny hides', async () => {
      const hidden = await pipeline('acl-hidden', 'pe-acl-one');
      const deny = await hub.inject({
        method: 'POST',
        url: '/api/v2/rbac/roles',
        headers: auth,
        payload: { name: 'pe-deny-one', permissions: [{ object: `/Pipelines/${hidden._id}`, objectMatcher: 'simple', actions: ['Read'], effect: 'Deny' }] },
      });
      await hub.inject({
        method: 'POST',
        url: '/api/v2/rbac/rolebindings',
        headers: auth,
        payload: { role: deny.json().id, principal: developer.id, namespace: 'pe-acl-one' },
      });
      const fresh = bearer(await hub.login('pe-developer', PASSWORD));
      expect(await names('filter[name][ST]=acl', fresh)).toEqual(['acl-pipeline']);
      expect((await list('filter[name][ST]=acl', fresh)).totalCount).toBe(1);
      expectProblem(await get(`${BASE}/${hidden._id}`, fresh), 404);
    });
  });
});

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { bearer, problemPaths, startTestHub, type TestHub } from '../support/test-hub.js';

const VALIDATE = '/api/v2/pipelines/entries/validate';

const task = (command = 'true', conditionNode?: boolean) => ({ type: 'rawexec', command, ...(conditionNode !== undefined && { conditionNode }) });

/** A pipeline that may run: a condition, a fan-out, an error handler and a join. */
const VALID = {
  nodes: [
    { name: 'check', task: task('test -f input', true), connections: { onTrue: ['extract', 'audit'], onFalse: ['report'] } },
    { name: 'extract', task: task(), connections: { onSuccess: ['report'], onError: ['alert'] } },
    { name: 'audit', task: task(), inputs: { resources: { rules: { type: 'git', repo: 'file:///srv/git/rules.git' } } }, connections: { onAny: ['report'] } },
    { name: 'alert', task: task() },
    { name: 'report', task: task(), outputs: { artifacts: { pdf: { path: 'report.pdf', contentType: 'application/pdf' } } } },
  ],
  keepGoing: true,
};

describe('pipeline validation', () => {
  let hub: TestHub;

  const validate = (payload: unknown) => hub.inject({ method: 'POST', url: VALIDATE, headers: bearer(hub.adminToken), payload: payload as object });
  const errorsOf = async (spec: unknown, entry: object = {}): Promise<string[]> => {
    const response = await validate({ ...entry, spec });
    expect([response.statusCode, response.body]).toEqual([200, expect.any(String)]);
    return response.json<{ errors: string[] }>().errors;
  };

  beforeAll(async () => {
    hub = await startTestHub();
  });
  afterAll(() => hub.close());

  it('answers [] for a pipeline that may run, with or without a name and namespace', async () => {
    expect(await errorsOf(VALID)).toEqual([]);
    expect(await errorsOf(VALID, { name: 'nightly', namespace: 'default', _type: 'Pipeline' })).toEqual([]);
  });

  it('answers [] for a folder, and names its spec when it has one', async () => {
    expect((await validate({ name: 'reports', _type: 'Folder' })).json()).toEqual({ errors: [] });
    expect(await errorsOf(VALID, { _type: 'Folder' })).toEqual(['A folder carries no spec']);
  });

  it('refuses a pipeline without nodes', async () => {
    expect(await errorsOf({ nodes: [] })).toEqual(['spec.nodes: a pipeline needs at least one node']);
    expect((await validate({ name: 'empty' })).json()).toEqual({ errors: ['spec.nodes: a pipeline needs at least one node'] });
  });

  it.each([
    [
      'a missing name, by the index of the node',
      [{ task: task() }, { name: '', task: task() }],
      ['spec.nodes[0]: the node has no name', 'spec.nodes[1]: the node has no name'],
    ],
    [
      'a duplicate name, with every place it is used',
      [
        { name: 'twice', task: task() },
        { name: 'once', task: task() },
        { name: 'twice', task: task() },
      ],
      ["Node 'twice': the name is used by 2 nodes (spec.nodes[0], spec.nodes[2])"],
    ],
    [
      'an unknown connection target, naming the target',
      [
        { name: 'a', task: task(), connections: { onSuccess: ['b'], onAny: ['ghost'] } },
        { name: 'b', task: task() },
      ],
      ["Node 'a': onAny names 'ghost', which is no node of the pipeline"],
    ],
    [
      'a cycle, naming the nodes on it',
      [
        { name: 'start', task: task(), connections: { onSuccess: ['a'] } },
        { name: 'a', task: task(), connections: { onSuccess: ['b'] } },
        { name: 'b', task: task(), connections: { onError: ['c'] } },
        { name: 'c', task: task(), connections: { onAny: ['a'] } },
      ],
      ["Nodes 'a', 'b', 'c': they form a cycle, so none of them could ever run"],
    ],
    ['a node connected to itself', [{ name: 'loop', task: task(), connections: { onError: ['loop'] } }], ["Node 'loop': it connects to itself, a cycle"]],
    [
      'onTrue or onFalse on a node that is not a conditionNode',
      [
        { name: 'plain', task: task(), connections: { onTrue: ['next'] } },
        { name: 'unset', task: task('x', false), connections: { onFalse: ['next'] } },
        { name: 'next', task: task() },
      ],
      ["Node 'plain': onTrue is only for a node whose task is a conditionNode", "Node 'unset': onFalse is only for a node whose task is a conditionNode"],
    ],
    [
      'an empty command, or none',
      [{ name: 'blank', task: task('   ') }, { name: 'none', task: { type: 'rawexec' } }, { name: 'taskless' }],
      ["Node 'blank': the task's command is empty", "Node 'none': the task's command is empty", "Node 'taskless': the task's command is empty"],
    ],
    [
      'a git input without repo',
      [{ name: 'fetch', task: task(), inputs: { resources: { code: { type: 'git', branchOrTag: 'main' }, data: { type: 'git', repo: ' ' } } } }],
      ["Node 'fetch': the git input 'code' has no repo", "Node 'fetch': the git input 'data' has no repo"],
    ],
  ])('reports %s', async (_case, nodes, expected) => {
    expect(await errorsOf({ nodes })).toEqual(expected);
  });

  it('reports every problem at once', async () => {
    const errors = await errorsOf({
      nodes: [
        { task: task() },
        { name: 'a', task: task(''), connections: { onSuccess: ['a', 'nowhere'], onTrue: ['b'] } },
        { name: 'b', inputs: { resources: { src: { type: 'git' } } } },
        { name: 'b', task: task() },
      ],
    });
    expect(errors).toEqual([
      'spec.nodes[0]: the node has no name',
      "Node 'a': onSuccess names 'nowhere', which is no node of the pipeline",
      "Node 'a': onTrue is only for a node whose task is a conditionNode",
      "Node 'a': the task's command is empty",
      "Node 'b': the task's command is empty",
      "Node 'b': the git input 'src' has no repo",
      "Node 'b': the name is used by 2 nodes (spec.nodes[2], spec.nodes[3])",
      "Node 'a': it connects to itself, a cycle",
    ]);
  });

  it('validates a stored pipeline as it reads back', async () => {
    const created = await hub.inject({
      method: 'POST',
      url: '/api/v2/pipelines/entries',
      headers: bearer(hub.adminToken),
      payload: { name: 'stored-draft', namespace: 'default', spec: { nodes: [{ name: 'x', task: task(''), connections: { onSuccess: ['y'] } }] } },
    });
    expect(created.statusCode).toBe(201);
    expect(await errorsOf(created.json().spec, created.json())).toEqual([
      "Node 'x': onSuccess names 'y', which is no node of the pipeline",
      "Node 'x': the task's command is empty",
    ]);
  });

  it.each([
    ['a body that is not an object', [], ''],
    ['a spec with a wrong type', { spec: { nodes: 'all' } }, '/spec/nodes'],
    ['an unknown property', { spec: VALID, colour: 'red' }, '/colour'],
    ['an unknown _type', { _type: 'Job' }, '/_type'],
    ['a node with an unknown property', { spec: { nodes: [{ name: 'a', task: task(), retries: 3 }] } }, '/spec/nodes/0/retries'],
  ])('refuses %s with 400 naming the field', async (_case, payload, path) => {
    const response = await validate(payload);
    expect([response.statusCode, response.headers['content-type']]).toEqual([400, 'application/problem+json; charset=utf-8']);
    expect(problemPaths(response)).toContain(path);
  });
});

import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { poll } from '../support/poll.js';
import { bearer, enterableTempDir, problemPaths, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

interface NodeStatus {
  state: string;
  startedAt?: string;
  finishedAt?: string;
  exitCode?: number;
  events: { time: string; type: string; details: Record<string, string> }[];
}

interface RunStatus {
  state: string;
  startedAt?: string;
  finishedAt?: string;
  nodeStatus: Record<string, NodeStatus>;
}

interface Run {
  id: string;
  created: string;
  ownerPrincipal: string;
  pipelineId?: string;
  namespace: string;
  status: RunStatus;
  spec: { nodes: unknown[] };
  entryPoint?: string;
  executionProfileId: string;
}

type Headers = Record<string, string>;
type NodeSpec = Record<string, unknown>;

const RUNS = '/api/v2/pipelines/runs';
const ENTRIES = '/api/v2/pipelines/entries';
const UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-000000000000';
const PASSWORD = 'a-pipeline-user-password';
const ENDED = ['Succeeded', 'Failed', 'Cancelled'];

/** A node that runs `sh -c script`, its connections given. */
function node(name: string, script: string, connections: Record<string, string[]> = {}, extra: NodeSpec = {}): NodeSpec {
  return { name, connections, task: { type: 'rawexec', command: 'sh', args: ['-c', script] }, ...extra };
}

const types = (status: NodeStatus) => status.events.map((event) => event.type);

describe('pipeline runs', () => {
  let hub: TestHub;
  let auth: Headers;
  let profileId: string;
  let adminId: string;

  const get = (url: string, headers: Headers = auth) => hub.inject({ method: 'GET', url, headers });
  const post = (url: string, payload: unknown, headers: Headers = auth) => hub.inject({ method: 'POST', url, headers, payload: payload as object });
  const expectProblem = (response: InjectResponse, status: number, detail?: string) => {
    expect([response.statusCode, response.headers['content-type']]).toEqual([status, expect.stringContaining('application/problem+json')]);
    if (detail) expect(response.json().detail).toContain(detail);
  };
  const start = async (nodes: NodeSpec[], extra: Record<string, unknown> = {}, headers: Headers = auth): Promise<Run> => {
    const { keepGoing, ...rest } = extra;
    const response = await post(RUNS, { spec: { nodes, ...(keepGoing !== undefined && { keepGoing }) }, executionProfileId: profileId, ...rest }, headers);
    expect([response.statusCode, response.body]).toEqual([201, expect.any(String)]);
    return response.json();
  };
  const ended = async (id: string, timeoutMs = 20_000): Promise<RunStatus> =>
    poll(
      async () => (await get(`${RUNS}/${id}/status`)).json<RunStatus>(),
      (status) => ENDED.includes(status.state),
      `run ${id} to end`,
      timeoutMs,
    );
  const run = async (nodes: NodeSpec[], extra: Record<string, unknown> = {}) => ended((await start(nodes, extra)).id);

  beforeAll(async () => {
    // One user's nodes run side by side on a two-slot host (the default cap keeps a slot for others: docs/cluster.md).
    hub = await startTestHub({ env: { HUB_MAX_RUNNING_JOBS_PER_USER: '0' } });
    auth = bearer(hub.adminToken);
    const profiles = await get('/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard');
    profileId = profiles.json().data[0]._id;
    adminId = (await get('/api/v2/auth/me')).json()._id;
  });
  afterAll(() => hub?.close());

  describe('the engine', () => {
    it('runs a linear pipeline in order: each node starts after its predecessor ended', async () => {
      const started = await start([node('a', 'echo one', { onSuccess: ['b'] }), node('b', 'echo two', { onSuccess: ['c'] }), node('c', 'echo three')]);
      expect(started).toMatchObject({
        namespace: 'default',
        ownerPrincipal: adminId,
        executionProfileId: profileId,
        status: { nodeStatus: { a: {}, b: {}, c: {} } },
      });
      expect(started.pipelineId).toBeUndefined();
      const status = await ended(started.id);
      expect(status.state).toBe('Succeeded');
      const { a, b, c } = status.nodeStatus;
      for (const each of [a, b, c]) {
        expect(each).toMatchObject({ state: 'Succeeded', exitCode: 0 });
        expect(types(each)).toEqual(['Queued', 'Started', 'Exited']);
      }
      expect(Date.parse(b.startedAt as string)).toBeGreaterThanOrEqual(Date.parse(a.finishedAt as string));
      expect(Date.parse(c.startedAt as string)).toBeGreaterThanOrEqual(Date.parse(b.finishedAt as string));
      expect(Date.parse(status.startedAt as string)).toBeLessThanOrEqual(Date.parse(a.startedAt as string));
      expect(Date.parse(status.finishedAt as string)).toBeGreaterThanOrEqual(Date.parse(c.finishedAt as string));
      const log = await get(`${RUNS}/${started.id}/nodes/b/logs/stdout`);
      expect(log.json()).toEqual({ msg: 'two\n' });
    });

    it('fans out and in: the join runs once, after both branches', async () => {
      const status = await run([
        node('split', 'true', { onSuccess: ['left', 'right'] }),
        node('left', 'sleep 0.3', { onSuccess: ['join'] }),
        node('right', 'true', { onSuccess: ['join'] }),
        node('join', 'echo joined'),
      ]);
      expect(status.state).toBe('Succeeded');
      const { left, right, join: joined } = status.nodeStatus;
      expect(types(joined).filter((type) => type === 'Started')).toHaveLength(1);
      expect(Date.parse(joined.startedAt as string)).toBeGreaterThanOrEqual(
        Math.max(Date.parse(left.finishedAt as string), Date.parse(right.finishedAt as string)),
      );
    });

    it('follows a condition node: exit 1 is false, it succeeds with exitCode 1 and onTrue is skipped', async () => {
      const status = await run([
        {
          ...node('check', 'exit 1', { onTrue: ['yes'], onFalse: ['no'], onAny: ['always'] }),
          task: { type: 'rawexec', command: 'sh', args: ['-c', 'exit 1'], conditionNode: true },
        },
        node('yes', 'true'),
        node('no', 'true'),
        node('always', 'true'),
      ]);
      expect(status.state).toBe('Succeeded');
      expect(status.nodeStatus.check).toMatchObject({ state: 'Succeeded', exitCode: 1 });
      expect(status.nodeStatus.yes.state).toBe('Skipped');
      expect(types(status.nodeStatus.yes)).toEqual(['Skipped']);
      expect(status.nodeStatus.no.state).toBe('Succeeded');
      expect(status.nodeStatus.always.state).toBe('Succeeded');
    });

    it('fails a condition node that exits neither 0 nor 1, and follows onError', async () => {
      const status = await run([
        {
          name: 'check',
          connections: { onTrue: ['yes'], onError: ['handler'] },
          task: { type: 'rawexec', command: 'sh', args: ['-c', 'exit 5'], conditionNode: true },
        },
        node('yes', 'true'),
        node('handler', 'true'),
      ]);
      expect(status.nodeStatus.check).toMatchObject({ state: 'Failed', exitCode: 5 });
      expect(status.nodeStatus.yes.state).toBe('Skipped');
      expect(status.state).toBe('Succeeded');
    });

    it('lets an error handler make the run succeed', async () => {
      const status = await run([node('flaky', 'exit 3', { onSuccess: ['next'], onError: ['handler'] }), node('next', 'true'), node('handler', 'true')]);
      expect(status.nodeStatus.flaky).toMatchObject({ state: 'Failed', exitCode: 3 });
      expect(status.nodeStatus.flaky.events.find((event) => event.type === 'Exited')?.details).toEqual({ exitCode: '3' });
      expect(status.nodeStatus.next.state).toBe('Skipped');
      expect(status.nodeStatus.handler.state).toBe('Succeeded');
      expect(status.state).toBe('Succeeded');
    });

    it('fails the run on a failure nothing handles, skipping what had not started; a running branch finishes', async () => {
      // slow outlasts broken's failure by far, so that later is decided after it.
      const status = await run([
        node('broken', 'exit 1', { onSuccess: ['after'] }),
        node('after', 'true'),
        node('slow', 'sleep 3', { onSuccess: ['later'] }),
        node('later', 'true'),
      ]);
      expect(status.state).toBe('Failed');
      expect(status.nodeStatus.broken.state).toBe('Failed');
      expect(status.nodeStatus.after.state).toBe('Skipped');
      expect(status.nodeStatus.slow.state).toBe('Succeeded');
      expect(status.nodeStatus.later.state).toBe('Skipped');
      expect(status.nodeStatus.later.events[0].details.message).toContain("Node 'broken' failed");
    });

    it('with keepGoing, runs the branches that do not depend on the failure, then fails', async () => {
      const status = await run(
        [node('broken', 'exit 1', { onSuccess: ['after'] }), node('after', 'true'), node('slow', 'sleep 0.5', { onSuccess: ['later'] }), node('later', 'true')],
        {
          keepGoing: true,
        },
      );
      expect(status.state).toBe('Failed');
      expect(status.nodeStatus.after.state).toBe('Skipped');
      expect(status.nodeStatus.later.state).toBe('Succeeded');
    });

    it('starts at the entryPoint only, skipping the nodes it cannot reach', async () => {
      const started = await start(
        [node('a', 'true', { onSuccess: ['b'] }), node('b', 'true', { onSuccess: ['c'] }), node('d', 'true', { onSuccess: ['c'] }), node('c', 'true')],
        {
          entryPoint: 'b',
        },
      );
      expect(started.entryPoint).toBe('b');
      const status = await ended(started.id);
      expect(status.state).toBe('Succeeded');
      expect([status.nodeStatus.a.state, status.nodeStatus.d.state]).toEqual(['Skipped', 'Skipped']);
      expect([status.nodeStatus.b.state, status.nodeStatus.c.state]).toEqual(['Succeeded', 'Succeeded']);
    });

    it('gives every node HUB_RUN_ID and HUB_NODE_NAME beside its own envVars', async () => {
      const started = await start([
        {
          name: 'env',
          task: { type: 'rawexec', command: 'sh', args: ['-c', 'echo "$HUB_RUN_ID $HUB_NODE_NAME $GREETING"'], envVars: [{ name: 'GREETING', value: 'hi' }] },
        },
      ]);
      await ended(started.id);
      expect((await get(`${RUNS}/${started.id}/nodes/env/logs/stdout`)).json()).toEqual({ msg: `${started.id} env hi\n` });
    });

    it('retries a failed attempt, each attempt a new execution of the node’s job, its events naming the attempt', async () => {
      const dir = enterableTempDir('hub-retry-');
      chmodSync(dir, 0o777);
      const counter = join(dir, 'count');
      const status = await run([
        node(
          'flaky',
          `n=$(cat ${counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > ${counter}; [ $n -ge 2 ]`,
          {},
          { meta: { retries: 2, retryDelaySeconds: 0 } },
        ),
      ]);
      expect(status.state).toBe('Succeeded');
      const flaky = status.nodeStatus.flaky;
      expect(types(flaky)).toEqual(['Queued', 'Started', 'Exited', 'Queued', 'Started', 'Exited']);
      expect(flaky.events.map((event) => event.details.attempt)).toEqual(['1', '1', '1', '2', '2', '2']);
      expect(flaky).toMatchObject({ state: 'Succeeded', exitCode: 0 });
    });

    it('stops an attempt past its timeoutSeconds and fails it with a Timeout event', async () => {
      const status = await run([node('sleeper', 'sleep 30', {}, { meta: { timeoutSeconds: 1 } })]);
      expect(status.state).toBe('Failed');
      expect(status.nodeStatus.sleeper.state).toBe('Failed');
      expect(types(status.nodeStatus.sleeper)).toContain('Timeout');
    });
  });

  describe('what the cluster says of a node', () => {
    const profile = async (name: string, body: Record<string, unknown>): Promise<string> => {
      const created = await post('/api/v2/execution-profiles/execprofiles', { name, ...body });
      expect(created.statusCode).toBe(201);
      const namespaces = await get('/api/v2/namespaces?filter[name][EQ]=default');
      const bound = await post('/api/v2/execution-profiles/bindings', { executionProfileId: created.json()._id, namespaceId: namespaces.json().data[0]._id });
      expect(bound.statusCode).toBe(201);
      return created.json()._id;
    };

    it('notes a failed placement as a Queued event with the cluster’s message while the node waits', async () => {
      const nowhere = await profile('runs-nowhere', { constraints: [{ attribute: 'node.label', operator: '=', value: 'no-such-label' }] });
      const started = await start([node('stuck', 'true')], { executionProfileId: nowhere });
      const status = await poll(
        async () => (await get(`${RUNS}/${started.id}/status`)).json<RunStatus>(),
        (current) => current.nodeStatus.stuck.events.some((event) => event.type === 'Queued' && event.details.message !== undefined),
        'the placement failure',
      );
      expect(status.nodeStatus.stuck.state).toBe('Waiting');
      expect(status.nodeStatus.stuck.events.at(-1)?.details.message).toContain('no-such-label');
      await post(`${RUNS}/${started.id}/cancel`, {});
    });

    it('fails a node a profile limit ends, with the cluster’s message, and retries it like any failure', async () => {
      const short = await profile('runs-one-second', { properties: { maxRunSeconds: 1 } });
      const started = await start([node('long', 'sleep 5', {}, { meta: { retries: 1 } })], { executionProfileId: short });
      const status = await ended(started.id);
      expect(status.state).toBe('Failed');
      const errors = status.nodeStatus.long.events.filter((event) => event.type === 'Error');
      expect(errors.map((event) => event.details.attempt)).toEqual(['1', '2']);
      expect(errors[0].details.message).toContain('maxRunSeconds');
    });

    it('fails a node whose job is stopped through the cluster API, with the cluster’s message', async () => {
      const started = await start([node('stopped', 'sleep 30', { onError: ['handler'] }), node('handler', 'true')]);
      await poll(
        async () => (await get(`${RUNS}/${started.id}/status`)).json<RunStatus>(),
        (current) => current.nodeStatus.stopped.state === 'Running',
        'the node to run',
      );
      const jobs = (await get(`/api/v2/cluster/jobs?filter[name][ST]=${started.id.slice(0, 8)}-stopped`)).json().data;
      expect((await post(`/api/v2/cluster/jobs/${jobs[0].id}/stop`, {})).statusCode).toBe(200);
      const status = await ended(started.id);
      expect(status.nodeStatus.stopped.state).toBe('Failed');
      expect(status.nodeStatus.stopped.events.find((event) => event.type === 'Error')?.details.message).toContain('Stopped by admin');
      expect(status.nodeStatus.handler.state).toBe('Succeeded');
      expect(status.state).toBe('Succeeded');
    });
  });

  describe('cancel', () => {
    it('stops a running node (no process left), cancels the waiting ones, and ends the run Cancelled', async () => {
      const marker = `sleep 31.${process.pid}`;
      const started = await start([node('long', marker, { onSuccess: ['next'] }), node('next', 'true')]);
      await poll(
        async () => (await get(`${RUNS}/${started.id}/status`)).json<RunStatus>(),
        (status) => status.nodeStatus.long.state === 'Running',
        'the node to run',
      );
      const cancelled = await post(`${RUNS}/${started.id}/cancel`, {});
      expect(cancelled.statusCode).toBe(200);
      expect(cancelled.json()).toMatchObject({ state: 'Cancelled', nodeStatus: { long: { state: 'Cancelled' }, next: { state: 'Cancelled' } } });
      expect(() => execFileSync('pgrep', ['-f', marker])).toThrow();
      const jobs = await get(`/api/v2/cluster/jobs?filter[name][CO]=long`);
      expect(jobs.json().data.filter((job: { name: string }) => job.name.startsWith(started.id.slice(0, 8)))).toEqual([
        expect.objectContaining({ status: 'dead' }),
      ]);
      const listed = await get(`${RUNS}?filter[state][EQ]=Cancelled`);
      expect(listed.json().data).toEqual(expect.arrayContaining([expect.objectContaining({ id: started.id, cancelled: true })]));
      expectProblem(await post(`${RUNS}/${started.id}/cancel`, {}), 409, 'has already ended');
    });
  });

  describe('git inputs', () => {
    let repo: string;

    beforeAll(() => {
      const dir = enterableTempDir('hub-git-');
      const work = join(dir, 'work');
      mkdirSync(work);
      const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: work });
      git('init', '-q', '-b', 'main');
      writeFileSync(join(work, 'hello.txt'), 'hello from git\n');
      git('add', '.');
      git('commit', '-q', '-m', 'first');
      repo = join(dir, 'repo.git');
      execFileSync('git', ['clone', '-q', '--bare', work, repo]);
      execFileSync('chmod', ['-R', 'a+rX', dir]);
    });

    it('clones a local bare repository into the working directory before the task', async () => {
      const started = await start([
        {
          name: 'reader',
          inputs: { resources: { src: { type: 'git', repo: `file://${repo}`, branchOrTag: 'main', depth: 1, relativePath: 'code' } } },
          task: { type: 'rawexec', command: 'cat', args: ['code/hello.txt'] },
        },
      ]);
      const status = await ended(started.id);
      expect(status.state).toBe('Succeeded');
      expect(types(status.nodeStatus.reader)).toEqual(['Queued', 'Started', 'InputFetched', 'Exited']);
      expect(status.nodeStatus.reader.events[2].details).toMatchObject({ name: 'src', repo: `file://${repo}` });
      expect((await get(`${RUNS}/${started.id}/nodes/reader/logs/stdout`)).json()).toEqual({ msg: 'hello from git\n' });
    });

    it('fails the node with an Error naming the repository, never its credentials, when the fetch fails', async () => {
      const status = await run([
        {
          name: 'missing',
          inputs: { resources: { src: { type: 'git', repo: 'file://user:secret@/nowhere/repo.git' } } },
          task: { type: 'rawexec', command: 'true' },
        },
      ]);
      expect(status.state).toBe('Failed');
      const error = status.nodeStatus.missing.events.find((event) => event.type === 'Error');
      expect(error?.details.message).toContain('file://***@/nowhere/repo.git');
      expect(JSON.stringify(status)).not.toContain('secret');
    });
  });

  describe('results', () => {
    let id: string;

    beforeAll(async () => {
      const script = 'mkdir -p out && printf "a,b\\n1,2\\n" > out/report.csv && printf "\\000\\001\\377" > out/blob.bin';
      const started = await start([
        node('make', script, {}, { outputs: { artifacts: { report: { path: 'out/report.csv', contentType: 'text/csv' }, blob: { path: 'out/blob.bin' } } } }),
      ]);
      id = started.id;
      expect((await ended(id)).state).toBe('Succeeded');
    });

    it('stores each artifact with its content type and size, listed per node and per run', async () => {
      expect((await get(`${RUNS}/${id}/results`)).json()).toEqual({
        make: [
          { name: 'blob', size: 3 },
          { name: 'report', size: 8 },
        ],
      });
      expect((await get(`${RUNS}/${id}/nodes/make/results`)).json()).toEqual([
        { name: 'blob', size: 3 },
        { name: 'report', size: 8 },
      ]);
      expect((await get(`${RUNS}/${id}/nodes/make/results/report/metadata`)).json()).toEqual({ name: 'report', contentType: 'text/csv', size: 8 });
      expect((await get(`${RUNS}/${id}/nodes/make/results/blob/metadata`)).json()).toEqual({ name: 'blob', contentType: 'application/octet-stream', size: 3 });
      const status = (await get(`${RUNS}/${id}/nodes/make/status`)).json<NodeStatus>();
      expect(types(status).filter((type) => type === 'ResultStored')).toHaveLength(2);
    });

    it('reads a result as {msg}, in windows, or raw as its content type', async () => {
      expect((await get(`${RUNS}/${id}/nodes/make/results/report`)).json()).toEqual({ msg: 'a,b\n1,2\n' });
      expect((await get(`${RUNS}/${id}/nodes/make/results/report?offset=4&limit=3`)).json()).toEqual({ msg: '1,2' });
      const raw = await get(`${RUNS}/${id}/nodes/make/results/blob?raw=true`);
      expect([raw.statusCode, raw.headers['content-type']]).toEqual([200, 'application/octet-stream']);
      expect([...raw.rawPayload]).toEqual([0, 1, 255]);
      const csv = await get(`${RUNS}/${id}/nodes/make/results/report?raw=true`);
      expect([csv.headers['content-type'], csv.body]).toEqual(['text/csv', 'a,b\n1,2\n']);
    });

    it('fails the node when an artifact is missing or lies outside the working directory', async () => {
      const status = await run([
        node(
          'bad',
          'ln -s /etc/passwd link',
          {},
          { outputs: { artifacts: { gone: { path: 'nothing-here' }, out: { path: '../escape' }, link: { path: 'link' } } } },
        ),
      ]);
      expect(status.state).toBe('Failed');
      const errors = status.nodeStatus.bad.events.filter((event) => event.type === 'Error').map((event) => event.details.name);
      expect(errors.sort()).toEqual(['gone', 'link', 'out']);
      expect((await get(`${RUNS}/${id}/nodes/make/results/nothing`)).statusCode).toBe(404);
    });

    it('answers 404 for a node that is not in the run, and for an unknown log type', async () => {
      expectProblem(await get(`${RUNS}/${id}/nodes/nope/status`), 404, "has no node 'nope'");
      expectProblem(await get(`${RUNS}/${id}/nodes/nope/logs/stdout`), 404);
      expectProblem(await get(`${RUNS}/${id}/nodes/make/logs/other`), 404);
      expectProblem(await get(`${RUNS}/${id}/nodes/nope/results`), 404);
      expectProblem(await get(`${RUNS}/${UNKNOWN_ID}/status`), 404);
    });

    it('reads log windows as the cluster does', async () => {
      const started = await start([node('talk', 'printf 0123456789')]);
      await ended(started.id);
      const url = `${RUNS}/${started.id}/nodes/talk/logs/stdout`;
      expect((await get(`${url}?offset=2&limit=3`)).json()).toEqual({ msg: '234' });
      expect((await get(`${url}?origin=end&limit=3`)).json()).toEqual({ msg: '789' });
      expect((await get(`${url}?origin=end&offset=3`)).json()).toEqual({ msg: '0123456' });
      expectProblem(await get(`${url}?limit=0`), 400);
    });
  });

  describe('refusals', () => {
    it('refuses an invalid spec with 400 whose errors are strings naming each node, and creates nothing', async () => {
      const before = (await get(RUNS)).json().data.length;
      const response = await post(RUNS, {
        spec: { nodes: [node('a', 'true', { onSuccess: ['ghost'] }), { name: 'a', task: { type: 'rawexec' } }] },
        executionProfileId: profileId,
      });
      expectProblem(response, 400, 'The run was refused');
      const errors: string[] = response.json().errors;
      expect(errors.every((error) => typeof error === 'string')).toBe(true);
      expect(errors.join('\n')).toContain("'ghost'");
      expect(errors.join('\n')).toContain("Node 'a'");
      expect((await get(RUNS)).json().data.length).toBe(before);
    });

    it('refuses an unknown profile, an entryPoint that names no node, and a variable the profile sets', async () => {
      const nodes = [node('a', 'true')];
      const unknown = await post(RUNS, { spec: { nodes }, executionProfileId: UNKNOWN_ID });
      expectProblem(unknown, 400);
      expect(unknown.json().errors[0]).toContain('executionProfileId');
      const entry = await post(RUNS, { spec: { nodes }, executionProfileId: profileId, entryPoint: 'zzz' });
      expect(entry.json().errors).toEqual([expect.stringContaining("entryPoint: 'zzz' names no node")]);
      const retries = await post(RUNS, { spec: { nodes: [node('a', 'true', {}, { meta: { retries: -1 } })] }, executionProfileId: profileId });
      expect(retries.json().errors).toEqual([expect.stringContaining('meta.retries')]);
    });

    it('validates the body: a missing executionProfileId or spec is a field error', async () => {
      const response = await post(RUNS, { spec: { nodes: [] } });
      expectProblem(response, 400);
      expect(problemPaths(response)).toContain('/executionProfileId');
      expectProblem(await post(RUNS, { executionProfileId: profileId }), 400);
    });

    it('submits a stored pipeline, and refuses a draft, a folder and an unknown pipeline', async () => {
      const created = await post(ENTRIES, { name: 'runs-stored', namespace: 'default', spec: { nodes: [node('only', 'echo stored')] } });
      const pipelineId = created.json()._id;
      const submitted = await post(`${ENTRIES}/${pipelineId}/submit`, { executionProfileId: profileId });
      expect(submitted.statusCode).toBe(201);
      const runId = submitted.json().pipelineRunId;
      expect((await ended(runId)).state).toBe('Succeeded');
      expect((await get(`${RUNS}/${runId}`)).json()).toMatchObject({ pipelineId, namespace: 'default' });
      const draft = await post(ENTRIES, { name: 'runs-draft', namespace: 'default', spec: { nodes: [{ name: 'x' }] } });
      const refused = await post(`${ENTRIES}/${draft.json()._id}/submit`, { executionProfileId: profileId });
      expectProblem(refused, 400);
      expect(refused.json().errors).toEqual([expect.stringContaining("Node 'x'")]);
      const folder = await post(ENTRIES, { name: 'runs-folder', namespace: 'default', _type: 'Folder' });
      expectProblem(await post(`${ENTRIES}/${folder.json()._id}/submit`, { executionProfileId: profileId }), 400);
      expectProblem(await post(`${ENTRIES}/${UNKNOWN_ID}/submit`, { executionProfileId: profileId }), 404);
      expectProblem(await post(`${ENTRIES}/${pipelineId}/submit`, {}), 400);
    });
  });

  describe('list', () => {
    let first: Run;
    let second: Run;

    beforeAll(async () => {
      first = await start([node('x', 'true')]);
      await ended(first.id);
      second = await start([node('x', 'exit 1')]);
      await ended(second.id);
    });

    it('lists newest first by default, {data} only, with list items', async () => {
      const page = (await get(`${RUNS}?page[limit]=2`)).json();
      expect(Object.keys(page)).toEqual(['data']);
      expect(page.data.map((item: { id: string }) => item.id)).toEqual([second.id, first.id]);
      expect(page.data[0]).toEqual({
        id: second.id,
        created: second.created,
        startedAt: expect.any(String),
        finishedAt: expect.any(String),
        state: 'Failed',
        cancelled: false,
        ownerPrincipal: adminId,
        namespace: 'default',
        executionProfileId: profileId,
      });
      const oldest = (await get(`${RUNS}?sort=created&page[limit]=1`)).json().data[0];
      expect(Date.parse(oldest.created)).toBeLessThanOrEqual(Date.parse(first.created));
    });

    it('filters by state (EQ and IN), owner, namespace, pipeline and times', async () => {
      const ids = async (query: string) => (await get(`${RUNS}?${query}`)).json().data.map((item: { id: string }) => item.id);
      expect(await ids('filter[state][EQ]=Failed')).toContain(second.id);
      expect(await ids('filter[state][EQ]=Failed')).not.toContain(first.id);
      expect(await ids('filter[state][IN]=Failed,Succeeded')).toEqual(expect.arrayContaining([first.id, second.id]));
      expect(await ids(`filter[ownerPrincipal][EQ]=${adminId}`)).toContain(first.id);
      expect(await ids(`filter[ownerPrincipal][EQ]=${UNKNOWN_ID}`)).toEqual([]);
      expect(await ids('filter[namespace][EQ]=default')).toContain(first.id);
      expect(await ids('filter[namespace][IN]=elsewhere')).toEqual([]);
      expect(await ids(`filter[pipelineId][EQ]=${UNKNOWN_ID}`)).toEqual([]);
      expect(await ids(`filter[created][GT]=${first.created}`)).toContain(second.id);
      expect(await ids(`filter[created][GT]=${first.created}`)).not.toContain(first.id);
      expect(await ids(`filter[created][LT]=${second.created}`)).not.toContain(second.id);
      expect(await ids('filter[finishedAt][GT]=2000-01-01T00:00:00.000Z')).toEqual(expect.arrayContaining([first.id, second.id]));
      expect(await ids('filter[startedAt][LT]=2000-01-01T00:00:00.000Z')).toEqual([]);
    });

    it('refuses unknown filters, sorts and states', async () => {
      expectProblem(await get(`${RUNS}?filter[nope][EQ]=1`), 400);
      expectProblem(await get(`${RUNS}?sort=state`), 400);
      expectProblem(await get(`${RUNS}?filter[state][EQ]=Sleeping`), 400);
    });

    it('deletes a run that has ended, and refuses one that has not', async () => {
      const removed = await hub.inject({ method: 'DELETE', url: `${RUNS}/${first.id}`, headers: auth });
      expect(removed.statusCode).toBe(200);
      expectProblem(await get(`${RUNS}/${first.id}`), 404);
      const long = await start([node('long', 'sleep 20')]);
      expectProblem(await hub.inject({ method: 'DELETE', url: `${RUNS}/${long.id}`, headers: auth }), 409, 'has not ended');
      await post(`${RUNS}/${long.id}/cancel`, {});
    });
  });

  describe('access', () => {
    let developer: { id: string; as: Headers };
    let outsider: { id: string; as: Headers };
    let adminRun: Run;

    const userIn = async (userName: string, roleName?: string) => {
      const created = await post('/api/v2/auth/users', { userName, password: PASSWORD });
      expect(created.statusCode).toBe(201);
      const id = created.json()._id;
      if (roleName) {
        const roles = await get(`/api/v2/rbac/roles?filter[name][EQ]=${roleName}`);
        const bound = await post('/api/v2/rbac/rolebindings', { role: roles.json().data[0].id, principal: id, namespace: 'default' });
        expect(bound.statusCode).toBe(201);
      }
      return { id, as: bearer(await hub.login(userName, PASSWORD)) };
    };

    beforeAll(async () => {
      developer = await userIn('runs-developer', 'PipelineDeveloper');
      outsider = await userIn('runs-outsider');
      adminRun = await start([node('x', 'true')]);
      await ended(adminRun.id);
    });

    it('refuses a caller without Execute on /Pipelines, and creates nothing', async () => {
      expectProblem(await post(RUNS, { spec: { nodes: [node('a', 'true')] }, executionProfileId: profileId }, outsider.as), 403);
      expect((await get(RUNS, outsider.as)).statusCode).toBe(200);
      expect((await get(RUNS, outsider.as)).json().data).toEqual([]);
    });

    it('hides other users’ runs from a caller without Read on /PipelineRuns: 404, as if they did not exist', async () => {
      expectProblem(await get(`${RUNS}/${adminRun.id}`, outsider.as), 404);
      expectProblem(await get(`${RUNS}/${adminRun.id}/status`, outsider.as), 404);
      expectProblem(await post(`${RUNS}/${adminRun.id}/cancel`, {}, outsider.as), 404);
      expectProblem(await get(`${RUNS}/${adminRun.id}/nodes/x/logs/stdout`, outsider.as), 404);
      expectProblem(await hub.inject({ method: 'DELETE', url: `${RUNS}/${adminRun.id}`, headers: outsider.as }), 404);
    });

    it('lets a reader of a run who may not change it see it but not cancel or delete it (403)', async () => {
      const reader = await userIn('runs-reader');
      const roles = await get('/api/v2/rbac/roles?filter[name][EQ]=NamespaceUser');
      await post('/api/v2/rbac/rolebindings', { role: roles.json().data[0].id, principal: reader.id, namespace: 'default' });
      const custom = await post('/api/v2/rbac/roles', {
        name: 'runs-viewer',
        permissions: [{ objectMatcher: 'glob', object: '/PipelineRuns/**', actions: ['Read'], effect: 'Allow' }],
      });
      expect(custom.statusCode).toBe(201);
      await post('/api/v2/rbac/rolebindings', { role: custom.json().id, principal: reader.id, namespace: 'default' });
      const long = await start([node('long', 'sleep 20')]);
      expect((await get(`${RUNS}/${long.id}`, reader.as)).statusCode).toBe(200);
      expectProblem(await post(`${RUNS}/${long.id}/cancel`, {}, reader.as), 403);
      await post(`${RUNS}/${long.id}/cancel`, {});
      expectProblem(await hub.inject({ method: 'DELETE', url: `${RUNS}/${long.id}`, headers: reader.as }), 403);
    });

    it('lets a PipelineDeveloper run in their namespace, read others’ runs there, and own what they start', async () => {
      const mine = await start([node('dev', 'true')], {}, developer.as);
      expect(mine.ownerPrincipal).toBe(developer.id);
      await ended(mine.id);
      expect((await get(`${RUNS}/${adminRun.id}`, developer.as)).statusCode).toBe(200);
      const listed = (await get(`${RUNS}?filter[ownerPrincipal][EQ]=${developer.id}`, developer.as)).json().data;
      expect(listed.map((item: { id: string }) => item.id)).toEqual([mine.id]);
      expectProblem(await post(RUNS, { spec: { nodes: [node('a', 'true')] }, executionProfileId: profileId, namespace: 'elsewhere' }, developer.as), 403);
    });
  });
});

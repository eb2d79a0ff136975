import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { ClusterScheduler } from '../../src/cluster/cluster-scheduler.js';
import { CLUSTER_DRIVER, type ClusterDriver, type Launch } from '../../src/cluster/drivers/cluster-driver.js';
import { WINDOW_MEMORY_BUDGET, WINDOW_SHARE } from '../../src/common/http/byte-reply.js';
import { poll } from '../support/poll.js';
import { bearer, enterableTempDir, problemPaths, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

/**
 * The cluster on the local driver (api-map §9, hub-interface §2.10 and §4.11): the hub's host as
 * its one node, jobs run as real processes, their logs and files, who may see and stop them,
 * placement (drain, constraints, slots, priority) and the retention prune.
 */

type Headers = Record<string, string>;
type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

interface TaskEvent {
  type: string;
  time: string;
  displayMessage: string;
  details: Record<string, string>;
  message: string;
}
interface TaskState {
  status: string;
  failed: boolean;
  restarts: number;
  lastRestart?: string;
  startedAt?: string;
  finishedAt?: string;
  events: TaskEvent[];
}
interface Job {
  id: string;
  name: string;
  status: 'pending' | 'running' | 'dead';
  type: string;
  submitTime: string;
  priority: number;
  properties: Record<string, string>;
}
interface JobListItem extends Omit<Job, 'properties'> {
  taskSummary: Record<'queued' | 'completed' | 'failed' | 'running' | 'starting' | 'lost', number>;
}
interface ExecutionListItem {
  id: string;
  jobId: string;
  status: 'pending' | 'running' | 'completed' | 'failed' | 'lost';
  creationTime: string;
  modifiedTime: string;
  nodeId?: string;
  nodeName?: string;
}
interface Execution extends ExecutionListItem {
  taskStates: Record<string, TaskState>;
  resources: { reservedCPU: number; reservedMemory: number };
  jobProperties: Record<string, string>;
}
interface List<T> {
  total: number;
  data: T[];
}
interface Task {
  command: string;
  args?: string[];
  envVars?: { name: string; value: string }[];
}

const API = '/api/v2/cluster';
const PROFILES = '/api/v2/execution-profiles/execprofiles';
const PASSWORD = 'a-cluster-user-password';
const UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-00000000c1a5';
const VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;

/** `sh -c script`: a task that runs a shell script in its working directory. */
const shell = (script: string): Task => ({ command: 'sh', args: ['-c', script] });

/** Alive and not a zombie. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
}

/** The live processes whose command line mentions `text` (an execution id: its wrapper names its exit-code file). */
/**
 * A `sleep` no other process on the machine runs: a task's pids are its PID namespace's, so the
 * spec finds its processes by what they run.
 */
function uniqueSleep(): string {
  return `sleep 300.${process.pid}${Math.floor(Math.random() * 1e6)}`;
}

function processesMentioning(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      // Arguments are NUL-separated: read as one line, `sleep 300.1` matches the sleep itself too.
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(text) && alive(Number(entry))) pids.push(Number(entry));
    } catch {
      // Ended meanwhile.
    }
  }
  return pids;
}

/** Kills, with their process groups, whatever still runs from a directory (a safety net for the suite's own jobs). */
function killAllUnder(dir: string): void {
  for (const pid of processesMentioning(dir)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone.
      }
    }
  }
}

const seqText = (count: number) => Array.from({ length: count }, (_, index) => `${index + 1}\n`).join('');
const plusMs = (time: string, ms: number) => new Date(Date.parse(time) + ms).toISOString();

/** The calls every part of the suite makes, against one hub as one caller by default. */
function clientOf(hub: TestHub, admin: Headers, sharedDir: string) {
  const call = (method: Method, url: string, payload?: unknown, as: Headers = admin): Promise<InjectResponse> =>
    hub.inject({
      method,
      url,
      headers: { ...as, ...(payload !== undefined && { 'content-type': 'application/json' }) },
      ...(payload !== undefined && { payload: JSON.stringify(payload) }),
    });
  const ok = async <T>(method: Method, url: string, payload?: unknown, as: Headers = admin, status = 200): Promise<T> => {
    const response = await call(method, url, payload, as);
    expect([method, url, response.statusCode, response.body]).toEqual([method, url, status, response.body]);
    return response.json<T>();
  };
  const client = {
    call,
    ok,
    created: <T>(url: string, payload: unknown, as: Headers = admin) => ok<T>('POST', url, payload, as, 201),
    submit: (body: { name: string; task: Task; executionProfileId: string; namespace?: string; priority?: number }, as: Headers = admin) =>
      ok<Job>('POST', `${API}/jobs`, { namespace: 'default', ...body }, as, 201),
    job: (id: string, as: Headers = admin) => ok<Job>('GET', `${API}/jobs/${id}`, undefined, as),
    jobs: (query: string, as: Headers = admin) => ok<List<JobListItem>>('GET', `${API}/jobs?${query}`, undefined, as),
    executions: (query: string, as: Headers = admin) => ok<List<ExecutionListItem>>('GET', `${API}/executions?${query}`, undefined, as),
    execution: (id: string, as: Headers = admin) => ok<Execution>('GET', `${API}/executions/${id}`, undefined, as),
    /** The one execution of a job. */
    executionOf: async (jobId: string, as: Headers = admin): Promise<Execution> => {
      const page = await client.executions(`filter[jobId][EQ]=${jobId}`, as);
      expect(page.total).toBe(1);
      return client.execution(page.data[0].id, as);
    },
    stop: (jobId: string, as: Headers = admin) => ok<Job>('POST', `${API}/jobs/${jobId}/stop`, undefined, as),
    log: async (executionId: string, name: 'stdout' | 'stderr', query = '', as: Headers = admin) =>
      (await ok<{ msg: string }>('GET', `${API}/executions/${executionId}/tasks/main/logs/${name}?${query}`, undefined, as)).msg,
    file: (executionId: string, query: string) => call('GET', `${API}/executions/${executionId}/files?${query}`),
    /** Waits until the job's one execution is in one of `statuses`, and returns it. */
    until: async (jobId: string, ...statuses: ExecutionListItem['status'][]): Promise<Execution> => {
      const execution = await poll(
        () => client.executionOf(jobId),
        (current) => statuses.includes(current.status),
        `job ${jobId} to be ${statuses.join(' or ')}`,
      );
      return execution;
    },
    /** Waits until the job's execution has an event of this type. */
    untilEvent: (jobId: string, type: string) =>
      poll(
        () => client.executionOf(jobId),
        (current) => current.taskStates.main.events.some((event) => event.type === type),
        `a ${type} event of job ${jobId}`,
      ),
    /** The working directory of an execution, where the suite can look and drop files. */
    workDir: (executionId: string) => join(sharedDir, 'executions', executionId, 'work'),
    events: (execution: Execution) => execution.taskStates.main.events.map((event) => event.type),
  };
  return client;
}

const ENV_LEAKS = {
  HUB_CREDENTIALS_KEY: 'ab'.repeat(32),
  DATABASE_URL: 'postgres://hub:leaked-db-password@db.invalid/hub',
  HUB_JWT_SECRET: 'a-leaked-jwt-secret-of-more-than-thirty-two-characters',
  HUB_ADMIN_PASSWORD: 'a-leaked-admin-password',
  HUB_UNRELATED_MARKER: 'leaked-marker',
};

describe('the cluster on the local driver', () => {
  let hub: TestHub;
  let admin: Headers;
  let c: ReturnType<typeof clientOf>;
  let sharedDir: string;
  let standardId: string;
  let defaultNamespaceId: string;
  let gpuProfileId: string;
  let nodeId: string;
  const saved: Record<string, string | undefined> = {};

  beforeAll(async () => {
    sharedDir = enterableTempDir('hub-cluster-');
    // The hub's own process environment holds settings and secrets, as a deployed hub's does.
    for (const [name, value] of Object.entries(ENV_LEAKS)) {
      saved[name] = process.env[name];
      process.env[name] = value;
    }
    hub = await startTestHub({
      env: {
        HUB_LOCAL_NODE_LABELS: 'fast,ssd',
        HUB_LOCAL_SLOTS: '8',
        HUB_SHARED_DIR: sharedDir,
        HUB_JOB_RETENTION_DAYS: '1',
        HUB_CREDENTIALS_KEY: ENV_LEAKS.HUB_CREDENTIALS_KEY,
      },
    });
    admin = bearer(hub.adminToken);
    c = clientOf(hub, admin, sharedDir);
    standardId = (await c.ok<{ data: { _id: string }[] }>('GET', `${PROFILES}?filter[name][EQ]=Standard`)).data[0]._id;
    defaultNamespaceId = (await c.ok<{ data: { _id: string }[] }>('GET', '/api/v2/namespaces?filter[name][EQ]=default')).data[0]._id;
    const gpu = await c.created<{ _id: string }>(PROFILES, { name: 'GPU', constraints: [{ attribute: 'node.label', operator: '=', value: 'gpu' }] });
    gpuProfileId = gpu._id;
    await c.created('/api/v2/execution-profiles/bindings', { executionProfileId: gpuProfileId, namespaceId: defaultNamespaceId });
    nodeId = (await c.ok<List<{ id: string }>>('GET', `${API}/nodes`)).data[0].id;
  }, 30_000);

  afterAll(async () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await hub?.close();
    if (sharedDir) {
      killAllUnder(sharedDir);
      rmSync(sharedDir, { recursive: true, force: true });
    }
  });

  describe('version and nodes', () => {
    it("answers the hub's version without authentication", async () => {
      const response = await hub.inject({ method: 'GET', url: `${API}/version` });
      expect([response.statusCode, response.json()]).toEqual([200, { version: VERSION }]);
    });

    it("lists the hub's host as the one ready node, with the labels of HUB_LOCAL_NODE_LABELS", async () => {
      const list = await c.ok<List<Record<string, unknown>>>('GET', `${API}/nodes`);
      expect(list).toEqual({
        total: 1,
        data: [
          {
            id: nodeId,
            name: hostname(),
            address: expect.any(String),
            type: 'server',
            isWorker: true,
            isServer: true,
            status: 'ready',
            nodeLabels: ['fast', 'ssd'],
          },
        ],
      });
      expect(Object.keys(list.data[0]).sort()).toEqual(['address', 'id', 'isServer', 'isWorker', 'name', 'nodeLabels', 'status', 'type']);
    });

    it('filters nodes by status, isWorker, isServer and labels, and sorts them by every field both ways', async () => {
      const count = async (query: string) => (await c.ok<List<unknown>>('GET', `${API}/nodes?${query}`)).total;
      const cases: [string, number][] = [
        ['filter[status][EQ]=ready', 1],
        ['filter[status][EQ]=down', 0],
        ['filter[status][IN]=down,ready', 1],
        ['filter[status][IN]=down&filter[status][IN]=ready', 1],
        ['filter[status][IN]=initializing,unknown', 0],
        ['filter[isWorker][EQ]=true', 1],
        ['filter[isWorker][EQ]=false', 0],
        ['filter[isServer][EQ]=true', 1],
        ['filter[isServer][EQ]=false', 0],
        ['filter[nodeLabels][ALL]=fast,ssd', 1],
        ['filter[nodeLabels][ALL]=fast,gpu', 0],
        ['filter[nodeLabels][ANY]=gpu,ssd', 1],
        ['filter[nodeLabels][ANY]=gpu', 0],
      ];
      for (const [query, expected] of cases) expect([query, await count(query)]).toEqual([query, expected]);
      for (const sort of ['id', 'name', 'address', 'status']) {
        for (const value of [sort, `-${sort}`]) expect([value, await count(`sort=${value}`)]).toEqual([value, 1]);
      }
      for (const bad of [
        'filter[status][EQ]=busy',
        'filter[name][EQ]=x',
        'filter[isWorker][EQ]=maybe',
        'filter[nodeLabels][EQ]=fast',
        'sort=labels',
        'sort=-cpu',
      ]) {
        expect([bad, (await c.call('GET', `${API}/nodes?${bad}`)).statusCode]).toEqual([bad, 400]);
      }
    });

    it('gives a node in detail, and 404 for an unknown one', async () => {
      const node = await c.ok<Record<string, unknown>>('GET', `${API}/nodes/${nodeId}`);
      expect(node).toEqual({
        id: nodeId,
        name: hostname(),
        hostname: hostname(),
        address: expect.any(String),
        resources: { memory: expect.any(Number), cpu: 8 },
        type: 'server',
        isWorker: true,
        isServer: true,
        status: 'ready',
        attributes: expect.objectContaining({ os: 'linux', draining: 'false', arch: process.arch, cpus: expect.any(String) }),
      });
      expect((node.resources as { memory: number }).memory).toBeGreaterThan(0);
      expect((await c.call('GET', `${API}/nodes/${UNKNOWN_ID}`)).statusCode).toBe(404);
      expect((await c.call('GET', `${API}/nodes/not-a-node`)).statusCode).toBe(404);
    });

    it('answers the node labels and operating systems in use', async () => {
      expect(await c.ok('GET', `${API}/node-labels`)).toEqual(['fast', 'ssd']);
      expect(await c.ok('GET', `${API}/operating-systems`)).toEqual(['linux']);
    });

    it('lets a drained node take no new job (it waits, with an event) until it is undrained', async () => {
      const drained = await c.ok<{ attributes: Record<string, string> }>('POST', `${API}/nodes/${nodeId}/drain`, { enable: true });
      expect(drained.attributes.draining).toBe('true');
      try {
        const job = await c.submit({ name: 'while-drained', executionProfileId: standardId, task: { command: 'echo', args: ['drained'] } });
        const waiting = await c.untilEvent(job.id, 'PlacementFailed');
        expect(waiting.status).toBe('pending');
        expect(waiting.taskStates.main.events.at(-1)?.message).toContain('No node takes work now');
        expect((await c.job(job.id)).status).toBe('pending');
        expect(await c.log(waiting.id, 'stdout')).toBe('');
        const undrained = await c.ok<{ attributes: Record<string, string> }>('POST', `${API}/nodes/${nodeId}/drain`, { enable: false });
        expect(undrained.attributes.draining).toBe('false');
        const done = await c.until(job.id, 'completed');
        expect(c.events(done)).toEqual(['Received', 'PlacementFailed', 'Started', 'Terminated']);
        expect(await c.log(done.id, 'stdout')).toBe('drained\n');
      } finally {
        await c.call('POST', `${API}/nodes/${nodeId}/drain`, { enable: false });
      }
      expect((await c.call('POST', `${API}/nodes/${nodeId}/drain`, { enable: 'yes' })).statusCode).toBe(400);
      expect((await c.call('POST', `${API}/nodes/${nodeId}/drain`, {})).statusCode).toBe(400);
      expect((await c.call('POST', `${API}/nodes/${UNKNOWN_ID}/drain`, { enable: true })).statusCode).toBe(404);
    });
  });

  describe('jobs', () => {
    it('runs a job that exits 0: stdout and stderr logged, completed, the job dead, its task summary counted', async () => {
      const job = await c.submit({ name: 'hello', executionProfileId: standardId, task: shell('echo out; echo err >&2') });
      expect(job).toEqual({
        id: expect.any(String),
        name: 'hello',
        status: 'pending',
        type: 'batch',
        submitTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        priority: 50,
        properties: { namespace: 'default', executionProfileId: standardId, executionProfile: 'Standard', owner: 'admin', ownerId: expect.any(String) },
      });
      const execution = await c.until(job.id, 'completed');
      expect(execution.taskStates.main).toMatchObject({ status: 'dead', failed: false });
      expect(execution.taskStates.main.events.at(-1)).toMatchObject({ type: 'Terminated', details: { exitCode: '0' } });
      expect(await c.log(execution.id, 'stdout')).toBe('out\n');
      expect(await c.log(execution.id, 'stderr')).toBe('err\n');
      const dead = await c.job(job.id);
      expect(dead).toEqual({ ...job, status: 'dead' });
      const listed = await c.jobs(`filter[name][ST]=hello`);
      expect(listed.data.find((item) => item.id === job.id)).toEqual({
        id: job.id,
        name: 'hello',
        status: 'dead',
        type: 'batch',
        submitTime: job.submitTime,
        priority: 50,
        taskSummary: { queued: 0, completed: 1, failed: 0, running: 0, starting: 0, lost: 0 },
      });
    });

    it('fails a job that exits non-zero, with the exit code in its Terminated event, and one whose command does not exist', async () => {
      const job = await c.submit({ name: 'exit-3', executionProfileId: standardId, task: shell('echo partial; exit 3') });
      const execution = await c.until(job.id, 'failed', 'completed');
      expect(execution.status).toBe('failed');
      expect(execution.taskStates.main).toMatchObject({ status: 'dead', failed: true });
      expect(execution.taskStates.main.events.at(-1)).toMatchObject({ type: 'Terminated', details: { exitCode: '3' }, message: 'Exited with code 3' });
      expect((await c.job(job.id)).status).toBe('dead');
      const summary = (await c.jobs('filter[name][ST]=exit-3')).data[0].taskSummary;
      expect(summary).toEqual({ queued: 0, completed: 0, failed: 1, running: 0, starting: 0, lost: 0 });

      const missing = await c.submit({ name: 'no-such-command', executionProfileId: standardId, task: { command: 'no-such-command-here' } });
      const notFound = await c.until(missing.id, 'failed', 'completed');
      expect(notFound.status).toBe('failed');
      expect(notFound.taskStates.main.events.at(-1)?.details).toEqual({ exitCode: '127' });
      expect(await c.log(notFound.id, 'stderr')).toContain('no-such-command-here');
    });

    it("gives a job its profile's environment (which its envVars may not change), its envVars, and its ids, but none of the hub's own settings", async () => {
      const profile = await c.created<{ _id: string }>(PROFILES, { name: 'WithEnv', environment: { SHARED: 'from-profile', ONLY_PROFILE: 'p' } });
      await c.created('/api/v2/execution-profiles/bindings', { executionProfileId: profile._id, namespaceId: defaultNamespaceId });
      const overriding = await c.call('POST', `${API}/jobs`, {
        name: 'env-overriding',
        namespace: 'default',
        executionProfileId: profile._id,
        task: {
          command: 'env',
          envVars: [
            { name: 'ONLY_JOB', value: 'j' },
            { name: 'SHARED', value: 'from-job' },
          ],
        },
      });
      expect([overriding.statusCode, problemPaths(overriding), overriding.json<{ detail: string }>().detail]).toEqual([
        400,
        ['/task/envVars/1/name'],
        "Invalid request body: SHARED is set by execution profile 'WithEnv'; a job may not change it",
      ]);
      expect((await c.jobs('filter[name][ST]=env-overriding')).total).toBe(0);
      const job = await c.submit({
        name: 'env',
        executionProfileId: profile._id,
        task: {
          command: 'env',
          envVars: [
            { name: 'ONLY_JOB', value: 'j' },
            { name: 'TWICE', value: 'first' },
            { name: 'TWICE', value: 'second' },
            { name: 'HUB_JOB_ID', value: 'forged' },
          ],
        },
      });
      const execution = await c.until(job.id, 'completed', 'failed');
      expect(execution.status).toBe('completed');
      const output = await c.log(execution.id, 'stdout');
      const env = Object.fromEntries(
        output
          .split('\n')
          .filter(Boolean)
          .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
      );
      expect(env).toMatchObject({
        SHARED: 'from-profile',
        ONLY_PROFILE: 'p',
        ONLY_JOB: 'j',
        TWICE: 'second',
        HUB_JOB_ID: job.id,
        HUB_EXECUTION_ID: execution.id,
        HUB_TASK_NAME: 'main',
        PATH: process.env.PATH,
      });
      for (const [name, value] of Object.entries(ENV_LEAKS)) {
        expect([name, env[name]]).toEqual([name, undefined]);
        expect(output).not.toContain(value);
      }
      expect(Object.keys(env).filter((name) => name.startsWith('HUB_') && !['HUB_JOB_ID', 'HUB_EXECUTION_ID', 'HUB_TASK_NAME'].includes(name))).toEqual([]);
    });

    it('stops a running job: dead, its execution failed with a Killed event, and its processes gone', async () => {
      const sleep = uniqueSleep();
      const job = await c.submit({ name: 'long', executionProfileId: standardId, task: shell(sleep) });
      const running = await c.until(job.id, 'running');
      expect((await c.job(job.id)).status).toBe('running');
      expect((await c.jobs('filter[name][ST]=long')).data[0].taskSummary).toMatchObject({ running: 1, queued: 0 });
      await poll(
        () => processesMentioning(sleep).length,
        (count) => count > 0,
        'the task to start',
      );
      expect(processesMentioning(running.id).length).toBeGreaterThan(0);
      const started = Date.now();
      const stopped = await c.stop(job.id);
      expect(Date.now() - started).toBeLessThan(4000);
      expect(stopped).toMatchObject({ id: job.id, status: 'dead' });
      const execution = await c.executionOf(job.id);
      expect(execution.status).toBe('failed');
      expect(execution.taskStates.main).toMatchObject({ status: 'dead', failed: true, finishedAt: expect.any(String) });
      expect(execution.taskStates.main.events.at(-1)).toMatchObject({ type: 'Killed', message: 'Stopped by admin' });
      await poll(
        () => processesMentioning(sleep).length > 0 || processesMentioning(running.id).length > 0,
        (any) => !any,
        'the stopped processes to end',
        3000,
      );
      // Stopping it again changes nothing.
      expect(await c.stop(job.id)).toMatchObject({ status: 'dead' });
      expect(c.events(await c.executionOf(job.id))).toEqual(['Received', 'Started', 'Killed']);
    });

    it('kills on stop also what ignores SIGTERM', async () => {
      const sleep = uniqueSleep();
      const job = await c.submit({ name: 'stubborn', executionProfileId: standardId, task: shell(`trap '' TERM; ${sleep} & wait; sleep 300`) });
      await c.until(job.id, 'running');
      await poll(
        () => processesMentioning(sleep).length,
        (count) => count > 1,
        'the stubborn shell and its sleep',
      );
      await c.stop(job.id);
      await poll(
        () => processesMentioning(sleep).length > 0,
        (any) => !any,
        'the stubborn shell to end',
        7000,
      );
    });

    it('stops a pending job: it never starts', async () => {
      const job = await c.submit({ name: 'never', executionProfileId: gpuProfileId, task: shell('echo ran > ran') });
      const waiting = await c.untilEvent(job.id, 'PlacementFailed');
      expect(await c.stop(job.id)).toMatchObject({ status: 'dead' });
      const execution = await c.executionOf(job.id);
      expect([execution.status, c.events(execution)]).toEqual(['failed', ['Received', 'PlacementFailed', 'Killed']]);
      expect(execution.taskStates.main.startedAt).toBeUndefined();
      expect(existsSync(join(c.workDir(waiting.id), 'ran'))).toBe(false);
    });

    it('a job stopped while its execution is being started leaves no process behind', async () => {
      // The scheduler claims the execution, then the driver starts it; a stop in between marks it
      // failed, and the process the driver then starts is never killed nor followed.
      const driver = hub.app.get<ClusterDriver>(CLUSTER_DRIVER);
      const original = driver.start.bind(driver);
      let reached!: () => void;
      let release!: () => void;
      let spawned!: (ref: string) => void;
      const atStart = new Promise<void>((resolve) => (reached = resolve));
      const gate = new Promise<void>((resolve) => (release = resolve));
      const started = new Promise<string>((resolve) => (spawned = resolve));
      driver.start = async (launch: Launch) => {
        reached();
        await gate;
        const ref = await original(launch);
        spawned(ref);
        return ref;
      };
      let executionId: string | undefined;
      try {
        const job = await c.submit({ name: 'racing', executionProfileId: standardId, task: shell('sleep 300') });
        await atStart;
        expect(await c.stop(job.id)).toMatchObject({ status: 'dead' });
        release();
        const wrapper = Number(await started);
        const execution = await c.executionOf(job.id);
        executionId = execution.id;
        expect(execution.status).toBe('failed');
        await poll(
          () => alive(wrapper),
          (any) => !any,
          'the process of the stopped job to end',
          // Stopped before its task could catch SIGTERM, it ends only at the grace period's SIGKILL.
          7000,
        ).catch(() => undefined);
        expect({ wrapperAlive: alive(wrapper), processes: processesMentioning(execution.id) }).toEqual({ wrapperAlive: false, processes: [] });
      } finally {
        // The driver's own start again (it is on its prototype).
        delete (driver as { start?: unknown }).start;
        release();
        if (executionId) killAllUnder(executionId);
      }
    });

    it('leaves no process of a job running once the job is dead (what its task started in the background ends with it)', async () => {
      const sleep = uniqueSleep();
      const job = await c.submit({ name: 'daemon', executionProfileId: standardId, task: shell(`${sleep} & echo started`) });
      const execution = await c.until(job.id, 'completed', 'failed');
      expect([execution.status, (await c.job(job.id)).status]).toEqual(['completed', 'dead']);
      try {
        await poll(
          () => processesMentioning(sleep).length > 0,
          (any) => !any,
          'the background process to end',
          2000,
        ).catch(() => undefined);
        // Stopping the dead job does not help either.
        await c.stop(job.id);
        expect(processesMentioning(sleep)).toEqual([]);
      } finally {
        killAllUnder(sleep);
      }
    });

    it('keeps a job whose profile no node satisfies pending, with one PlacementFailed event naming the constraint', async () => {
      const job = await c.submit({ name: 'needs-gpu', executionProfileId: gpuProfileId, task: { command: 'true' } });
      const waiting = await c.untilEvent(job.id, 'PlacementFailed');
      expect(waiting.status).toBe('pending');
      const failure = waiting.taskStates.main.events.at(-1) as TaskEvent;
      expect(failure.message).toContain('node.label = gpu');
      expect(failure.message).toContain(hostname());
      expect(failure.displayMessage).toBe(failure.message);
      // Other jobs wake the scheduler, which tries the waiting one again at every tick.
      for (const name of ['wake-1', 'wake-2'])
        await c.until((await c.submit({ name, executionProfileId: standardId, task: { command: 'true' } })).id, 'completed');
      const later = await c.executionOf(job.id);
      expect(later.status).toBe('pending');
      expect(c.events(later)).toEqual(['Received', 'PlacementFailed']);
      expect(await c.log(later.id, 'stdout')).toBe('');
      expect((await c.file(later.id, 'path=')).statusCode).toBe(404);
      await c.stop(job.id);
    });

    it('gives an execution in detail: task state with its events, resources and the job properties', async () => {
      const job = await c.submit({ name: 'detail', executionProfileId: standardId, task: { command: 'true' } });
      const execution = await c.until(job.id, 'completed');
      expect(execution).toEqual({
        id: expect.any(String),
        jobId: job.id,
        status: 'completed',
        creationTime: expect.any(String),
        modifiedTime: expect.any(String),
        nodeId,
        nodeName: hostname(),
        taskStates: {
          main: {
            status: 'dead',
            failed: false,
            restarts: 0,
            startedAt: expect.any(String),
            finishedAt: expect.any(String),
            events: [
              { type: 'Received', time: expect.any(String), displayMessage: expect.any(String), details: {}, message: expect.any(String) },
              { type: 'Started', time: expect.any(String), displayMessage: expect.any(String), details: { node: hostname() }, message: expect.any(String) },
              { type: 'Terminated', time: expect.any(String), displayMessage: 'Exited with code 0', details: { exitCode: '0' }, message: 'Exited with code 0' },
            ],
          },
        },
        resources: { reservedCPU: 1, reservedMemory: 0 },
        jobProperties: job.properties,
      });
      const state = execution.taskStates.main;
      const times = state.events.map((event) => Date.parse(event.time));
      expect([...times].sort((a, b) => a - b)).toEqual(times);
      expect(Date.parse(state.startedAt as string)).toBeLessThanOrEqual(Date.parse(state.finishedAt as string));
      expect(Date.parse(execution.creationTime)).toBeLessThanOrEqual(Date.parse(execution.modifiedTime));
      expect((await c.call('GET', `${API}/executions/${UNKNOWN_ID}`)).statusCode).toBe(404);
      expect((await c.call('GET', `${API}/jobs/${UNKNOWN_ID}`)).statusCode).toBe(404);
      expect((await c.call('POST', `${API}/jobs/${UNKNOWN_ID}/stop`)).statusCode).toBe(404);
      expect((await c.call('GET', `${API}/jobs/${job.id}?page[offset]=0&page[limit]=10`)).statusCode).toBe(200);
      for (const bad of ['page[offset]=-1', 'page[limit]=abc', 'page[limit]=100000', 'page[offset]=1.5'])
        expect([bad, (await c.call('GET', `${API}/jobs/${job.id}?${bad}`)).statusCode]).toEqual([bad, 400]);
    });
  });

  describe('job and execution lists', () => {
    let pending: Job;
    let running: Job;
    let dead: Job;
    const ids = (list: List<{ id: string }>) => list.data.map((item) => item.id);
    const listed = async (query: string) => ids(await c.jobs(`filter[name][ST]=list-&${query}`));

    beforeAll(async () => {
      pending = await c.submit({ name: 'list-a', executionProfileId: gpuProfileId, task: { command: 'true' } });
      running = await c.submit({ name: 'list-B', executionProfileId: standardId, task: shell('sleep 300') });
      dead = await c.submit({ name: 'list-c', executionProfileId: standardId, task: { command: 'true' } });
      await c.until(running.id, 'running');
      await c.until(dead.id, 'completed');
    });
    afterAll(async () => {
      for (const job of [pending, running]) if (job) await c.stop(job.id);
    });

    it('filters jobs by name (ST, CO), status (EQ, IN), type and submit time', async () => {
      expect(await listed('sort=name')).toEqual([pending.id, running.id, dead.id]);
      expect(ids(await c.jobs('filter[name][ST]=LIST-&sort=name'))).toEqual([pending.id, running.id, dead.id]);
      expect(ids(await c.jobs('filter[name][CO]=ST-b'))).toEqual([running.id]);
      expect(ids(await c.jobs('filter[name][ST]=ist-'))).toEqual([]);
      expect(await listed('filter[name][CO]=%25')).toEqual([]);
      expect(await listed('filter[status][EQ]=running')).toEqual([running.id]);
      expect(await listed('filter[status][EQ]=pending')).toEqual([pending.id]);
      expect(await listed('filter[status][IN]=dead,pending&sort=name')).toEqual([pending.id, dead.id]);
      expect(await listed('filter[status][IN]=dead&filter[status][IN]=running&sort=name')).toEqual([running.id, dead.id]);
      expect(await listed('filter[type][EQ]=batch&sort=name')).toEqual([pending.id, running.id, dead.id]);
      expect(await listed('filter[type][EQ]=service')).toEqual([]);
      expect(await listed(`filter[submitTime][GT]=${running.submitTime}&sort=name`)).toEqual([dead.id]);
      expect(await listed(`filter[submitTime][LT]=${running.submitTime}`)).toEqual([pending.id]);
      expect(await listed(`filter[submitTime][GT]=${pending.submitTime}&filter[submitTime][LT]=${dead.submitTime}`)).toEqual([running.id]);
      const list = await c.jobs('filter[name][ST]=list-&page[limit]=1&page[offset]=1&sort=name');
      expect([list.total, ids(list)]).toEqual([3, [running.id]]);
      expect(list.data[0].taskSummary).toEqual({ queued: 0, completed: 0, failed: 0, running: 1, starting: 0, lost: 0 });
      expect((await c.jobs('filter[name][ST]=list-a')).data[0].taskSummary).toEqual({ queued: 1, completed: 0, failed: 0, running: 0, starting: 0, lost: 0 });
    });

    it('sorts jobs by name, status, type and submit time, both ways', async () => {
      expect(await listed('sort=name')).toEqual([pending.id, running.id, dead.id]);
      expect(await listed('sort=-name')).toEqual([dead.id, running.id, pending.id]);
      expect(await listed('sort=status')).toEqual([dead.id, pending.id, running.id]);
      expect(await listed('sort=-status')).toEqual([running.id, pending.id, dead.id]);
      expect((await listed('sort=type')).sort()).toEqual([pending.id, running.id, dead.id].sort());
      expect((await listed('sort=-type')).sort()).toEqual([pending.id, running.id, dead.id].sort());
      expect(await listed('sort=submitTime')).toEqual([pending.id, running.id, dead.id]);
      expect(await listed('sort=-submitTime')).toEqual([dead.id, running.id, pending.id]);
      expect(await listed('')).toEqual([dead.id, running.id, pending.id]);
      for (const bad of [
        'sort=priority',
        'filter[priority][EQ]=50',
        'filter[status][EQ]=finished',
        'filter[type][EQ]=cron',
        'filter[name][EQ]=x',
        'filter[submitTime][GT]=yesterday',
        'page[limit]=0',
      ]) {
        expect([bad, (await c.call('GET', `${API}/jobs?${bad}`)).statusCode]).toEqual([bad, 400]);
      }
    });

    it('filters executions by job, node, status and creation and modification times', async () => {
      const [a, b, d] = await Promise.all([pending, running, dead].map((job) => c.executionOf(job.id)));
      const executionIds = async (query: string) => ids(await c.executions(`${query}&page[limit]=1000`));
      expect(await executionIds(`filter[jobId][EQ]=${running.id}`)).toEqual([b.id]);
      expect(await executionIds(`filter[jobId][EQ]=${UNKNOWN_ID}`)).toEqual([]);
      const onNode = await executionIds(`filter[nodeId][EQ]=${nodeId}`);
      expect(onNode).toEqual(expect.arrayContaining([b.id, d.id]));
      expect(onNode).not.toContain(a.id);
      const completed = await executionIds('filter[status][EQ]=completed');
      expect([completed.includes(d.id), completed.includes(b.id)]).toEqual([true, false]);
      const live = await executionIds('filter[status][IN]=running,pending');
      expect(live).toEqual(expect.arrayContaining([a.id, b.id]));
      expect(live).not.toContain(d.id);
      const since = `filter[creationTime][GT]=${a.creationTime}`;
      expect((await executionIds(since)).sort()).toEqual([b.id, d.id].sort());
      expect(await executionIds(`${since}&filter[creationTime][LT]=${d.creationTime}`)).toEqual([b.id]);
      expect(await executionIds(`filter[jobId][EQ]=${dead.id}&filter[modifiedTime][LT]=${d.modifiedTime}`)).toEqual([]);
      expect(await executionIds(`filter[jobId][EQ]=${dead.id}&filter[modifiedTime][GT]=${d.modifiedTime}`)).toEqual([]);
      expect(await executionIds(`filter[jobId][EQ]=${dead.id}&filter[modifiedTime][LT]=${plusMs(d.modifiedTime, 1)}`)).toEqual([d.id]);
      expect(await executionIds(`filter[jobId][EQ]=${dead.id}&filter[modifiedTime][GT]=${plusMs(d.modifiedTime, -1)}`)).toEqual([d.id]);
      const item = (await c.executions(`filter[jobId][EQ]=${dead.id}`)).data[0];
      expect(item).toEqual({
        id: d.id,
        jobId: dead.id,
        status: 'completed',
        creationTime: d.creationTime,
        modifiedTime: d.modifiedTime,
        nodeId,
        nodeName: hostname(),
      });
      expect((await c.executions(`filter[jobId][EQ]=${pending.id}`)).data[0]).toEqual({
        id: a.id,
        jobId: pending.id,
        status: 'pending',
        creationTime: a.creationTime,
        modifiedTime: expect.any(String),
      });
      for (const bad of [
        'filter[jobId][EQ]=not-a-uuid',
        'filter[status][EQ]=dead',
        'filter[name][ST]=x',
        'filter[creationTime][EQ]=2020-01-01T00:00:00.000Z',
      ]) {
        expect([bad, (await c.call('GET', `${API}/executions?${bad}`)).statusCode]).toEqual([bad, 400]);
      }
    });
  });

  describe('task logs', () => {
    const text = seqText(1000);
    let executionId: string;
    beforeAll(async () => {
      const job = await c.submit({ name: 'seq', executionProfileId: standardId, task: { command: 'seq', args: ['1', '1000'] } });
      executionId = (await c.until(job.id, 'completed')).id;
    });

    it('reads windows from the start and from the end', async () => {
      expect(await c.log(executionId, 'stdout')).toBe(text);
      expect(await c.log(executionId, 'stdout', 'origin=start&offset=10&limit=20')).toBe(text.slice(10, 30));
      expect(await c.log(executionId, 'stdout', 'offset=3885')).toBe(text.slice(3885));
      expect(await c.log(executionId, 'stdout', 'limit=4')).toBe('1\n2\n');
      expect(await c.log(executionId, 'stdout', 'origin=end&limit=9')).toBe('999\n1000\n');
      expect(await c.log(executionId, 'stdout', 'origin=end&offset=5&limit=4')).toBe(text.slice(text.length - 9, text.length - 5));
      expect(await c.log(executionId, 'stdout', `origin=end&offset=${text.length - 4}`)).toBe('1\n2\n');
      expect(await c.log(executionId, 'stdout', `offset=${text.length}`)).toBe('');
      expect(await c.log(executionId, 'stdout', 'offset=99999999')).toBe('');
      expect(await c.log(executionId, 'stdout', 'origin=end&offset=99999999')).toBe('');
      expect(await c.log(executionId, 'stdout', 'origin=end&limit=16777216')).toBe(text);
      expect(await c.log(executionId, 'stderr')).toBe('');
    });

    it('answers the exact bytes of a window as application/octet-stream when Accept asks for them', async () => {
      const job = await c.submit({ name: 'bytes', executionProfileId: standardId, task: shell("printf 'a\\377\\376b' | tee data.bin") });
      const done = await c.until(job.id, 'completed');
      const expected = Buffer.from([0x61, 0xff, 0xfe, 0x62]);
      for (const url of [`${API}/executions/${done.id}/tasks/main/logs/stdout`, `${API}/executions/${done.id}/files?path=data.bin`]) {
        const raw = await hub.inject({ method: 'GET', url, headers: { ...admin, accept: 'application/octet-stream' } });
        expect([raw.statusCode, raw.headers['content-type'], raw.rawPayload]).toEqual([200, 'application/octet-stream', expected]);
        const window = await hub.inject({
          method: 'GET',
          url: `${url}${url.includes('?') ? '&' : '?'}offset=1&limit=2`,
          headers: { ...admin, accept: 'application/octet-stream, application/json;q=0.5' },
        });
        expect(window.rawPayload).toEqual(expected.subarray(1, 3));
        // Otherwise JSON, invalid UTF-8 replaced.
        const json = await hub.inject({ method: 'GET', url, headers: { ...admin, accept: 'application/json, application/octet-stream;q=0.1' } });
        expect([json.statusCode, json.json()]).toEqual([200, { msg: 'a\uFFFD\uFFFDb' }]);
      }
      // A problem stays a problem.
      const missing = await hub.inject({
        method: 'GET',
        url: `${API}/executions/${done.id}/files?path=none`,
        headers: { ...admin, accept: 'application/octet-stream' },
      });
      expect([missing.statusCode, missing.headers['content-type']]).toEqual([404, 'application/problem+json; charset=utf-8']);
    });

    it('streams large windows, raw or as JSON, and gives back each one’s file and share of the budget once its reply has gone', async () => {
      const job = await c.submit({
        name: 'large-window',
        executionProfileId: standardId,
        task: shell('head -c 3000000 /dev/urandom > data.bin; seq 1 400000'),
      });
      const done = await c.until(job.id, 'completed');
      const openFiles = () => readdirSync('/proc/self/fd').length;
      const before = openFiles();
      const file = `${API}/executions/${done.id}/files?path=data.bin&offset=1000&limit=2500000`;
      const raw = await hub.inject({ method: 'GET', url: file, headers: { ...admin, accept: 'application/octet-stream' } });
      expect(raw.rawPayload.length).toBe(2_500_000);
      const json = await hub.inject({ method: 'GET', url: file, headers: admin });
      expect([json.headers['content-type'], json.payload === JSON.stringify({ msg: raw.rawPayload.toString('utf8') })]).toEqual([
        'application/json; charset=utf-8',
        true,
      ]);
      // More windows of the log, one after another, than the budget lets be in flight at once: each gave its share back.
      const log = `${API}/executions/${done.id}/tasks/main/logs/stdout?origin=end&limit=2000000`;
      const text = (await hub.inject({ method: 'GET', url: log, headers: { ...admin, accept: 'application/octet-stream' } })).rawPayload.toString();
      for (let i = 0; i < WINDOW_MEMORY_BUDGET / WINDOW_SHARE + 6; i += 1) {
        const reply = await hub.inject({
          method: 'GET',
          url: log,
          headers: { ...admin, accept: i % 2 === 0 ? 'application/json' : 'application/octet-stream' },
        });
        expect(i % 2 === 0 ? reply.json<{ msg: string }>().msg === text : reply.payload === text).toBe(true);
      }
      expect(text.endsWith('399999\n400000\n')).toBe(true);
      expect(openFiles()).toBeLessThanOrEqual(before);
    });

    it('answers 404 for an unknown task, log or execution, and 400 for a bad window', async () => {
      const url = (task: string, log: string, query = '') => `${API}/executions/${executionId}/tasks/${task}/logs/${log}?${query}`;
      expect((await c.call('GET', url('other', 'stdout'))).statusCode).toBe(404);
      expect((await c.call('GET', url('main', 'stdin'))).statusCode).toBe(404);
      expect((await c.call('GET', url('main', '..%2Fexit-code'))).statusCode).toBe(404);
      expect((await c.call('GET', `${API}/executions/${UNKNOWN_ID}/tasks/main/logs/stdout`)).statusCode).toBe(404);
      for (const [query, path] of [
        ['origin=middle', 'origin'],
        ['offset=-1', 'offset'],
        ['offset=abc', 'offset'],
        ['offset=1.5', 'offset'],
        ['limit=0', 'limit'],
        ['limit=16777217', 'limit'],
        ['limit=', 'limit'],
      ]) {
        const response = await c.call('GET', url('main', 'stdout', query));
        expect([query, response.statusCode, problemPaths(response)]).toEqual([query, 400, [path]]);
      }
    });
  });

  describe('execution files', () => {
    let executionId: string;
    beforeAll(async () => {
      const job = await c.submit({
        name: 'files',
        executionProfileId: standardId,
        task: shell(
          'mkdir sub && echo hello > sub/a.txt && printf 0123456789 > digits && ln -s /etc/passwd leak && ln -s sub inside && ln -s .. up && ln -s /etc etc && mkfifo pipe',
        ),
      });
      const execution = await c.until(job.id, 'completed', 'failed');
      expect(execution.status).toBe('completed');
      executionId = execution.id;
    });
    const msg = async (query: string) => {
      const response = await c.file(executionId, query);
      expect([query, response.statusCode, response.body]).toEqual([query, 200, response.body]);
      return response.json<{ msg: string }>().msg;
    };

    it('lists a directory (directories with a trailing /) and reads a window of a file', async () => {
      expect(await msg('path=')).toBe(['digits', 'etc', 'inside', 'leak', 'pipe', 'sub/', 'up'].join('\n'));
      expect(await msg('')).toBe(await msg('path='));
      expect(await msg('path=sub')).toBe('a.txt');
      expect(await msg('path=sub/')).toBe('a.txt');
      expect(await msg('path=sub/a.txt')).toBe('hello\n');
      expect(await msg('path=inside/a.txt')).toBe('hello\n');
      expect(await msg('path=digits')).toBe('0123456789');
      expect(await msg('path=digits&offset=3&limit=4')).toBe('3456');
      expect(await msg('path=digits&offset=8')).toBe('89');
      expect(await msg('path=digits&offset=20')).toBe('');
    });

    it('refuses .., absolute paths and links out of the working directory (400), and answers 404 for a missing file', async () => {
      for (const path of ['..', '../logs/stdout', 'sub/../digits', '/etc/passwd', 'leak', 'up', 'up/logs/stdout', 'etc/passwd', 'etc']) {
        const response = await c.file(executionId, `path=${encodeURIComponent(path)}`);
        expect([path, response.statusCode, problemPaths(response)]).toEqual([path, 400, ['path']]);
        expect(response.body).not.toContain('root:');
      }
      for (const path of ['missing', 'sub/missing.txt']) expect([path, (await c.file(executionId, `path=${path}`)).statusCode]).toEqual([path, 404]);
      expect((await c.file(UNKNOWN_ID, 'path=digits')).statusCode).toBe(404);
      // Neither a file nor a directory: refused as bad input, not read.
      const pipe = await c.file(executionId, 'path=pipe');
      expect([pipe.statusCode, pipe.json<{ detail: string }>().detail]).toEqual([
        400,
        expect.stringMatching(/^'pipe' in the working directory of job execution \S+ is not a regular file or directory$/),
      ]);
      for (const bad of ['path=digits&offset=-1', 'path=digits&limit=0', 'path=digits&limit=x'])
        expect([bad, (await c.file(executionId, bad)).statusCode]).toEqual([bad, 400]);
    });
  });

  describe('submit validation', () => {
    const expectInvalid = async (body: Record<string, unknown>, paths: string[]) => {
      const response = await c.call('POST', `${API}/jobs`, body);
      expect([response.statusCode, response.headers['content-type']]).toEqual([400, expect.stringContaining('application/problem+json')]);
      expect(problemPaths(response).sort()).toEqual(paths.sort());
    };
    const valid = () => ({ name: 'valid', namespace: 'default', executionProfileId: standardId, task: { command: 'true' } });

    it('names the invalid fields of a body', async () => {
      const { name: _name, ...withoutName } = valid();
      await expectInvalid(withoutName, ['/name']);
      await expectInvalid({ ...valid(), name: '' }, ['/name']);
      await expectInvalid({ ...valid(), task: { command: 'true', envVars: [{ name: '1BAD', value: 'x' }] } }, ['/task/envVars/0/name']);
      await expectInvalid(
        {
          ...valid(),
          task: {
            command: 'true',
            envVars: [
              { name: 'OK', value: 'x' },
              { name: 'A-B', value: 'x' },
            ],
          },
        },
        ['/task/envVars/1/name'],
      );
      await expectInvalid({ ...valid(), task: { command: 'true', envVars: [{ name: 'OK' }] } }, ['/task/envVars/0/value']);
      await expectInvalid({ ...valid(), task: { command: '' } }, ['/task/command']);
      await expectInvalid({ ...valid(), task: { command: 'true', args: [1] } }, ['/task/args']);
      await expectInvalid({ ...valid(), priority: 101 }, ['/priority']);
      await expectInvalid({ ...valid(), priority: -1 }, ['/priority']);
      await expectInvalid({ ...valid(), priority: 1.5 }, ['/priority']);
      await expectInvalid({ ...valid(), executionProfileId: 'Standard' }, ['/executionProfileId']);
      await expectInvalid({ ...valid(), task: null }, ['/task']);
      await expectInvalid({ ...valid(), task: 'echo' }, ['/task']);
      await expectInvalid({ ...valid(), extra: true }, ['/extra']);
      // Nullable optional fields take their defaults.
      const defaults = await c.submit({
        ...valid(),
        name: 'defaults',
        task: { command: 'true', args: null, envVars: null } as unknown as Task,
        priority: null as unknown as number,
      });
      expect(defaults.priority).toBe(50);
      expect((await c.until(defaults.id, 'completed', 'failed')).status).toBe('completed');
    });

    it('refuses a body whose task is missing (not a 500) or an array (not a job that cannot start)', async () => {
      const { task: _task, ...withoutTask } = valid();
      const missing = await c.call('POST', `${API}/jobs`, withoutTask);
      const empty = await c.call('POST', `${API}/jobs`, { ...valid(), name: 'array-task', task: [] });
      const listed = await c.call('POST', `${API}/jobs`, { ...valid(), name: 'array-task', task: [{ command: 'true' }] });
      expect([missing, empty, listed].map((response) => [response.statusCode, problemPaths(response)])).toEqual([
        [400, ['/task']],
        [400, ['/task']],
        [400, ['/task']],
      ]);
    });

    it('refuses an unknown namespace, an unknown profile and a profile not bound to the namespace', async () => {
      await expectInvalid({ ...valid(), namespace: 'nowhere' }, ['/namespace']);
      await expectInvalid({ ...valid(), executionProfileId: UNKNOWN_ID }, ['/executionProfileId']);
      // Without a namespace there is nothing to be bound to: only the namespace is named.
      await expectInvalid({ ...valid(), namespace: 'nowhere', executionProfileId: UNKNOWN_ID }, ['/namespace']);
      await c.created('/api/v2/namespaces', { name: 'unbound' });
      const response = await c.call('POST', `${API}/jobs`, { ...valid(), namespace: 'unbound' });
      expect([response.statusCode, problemPaths(response)]).toEqual([400, ['/executionProfileId']]);
      expect(response.json<{ detail: string }>().detail).toContain("is bound to namespace 'unbound'");
      // Priorities 0 and 100 are the bounds.
      for (const priority of [0, 100]) expect((await c.submit({ ...valid(), name: `bound-${priority}`, priority })).priority).toBe(priority);
    });
  });

  describe('access', () => {
    let nobody: Headers;
    let submitter: Headers;
    let creatorOnly: Headers;
    let reader: Headers;
    let adminJob: Job;
    let adminExecution: Execution;

    /** A user given these permissions by one role per namespace (`default` unless a grant names another, or `*`). */
    const user = async (userName: string, grants: { object: string; actions: string[]; namespace?: string }[]) => {
      const created = await c.created<{ _id: string }>('/api/v2/auth/users', { userName, password: PASSWORD });
      for (const namespace of new Set(grants.map((grant) => grant.namespace ?? 'default'))) {
        const role = await c.created<{ id: string }>('/api/v2/rbac/roles', {
          name: `${userName}-${namespace === '*' ? 'everywhere' : namespace}`,
          permissions: grants
            .filter((grant) => (grant.namespace ?? 'default') === namespace)
            .map(({ object, actions }) => ({ object, actions, objectMatcher: 'simple', effect: 'Allow' })),
        });
        await c.created('/api/v2/rbac/rolebindings', { role: role.id, principal: created._id, namespace });
      }
      return bearer(await hub.login(userName, PASSWORD));
    };

    beforeAll(async () => {
      nobody = await user('nobody', []);
      submitter = await user('submitter', [
        { object: '/ClusterJobs', actions: ['Create'] },
        { object: '/ExecutionProfiles/*', actions: ['Use'] },
      ]);
      creatorOnly = await user('creator-only', [{ object: '/ClusterJobs', actions: ['Create'] }]);
      reader = await user('reader', [
        { object: '/ClusterJobs', actions: ['Read'] },
        { object: '/ClusterJobs/*', actions: ['Read'] },
        // Nodes belong to no namespace: they are checked in `*`.
        { object: '/ClusterNodes', actions: ['Read'], namespace: '*' },
        { object: '/ClusterNodes/*', actions: ['Read'], namespace: '*' },
      ]);
      adminJob = await c.submit({ name: 'admins', executionProfileId: standardId, task: { command: 'echo', args: ['admin only'] } });
      adminExecution = await c.until(adminJob.id, 'completed');
    });

    it('gives a user without bindings 403 on submit, 404 on the jobs of others and lists of only their own (none)', async () => {
      const submit = await c.call(
        'POST',
        `${API}/jobs`,
        { name: 'x', namespace: 'default', executionProfileId: standardId, task: { command: 'true' } },
        nobody,
      );
      expect(submit.statusCode).toBe(403);
      expect((await c.call('GET', `${API}/jobs/${adminJob.id}`, undefined, nobody)).statusCode).toBe(404);
      expect((await c.call('POST', `${API}/jobs/${adminJob.id}/stop`, undefined, nobody)).statusCode).toBe(404);
      expect((await c.call('GET', `${API}/executions/${adminExecution.id}`, undefined, nobody)).statusCode).toBe(404);
      expect((await c.call('GET', `${API}/executions/${adminExecution.id}/tasks/main/logs/stdout`, undefined, nobody)).statusCode).toBe(404);
      expect((await c.call('GET', `${API}/executions/${adminExecution.id}/files?path=`, undefined, nobody)).statusCode).toBe(404);
      expect(await c.jobs('', nobody)).toEqual({ total: 0, data: [] });
      expect(await c.executions('', nobody)).toEqual({ total: 0, data: [] });
      expect((await c.call('GET', `${API}/nodes`, undefined, nobody)).statusCode).toBe(403);
      // A single node the caller may not read is answered as if it did not exist.
      expect((await c.call('GET', `${API}/nodes/${nodeId}`, undefined, nobody)).statusCode).toBe(404);
      expect((await c.call('POST', `${API}/nodes/${nodeId}/drain`, { enable: true }, nobody)).statusCode).toBe(404);
      expect((await c.call('GET', `${API}/node-labels`, undefined, nobody)).statusCode).toBe(403);
      expect((await c.call('GET', `${API}/version`, undefined, nobody)).statusCode).toBe(200);
    });

    it('lets a user with Create and Use submit, see, read and stop their own job, and nothing of others', async () => {
      const job = await c.submit({ name: 'mine', executionProfileId: standardId, task: shell('echo mine; sleep 300') }, submitter);
      expect(job.properties).toMatchObject({ owner: 'submitter' });
      const execution = await poll(
        () => c.executionOf(job.id, submitter),
        (current) => current.status === 'running',
        'the submitter’s job to run',
      );
      expect(await c.job(job.id, submitter)).toMatchObject({ id: job.id, status: 'running' });
      expect(ids(await c.jobs('', submitter))).toEqual([job.id]);
      expect(ids(await c.executions('', submitter))).toEqual([execution.id]);
      await poll(
        () => c.log(execution.id, 'stdout', '', submitter),
        (out) => out === 'mine\n',
        'the submitter’s log',
      );
      expect((await c.call('GET', `${API}/executions/${execution.id}/files?path=`, undefined, submitter)).statusCode).toBe(200);
      expect((await c.call('GET', `${API}/jobs/${adminJob.id}`, undefined, submitter)).statusCode).toBe(404);
      expect((await c.call('POST', `${API}/jobs/${adminJob.id}/stop`, undefined, submitter)).statusCode).toBe(404);
      expect((await c.call('GET', `${API}/executions/${adminExecution.id}`, undefined, submitter)).statusCode).toBe(404);
      expect(await c.stop(job.id, submitter)).toMatchObject({ status: 'dead' });
      expect((await c.executionOf(job.id, submitter)).status).toBe('failed');
      // The administrator sees it too.
      expect((await c.jobs('filter[name][ST]=mine')).total).toBe(1);

      function ids(list: List<{ id: string }>) {
        return list.data.map((item) => item.id);
      }
    });

    it('lets a user with Read see the jobs of a namespace, but not stop them nor drain a node (403)', async () => {
      expect((await c.jobs(`filter[name][ST]=admins`, reader)).data.map((job) => job.id)).toEqual([adminJob.id]);
      expect((await c.job(adminJob.id, reader)).id).toBe(adminJob.id);
      expect(await c.log(adminExecution.id, 'stdout', '', reader)).toBe('admin only\n');
      expect((await c.call('POST', `${API}/jobs/${adminJob.id}/stop`, undefined, reader)).statusCode).toBe(403);
      expect((await c.ok<{ id: string }>('GET', `${API}/nodes/${nodeId}`, undefined, reader)).id).toBe(nodeId);
      expect((await c.call('POST', `${API}/nodes/${nodeId}/drain`, { enable: true }, reader)).statusCode).toBe(403);
      expect(
        (await c.call('POST', `${API}/jobs`, { name: 'x', namespace: 'default', executionProfileId: standardId, task: { command: 'true' } }, reader))
          .statusCode,
      ).toBe(403);
    });

    it('needs Use on the profile to submit', async () => {
      const response = await c.call(
        'POST',
        `${API}/jobs`,
        { name: 'x', namespace: 'default', executionProfileId: standardId, task: { command: 'true' } },
        creatorOnly,
      );
      expect(response.statusCode).toBe(403);
      expect(response.json<{ detail: string }>().detail).toContain(`Use on /ExecutionProfiles/${standardId}`);
      expect((await c.jobs('filter[name][ST]=x')).total).toBe(0);
    });

    it('keeps a namespace holding jobs and a profile used by jobs from being deleted (409)', async () => {
      const namespace = await c.created<{ _id: string }>('/api/v2/namespaces', { name: 'busy' });
      const profile = await c.created<{ _id: string }>(PROFILES, { name: 'Busy' });
      await c.created('/api/v2/execution-profiles/bindings', { executionProfileId: profile._id, namespaceId: namespace._id });
      const job = await c.submit({ name: 'holder', namespace: 'busy', executionProfileId: profile._id, task: { command: 'true' } });
      await c.until(job.id, 'completed');
      const deleteNamespace = await c.call('DELETE', `/api/v2/namespaces/${namespace._id}`);
      expect([deleteNamespace.statusCode, deleteNamespace.json<{ detail: string }>().detail]).toEqual([409, expect.stringContaining('jobs')]);
      const deleteProfile = await c.call('DELETE', `${PROFILES}/${profile._id}`);
      expect([deleteProfile.statusCode, deleteProfile.json<{ detail: string }>().detail]).toEqual([409, expect.stringContaining('jobs')]);
      expect((await c.job(job.id)).status).toBe('dead');
    });
  });

  describe('retention', () => {
    it('prunes a dead job older than HUB_JOB_RETENTION_DAYS with its executions and directory, and keeps the rest', async () => {
      const old = await c.submit({ name: 'old', executionProfileId: standardId, task: shell('echo old > file') });
      const recent = await c.submit({ name: 'recent', executionProfileId: standardId, task: { command: 'true' } });
      const live = await c.submit({ name: 'live', executionProfileId: standardId, task: shell('sleep 300') });
      const oldExecution = await c.until(old.id, 'completed');
      await c.until(recent.id, 'completed');
      await c.until(live.id, 'running');
      const oldDir = join(sharedDir, 'executions', oldExecution.id);
      expect(existsSync(join(oldDir, 'work', 'file'))).toBe(true);
      const database = hub.app.get(DataSource);
      await database.query(`UPDATE cluster_jobs SET finished_time = now() - interval '25 hours' WHERE id = $1`, [old.id]);
      await database.query(`UPDATE cluster_jobs SET submit_time = now() - interval '30 days' WHERE id = $1`, [live.id]);
      await database.query(`UPDATE cluster_jobs SET finished_time = now() - interval '23 hours' WHERE id = $1`, [recent.id]);
      await hub.app.get(ClusterScheduler).prune();
      expect((await c.call('GET', `${API}/jobs/${old.id}`)).statusCode).toBe(404);
      expect((await c.call('GET', `${API}/executions/${oldExecution.id}`)).statusCode).toBe(404);
      expect((await c.executions(`filter[jobId][EQ]=${old.id}`)).total).toBe(0);
      expect(existsSync(oldDir)).toBe(false);
      expect((await c.job(recent.id)).status).toBe('dead');
      expect((await c.job(live.id)).status).toBe('running');
      await c.stop(live.id);
    });
  });
});

describe('the cluster with one slot', () => {
  let hub: TestHub;
  let c: ReturnType<typeof clientOf>;
  let sharedDir: string;
  let standardId: string;

  beforeAll(async () => {
    sharedDir = enterableTempDir('hub-cluster-slot-');
    // No quota: one spec keeps more than 100 jobs waiting. Two prepared launches (the default is at
    // least eight), so that a third job in line waits unprepared.
    hub = await startTestHub({
      env: { HUB_LOCAL_SLOTS: '1', HUB_LOCAL_PREPARED_LAUNCHES: '2', HUB_SHARED_DIR: sharedDir, HUB_MAX_ACTIVE_JOBS_PER_USER: '0' },
    });
    c = clientOf(hub, bearer(hub.adminToken), sharedDir);
    standardId = (await c.ok<{ data: { _id: string }[] }>('GET', `${PROFILES}?filter[name][EQ]=Standard`)).data[0]._id;
  }, 30_000);
  afterAll(async () => {
    await hub?.close();
    if (sharedDir) {
      killAllUnder(sharedDir);
      rmSync(sharedDir, { recursive: true, force: true });
    }
  });

  /** A job that runs until the suite drops a file named `go` in its working directory. */
  const gated = async (name: string) => {
    const job = await c.submit({ name, executionProfileId: standardId, task: shell('until [ -e go ]; do sleep 0.05; done') });
    const execution = await c.until(job.id, 'running');
    return { job, open: () => writeFileSync(join(c.workDir(execution.id), 'go'), '') };
  };

  it('keeps a second job waiting (pending, with a Queued event) until the first ends, then runs it', async () => {
    const first = await gated('first');
    const second = await c.submit({ name: 'second', executionProfileId: standardId, task: { command: 'echo', args: ['second'] } });
    const queued = await c.untilEvent(second.id, 'Queued');
    expect(queued.status).toBe('pending');
    // Next in line, its launch is prepared up to its task (HUB_LOCAL_PREPARED_LAUNCHES).
    expect(queued.taskStates.main.events.at(-1)?.message).toBe(`Waiting for a free CPU on ${hostname()}, its launch prepared`);
    expect((await c.jobs('filter[name][ST]=second')).data[0]).toMatchObject({ status: 'pending', taskSummary: { queued: 1 } });
    first.open();
    const firstDone = await c.until(first.job.id, 'completed');
    const secondDone = await c.until(second.id, 'completed');
    expect(c.events(secondDone)).toEqual(['Received', 'Queued', 'Started', 'Terminated']);
    expect(Date.parse(secondDone.taskStates.main.startedAt as string)).toBeGreaterThanOrEqual(Date.parse(firstDone.taskStates.main.finishedAt as string));
  });

  it('starts the waiting job of higher priority first', async () => {
    const blocker = await gated('blocker');
    const low = await c.submit({ name: 'low', executionProfileId: standardId, priority: 10, task: { command: 'true' } });
    const middle = await c.submit({ name: 'middle', executionProfileId: standardId, task: { command: 'true' } });
    const high = await c.submit({ name: 'high', executionProfileId: standardId, priority: 90, task: { command: 'true' } });
    await c.untilEvent(high.id, 'Queued');
    // Two are prepared (HUB_LOCAL_PREPARED_LAUNCHES), the high and the middle one: the low one, put back in
    // line, says why it waits, from the next tick's round.
    const waiting = await poll(
      () => c.executionOf(low.id),
      (execution) => execution.taskStates.main.events.at(-1)?.message === `Waiting for a free CPU on ${hostname()}`,
      'the low one to say it waits',
    );
    expect(waiting.status).toBe('pending');
    blocker.open();
    const [h, m, l] = await Promise.all([high, middle, low].map((job) => c.until(job.id, 'completed')));
    const started = (execution: Execution) => Date.parse(execution.taskStates.main.startedAt as string);
    const finished = (execution: Execution) => Date.parse(execution.taskStates.main.finishedAt as string);
    expect(started(m)).toBeGreaterThanOrEqual(finished(h));
    expect(started(l)).toBeGreaterThanOrEqual(finished(m));
  });

  it('starts a job that fits although more than 100 jobs of higher priority wait for a node that none satisfies', async () => {
    // The scheduler looks at the 100 best pending executions only: if none of them can be placed, none below them is tried.
    const gpu = await c.created<{ _id: string }>(PROFILES, { name: 'GPU', constraints: [{ attribute: 'node.label', operator: '=', value: 'gpu' }] });
    const namespaceId = (await c.ok<{ data: { _id: string }[] }>('GET', '/api/v2/namespaces?filter[name][EQ]=default')).data[0]._id;
    await c.created('/api/v2/execution-profiles/bindings', { executionProfileId: gpu._id, namespaceId });
    for (let index = 0; index < 101; index += 1)
      await c.submit({ name: `gpu-${index}`, executionProfileId: gpu._id, priority: 100, task: { command: 'true' } });
    const fits = await c.submit({ name: 'fits', executionProfileId: standardId, priority: 0, task: { command: 'true' } });
    const execution = await poll(
      () => c.executionOf(fits.id),
      (current) => current.status === 'completed',
      'the job that fits to complete',
      3000,
    ).catch(() => c.executionOf(fits.id));
    expect([execution.status, c.events(execution)]).toEqual(['completed', ['Received', 'Started', 'Terminated']]);
  });
});

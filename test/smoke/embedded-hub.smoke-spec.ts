import { once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { freePort, startHubProcess, type RunningHub } from './hub-process.js';

const MAIN = resolve('dist/hub.js');

/** Starts `node dist/hub.js` and resolves once /health/ready answers 200, or rejects with its output. */
async function startHub(dataDir: string, env: Record<string, string> = {}): Promise<RunningHub> {
  const port = await freePort();
  return startHubProcess(process.execPath, [MAIN], {
    port,
    // One user's two jobs run at once on a two-CPU host: no per-user cap (docs/cluster.md, fair share).
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      HOST: '127.0.0.1',
      HUB_DATA_DIR: dataDir,
      HUB_LOG_LEVEL: 'info',
      HUB_MAX_RUNNING_JOBS_PER_USER: '0',
      ...env,
    },
  });
}

async function exitOf(hub: RunningHub, timeoutMs = 20_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (hub.process.exitCode !== null || hub.process.signalCode !== null) return { code: hub.process.exitCode, signal: hub.process.signalCode };
  const timer = setTimeout(() => hub.process.kill('SIGKILL'), timeoutMs);
  const [code, signal] = (await once(hub.process, 'close')) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  return { code, signal };
}

function postmasterPid(dataDir: string): number | undefined {
  const file = join(dataDir, 'postgres', 'postmaster.pid');
  return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
}

function killUnlessGone(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

async function login(hub: RunningHub, password: string, username = 'admin'): Promise<string> {
  const response = await fetch(`${hub.url}/api/v2/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { token: string }).token;
}

describe('the hub on its embedded PostgreSQL, as a process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-smoke-'));
  // Enterable by the server's and jobs' users, so that everything stays in it (first-start.smoke-spec.ts covers a closed one).
  chmodSync(dataDir, 0o711);
  let hub: RunningHub;
  let password: string;
  let token: string;
  let analystsId: string;

  beforeAll(async () => {
    hub = await startHub(dataDir);
  });
  afterAll(async () => {
    if (hub.process.exitCode === null && hub.process.signalCode === null) {
      hub.process.kill('SIGTERM');
      await exitOf(hub);
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('creates the administrator on first start and logs its generated password once', () => {
    const announcements = hub.lines.filter((line) => String(line.msg).includes('generated password'));
    expect(announcements).toHaveLength(1);
    password = /generated password (\S+)/.exec(String(announcements[0].msg))?.[1] ?? '';
    expect(password.length).toBeGreaterThanOrEqual(20);
  });

  it('says in one line where its data lives: all of it in its data directory, which every user may enter', () => {
    const data = hub.lines.filter((line) => String(line.msg).startsWith('Data: '));
    expect(data).toHaveLength(1);
    expect(data[0]).toMatchObject({ dataDir, database: `${join(dataDir, 'postgres')} (embedded PostgreSQL)`, sharedDir: join(dataDir, 'work') });
  });

  it('runs the database server as an unprivileged user when the hub runs as root', () => {
    const pid = postmasterPid(dataDir);
    expect(pid).toBeDefined();
    const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    if (process.getuid?.() === 0) expect(uid).not.toBe(0);
    else expect(uid).toBe(process.getuid?.());
  });

  it('serves the curl walk-through of the README: login, create, list with a filter, patch', async () => {
    token = await login(hub, password);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const created = await fetch(`${hub.url}/api/v2/namespaces`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'analytics', description: 'Reports' }),
    });
    expect(created.status).toBe(201);
    const listed = await fetch(`${hub.url}/api/v2/namespaces?filter[name][CO]=lyt&sort=-_created`, { headers });
    expect(await listed.json()).toMatchObject({ totalCount: 1, data: [{ name: 'analytics' }] });
    const { _id } = (await created.json()) as { _id: string };
    const patched = await fetch(`${hub.url}/api/v2/namespaces/${_id}`, {
      method: 'PATCH',
      headers: { ...headers, 'content-type': 'application/json-patch+json', 'if-match': '"1"' },
      body: JSON.stringify([{ op: 'replace', path: '/description', value: 'Dashboards' }]),
    });
    expect(patched.status).toBe(200);
    expect(patched.headers.get('etag')).toBe('"2"');
  });

  it('serves the identity and access part of the walk-through: users, an invitation, nested groups, a binding', async () => {
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const post = (path: string, body: unknown, extra: Record<string, string> = headers) =>
      fetch(`${hub.url}/api/v2/auth/${path}`, { method: 'POST', headers: extra, body: JSON.stringify(body) });
    expect((await post('users', { userName: 'ada', displayName: 'Ada Lovelace', password: 'correct horse' })).status).toBe(201);
    const invited = (await (await post('users', { userName: 'grace', invitationPending: true })).json()) as { invitationToken: string };
    const accepted = await post(
      'accounts',
      { token: invited.invitationToken, userName: 'grace', displayName: 'Grace Hopper', password: 'cobol forever' },
      { 'content-type': 'application/json' },
    );
    expect(accepted.status).toBe(200);
    expect(await login(hub, 'cobol forever', 'grace')).toEqual(expect.any(String));
    const analysts = (await (await post('groups', { name: 'analysts' })).json()) as { _id: string };
    const staff = (await (await post('groups', { name: 'staff' })).json()) as { _id: string };
    const patch = (groupId: string, body: unknown) =>
      fetch(`${hub.url}/api/v2/auth/groups/${groupId}/members`, { method: 'PATCH', headers, body: JSON.stringify(body) });
    expect((await patch(analysts._id, [{ op: 'add', name: 'ada', principalType: 'User' }])).status).toBe(200);
    expect((await patch(staff._id, [{ op: 'add', id: analysts._id }])).status).toBe(200);
    const members = await fetch(`${hub.url}/api/v2/auth/groups/${staff._id}/members?filter[membershipType][EQ]=indirect`, { headers });
    expect(await members.json()).toEqual([{ membershipType: 'indirect', principalType: 'User', id: expect.any(String), name: 'ada' }]);

    // The access-control part: NamespaceUser for analysts in analytics lets ada see that namespace only.
    const roles = (await (await fetch(`${hub.url}/api/v2/rbac/roles?filter[name][EQ]=NamespaceUser`, { headers })).json()) as { data: { id: string }[] };
    const bound = await post('../rbac/rolebindings', { role: roles.data[0].id, principal: analysts._id, namespace: 'analytics' });
    expect(bound.status).toBe(201);
    const ada = { authorization: `Bearer ${await login(hub, 'correct horse', 'ada')}` };
    const visible = (await (await fetch(`${hub.url}/api/v2/namespaces`, { headers: ada })).json()) as { data: { name: string }[] };
    expect(visible.data.map((namespace) => namespace.name)).toEqual(['analytics']);
    expect((await fetch(`${hub.url}/api/v2/auth/users`, { headers: ada })).status).toBe(403);
    analystsId = analysts._id;
  });

  it('serves the credentials and execution-profiles part of the walk-through: a ranked credential resolved by a group member, a bound profile', async () => {
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const call = async (method: string, path: string, body?: unknown, extra: Record<string, string> = headers) => {
      const response = await fetch(`${hub.url}/api/v2/${path}`, { method, headers: extra, ...(body !== undefined && { body: JSON.stringify(body) }) });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const domain = await call('POST', 'authdomains/authdomains', { name: 'Warehouse', namespace: 'analytics', allowPersonalCredentials: true });
    expect(domain.status).toBe(201);
    const shared = await call('POST', 'authdomains/credentials', {
      authDomainId: domain.body._id,
      principal: analystsId,
      label: 'shared',
      type: 'Internal',
      data: { user: 'etl', password: 's3cret' },
    });
    expect(shared.status).toBe(201);
    expect(shared.body.data).toBeUndefined();
    expect((await call('PUT', `authdomains/credentials/${String(shared.body._id)}/rank`, { position: 'High' })).status).toBe(200);
    const ada = { authorization: `Bearer ${await login(hub, 'correct horse', 'ada')}` };
    const resolved = await call('GET', `authdomains/authdomains/${String(domain.body._id)}/credential`, undefined, ada);
    expect(resolved).toMatchObject({ status: 200, body: { label: 'shared', data: { user: 'etl', password: 's3cret' } } });

    const profiles = await call('GET', 'execution-profiles/execprofiles');
    expect(profiles.body).toMatchObject({ totalCount: 1, data: [{ name: 'Standard' }] });
    const gpu = await call('POST', 'execution-profiles/execprofiles', {
      name: 'GPU',
      environment: { CUDA_VISIBLE_DEVICES: '0' },
      constraints: [{ attribute: 'node.label', operator: '=', value: 'gpu' }],
    });
    expect(gpu.status).toBe(201);
    const namespaces = await call('GET', 'namespaces?filter[name][EQ]=analytics');
    const namespaceId = (namespaces.body.data as { _id: string }[])[0]._id;
    expect((await call('POST', 'execution-profiles/bindings', { executionProfileId: gpu.body._id, namespaceId, isDefault: true })).status).toBe(201);
    expect(await call('GET', `execution-profiles/namespaces/${namespaceId}/default`)).toMatchObject({ status: 200, body: { name: 'GPU' } });
    expect(await call('GET', 'execution-profiles/execprofiles/name-availability?name=gpu')).toMatchObject({
      status: 200,
      body: { result: false, reason: 'taken' },
    });
  });

  it('settles its jobs after the hub is killed: one that ended meanwhile is completed, one whose processes died is lost', async () => {
    // The token and the hub change with the restart.
    const call = async <T>(path: string, body?: unknown): Promise<T> => {
      const response = await fetch(`${hub.url}/api/v2/${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      expect([path, response.status]).toEqual([path, body === undefined ? 200 : 201]);
      return (await response.json()) as T;
    };
    type Execution = { id: string; status: string; taskStates: Record<string, { events: { type: string; details: Record<string, string> }[] }> };
    const executionOf = async (jobId: string) => {
      const { data } = await call<{ data: { id: string }[] }>(`cluster/executions?filter[jobId][EQ]=${jobId}`);
      return call<Execution>(`cluster/executions/${data[0].id}`);
    };
    const until = async <T>(probe: () => Promise<T> | T, done: (value: T) => boolean, what: string): Promise<T> => {
      const deadline = Date.now() + 10_000;
      for (let value = await probe(); ; value = await probe()) {
        if (done(value)) return value;
        if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}: ${JSON.stringify(value)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const nodes = await call<{ data: { id: string }[] }>('cluster/nodes');
    const node = await call<{ resources: { cpu: number } }>(`cluster/nodes/${nodes.data[0].id}`);
    expect(node.resources.cpu).toBeGreaterThanOrEqual(2); // Both jobs run at once.
    const profiles = await call<{ data: { _id: string }[] }>('execution-profiles/execprofiles?filter[name][EQ]=Standard');
    // A sleep no other process runs: a task's own pids are its PID namespace's, so its host pid is found by what it runs.
    const sleepOf = (seconds: number) => `sleep ${seconds}.${process.pid}`;
    const submit = async (name: string, seconds: number) => {
      const task = { command: 'sh', args: ['-c', `exec ${sleepOf(seconds)}`] };
      return (await call<{ id: string }>('cluster/jobs', { name, namespace: 'default', executionProfileId: profiles.data[0]._id, task })).id;
    };
    const jobs = { short: await submit('short', 2), long: await submit('long', 100) };
    const running = {
      short: await until(
        () => executionOf(jobs.short),
        (execution) => execution.status === 'running',
        'the short job to run',
      ),
      long: await until(
        () => executionOf(jobs.long),
        (execution) => execution.status === 'running',
        'the long job to run',
      ),
    };
    const pidOf = (execution: Execution, seconds: number) =>
      until(
        () =>
          readdirSync('/proc')
            .filter((entry) => /^\d+$/.test(entry))
            .map(Number)
            .find((pid) => {
              try {
                return readFileSync(`/proc/${pid}/cmdline`, 'utf8') === `sleep\0${sleepOf(seconds).slice('sleep '.length)}\0`;
              } catch {
                return false;
              }
            }) ?? 0,
        (pid) => pid > 0,
        `the pid of ${execution.id}`,
      );
    const pids = { short: await pidOf(running.short, 2), long: await pidOf(running.long, 100) };
    // The launch, from the task up to (not including) its monitor: the nearest fork of the launcher,
    // whose arguments it keeps. Between them, as the launch is isolated: the task's init, unshare.
    const parentOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
    const forksLauncher = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('hub-launcher');
    const longLaunch = [pids.long];
    while (!forksLauncher(parentOf(longLaunch[longLaunch.length - 1]))) longLaunch.push(parentOf(longLaunch[longLaunch.length - 1]));
    const longMonitor = parentOf(longLaunch[longLaunch.length - 1]);

    hub.process.kill('SIGKILL');
    await exitOf(hub);
    expect([isAlive(pids.short), isAlive(pids.long)]).toEqual([true, true]);
    // All of it, the monitor first (else it would write the killed task's exit code). A process of
    // the launch may already be gone as the monitor dies (its death signal) or its only child does
    // (the PID namespace's init): that is the end sought, not a failure.
    for (const pid of [longMonitor, ...longLaunch]) killUnlessGone(pid);
    await until(
      () => [longMonitor, ...longLaunch].some(isAlive),
      (any) => !any,
      'the long job’s processes to die',
    );
    await until(
      () => isAlive(pids.short),
      (any) => !any,
      'the short job to end while the hub is down',
    );

    hub = await startHub(dataDir);
    token = await login(hub, password);
    const short = await executionOf(jobs.short);
    const long = await executionOf(jobs.long);
    expect(short.status).toBe('completed');
    expect(short.taskStates.main.events.at(-1)).toMatchObject({ type: 'Terminated', details: { exitCode: '0' } });
    expect(long.status).toBe('lost');
    expect(long.taskStates.main.events.at(-1)).toMatchObject({ type: 'Lost' });
    expect(await call('cluster/executions?filter[status][EQ]=running')).toEqual({ total: 0, data: [] });
    for (const id of Object.values(jobs)) expect(await call(`cluster/jobs/${id}`)).toMatchObject({ status: 'dead' });
    expect(await call('cluster/jobs?filter[name][ST]=long')).toMatchObject({ data: [{ taskSummary: { lost: 1, running: 0 } }] });
  });

  it('goes on with a pipeline run after the hub is killed mid-run: it completes, and no node ran twice', async () => {
    const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const response = await fetch(`${hub.url}/api/v2/${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      expect([path, response.status]).toEqual([path, method === 'POST' ? 201 : 200]);
      return (await response.json()) as T;
    };
    type Status = { state: string; nodeStatus: Record<string, { state: string; events: { type: string }[] }> };
    const until = async (done: (status: Status) => boolean, what: string, id: string): Promise<Status> => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const status = await call<Status>('GET', `pipelines/runs/${id}/status`);
        if (done(status)) return status;
        if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}: ${JSON.stringify(status)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    const profiles = await call<{ data: { _id: string }[] }>('GET', 'execution-profiles/execprofiles?filter[name][EQ]=Standard');
    const step = (name: string, script: string, next: string[] = []) => ({
      name,
      connections: { onSuccess: next },
      task: { type: 'rawexec', command: 'sh', args: ['-c', script] },
    });
    const run = await call<{ id: string }>('POST', 'pipelines/runs', {
      spec: { nodes: [step('first', 'sleep 2', ['second']), step('second', 'echo second', ['third']), step('third', 'echo third')] },
      executionProfileId: profiles.data[0]._id,
    });
    await until((status) => status.nodeStatus.first.state === 'Running', 'the first node to run', run.id);
    hub.process.kill('SIGKILL');
    await exitOf(hub);
    // The first node ends while no hub runs.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    hub = await startHub(dataDir);
    token = await login(hub, password);
    const status = await until((current) => ['Succeeded', 'Failed', 'Cancelled'].includes(current.state), 'the run to end', run.id);
    expect(status.state).toBe('Succeeded');
    for (const name of ['first', 'second', 'third']) {
      expect(status.nodeStatus[name].state).toBe('Succeeded');
      expect(status.nodeStatus[name].events.filter((event) => event.type === 'Started')).toHaveLength(1);
    }
    const jobs = await call<{ total: number; data: { taskSummary: Record<string, number> }[] }>('GET', `cluster/jobs?filter[name][ST]=${run.id.slice(0, 8)}`);
    expect(jobs.total).toBe(3);
    for (const job of jobs.data) expect(job.taskSummary).toMatchObject({ completed: 1, failed: 0, lost: 0, running: 0 });
  });

  it('refuses a second hub on the same data directory', async () => {
    const second = await startHub(dataDir).then(
      (started) => {
        started.process.kill('SIGKILL');
        throw new Error('A second hub started on the same data directory');
      },
      (error: Error) => error.message,
    );
    expect(second).toContain(`Another hub (pid ${hub.process.pid}) is using the data directory ${dataDir}`);
    expect((await fetch(`${hub.url}/health/ready`)).status).toBe(200);
  });

  it('finishes a request in flight on SIGTERM, then stops the database and releases the directory', async () => {
    const pid = postmasterPid(dataDir) ?? 0;
    const body = JSON.stringify({ name: 'in-flight' });
    const socket = createConnection(hub.port, '127.0.0.1');
    await once(socket, 'connect');
    let reply = '';
    socket.on('data', (chunk: Buffer) => (reply += chunk.toString()));
    socket.write(
      `POST /api/v2/namespaces HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await new Promise((done) => setTimeout(done, 200));
    hub.process.kill('SIGTERM');
    await new Promise((done) => setTimeout(done, 300));
    // The rest of the body, the socket left open as clients do (a half-closed one aborts the request).
    socket.write(body.slice(5));
    await once(socket, 'close');
    expect(reply).toMatch(/^HTTP\/1\.1 201 /);
    expect(reply).toMatch(/\r\nconnection: close\r\n/i);
    const exit = await exitOf(hub);
    expect(exit.signal === 'SIGTERM' || exit.code === 0).toBe(true);
    expect(isAlive(pid)).toBe(false);
    expect(existsSync(join(dataDir, 'hub.lock'))).toBe(false);
    expect(hub.lines.some((line) => line.msg === 'Embedded PostgreSQL server stopped')).toBe(true);
  });

  it('restarts on its data directory with everything kept and no new password', async () => {
    hub = await startHub(dataDir);
    expect(hub.lines.some((line) => String(line.msg).includes('password'))).toBe(false);
    token = await login(hub, password);
    const response = await fetch(`${hub.url}/api/v2/namespaces?sort=name`, { headers: { authorization: `Bearer ${token}` } });
    const names = ((await response.json()) as { data: { name: string }[] }).data.map((namespace) => namespace.name);
    expect(names).toEqual(['analytics', 'default', 'in-flight']);
  });

  it('recovers after the hub is killed: the orphaned server is stopped and the data is intact', async () => {
    const orphan = postmasterPid(dataDir) ?? 0;
    hub.process.kill('SIGKILL');
    await exitOf(hub);
    expect(isAlive(orphan)).toBe(true);
    hub = await startHub(dataDir);
    expect(isAlive(orphan)).toBe(false);
    expect(hub.lines.some((line) => String(line.msg).includes(`Stopping the PostgreSQL server (pid ${orphan}) left running`))).toBe(true);
    token = await login(hub, password);
    const response = await fetch(`${hub.url}/api/v2/namespaces?filter[name][EQ]=in-flight`, { headers: { authorization: `Bearer ${token}` } });
    expect(((await response.json()) as { totalCount: number }).totalCount).toBe(1);
  });

  it('stops with a message naming a bad setting', async () => {
    const badDir = mkdtempSync(join(tmpdir(), 'hub-smoke-bad-'));
    try {
      const failed = await startHub(badDir, { HUB_TOKEN_TTL: 'soon' }).catch((error: Error) => error.message);
      expect(failed).toContain('The hub exited with 1');
      expect(failed).toContain('HUB_TOKEN_TTL must be an integer number');
    } finally {
      rmSync(badDir, { recursive: true, force: true });
    }
  });
});

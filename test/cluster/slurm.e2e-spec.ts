import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bearer, enterableTempDir, startTestHub, type TestHub } from '../support/test-hub.js';

/**
 * The slurm driver against a real Slurm cluster: the two nodes of scripts/slurm-up.sh (`vm`-like
 * `<host>` with features linux,prod and `<host>2` with linux,staging). `.ci/run` starts that cluster
 * and sets HUB_TEST_SLURM=1; without it this file is skipped (run `scripts/slurm-up.sh` first).
 */
const withSlurm = process.env.HUB_TEST_SLURM === '1' ? describe : describe.skip;
const POLL_MS = 200;
/** The unix account the administrator's jobs run under (an ordinary one, made for the spec when missing). */
const ACCOUNT = 'hub-slurm-ada';
const WAIT_MS = 30_000;

type Headers = Record<string, string>;

interface Execution {
  id: string;
  status: string;
  nodeName?: string;
  taskStates: { main: { events: { type: string; message: string }[] } };
}

withSlurm('the slurm driver on a real Slurm cluster', () => {
  let hub: TestHub;
  let admin: Headers;
  let sharedDir: string;
  const profiles: Record<string, string> = {};

  const call = async (method: 'GET' | 'POST', url: string, payload?: object) => {
    const response = await hub.inject({ method, url: `/api/v2/${url}`, headers: admin, ...(payload && { payload }) });
    if (response.statusCode >= 300) throw new Error(`${method} ${url}: ${response.statusCode} ${response.body}`);
    return response.json<Record<string, unknown>>();
  };
  const submit = async (name: string, profile: string, command: string, args: string[] = []) =>
    (await call('POST', 'cluster/jobs', { name, namespace: 'default', executionProfileId: profiles[profile], task: { command, args } })).id as string;
  const executionOf = async (jobId: string): Promise<Execution> => {
    const list = (await call('GET', `cluster/executions?filter[jobId][EQ]=${jobId}`)) as { data: { id: string }[] };
    return (await call('GET', `cluster/executions/${list.data[0].id}`)) as unknown as Execution;
  };
  const until = async (jobId: string, done: (execution: Execution) => boolean): Promise<Execution> => {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const execution = await executionOf(jobId);
      if (done(execution)) return execution;
      if (Date.now() > deadline) throw new Error(`Job ${jobId} stayed ${execution.status}: ${JSON.stringify(execution.taskStates.main.events)}`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  };
  const ended = (execution: Execution) => ['completed', 'failed', 'lost'].includes(execution.status);
  const log = async (executionId: string, name: string) =>
    ((await call('GET', `cluster/executions/${executionId}/tasks/main/logs/${name}`)) as { msg: string }).msg;

  beforeAll(async () => {
    try {
      execFileSync('id', ['-u', ACCOUNT], { stdio: 'ignore' });
    } catch {
      execFileSync('useradd', ['--no-create-home', '--shell', '/bin/sh', ACCOUNT]);
    }
    // Jobs run as their users, who must be able to reach their directories under it.
    sharedDir = enterableTempDir('hub-slurm-');
    hub = await startTestHub({ env: { HUB_CLUSTER_DRIVER: 'slurm', HUB_SHARED_DIR: sharedDir } });
    admin = bearer(hub.adminToken);
    const me = (await call('GET', 'auth/me')) as { _id: string };
    const patched = await hub.inject({
      method: 'PATCH',
      url: `/api/v2/auth/users/${me._id}`,
      headers: { ...admin, 'content-type': 'application/json-patch+json' },
      payload: JSON.stringify([{ op: 'add', path: '/unixUserName', value: ACCOUNT }]),
    });
    expect(patched.statusCode).toBe(200);
    const standard = (await call('GET', 'execution-profiles/execprofiles?filter[name][EQ]=Standard')) as { data: { _id: string }[] };
    profiles.Standard = standard.data[0]._id;
    const namespaces = (await call('GET', 'namespaces?filter[name][EQ]=default')) as { data: { _id: string }[] };
    for (const [name, label] of [
      ['Staging', 'staging'],
      ['GPU', 'gpu'],
    ]) {
      profiles[name] = (
        await call('POST', 'execution-profiles/execprofiles', {
          name,
          environment: { FROM_PROFILE: name },
          constraints: [{ attribute: 'node.label', operator: '=', value: label }],
        })
      )._id as string;
      await call('POST', 'execution-profiles/bindings', { executionProfileId: profiles[name], namespaceId: namespaces.data[0]._id });
    }
  }, 60_000);
  afterAll(async () => {
    await hub?.close();
    rmSync(sharedDir, { recursive: true, force: true });
  });

  it('lists the Slurm nodes, their features as labels', async () => {
    const nodes = (await call('GET', 'cluster/nodes?sort=name')) as {
      total: number;
      data: { name: string; status: string; nodeLabels: string[]; isWorker: boolean }[];
    };
    expect(nodes.total).toBe(2);
    expect(nodes.data.map((node) => [node.status, node.nodeLabels, node.isWorker])).toEqual([
      ['ready', ['linux', 'prod'], true],
      ['ready', ['linux', 'staging'], true],
    ]);
    expect(await call('GET', 'cluster/node-labels')).toEqual(['linux', 'prod', 'staging']);
  });

  it('runs a job to completion, with its stdout and stderr in its logs', async () => {
    const jobId = await submit('hello', 'Standard', 'sh', ['-c', 'echo hello from $SLURMD_NODENAME; echo oops >&2']);
    const execution = await until(jobId, ended);
    expect(execution.status).toBe('completed');
    expect(execution.taskStates.main.events.map((event) => event.type)).toEqual(['Received', 'Submitted', 'Started', 'Terminated']);
    expect(await log(execution.id, 'stdout')).toMatch(/^hello from \S+\n$/);
    expect(await log(execution.id, 'stderr')).toBe('oops\n');
    expect(((await call('GET', `cluster/jobs/${jobId}`)) as { status: string }).status).toBe('dead');
  }, 40_000);

  it("submits each job under its user's account, never as root, its directory theirs alone", async () => {
    const execution = await until(await submit('who', 'Standard', 'sh', ['-c', 'id -un; stat -c "%a %U" ..']), ended);
    expect(execution.status).toBe('completed');
    expect(await log(execution.id, 'stdout')).toBe(`${ACCOUNT}\n700 ${ACCOUNT}\n`);
  }, 40_000);

  it("ends with a job what it left running, setsid included (Slurm's cgroup tracking, as scripts/slurm-up.sh configures it)", async () => {
    const sleep = `sleep 97.${process.pid}${Math.floor(Math.random() * 1e6)}`;
    const execution = await until(await submit('setsid', 'Standard', 'sh', ['-c', `setsid sh -c "exec ${sleep}" & sleep 0.3; echo left`]), ended);
    expect([execution.status, await log(execution.id, 'stdout')]).toEqual(['completed', 'left\n']);
    const survivors = () =>
      execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
        .split('\n')
        .filter((line) => line.includes(sleep));
    const deadline = Date.now() + 5000;
    while (survivors().length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    expect(survivors()).toEqual([]);
  }, 40_000);

  it('refuses, naming unixUserName, a user with no account the cluster knows', async () => {
    const user = (await call('POST', 'auth/users', { userName: 'no-account', password: 'a-no-account-password' })) as { _id: string };
    const role = (await call('POST', 'rbac/roles', {
      name: 'slurm-submit',
      permissions: [
        { object: '/ClusterJobs', actions: ['Create'], objectMatcher: 'simple', effect: 'Allow' },
        { object: '/ExecutionProfiles/*', actions: ['Use'], objectMatcher: 'simple', effect: 'Allow' },
      ],
    })) as { id: string };
    await call('POST', 'rbac/rolebindings', { role: role.id, principal: user._id, namespace: 'default' });
    const response = await hub.inject({
      method: 'POST',
      url: '/api/v2/cluster/jobs',
      headers: bearer(await hub.login('no-account', 'a-no-account-password')),
      payload: { name: 'x', namespace: 'default', executionProfileId: profiles.Standard, task: { command: 'true' } },
    });
    expect([response.statusCode, response.json<{ errors: { path: string }[] }>().errors.map((error) => error.path)]).toEqual([400, ['unixUserName']]);
  });

  it('reports a non-zero exit code as a failure naming it', async () => {
    const execution = await until(await submit('exit-3', 'Standard', 'sh', ['-c', 'exit 3']), ended);
    expect(execution.status).toBe('failed');
    expect(execution.taskStates.main.events.at(-1)).toMatchObject({ type: 'Terminated', message: 'Exited with code 3' });
  }, 40_000);

  it("routes a job by its profile's constraint to the node with the feature, with the profile's environment", async () => {
    const execution = await until(await submit('staging', 'Staging', 'sh', ['-c', 'echo $FROM_PROFILE on $SLURMD_NODENAME']), ended);
    expect(execution.status).toBe('completed');
    expect(execution.nodeName).toMatch(/2$/);
    expect(await log(execution.id, 'stdout')).toBe(`Staging on ${execution.nodeName}\n`);
  }, 40_000);

  it('keeps a job no node can run pending, saying which constraint failed', async () => {
    const execution = await until(await submit('gpu', 'GPU', 'true'), (current) =>
      current.taskStates.main.events.some((event) => event.type === 'PlacementFailed'),
    );
    expect(execution.status).toBe('pending');
    expect(execution.taskStates.main.events.at(-1)?.message).toContain('node.label = gpu');
  }, 40_000);

  it('runs a pipeline node on a Slurm node: its git input cloned there as the job user, its artifact copied into the hub', async () => {
    // A repository the job user may read, under the directory the Slurm nodes share.
    const source = join(sharedDir, 'src-work');
    mkdirSync(source);
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: source });
    git('init', '-q', '-b', 'main');
    writeFileSync(join(source, 'data.txt'), 'from the repository\n');
    git('add', '.');
    git('commit', '-q', '-m', 'data');
    const repo = join(sharedDir, 'repo.git');
    execFileSync('git', ['clone', '-q', '--bare', source, repo]);
    execFileSync('chmod', ['-R', 'a+rX', repo]);
    const run = (await call('POST', 'pipelines/runs', {
      spec: {
        nodes: [
          {
            name: 'on-slurm',
            inputs: { resources: { src: { type: 'git', repo: `file://${repo}`, depth: 1 } } },
            outputs: { artifacts: { copy: { path: 'copy.txt', contentType: 'text/plain' } } },
            task: { type: 'rawexec', command: 'sh', args: ['-c', 'cp src/data.txt copy.txt && id -un'] },
          },
        ],
      },
      executionProfileId: profiles.Standard,
    })) as { id: string };
    const deadline = Date.now() + WAIT_MS;
    let status: { state: string; nodeStatus: Record<string, { events: { type: string }[] }> };
    do {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      status = (await call('GET', `pipelines/runs/${run.id}/status`)) as typeof status;
    } while (!['Succeeded', 'Failed', 'Cancelled'].includes(status.state) && Date.now() < deadline);
    expect([status.state, status.nodeStatus['on-slurm'].events.map((event) => event.type)]).toEqual([
      'Succeeded',
      ['Queued', 'Started', 'InputFetched', 'Exited', 'ResultStored'],
    ]);
    expect(await call('GET', `pipelines/runs/${run.id}/nodes/on-slurm/results/copy`)).toEqual({ msg: 'from the repository\n' });
    expect(await call('GET', `pipelines/runs/${run.id}/nodes/on-slurm/logs/stdout`)).toEqual({ msg: `${ACCOUNT}\n` });
  }, 60_000);

  it('stops a running job with scancel', async () => {
    const jobId = await submit('sleeper', 'Standard', 'sleep', ['300']);
    const running = await until(jobId, (execution) => execution.status === 'running');
    const ref = running.taskStates.main.events
      .find((event) => event.type === 'Submitted')
      ?.message.split(' ')
      .at(-1) as string;
    await call('POST', `cluster/jobs/${jobId}/stop`);
    const stopped = await executionOf(jobId);
    expect(stopped.status).toBe('failed');
    expect(stopped.taskStates.main.events.at(-1)?.type).toBe('Killed');
    const deadline = Date.now() + WAIT_MS;
    let state = '';
    while (Date.now() < deadline) {
      const jobs = JSON.parse(execFileSync('squeue', ['--json'], { encoding: 'utf8' })) as { jobs: { job_id: number; job_state: string }[] };
      state = jobs.jobs.find((job) => String(job.job_id) === ref)?.job_state ?? '';
      if (state === 'CANCELLED') break;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    expect(state).toBe('CANCELLED');
  }, 60_000);
});

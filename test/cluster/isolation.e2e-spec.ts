import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir, totalmem } from 'node:os';
import { join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { ExecutionCgroups, NO_CGROUPS } from '../../src/cluster/drivers/cgroups.js';
import { defaultMaxMemoryMiB } from '../../src/cluster/drivers/execution-bounds.js';
import { onMemoryFilesystem, runtimeCandidates } from '../../src/cluster/drivers/runtime-dir.js';
import { NOT_ROOT } from '../../src/cluster/job-identities.js';
import { bearer, enterableTempDir, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

/**
 * What a task may not reach on the local driver, when the hub runs as root (as CI does) and so
 * runs tasks as the unprivileged user hub-jobs: the hub's environment and files, its own exit code
 * and logs, the layout of its execution's directory. And a stop's SIGTERM reaches the task, which
 * gets its grace period to clean up.
 */
const asRoot = process.getuid?.() === 0 ? describe : describe.skip;

interface Execution {
  id: string;
  status: string;
  taskStates: { main: { events: { type: string; message: string }[] } };
}

asRoot('tasks on the local driver, run by a hub running as root', () => {
  let hub: TestHub;
  let profile: string;
  const admin = () => bearer(hub.adminToken);

  const submit = async (script: string, envVars?: { name: string; value: string }[]): Promise<string> => {
    const response = await hub.inject({
      method: 'POST',
      url: '/api/v2/cluster/jobs',
      headers: admin(),
      payload: { name: 'isolation', namespace: 'default', executionProfileId: profile, task: { command: 'sh', args: ['-c', script], envVars } },
    });
    expect(response.statusCode).toBe(201);
    return response.json<{ id: string }>().id;
  };
  const execution = async (jobId: string): Promise<Execution> => {
    const list = await hub.inject({ method: 'GET', url: `/api/v2/cluster/executions?filter[jobId][EQ]=${jobId}`, headers: admin() });
    const id = list.json<{ data: { id: string }[] }>().data[0].id;
    return (await hub.inject({ method: 'GET', url: `/api/v2/cluster/executions/${id}`, headers: admin() })).json<Execution>();
  };
  const until = async (jobId: string, done: (current: Execution) => boolean): Promise<Execution> => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const current = await execution(jobId);
      if (done(current) || Date.now() > deadline) return current;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const ended = (current: Execution) => ['completed', 'failed', 'lost'].includes(current.status);
  const stdout = async (executionId: string) =>
    (await hub.inject({ method: 'GET', url: `/api/v2/cluster/executions/${executionId}/tasks/main/logs/stdout`, headers: admin() })).json<{ msg: string }>()
      .msg;

  beforeAll(async () => {
    // No HUB_CREDENTIALS_KEY: the hub keeps a generated one in its data directory, which a task must not read.
    hub = await startTestHub();
    const standard = await hub.inject({ method: 'GET', url: '/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard', headers: admin() });
    profile = standard.json<{ data: { _id: string }[] }>().data[0]._id;
  });
  afterAll(() => hub?.close());

  it('runs a task as a uid of its user’s own (from HUB_JOB_UID_BASE), in its own working directory as HOME', async () => {
    const done = await until(await submit('id -u; pwd; echo "$HOME"; id -G; grep NoNewPrivs /proc/self/status'), ended);
    const [user, pwd, home, groups, noNewPrivs] = (await stdout(done.id)).trim().split('\n');
    expect(Number(user)).toBeGreaterThanOrEqual(200000);
    expect(pwd).toMatch(/\/executions\/[0-9a-f-]{36}\/work$/);
    expect(home).toBe(pwd);
    // Its own gid alone, and no setuid program can give it more.
    expect(groups).toBe(user);
    expect(noNewPrivs).toBe('NoNewPrivs:\t1');
  });

  it('keeps a task’s environment and command off the disk, and removes them once it ended', async () => {
    const done = await until(await submit('echo "$SECRET_TOKEN"; pwd', [{ name: 'SECRET_TOKEN', value: 'kept-in-memory' }]), ended);
    const [secret, pwd] = (await stdout(done.id)).trim().split('\n');
    expect(secret).toBe('kept-in-memory');
    // In the hub's runtime directory, on a memory filesystem, never in the execution's directory.
    const base = runtimeCandidates(true).find(onMemoryFilesystem) as string;
    const runtime = readdirSync(base).filter((name) => name.startsWith(`hub-${process.pid}-`));
    expect(runtime.length).toBeGreaterThan(0);
    for (const name of runtime) expect(readdirSync(join(base, name, 'tasks'))).not.toContain(done.id);
    expect(readdirSync(join(pwd, '..')).sort()).toEqual(['exit-code', 'logs', 'work']);
  });

  it("keeps the hub's environment, its files and other executions' directories out of a task's reach", async () => {
    const script = [
      'cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" | grep -q ^NODE_OPTIONS= && echo read-environ',
      'cat ../../../../credentials.key >/dev/null 2>&1 && echo read-key',
      'ls ../.. >/dev/null 2>&1 && echo listed-executions',
      'echo hacked >> ../logs/stdout 2>/dev/null && echo wrote-log',
      'echo done',
    ].join('; ');
    const done = await until(await submit(script), ended);
    expect(await stdout(done.id)).toBe('done\n');
  });

  it('cannot forge its exit code, nor swap its working directory for a link', async () => {
    const done = await until(await submit('echo 0 > ../exit-code 2>/dev/null; cd .. && mv work old 2>/dev/null; ln -s / work 2>/dev/null; exit 7'), ended);
    expect(done.status).toBe('failed');
    expect(done.taskStates.main.events.at(-1)?.message).toBe('Exited with code 7');
    const listing = await hub.inject({ method: 'GET', url: `/api/v2/cluster/executions/${done.id}/files?path=`, headers: admin() });
    expect(listing.statusCode).toBe(200);
    expect(listing.json<{ msg: string }>().msg).not.toContain('etc/');
  });

  it('runs its command line exactly as given, and holds no descriptor of the launch’s beyond its own three', async () => {
    const args = ["it's", 'two words', 'a\nline break', '$HOME', '*', '-n', '', '"quoted"\\'];
    const script = 'printf "[%s]\\n" "$@"; for fd in 3 4 5 6 7 8 9; do [ -e /proc/$$/fd/$fd ] && echo "open $fd"; done; true';
    const response = await hub.inject({
      method: 'POST',
      url: '/api/v2/cluster/jobs',
      headers: admin(),
      payload: { name: 'command-line', namespace: 'default', executionProfileId: profile, task: { command: 'sh', args: ['-c', script, 'sh', ...args] } },
    });
    const done = await until(response.json<{ id: string }>().id, ended);
    expect(done.status).toBe('completed');
    expect(await stdout(done.id)).toBe(args.map((arg) => `[${arg}]\n`).join(''));
  });

  it('passes a stop on to the task as SIGTERM and lets it clean up before the group is killed', async () => {
    const jobId = await submit("trap 'echo got TERM; sleep 1; echo cleaned up; exit 0' TERM; echo ready; while true; do sleep 0.1; done");
    const running = await until(jobId, (current) => current.status === 'running');
    const deadline = Date.now() + 5000;
    while (!(await stdout(running.id)).includes('ready') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const stopped = await hub.inject({ method: 'POST', url: `/api/v2/cluster/jobs/${jobId}/stop`, headers: admin() });
    expect(stopped.statusCode).toBe(200);
    expect(await stdout(running.id)).toBe('ready\ngot TERM\ncleaned up\n');
  });

  it('names only the execution, never its job, to a user who may not see it', async () => {
    const done = await until(await submit('true'), ended);
    await hub.inject({ method: 'POST', url: '/api/v2/auth/users', headers: admin(), payload: { userName: 'outsider', password: 'an-outsider-password' } });
    const outsider = bearer(await hub.login('outsider', 'an-outsider-password'));
    const response = await hub.inject({ method: 'GET', url: `/api/v2/cluster/executions/${done.id}`, headers: outsider });
    expect([response.statusCode, response.json<{ detail: string }>().detail]).toEqual([404, `/ClusterJobs/${done.id} not found`]);
  });
});

/** A user holding only the submit role (Create on /ClusterJobs, Use on the profiles, in `default`); their headers. */
async function submitter(hub: TestHub, userName: string): Promise<Record<string, string>> {
  const admin = bearer(hub.adminToken);
  const password = 'a-submitter-password';
  const user = (await hub.inject({ method: 'POST', url: '/api/v2/auth/users', headers: admin, payload: { userName, password } })).json<{ _id: string }>();
  const role = await hub.inject({
    method: 'POST',
    url: '/api/v2/rbac/roles',
    headers: admin,
    payload: {
      name: `${userName}-submit`,
      permissions: [
        { object: '/ClusterJobs', actions: ['Create'], objectMatcher: 'simple', effect: 'Allow' },
        { object: '/ExecutionProfiles/*', actions: ['Use'], objectMatcher: 'simple', effect: 'Allow' },
      ],
    },
  });
  const binding = await hub.inject({
    method: 'POST',
    url: '/api/v2/rbac/rolebindings',
    headers: admin,
    payload: { role: role.json<{ id: string }>().id, principal: user._id, namespace: 'default' },
  });
  expect(binding.statusCode).toBe(201);
  return bearer(await hub.login(userName, password));
}

/** The one execution of a job, in detail. */
async function executionOfJob(
  hub: TestHub,
  jobId: string,
  as = bearer(hub.adminToken),
): Promise<Execution & { id: string; taskStates: { main: { finishedAt?: string } } }> {
  const list = await hub.inject({ method: 'GET', url: `/api/v2/cluster/executions?filter[jobId][EQ]=${jobId}`, headers: as });
  const id = list.json<{ data: { id: string }[] }>().data[0].id;
  return (await hub.inject({ method: 'GET', url: `/api/v2/cluster/executions/${id}`, headers: as })).json();
}

/** A task's log as text. */
async function logOf(hub: TestHub, executionId: string, name = 'stdout'): Promise<string> {
  const response = await hub.inject({
    method: 'GET',
    url: `/api/v2/cluster/executions/${executionId}/tasks/main/logs/${name}`,
    headers: bearer(hub.adminToken),
  });
  return response.json<{ msg: string }>().msg;
}

/** The processes still mentioning `text` once they have had 3 s to end (none, when all is well). */
const leftAfterEnd = (text: string) =>
  poll(
    () => processesWith(text),
    (found) => found.length === 0,
    3000,
  );

/** Host pids of the live processes whose command line or environment mentions `text`, with their real uid. */
function processesWith(text: string, where: 'cmdline' | 'environ' = 'cmdline'): { pid: number; uid: number }[] {
  const found: { pid: number; uid: number }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      // Arguments are NUL-separated: read as one line, `sleep 97.1` matches the sleep itself too.
      if (!readFileSync(`/proc/${entry}/${where}`, 'utf8').replaceAll('\0', ' ').includes(text)) continue;
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      if (/^State:\s+Z/m.test(status)) continue;
      found.push({ pid: Number(entry), uid: Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) });
    } catch {
      // Ended meanwhile.
    }
  }
  return found;
}

async function poll<T>(probe: () => Promise<T> | T, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const unique = () => `${process.pid}${Math.floor(Math.random() * 1e9)}`;

/**
 * The attacks of issue 12, each run as a real job by a user holding only the submit role (Create
 * on /ClusterJobs and Use on the profiles, in one namespace), on a hub running as root.
 */
asRoot('jobs of users who hold only the submit role, on a hub running as root', () => {
  let hub: TestHub;
  let sharedDir: string;
  let profile: string;
  let alice: Record<string, string>;
  let mallory: Record<string, string>;
  const admin = () => bearer(hub.adminToken);

  const post = (as: Record<string, string>, script: string, extra: Record<string, unknown> = {}): Promise<InjectResponse> =>
    hub.inject({
      method: 'POST',
      url: '/api/v2/cluster/jobs',
      headers: as,
      payload: { name: 'attack', namespace: 'default', executionProfileId: profile, task: { command: 'sh', args: ['-c', script] }, ...extra },
    });
  const submit = async (as: Record<string, string>, script: string, envVars: { name: string; value: string }[] = []): Promise<string> => {
    const response = await post(as, script, { task: { command: 'sh', args: ['-c', script], envVars } });
    expect([response.statusCode, response.body]).toEqual([201, response.body]);
    return response.json<{ id: string }>().id;
  };
  const execution = (jobId: string) => executionOfJob(hub, jobId);
  const until = (jobId: string, done: (current: Execution) => boolean) => poll(() => execution(jobId), done, 15_000);
  const ended = (current: Execution) => ['completed', 'failed', 'lost'].includes(current.status);
  const log = (executionId: string) => logOf(hub, executionId);

  beforeAll(async () => {
    sharedDir = enterableTempDir('hub-attacks-');
    hub = await startTestHub({ env: { HUB_SHARED_DIR: sharedDir, HUB_MAX_ACTIVE_JOBS_PER_USER: '3' } });
    const standard = await hub.inject({ method: 'GET', url: '/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard', headers: admin() });
    profile = standard.json<{ data: { _id: string }[] }>().data[0]._id;
    alice = await submitter(hub, 'alice');
    mallory = await submitter(hub, 'mallory');
  }, 30_000);
  afterAll(async () => {
    await hub?.close();
    rmSync(sharedDir, { recursive: true, force: true });
  });

  it('runs no privileged step with what a job sets in PATH or LD_PRELOAD', async () => {
    const evil = mkdtempSync(join(tmpdir(), 'hub-evil-'));
    rmSync(evil, { recursive: true });
    const marker = unique();
    // Every program a privileged launch might call by name, planted where the job's PATH looks first.
    const plant = ['mv', 'rm', 'setpriv', 'unshare', 'printf', 'cat', 'sh']
      .map((name) => `printf '#!/bin/sh\\nid -u >> ${evil}/ran-as\\nexec /usr/bin/${name} "$@"\\n' > ${evil}/${name}; chmod 755 ${evil}/${name}`)
      .join('; ');
    try {
      const jobId = await submit(mallory, `mkdir -p ${evil}; chmod 777 ${evil}; ${plant}; /bin/sleep 2.${marker}`, [
        { name: 'PATH', value: `${evil}:/usr/bin:/bin` },
        { name: 'LD_PRELOAD', value: `/nonexistent/${marker}.so` },
      ]);
      // While it runs: no process of root's carries the job's environment (the task's own do).
      const carrying = await poll(
        () => [...processesWith(`${evil}:/usr/bin`, 'environ'), ...processesWith(`${marker}.so`, 'environ')],
        (found) => found.length > 0,
      );
      expect(carrying.length).toBeGreaterThan(0);
      expect(carrying.filter((found) => found.uid === 0)).toEqual([]);
      const done = await until(jobId, ended);
      expect(done.status).toBe('completed');
      // Whatever ran the planted programs ran as the job's user, never as root.
      const ranAs = existsSync(join(evil, 'ran-as')) ? readFileSync(join(evil, 'ran-as'), 'utf8').split('\n').filter(Boolean) : [];
      expect(ranAs.filter((uid) => Number(uid) < 1000)).toEqual([]);
    } finally {
      rmSync(evil, { recursive: true, force: true });
    }
  });

  it("keeps one user's job from reading another's environment and files, and from killing it", async () => {
    const secret = `secret-${unique()}`;
    const sleep = `sleep 30.${unique()}`;
    const victim = await submit(alice, `echo "${secret}" > notes.txt; ${sleep}; echo survived`, [{ name: 'DB_PASSWORD', value: secret }]);
    const running = await until(victim, (current) => current.status === 'running');
    const victimProcesses = await poll(
      () => processesWith(sleep),
      (found) => found.some((entry) => entry.uid !== 0),
    );
    // The task's own process (its launch's processes mention the sleep too).
    const target = victimProcesses.filter((entry) => entry.uid !== 0).at(-1) as { pid: number };
    const victimWork = join(sharedDir, 'executions', running.id, 'work');
    const script = [
      `cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -q '${secret}' && echo read-environ`,
      `cat ${victimWork}/notes.txt 2>/dev/null && echo read-file`,
      `cat ../../${running.id}/work/notes.txt 2>/dev/null && echo read-file-relative`,
      `echo overwritten > ${victimWork}/notes.txt 2>/dev/null && echo wrote-file`,
      `kill -9 ${target.pid} 2>/dev/null && echo killed`,
      'kill -9 -1 2>/dev/null',
      'echo done',
    ].join('; ');
    try {
      const attack = await until(await submit(mallory, script), ended);
      expect(await log(attack.id)).toBe('done\n');
      expect(processesWith(sleep)).toEqual(victimProcesses);
      expect(readFileSync(join(victimWork, 'notes.txt'), 'utf8')).toBe(`${secret}\n`);
    } finally {
      await hub.inject({ method: 'POST', url: `/api/v2/cluster/jobs/${victim}/stop`, headers: admin() });
    }
  });

  it('runs two users’ jobs under two uids of their own, neither root nor the hub’s', async () => {
    const [a, m] = await Promise.all([submit(alice, 'id -u'), submit(mallory, 'id -u')]);
    const uids = await Promise.all([a, m].map(async (jobId) => Number((await log((await until(jobId, ended)).id)).trim())));
    expect(uids[0]).not.toBe(uids[1]);
    for (const uid of uids) expect(uid).toBeGreaterThanOrEqual(200000);
    // The same user keeps their uid.
    const again = await until(await submit(alice, 'id -u'), ended);
    expect(Number((await log(again.id)).trim())).toBe(uids[0]);
  });

  it('ends everything an execution started when it ends, setsid and double forks included', async () => {
    const sleep = `sleep 97.${unique()}`;
    const done = await until(await submit(mallory, `setsid sh -c "exec ${sleep}" & (sh -c "${sleep} &" &); sleep 0.2; echo left`), ended);
    expect([done.status, await log(done.id)]).toEqual(['completed', 'left\n']);
    expect(await leftAfterEnd(sleep)).toEqual([]);
  });

  it("shows a job none of the hub's processes, environment or files", async () => {
    const script = [
      `ls /proc | grep -c '^[0-9]'`,
      "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -q '^NODE_OPTIONS=' && echo read-hub-environ",
      `ls /proc/${process.pid}/root/ >/dev/null 2>&1 && echo reached-hub-root`,
      'echo done',
    ].join('; ');
    const done = await until(await submit(mallory, script), ended);
    const [count, ...rest] = (await log(done.id)).trim().split('\n');
    // Its shell, the launch's PID 1, ls and grep: nothing else of the machine's.
    expect(Number(count)).toBeLessThanOrEqual(6);
    expect(rest).toEqual(['done']);
  });

  it('answers 429 past HUB_MAX_ACTIVE_JOBS_PER_USER active jobs of one user, and leaves other users be', async () => {
    const sleeps = await Promise.all([1, 2, 3].map(() => submit(alice, 'sleep 30')));
    const refused = await post(alice, 'true');
    expect([refused.statusCode, refused.headers['content-type']]).toEqual([429, 'application/problem+json; charset=utf-8']);
    expect(refused.json<{ detail: string }>().detail).toContain('HUB_MAX_ACTIVE_JOBS_PER_USER = 3');
    expect((await post(mallory, 'true')).statusCode).toBe(201);
    for (const jobId of sleeps) await hub.inject({ method: 'POST', url: `/api/v2/cluster/jobs/${jobId}/stop`, headers: admin() });
    expect((await post(alice, 'true')).statusCode).toBe(201);
  });

  it('needs Update on /ClusterJobs to submit with a priority above the default', async () => {
    const above = await post(mallory, 'true', { priority: 100 });
    expect([above.statusCode, above.json<{ detail: string }>().detail]).toEqual([403, "Not allowed: Update on /ClusterJobs in namespace 'default'"]);
    expect((await post(mallory, 'true', { priority: 50 })).statusCode).toBe(201);
    expect((await post(mallory, 'true', { priority: 10 })).statusCode).toBe(201);
    expect((await post(admin(), 'true', { priority: 100 })).statusCode).toBe(201);
  });
});

/** A hub that is not root (simulated: the code path is the real one, asked of process.getuid). */
describe('a local hub that does not run as root', () => {
  let hub: TestHub;
  const logs: Record<string, unknown>[] = [];

  beforeAll(async () => {
    const getuid = jest.spyOn(process, 'getuid').mockReturnValue(1000);
    try {
      hub = await startTestHub({ logs });
    } finally {
      getuid.mockRestore();
    }
  });
  afterAll(() => hub?.close());

  it('says so in one line at start, and lets only holders of HubAdministrator submit', async () => {
    expect(logs.filter((line) => line.msg === NOT_ROOT)).toHaveLength(1);
    const admin = bearer(hub.adminToken);
    const standard = await hub.inject({ method: 'GET', url: '/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard', headers: admin });
    const profile = standard.json<{ data: { _id: string }[] }>().data[0]._id;
    const user = await submitter(hub, 'submitter');
    const payload = { name: 'x', namespace: 'default', executionProfileId: profile, task: { command: 'true' } };
    const refused = await hub.inject({
      method: 'POST',
      url: '/api/v2/cluster/jobs',
      headers: user,
      payload,
    });
    expect([refused.statusCode, refused.headers['content-type']]).toEqual([403, 'application/problem+json; charset=utf-8']);
    expect(refused.json<{ detail: string }>().detail).toMatch(
      /^Only holders of HubAdministrator may submit work to this hub: it does not run as root.*run the hub as root/,
    );
    expect((await hub.inject({ method: 'GET', url: '/api/v2/cluster/jobs', headers: admin })).json<{ total: number }>().total).toBe(0);
    expect((await hub.inject({ method: 'POST', url: '/api/v2/cluster/jobs', headers: admin, payload })).statusCode).toBe(201);
  });
});

/** A profile's limits, kept per execution by the local driver of a hub running as root. */
asRoot('execution profile limits', () => {
  let hub: TestHub;
  const admin = () => bearer(hub.adminToken);

  const profileWith = async (name: string, properties: Record<string, number>): Promise<string> => {
    const created = await hub.inject({ method: 'POST', url: '/api/v2/execution-profiles/execprofiles', headers: admin(), payload: { name, properties } });
    expect(created.statusCode).toBe(201);
    const id = created.json<{ _id: string }>()._id;
    const namespaceId = (await hub.inject({ method: 'GET', url: '/api/v2/namespaces?filter[name][EQ]=default', headers: admin() })).json<{
      data: { _id: string }[];
    }>().data[0]._id;
    await hub.inject({ method: 'POST', url: '/api/v2/execution-profiles/bindings', headers: admin(), payload: { executionProfileId: id, namespaceId } });
    return id;
  };
  const run = async (profile: string, script: string): Promise<Execution & { id: string; exitCode?: number }> => {
    const job = await hub.inject({
      method: 'POST',
      url: '/api/v2/cluster/jobs',
      headers: admin(),
      payload: { name: 'limited', namespace: 'default', executionProfileId: profile, task: { command: 'sh', args: ['-c', script] } },
    });
    expect(job.statusCode).toBe(201);
    const list = await hub.inject({ method: 'GET', url: `/api/v2/cluster/executions?filter[jobId][EQ]=${job.json<{ id: string }>().id}`, headers: admin() });
    const id = list.json<{ data: { id: string }[] }>().data[0].id;
    return poll(
      async () => (await hub.inject({ method: 'GET', url: `/api/v2/cluster/executions/${id}`, headers: admin() })).json<Execution & { id: string }>(),
      (current) => ['completed', 'failed', 'lost'].includes(current.status),
      20_000,
    );
  };
  const lastEvent = (execution: Execution) => execution.taskStates.main.events.at(-1) as { type: string; message: string; details?: Record<string, string> };

  beforeAll(async () => {
    hub = await startTestHub();
  });
  afterAll(() => hub?.close());

  it('ends an execution that runs past maxRunSeconds, failed, with an event naming the limit', async () => {
    const sleep = `sleep 60.${unique()}`;
    const done = await run(await profileWith('OneSecond', { maxRunSeconds: 1 }), sleep);
    expect([done.status, lastEvent(done).type, lastEvent(done).details?.limit]).toEqual(['failed', 'LimitExceeded', 'maxRunSeconds']);
    expect(lastEvent(done).message).toBe("Ended for running past its execution profile's maxRunSeconds (1 s)");
    expect(processesWith(sleep)).toEqual([]);
  });

  const withCgroups = existsSync('/sys/fs/cgroup/cgroup.controllers') || existsSync('/sys/fs/cgroup/pids/cgroup.procs') ? it : it.skip;

  withCgroups('ends an execution that starts more than maxProcesses processes', async () => {
    const sleep = `sleep 60.${unique()}`;
    const done = await run(await profileWith('FewProcesses', { maxProcesses: 4 }), `for i in 1 2 3 4 5 6 7 8; do ${sleep} & done; wait`);
    expect([done.status, lastEvent(done).details?.limit]).toEqual(['failed', 'maxProcesses']);
    expect(lastEvent(done).message).toBe("Ended for running past its execution profile's maxProcesses (4 processes)");
    expect(await leftAfterEnd(sleep)).toEqual([]);
  });

  withCgroups('ends an execution that uses more than maxMemoryMiB', async () => {
    const done = await run(await profileWith('LittleMemory', { maxMemoryMiB: 16 }), 'x=$(head -c 100000000 /dev/zero | tr "\\0" a); echo "${#x}"; sleep 30');
    expect([done.status, lastEvent(done).details?.limit]).toEqual(['failed', 'maxMemoryMiB']);
    // Within its limits a job runs as usual.
    expect((await run(await profileWith('Enough', { maxMemoryMiB: 256, maxProcesses: 50, maxRunSeconds: 60 }), 'echo fine')).status).toBe('completed');
  });
});

/**
 * The bounds every execution gets on the local driver of a hub running as root, under the built-in
 * Standard profile (which sets no limit): control groups of its own, below the hub's own.
 */
asRoot('default bounds, under Standard', () => {
  const withCgroups = existsSync('/sys/fs/cgroup/cgroup.controllers') || existsSync('/sys/fs/cgroup/pids/cgroup.procs') ? it : it.skip;
  const hubs: TestHub[] = [];
  afterAll(() => Promise.all(hubs.map((hub) => hub.close())));

  const startHub = async (env: Record<string, string> = {}) => {
    const hub = await startTestHub({ env });
    hubs.push(hub);
    const standard = await hub.inject({
      method: 'GET',
      url: '/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard',
      headers: bearer(hub.adminToken),
    });
    const profileId = standard.json<{ data: { _id: string }[] }>().data[0]._id;
    const profile = (await hub.inject({ method: 'GET', url: `/api/v2/execution-profiles/execprofiles/${profileId}`, headers: bearer(hub.adminToken) })).json<{
      _id: string;
      properties: Record<string, unknown>;
    }>();
    expect(profile.properties).toEqual({});
    const user = await submitter(hub, 'bounded');
    const run = async (script: string, done = (current: Execution) => ['completed', 'failed', 'lost'].includes(current.status), timeoutMs = 20_000) => {
      const job = await hub.inject({
        method: 'POST',
        url: '/api/v2/cluster/jobs',
        headers: user,
        payload: { name: 'bounded', namespace: 'default', executionProfileId: profile._id, task: { command: 'sh', args: ['-c', script] } },
      });
      expect(job.statusCode).toBe(201);
      const jobId = job.json<{ id: string }>().id;
      return poll(() => executionOfJob(hub, jobId), done, timeoutMs);
    };
    return { hub, run };
  };
  const lastEvent = (execution: Execution) => execution.taskStates.main.events.at(-1) as { type: string; message: string; details?: Record<string, string> };

  /** The hub's own group in each hierarchy (this process's: the hub runs in it), `hub` left out on cgroup v2, where the hub moved itself into it. */
  const hubGroups = () =>
    new Map(
      readFileSync('/proc/self/cgroup', 'utf8')
        .trim()
        .split('\n')
        .map((line) => {
          const [, controllers, group] = line.split(':');
          return [controllers, controllers === '' ? group.replace(/\/hub$/, '') : group] as const;
        }),
    );

  withCgroups('runs each execution in groups of its own below the hub’s own, with the default bounds', async () => {
    const { hub, run } = await startHub();
    const done = await run('cat /proc/self/cgroup');
    expect(done.status).toBe('completed');
    const groups = new Map(
      (await logOf(hub, done.id))
        .trim()
        .split('\n')
        .map((line) => [line.split(':')[1], line.split(':')[2]]),
    );
    const own = hubGroups();
    const checked = existsSync('/sys/fs/cgroup/cgroup.controllers') ? [''] : ['pids', 'memory'];
    for (const controller of checked)
      expect([controller, groups.get(controller)]).toEqual([controller, posix.join(own.get(controller) ?? '', 'hub-executions', done.id)]);
    const hubMemoryLimitMiB = ExecutionCgroups.ownMemoryLimitMiB();
    const memory = defaultMaxMemoryMiB(Math.floor(totalmem() / 1024 / 1024), hubMemoryLimitMiB, availableParallelism());
    // What the groups held (read from the job itself, which sees /sys/fs/cgroup).
    const limits = await run(
      existsSync('/sys/fs/cgroup/cgroup.controllers')
        ? 'g=$(cut -d: -f3 /proc/self/cgroup); cat /sys/fs/cgroup$g/pids.max /sys/fs/cgroup$g/memory.max'
        : 'cat /sys/fs/cgroup/pids$(grep :pids: /proc/self/cgroup | cut -d: -f3)/pids.max /sys/fs/cgroup/memory$(grep :memory: /proc/self/cgroup | cut -d: -f3)/memory.limit_in_bytes',
    );
    // The launch's own two processes (unshare, the task's init) besides the task's 4096.
    expect((await logOf(hub, limits.id)).trim().split('\n')).toEqual(['4098', String(memory * 1024 * 1024)]);
  });

  withCgroups(
    'ends a job that forks 5,000 sleeps, failed, past the default maxProcesses',
    async () => {
      const { run } = await startHub();
      const sleep = `sleep 600.${unique()}`;
      const done = await run(`for i in $(seq 5000); do ${sleep} & done; wait`, undefined, 180_000);
      expect([done.status, lastEvent(done).type, lastEvent(done).details?.limit]).toEqual(['failed', 'LimitExceeded', 'maxProcesses']);
      expect(lastEvent(done).message).toBe("Ended for running past the hub's default maxProcesses (4096 processes, HUB_JOB_DEFAULT_MAX_PROCESSES)");
      // Four thousand processes take the kernel a while to end on a busy machine.
      const left = await poll(
        () => processesWith(sleep),
        (found) => found.length === 0,
        30_000,
      );
      expect(left).toEqual([]);
    },
    240_000,
  );

  withCgroups(
    'ends a job that allocates more than the default maxMemoryMiB, failed',
    async () => {
      const { run } = await startHub({ HUB_JOB_DEFAULT_MAX_MEMORY_MIB: '64' });
      const done = await run('x=$(head -c 200000000 /dev/zero | tr "\\0" a); echo "${#x}"; sleep 30');
      expect([done.status, lastEvent(done).type, lastEvent(done).details?.limit]).toEqual(['failed', 'LimitExceeded', 'maxMemoryMiB']);
      expect(lastEvent(done).message).toBe("Ended for running past the hub's default maxMemoryMiB (64 MiB, HUB_JOB_DEFAULT_MAX_MEMORY_MIB)");
      // Within the bound a job runs as usual.
      expect((await run('x=$(head -c 20000000 /dev/zero | tr "\\0" a); echo "${#x}"')).status).toBe('completed');
    },
    60_000,
  );
});

/** A hub running as root where no control group can be made (simulated: the detection's answer is the only thing replaced). */
asRoot('a hub running as root without control groups', () => {
  let hub: TestHub;
  const logs: Record<string, unknown>[] = [];

  beforeAll(async () => {
    const detect = jest.spyOn(ExecutionCgroups, 'detect').mockReturnValue({ problem: 'cgroupfs is read-only here' });
    try {
      hub = await startTestHub({ logs, env: { HUB_JOB_DEFAULT_MAX_PROCESSES: '50' } });
    } finally {
      detect.mockRestore();
    }
  });
  afterAll(() => hub?.close());

  it('says so at start, and sets RLIMIT_NPROC of an allocated uid’s launch to its maxProcesses', async () => {
    expect(logs.filter((line) => line.msg === NO_CGROUPS).map((line) => line.problem)).toEqual(['cgroupfs is read-only here']);
    const admin = bearer(hub.adminToken);
    const standard = await hub.inject({ method: 'GET', url: '/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard', headers: admin });
    const profile = standard.json<{ data: { _id: string }[] }>().data[0]._id;
    const job = await hub.inject({
      method: 'POST',
      url: '/api/v2/cluster/jobs',
      headers: await submitter(hub, 'unbounded'),
      payload: {
        name: 'nproc',
        namespace: 'default',
        executionProfileId: profile,
        task: { command: 'sh', args: ['-c', "grep 'Max processes' /proc/self/limits"] },
      },
    });
    const done = await poll(
      () => executionOfJob(hub, job.json<{ id: string }>().id),
      (current) => ['completed', 'failed', 'lost'].includes(current.status),
      15_000,
    );
    expect(done.status).toBe('completed');
    expect((await logOf(hub, done.id)).split(/\s+/).slice(2, 4)).toEqual(['50', '50']);
  });
});

asRoot('a hub restarted while its jobs run', () => {
  it('adopts what kept running, records the ends and logs of what ended meanwhile, and still stops a job within the grace period', async () => {
    const hub = await startTestHub();
    const admin = bearer(hub.adminToken);
    const standard = await hub.inject({ method: 'GET', url: '/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard', headers: admin });
    const profile = standard.json<{ data: { _id: string }[] }>().data[0]._id;
    const submit = async (script: string) =>
      (
        await hub.inject({
          method: 'POST',
          url: '/api/v2/cluster/jobs',
          headers: admin,
          payload: { name: 'kept', namespace: 'default', executionProfileId: profile, task: { command: 'sh', args: ['-c', script] } },
        })
      ).json<{ id: string }>().id;
    const executionOf = (jobId: string) => executionOfJob(hub, jobId);
    const log = (executionId: string) => logOf(hub, executionId);
    try {
      const sleep = `sleep 60.${unique()}`;
      const [short, long, endless] = [await submit('sleep 0.5; echo short'), await submit('sleep 2.5; echo long'), await submit(sleep)];
      for (const jobId of [short, long, endless])
        await poll(
          () => executionOf(jobId),
          (current) => current.status === 'running',
        );
      await hub.restart();
      const restartedAt = Date.now();
      const [shortDone, longDone] = await Promise.all(
        [short, long].map((jobId) =>
          poll(
            () => executionOf(jobId),
            (current) => current.status === 'completed',
            15_000,
          ),
        ),
      );
      expect([shortDone.status, await log(shortDone.id)]).toEqual(['completed', 'short\n']);
      expect([longDone.status, await log(longDone.id)]).toEqual(['completed', 'long\n']);
      // The short one ended while no hub watched: its end is when it exited, not when the new hub looked.
      expect(Date.parse(shortDone.taskStates.main.finishedAt as string)).toBeLessThan(restartedAt + 500);
      expect((await executionOf(endless)).status).toBe('running');
      const stoppedAt = Date.now();
      expect((await hub.inject({ method: 'POST', url: `/api/v2/cluster/jobs/${endless}/stop`, headers: admin })).json<{ status: string }>().status).toBe(
        'dead',
      );
      expect(Date.now() - stoppedAt).toBeLessThan(6000);
      expect(await leftAfterEnd(sleep)).toEqual([]);
    } finally {
      await hub.close();
    }
  });
});

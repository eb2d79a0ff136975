import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { bearer, startTestHub, type TestHub } from '../support/test-hub.js';

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

  const submit = async (script: string): Promise<string> => {
    const response = await hub.inject({
      method: 'POST',
      url: '/api/v2/cluster/jobs',
      headers: admin(),
      payload: { name: 'isolation', namespace: 'default', executionProfileId: profile, task: { command: 'sh', args: ['-c', script] } },
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
    const done = await until(await submit('id -u; pwd; echo "$HOME"'), ended);
    const [user, pwd, home] = (await stdout(done.id)).trim().split('\n');
    expect(Number(user)).toBeGreaterThanOrEqual(200000);
    expect(pwd).toMatch(/\/executions\/[0-9a-f-]{36}\/work$/);
    expect(home).toBe(pwd);
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

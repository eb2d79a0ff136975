import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { bearer, startTestHub, type TestHub } from '../support/test-hub.js';

/**
 * Issue 25, item 1: an account is a job's identity only when it is an ordinary one. One whose
 * primary group is 0, that is in a group of HUB_JOB_FORBIDDEN_GROUPS (`disk`, by default, exists
 * on every Debian) or whose uid another account shares is not: its user's jobs run as the uid the
 * hub allocated them, with an event that says why. Judged at each submission, since host accounts
 * change. The host accounts are made here (useradd) and removed after.
 */
const asRoot = process.getuid?.() === 0 ? describe : describe.skip;

interface Execution {
  id: string;
  status: string;
  taskStates: { main: { events: { type: string; message: string; details: Record<string, string> }[] } };
}

const SUFFIX = `${process.pid % 100000}`;
const name = (what: string) => `hubid-${what}-${SUFFIX}`;
const PLAIN = name('plain');
const ROOT_GROUP = name('gid0');
const IN_DISK = name('disk');
const SHARED = name('shared');
const TWIN = name('twin');
const LATER = name('later');
const ACCOUNTS = [PLAIN, ROOT_GROUP, IN_DISK, SHARED, TWIN, LATER];

/** A user or group tool, again while another spec holds the lock on /etc/passwd or /etc/group. */
function accountTool(program: string, args: readonly string[]): void {
  for (let attempt = 1; ; attempt++) {
    try {
      execFileSync(program, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      return;
    } catch (error) {
      if (!String((error as { stderr?: Buffer }).stderr).includes('lock') || attempt === 50) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
    }
  }
}
const useradd = (...args: string[]) => accountTool('useradd', ['--no-create-home', '--shell', '/bin/sh', ...args]);
const uidOf = (account: string) => Number(execFileSync('id', ['-u', account], { encoding: 'utf8' }).trim());
const gidOf = (account: string) => Number(execFileSync('id', ['-g', account], { encoding: 'utf8' }).trim());
function removeAccounts(): void {
  for (const account of ACCOUNTS) {
    try {
      accountTool('userdel', [account]);
    } catch {
      // Not there.
    }
  }
}

asRoot('job identities of accounts that are not ordinary, on a hub running as root', () => {
  let hub: TestHub;
  let profile: string;
  const admin = () => bearer(hub.adminToken);

  /** A user holding only the submit role in `default`, whose unixUserName an administrator set to `account`. */
  const submitterAs = async (account: string): Promise<{ id: string; as: Record<string, string> }> => {
    const password = 'a-job-identities-password';
    const created = await hub.inject({ method: 'POST', url: '/api/v2/auth/users', headers: admin(), payload: { userName: `user-${account}`, password } });
    expect(created.statusCode).toBe(201);
    const id = created.json<{ _id: string }>()._id;
    const patched = await hub.inject({
      method: 'PATCH',
      url: `/api/v2/auth/users/${id}`,
      headers: { ...admin(), 'content-type': 'application/json-patch+json' },
      payload: JSON.stringify([{ op: 'add', path: '/unixUserName', value: account }]),
    });
    expect(patched.statusCode).toBe(200);
    const role = await hub.inject({
      method: 'POST',
      url: '/api/v2/rbac/roles',
      headers: admin(),
      payload: {
        name: `submit-${account}`,
        permissions: [
          { object: '/ClusterJobs', actions: ['Create'], objectMatcher: 'simple', effect: 'Allow' },
          { object: '/ExecutionProfiles/*', actions: ['Use'], objectMatcher: 'simple', effect: 'Allow' },
        ],
      },
    });
    await hub.inject({
      method: 'POST',
      url: '/api/v2/rbac/rolebindings',
      headers: admin(),
      payload: { role: role.json<{ id: string }>().id, principal: id, namespace: 'default' },
    });
    return { id, as: bearer(await hub.login(`user-${account}`, password)) };
  };

  /** Runs `id -u; id -g; id -G` as a job of `as`; its execution once ended, and what it printed. */
  const runId = async (as: Record<string, string>): Promise<{ execution: Execution; uid: number; gid: number; groups: number[] }> => {
    const job = await hub.inject({
      method: 'POST',
      url: '/api/v2/cluster/jobs',
      headers: as,
      payload: { name: 'who', namespace: 'default', executionProfileId: profile, task: { command: 'sh', args: ['-c', 'id -u; id -g; id -G'] } },
    });
    expect([job.statusCode, job.body]).toEqual([201, job.body]);
    const list = await hub.inject({ method: 'GET', url: `/api/v2/cluster/executions?filter[jobId][EQ]=${job.json<{ id: string }>().id}`, headers: admin() });
    const executionId = list.json<{ data: { id: string }[] }>().data[0].id;
    const deadline = Date.now() + 20_000;
    let execution: Execution;
    for (;;) {
      execution = (await hub.inject({ method: 'GET', url: `/api/v2/cluster/executions/${executionId}`, headers: admin() })).json<Execution>();
      if (['completed', 'failed', 'lost'].includes(execution.status) || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(execution.status).toBe('completed');
    const stdout = (await hub.inject({ method: 'GET', url: `/api/v2/cluster/executions/${executionId}/tasks/main/logs/stdout`, headers: admin() })).json<{
      msg: string;
    }>().msg;
    const [uid, gid, groups] = stdout.trim().split('\n');
    return { execution, uid: Number(uid), gid: Number(gid), groups: groups.split(' ').map(Number) };
  };
  const identityEvents = (execution: Execution) => execution.taskStates.main.events.filter((event) => event.type === 'Identity');

  beforeAll(async () => {
    removeAccounts();
    useradd(PLAIN);
    useradd('--gid', '0', '--no-user-group', ROOT_GROUP);
    useradd('--groups', 'disk', IN_DISK);
    useradd(SHARED);
    useradd('--non-unique', '--uid', String(uidOf(SHARED)), TWIN);
    useradd(LATER);
    hub = await startTestHub();
    const standard = await hub.inject({ method: 'GET', url: '/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard', headers: admin() });
    profile = standard.json<{ data: { _id: string }[] }>().data[0]._id;
  }, 60_000);
  afterAll(async () => {
    await hub?.close();
    removeAccounts();
  });

  it('runs the jobs of a user whose account is ordinary as that account, with its own groups only, and says nothing of it', async () => {
    const { as } = await submitterAs(PLAIN);
    const ran = await runId(as);
    expect([ran.uid, ran.gid, ran.groups]).toEqual([uidOf(PLAIN), gidOf(PLAIN), [gidOf(PLAIN)]]);
    expect(identityEvents(ran.execution)).toEqual([]);
  });

  it.each([
    [ROOT_GROUP, 'its primary group is 0 (root)'],
    [IN_DISK, "it is in the group 'disk' (HUB_JOB_FORBIDDEN_GROUPS)"],
    [SHARED, `its uid is shared with the account '${TWIN}'`],
  ])('runs the jobs of the user of %s as their allocated uid, with an event saying why', async (account, reason) => {
    const { as } = await submitterAs(account);
    const ran = await runId(as);
    expect(ran.uid).toBeGreaterThanOrEqual(200000);
    expect([ran.gid, ran.groups]).toEqual([ran.uid, [ran.uid]]);
    const [event] = identityEvents(ran.execution);
    expect(event.message).toBe(
      `Runs as uid ${ran.uid}, allocated to user 'user-${account}', not as the account '${account}' of their unixUserName: ${reason.replace('its uid', `its uid ${uidOf(account)}`)}`,
    );
    expect(event.details).toEqual({ uid: String(ran.uid), unixUserName: account, reason: reason.replace('its uid', `its uid ${uidOf(account)}`) });
  });

  it('judges the account again at each submission: one put in a forbidden group since is no longer used', async () => {
    const { as } = await submitterAs(LATER);
    expect((await runId(as)).uid).toBe(uidOf(LATER));
    accountTool('usermod', ['--append', '--groups', 'disk', LATER]);
    const ran = await runId(as);
    expect(ran.uid).toBeGreaterThanOrEqual(200000);
    expect(identityEvents(ran.execution)[0].details.reason).toBe("it is in the group 'disk' (HUB_JOB_FORBIDDEN_GROUPS)");
  });
});

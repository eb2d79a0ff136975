import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { poll } from '../support/poll.js';
import { bearer, startTestHub, type TestHub } from '../support/test-hub.js';

/**
 * Fair share and revocation (docs/cluster.md "Fair share", "Revocation"), with real processes on
 * the local driver: one user cannot hold every slot by default (HUB_MAX_RUNNING_JOBS_PER_USER),
 * what waits goes to the user running fewest first and by priority within a user, on one hub and
 * across hubs sharing the node; a prepared launch that would pass the cap does not take a freed
 * slot; a deactivated or deleted user's waiting jobs end `failed` with a `Revoked` event and never
 * run, while what runs keeps running.
 */

const API = '/api/v2/cluster';
const PASSWORD = 'a-password-for-fair-share';

interface Execution {
  id: string;
  status: string;
  nodeId?: string | null;
  taskStates: { main: { startedAt?: string; events: { type: string; message?: string }[] } };
}

/** A directory every task may write in, and its `order` file (tasks run as their users' uids when the suite runs as root). */
function openDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o777);
  writeFileSync(join(dir, 'order'), '');
  chmodSync(join(dir, 'order'), 0o666);
  return dir;
}

/** Waits until a task has written `line` in `dir`'s order. */
function written(dir: string, line: string): Promise<string[]> {
  return poll(
    () => Promise.resolve(orderIn(dir)),
    (lines) => lines.includes(line),
    `"${line}" to be written`,
  );
}

function processesNaming(text: string): number[] {
  return readdirSync('/proc').flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return [];
    try {
      return readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text) ? [Number(entry)] : [];
    } catch {
      return [];
    }
  });
}

/** A task that writes `<name> start`, waits for its gate file `go-<name>` in `dir`, and writes `<name> end`. */
const gated = (dir: string, name: string) =>
  `echo "${name} start" >> ${dir}/order; until [ -e ${dir}/go-${name} ]; do sleep 0.05; done; echo "${name} end" >> ${dir}/order`;

/** A task that writes `<name> start` and ends. */
const marking = (dir: string, name: string) => `echo "${name} start" >> ${dir}/order`;

function orderIn(dir: string): string[] {
  return existsSync(join(dir, 'order')) ? readFileSync(join(dir, 'order'), 'utf8').split('\n').filter(Boolean) : [];
}

function clientOf(hub: TestHub) {
  const admin = bearer(hub.adminToken);
  let profileId: string | undefined;
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, as = admin) =>
    hub.inject({
      method,
      url,
      headers: { ...as, ...(payload !== undefined && { 'content-type': 'application/json' }) },
      ...(payload !== undefined && { payload: JSON.stringify(payload) }),
    });
  const ok = async <T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, as = admin, status = 200): Promise<T> => {
    const response = await call(method, url, payload, as);
    expect([method, url, response.statusCode, response.body]).toEqual([method, url, status, response.body]);
    return response.json<T>();
  };
  const client = {
    call,
    admin,
    /** A user who may submit jobs in `default` under every profile; their id and headers. */
    user: async (userName: string) => {
      const created = await ok<{ _id: string }>('POST', '/api/v2/auth/users', { userName, password: PASSWORD }, admin, 201);
      const role = await ok<{ id: string }>(
        'POST',
        '/api/v2/rbac/roles',
        {
          name: `${userName}-submits`,
          permissions: [
            { object: '/ClusterJobs', actions: ['Create'], objectMatcher: 'simple', effect: 'Allow' },
            { object: '/ExecutionProfiles/*', actions: ['Use'], objectMatcher: 'simple', effect: 'Allow' },
          ],
        },
        admin,
        201,
      );
      await ok('POST', '/api/v2/rbac/rolebindings', { role: role.id, principal: created._id, namespace: 'default' }, admin, 201);
      return { id: created._id, headers: bearer(await hub.login(userName, PASSWORD)) };
    },
    submit: async (name: string, script: string, as = admin, priority?: number): Promise<string> => {
      profileId ??= (await ok<{ data: { _id: string }[] }>('GET', '/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard')).data[0]._id;
      const job = await ok<{ id: string }>(
        'POST',
        `${API}/jobs`,
        {
          name,
          namespace: 'default',
          executionProfileId: profileId,
          ...(priority !== undefined && { priority }),
          task: { command: 'sh', args: ['-c', script] },
        },
        as,
        201,
      );
      return job.id;
    },
    executionOf: async (jobId: string): Promise<Execution> => {
      const page = await ok<{ data: { id: string }[] }>('GET', `${API}/executions?filter[jobId][EQ]=${jobId}`);
      return ok<Execution>('GET', `${API}/executions/${page.data[0].id}`);
    },
    until: (jobId: string, test: (execution: Execution) => boolean, what: string, timeoutMs?: number) =>
      poll(() => client.executionOf(jobId), test, `job ${jobId} ${what}`, timeoutMs),
    allDone: () =>
      poll(
        () => ok<{ total: number }>('GET', `${API}/jobs?filter[status][IN]=pending,running&page[limit]=1`),
        (page) => page.total === 0,
        'every job to end',
        60_000,
      ),
  };
  return client;
}

const isRunning = (execution: Execution) => execution.status === 'running';
const isPrepared = (execution: Execution) => execution.status === 'pending' && Boolean(execution.nodeId);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('fair share', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) {
      for (const pid of processesNaming(dir))
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // Gone, or not a group leader.
        }
      rmSync(dir, { recursive: true, force: true });
    }
  });
  const dir = (prefix: string) => {
    const made = openDir(prefix);
    dirs.push(made);
    return made;
  };

  it("keeps a slot of two for another user by default: one user's long jobs cannot take both, another's starts at once; a prepared launch that would pass the cap is not handed a freed slot", async () => {
    const marks = dir('hub-fair-two-');
    const hub = await startTestHub({ env: { HUB_LOCAL_SLOTS: '2', HUB_SHARED_DIR: dir('hub-fair-shared-') } });
    try {
      const c = clientOf(hub);
      const other = await c.user('other-user');
      const first = await c.submit('a1', gated(marks, 'a1'));
      await c.until(first, isRunning, 'to run');
      const second = await c.submit('a2', gated(marks, 'a2'));
      // The second waits, prepared, though a slot is free: the first holds all the slots but one.
      await c.until(second, isPrepared, 'to be prepared');
      await sleep(500);
      expect((await c.executionOf(second)).status).toBe('pending');
      const theirs = await c.submit('b1', gated(marks, 'b1'), other.headers);
      await c.until(theirs, isRunning, 'to run beside the first user’s job');
      expect(await written(marks, 'b1 start')).toEqual(['a1 start', 'b1 start']);
      // The other user's end frees a slot the first user may not take (it would hold both): it stays free.
      writeFileSync(join(marks, 'go-b1'), '');
      await c.until(theirs, (execution) => execution.status === 'completed', 'to end');
      await sleep(500);
      expect((await c.executionOf(second)).status).toBe('pending');
      // Their own end lets their next one start.
      writeFileSync(join(marks, 'go-a1'), '');
      await c.until(second, isRunning, 'to run once the first ended');
      writeFileSync(join(marks, 'go-a2'), '');
      await c.allDone();
      expect(orderIn(marks)).toEqual(['a1 start', 'b1 start', 'b1 end', 'a1 end', 'a2 start', 'a2 end']);
    } finally {
      await hub.close();
    }
  }, 90_000);

  it('lets one user fill every slot with HUB_MAX_RUNNING_JOBS_PER_USER=0', async () => {
    const marks = dir('hub-fair-nocap-');
    const hub = await startTestHub({ env: { HUB_LOCAL_SLOTS: '2', HUB_MAX_RUNNING_JOBS_PER_USER: '0', HUB_SHARED_DIR: dir('hub-fair-shared-') } });
    try {
      const c = clientOf(hub);
      const jobs = [await c.submit('a1', gated(marks, 'a1')), await c.submit('a2', gated(marks, 'a2'))];
      for (const job of jobs) await c.until(job, isRunning, 'to run');
      writeFileSync(join(marks, 'go-a1'), '');
      writeFileSync(join(marks, 'go-a2'), '');
      await c.allDone();
    } finally {
      await hub.close();
    }
  }, 60_000);

  it('starts the waiting job of the user running fewest first, and orders by priority within a user', async () => {
    const marks = dir('hub-fair-order-');
    const hub = await startTestHub({ env: { HUB_LOCAL_SLOTS: '2', HUB_MAX_RUNNING_JOBS_PER_USER: '0', HUB_SHARED_DIR: dir('hub-fair-shared-') } });
    try {
      const c = clientOf(hub);
      const other = await c.user('fewer-user');
      const holders = [await c.submit('h1', gated(marks, 'h1')), await c.submit('h2', gated(marks, 'h2'))];
      for (const job of holders) await c.until(job, isRunning, 'to run');
      // The first user's waiting jobs are older and of better priority than the other user's.
      const waiting = [
        await c.submit('a-low', marking(marks, 'a-low'), c.admin, 10),
        await c.submit('a-high', marking(marks, 'a-high'), c.admin, 90),
        await c.submit('b-low', marking(marks, 'b-low'), other.headers, 10),
      ];
      for (const job of waiting) await c.until(job, isPrepared, 'to be prepared');
      // A freed slot goes to the user running none; the next ones to the first user's jobs, best priority first.
      writeFileSync(join(marks, 'go-h1'), '');
      for (const job of waiting) await c.until(job, (execution) => execution.status === 'completed', 'to run and end');
      writeFileSync(join(marks, 'go-h2'), '');
      await c.allDone();
      const order = orderIn(marks);
      // The two holders start together, in either order (one failed run under load had h2 first).
      expect(order.slice(0, 2).sort()).toEqual(['h1 start', 'h2 start']);
      expect(order.slice(2)).toEqual(['h1 end', 'b-low start', 'a-high start', 'a-low start', 'h2 end']);
    } finally {
      await hub.close();
    }
  }, 90_000);

  it('keeps the cap with two hubs sharing the node: one user never runs two of its two slots, the other user starts at once', async () => {
    const marks = dir('hub-fair-hubs-');
    const sharedDir = dir('hub-fair-shared-');
    const first = await startTestHub({ env: { HUB_LOCAL_SLOTS: '2', HUB_MAX_ACTIVE_JOBS_PER_USER: '1000', HUB_SHARED_DIR: sharedDir } });
    const second = await startTestHub({
      databaseUrl: first.databaseUrl,
      env: { HUB_LOCAL_SLOTS: '2', HUB_MAX_ACTIVE_JOBS_PER_USER: '1000', HUB_SHARED_DIR: sharedDir },
    });
    try {
      const clients = [clientOf(first), clientOf(second)];
      const other = await clients[0].user('other-hub-user');
      // Short jobs, submitted to both hubs at once: each writes when it starts and when it ends.
      const script = (name: string) => `echo "${name} start" >> ${marks}/order; sleep 0.1; echo "${name} end" >> ${marks}/order`;
      const jobs = await Promise.all(Array.from({ length: 16 }, (_, index) => clients[index % 2].submit(`a${index}`, script(`a${index}`))));
      const theirs = await clients[1].submit('b', gated(marks, 'b'), other.headers);
      await clients[0].until(theirs, isRunning, 'to run while the first user’s jobs wait', 30_000);
      writeFileSync(join(marks, 'go-b'), '');
      await clients[0].allDone();
      for (const job of jobs) expect((await clients[0].executionOf(job)).status).toBe('completed');
      // Never two of the first user's at once.
      let running = 0;
      for (const line of orderIn(marks).filter((entry) => entry.startsWith('a'))) {
        running += line.endsWith('start') ? 1 : -1;
        expect([line, running]).toEqual([line, line.endsWith('start') ? 1 : 0]);
      }
    } finally {
      await second.close();
      await first.close();
    }
  }, 120_000);
});

describe('revocation', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("ends a deactivated user's and a deleted user's waiting jobs failed with an event, never starting them; what runs keeps running", async () => {
    const marks = openDir('hub-revoked-');
    dirs.push(marks);
    const hub = await startTestHub({ env: { HUB_LOCAL_SLOTS: '2', HUB_MAX_RUNNING_JOBS_PER_USER: '0', HUB_SHARED_DIR: openDir('hub-revoked-shared-') } });
    try {
      const c = clientOf(hub);
      const [deactivated, deleted, runner] = [await c.user('to-deactivate'), await c.user('to-delete'), await c.user('still-running')];
      const holder = await c.submit('holder', gated(marks, 'holder'));
      await c.until(holder, isRunning, 'to run');
      const running = await c.submit('running', gated(marks, 'running'), runner.headers);
      await c.until(running, isRunning, 'to run');
      const waiting = [
        await c.submit('deactivated', marking(marks, 'deactivated'), deactivated.headers),
        await c.submit('deleted', marking(marks, 'deleted'), deleted.headers),
      ];
      for (const job of waiting) await c.until(job, (execution) => execution.status === 'pending', 'to wait');
      const patched = await c.call('PATCH', `/api/v2/auth/users/${deactivated.id}`, [{ op: 'replace', path: '/active', value: false }]);
      expect(patched.statusCode).toBe(200);
      expect((await c.call('PATCH', `/api/v2/auth/users/${runner.id}`, [{ op: 'replace', path: '/active', value: false }])).statusCode).toBe(200);
      expect((await c.call('DELETE', `/api/v2/auth/users/${deleted.id}`)).statusCode).toBe(200);
      const [ofDeactivated, ofDeleted] = [
        await c.until(waiting[0], (execution) => execution.status === 'failed', 'to fail'),
        await c.until(waiting[1], (execution) => execution.status === 'failed', 'to fail'),
      ];
      expect(ofDeactivated.taskStates.main.events.at(-1)).toMatchObject({
        type: 'Revoked',
        message: "Its owner, user 'to-deactivate', was deactivated before it started: a deactivated user’s work does not run",
      });
      expect(ofDeleted.taskStates.main.events.at(-1)).toMatchObject({
        type: 'Revoked',
        message: 'Its owner was deleted before it started: a deleted user’s work does not run',
      });
      for (const execution of [ofDeactivated, ofDeleted]) expect(execution.taskStates.main.events.map((event) => event.type)).not.toContain('Started');
      // The deactivated user's running job runs on until it ends by itself.
      expect((await c.executionOf(running)).status).toBe('running');
      writeFileSync(join(marks, 'go-running'), '');
      writeFileSync(join(marks, 'go-holder'), '');
      await c.allDone();
      expect((await c.executionOf(running)).status).toBe('completed');
      expect(
        orderIn(marks)
          .filter((line) => line.endsWith('start'))
          .sort(),
      ).toEqual(['holder start', 'running start']);
    } finally {
      await hub.close();
    }
  }, 90_000);

  it("never starts a deactivated user's job even when no look at the queue has ended it yet (checked at claim)", async () => {
    const marks = openDir('hub-revoked-claim-');
    dirs.push(marks);
    const hub = await startTestHub({ env: { HUB_LOCAL_SLOTS: '1', HUB_LOCAL_PREPARED_LAUNCHES: '0', HUB_SHARED_DIR: openDir('hub-revoked-claim-shared-') } });
    try {
      const c = clientOf(hub);
      const user = await c.user('claimed-user');
      const holder = await c.submit('holder', gated(marks, 'holder'));
      await c.until(holder, isRunning, 'to run');
      const job = await c.submit('late', marking(marks, 'late'), user.headers);
      // Deactivated behind the hub's back, with no change announced: only the claim's check stands in the way.
      const pg = await import('pg');
      const db = new pg.default.Client({ connectionString: hub.databaseUrl });
      await db.connect();
      try {
        await db.query(`ALTER TABLE users DISABLE TRIGGER users_notify_change`);
        await db.query('UPDATE users SET active = false WHERE id = $1', [user.id]);
        await db.query(`ALTER TABLE users ENABLE TRIGGER users_notify_change`);
      } finally {
        await db.end();
      }
      writeFileSync(join(marks, 'go-holder'), '');
      await c.until(holder, (execution) => execution.status === 'completed', 'to end');
      await sleep(1500);
      expect((await c.executionOf(job)).status).toBe('pending');
      expect(orderIn(marks)).toEqual(['holder start', 'holder end']);
    } finally {
      await hub.close();
    }
  }, 60_000);
});

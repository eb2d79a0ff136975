import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { SessionEngine } from '../../src/sessions/session-engine.js';
import { poll } from '../support/poll.js';
import { freezeClock } from '../support/test-clock.js';
import { bearer, problemPaths, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

interface Session {
  sessionID: string;
  status: string;
  clientSessionID?: string;
  clientSessionDescription?: string;
  sessionFilesystemURL?: string;
  accessToken?: string;
  configurationName: string;
  ownerPrincipal: string;
  startTime: string;
  deathClock: string;
  finishedTime?: string;
  nextExpectedHeartbeat: string;
  lastHeartbeatTime?: string;
  cost: number;
  events: { type: string; when: string; details: Record<string, string> }[];
}

type Headers = Record<string, string>;

const BASE = '/api/v2/linksessions';
const CONFIGURATIONS = `${BASE}/configurations`;
const SESSIONS = `${BASE}/sessions`;
const PASSWORD = 'a-session-user-password';
const UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-000000000000';

/** A configuration that runs `sh -c script`. */
function shell(name: string, script: string, extra: Record<string, unknown> = {}) {
  return { name, command: 'sh', args: ['-c', script], readiness: { type: 'port' }, ...extra };
}

/** A GET straight to a session's server (not through the hub), with or without its secret. */
function direct(port: number, path: string, secret?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port, path, headers: secret ? { 'x-hub-service-secret': secret } : {} }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
    request.end();
  });
}

describe('link sessions', () => {
  let hub: TestHub;
  let admin: Headers;
  let user: Headers;
  let userId: string;
  let other: Headers;
  let bare: Headers;

  const get = (url: string, headers: Headers = user) => hub.inject({ method: 'GET', url, headers });
  const post = (url: string, payload: unknown, headers: Headers = user) => hub.inject({ method: 'POST', url, headers, payload: payload as object });
  const put = (url: string, payload: unknown, headers: Headers = admin) => hub.inject({ method: 'PUT', url, headers, payload: payload as object });
  const del = (url: string, headers: Headers = user) => hub.inject({ method: 'DELETE', url, headers });
  const expectProblem = (response: InjectResponse, status: number, detail?: string) => {
    expect([response.statusCode, response.headers['content-type']]).toEqual([status, expect.stringContaining('application/problem+json')]);
    if (detail) expect(response.json<{ detail: string }>().detail).toContain(detail);
  };
  const start = async (payload: Record<string, unknown> = {}, headers: Headers = user): Promise<Session> => {
    const response = await post(SESSIONS, payload, headers);
    expect(response.statusCode === 201 ? 201 : response.body).toBe(201);
    return response.json();
  };
  const until = (id: string, statuses: string[], timeoutMs = 15_000, headers: Headers = user) =>
    poll(
      async () => (await get(`${SESSIONS}/${id}`, headers)).json<Session>(),
      (session) => statuses.includes(session.status),
      `session ${id} to be ${statuses.join(' or ')}`,
      timeoutMs,
    );
  const configure = async (body: Record<string, unknown>) => {
    const response = await post(CONFIGURATIONS, body, admin);
    expect([response.statusCode, response.body]).toEqual([201, expect.any(String)]);
  };
  /** The endpoint of a session as the hub keeps it (the test reaches the server directly with it). */
  const endpointOf = async (id: string) =>
    (await hub.app.get(DataSource).query('SELECT port, secret FROM link_sessions WHERE id = $1', [id]))[0] as { port: number; secret: string };
  const jobStatusOf = async (id: string): Promise<string> => {
    const rows: { status: string }[] = await hub.app
      .get(DataSource)
      .query('SELECT status FROM cluster_jobs WHERE id = (SELECT job_id FROM link_sessions WHERE id = $1)', [id]);
    return rows[0].status;
  };
  const roleId = async (name: string) => (await get(`/api/v2/rbac/roles?filter[name][EQ]=${name}`, admin)).json<{ data: { id: string }[] }>().data[0].id;
  const newUser = async (userName: string, roles: string[]) => {
    const created = await post('/api/v2/auth/users', { userName, password: PASSWORD }, admin);
    const id = created.json<{ _id: string }>()._id;
    for (const role of roles) await post('/api/v2/rbac/rolebindings', { role: await roleId(role), principal: id, namespace: '*' }, admin);
    return { id, headers: bearer(await hub.login(userName, PASSWORD)) };
  };

  beforeAll(async () => {
    hub = await startTestHub({ env: { HUB_MAX_RUNNING_JOBS_PER_USER: '0' } });
    admin = bearer(hub.adminToken);
    const sessionUser = await newUser('session-user', ['SessionUser']);
    user = sessionUser.headers;
    userId = sessionUser.id;
    other = (await newUser('session-other', ['SessionUser'])).headers;
    bare = (await newUser('session-bare', [])).headers;
  });
  afterAll(() => hub?.close());

  describe('configurations', () => {
    it('has the built-in files on a fresh hub, usable by a SessionUser and read-only', async () => {
      expect((await get(CONFIGURATIONS)).json()).toEqual([{ name: 'files', description: expect.stringContaining('working directory') }]);
      const files = await get(`${CONFIGURATIONS}/files`, admin);
      expect(files.json()).toMatchObject({
        name: 'files',
        readiness: { type: 'port' },
        namespace: 'default',
        maxLifetimeSeconds: 86400,
        startTimeoutSeconds: 60,
        builtIn: true,
      });
      expectProblem(await put(`${CONFIGURATIONS}/files`, shell('files', 'true')), 409, 'built in');
      expectProblem(await del(`${CONFIGURATIONS}/files`, admin), 409, 'built in');
      expectProblem(await post(CONFIGURATIONS, shell('files', 'true'), admin), 409, "'files' already");
    });

    it('lists to a caller only those it may Use', async () => {
      expect((await get(CONFIGURATIONS, bare)).json()).toEqual([]);
    });

    it('creates, reads, replaces, patches and deletes, with the defaults shown', async () => {
      const created = await post(CONFIGURATIONS, { name: 'crud', command: 'true', readiness: { type: 'stdout', pattern: 'ready' } }, admin);
      expect([created.statusCode, created.json()]).toEqual([
        201,
        {
          name: 'crud',
          command: 'true',
          args: [],
          envVars: [],
          readiness: { type: 'stdout', pattern: 'ready' },
          namespace: 'default',
          maxLifetimeSeconds: 86400,
          startTimeoutSeconds: 60,
          builtIn: false,
        },
      ]);
      const replaced = await put(`${CONFIGURATIONS}/crud`, { ...created.json<object>(), description: 'changed', startTimeoutSeconds: 5 });
      expect(replaced.json()).toMatchObject({ description: 'changed', startTimeoutSeconds: 5 });
      const patched = await hub.inject({
        method: 'PATCH',
        url: `${CONFIGURATIONS}/crud`,
        headers: { ...admin, 'content-type': 'application/json-patch+json' },
        payload: JSON.stringify([{ op: 'replace', path: '/args', value: ['x'] }]),
      });
      expect([patched.statusCode, patched.json()]).toEqual([200, expect.objectContaining({ args: ['x'], description: 'changed' })]);
      expect((await get(CONFIGURATIONS)).json()).toContainEqual({ name: 'crud', description: 'changed' });
      expect((await del(`${CONFIGURATIONS}/crud`, admin)).statusCode).toBe(200);
      expectProblem(await get(`${CONFIGURATIONS}/crud`, admin), 404);
    });

    it.each([
      [{ readiness: { type: 'http' } }, '/readiness/type'],
      [{ readiness: { type: 'stdout' } }, '/readiness/pattern'],
      [{ readiness: { type: 'stdout', pattern: '(unclosed' } }, '/readiness/pattern'],
      [{ command: '' }, '/command'],
      [{ args: 'not-an-array' }, '/args'],
      [{ startTimeoutSeconds: -1 }, '/startTimeoutSeconds'],
      [{ maxLifetimeSeconds: 'long' }, '/maxLifetimeSeconds'],
      [{ executionProfileId: UNKNOWN_ID }, '/executionProfileId'],
      [{ namespace: 'no-such-namespace' }, '/namespace'],
      [{ name: 'Has Spaces' }, '/name'],
    ])('refuses %j with a 400 naming %s, and creates nothing', async (change, path) => {
      const response = await post(CONFIGURATIONS, { ...shell('bad-one', 'true'), ...change }, admin);
      expectProblem(response, 400);
      expect(problemPaths(response)).toContain(path);
      expectProblem(await get(`${CONFIGURATIONS}/bad-one`, admin), 404);
    });

    it('refuses a lifetime above the profile’s maxRunSeconds', async () => {
      const profile = await post('/api/v2/execution-profiles/execprofiles', { name: 'short-runs', properties: { maxRunSeconds: 100 } }, admin);
      const response = await post(
        CONFIGURATIONS,
        { ...shell('too-long', 'true'), executionProfileId: profile.json<{ _id: string }>()._id, maxLifetimeSeconds: 101 },
        admin,
      );
      expectProblem(response, 400, 'maxRunSeconds');
    });

    it('is managed by administrators only', async () => {
      expectProblem(await post(CONFIGURATIONS, shell('mine', 'true'), user), 403);
      expectProblem(await get(`${CONFIGURATIONS}/files`, user), 403);
    });
  });

  describe('the files session', () => {
    let session: Session;

    beforeAll(async () => {
      session = await start({ clientSessionID: 'client-1', clientDescription: 'my files' });
    });

    it('is Pending at once, with its deadlines, echoing the client’s fields', () => {
      expect(session).toMatchObject({
        status: 'Pending',
        configurationName: 'files',
        ownerPrincipal: userId,
        clientSessionID: 'client-1',
        clientSessionDescription: 'my files',
      });
      expect(session.accessToken).toBeUndefined();
      expect(Date.parse(session.deathClock) - Date.parse(session.startTime)).toBe(86400_000);
      expect(Date.parse(session.nextExpectedHeartbeat) - Date.parse(session.startTime)).toBe(60_000);
      expect(session.events).toEqual([{ type: 'Pending', when: session.startTime, details: expect.any(Object) }]);
    });

    it('becomes Ready, with its URL and token for its owner only', async () => {
      const ready = await until(session.sessionID, ['Ready', 'Failed']);
      expect(ready.status).toBe('Ready');
      expect(ready.events.map((event) => event.type)).toEqual(['Pending', 'Ready']);
      expect(ready.sessionFilesystemURL).toBe(`http://localhost:80${SESSIONS}/${session.sessionID}/proxy/`);
      expect(ready.accessToken).toMatch(/^[\w-]{43}$/);
      // The administrator may read it, without what reaches it; anyone else may not.
      const asAdmin = (await get(`${SESSIONS}/${session.sessionID}`, admin)).json<Session>();
      expect(asAdmin).toMatchObject({ status: 'Ready' });
      expect([asAdmin.accessToken, asAdmin.sessionFilesystemURL]).toEqual([undefined, undefined]);
      expectProblem(await get(`${SESSIONS}/${session.sessionID}`, other), 404);
      // Its job is a service job of its owner's, task `session`, naming it.
      const jobs = await hub.app
        .get(DataSource)
        .query(
          `SELECT type, owner_id AS "ownerId", task->>'name' AS task, properties->>'sessionId' AS "sessionId" FROM cluster_jobs WHERE id = (SELECT job_id FROM link_sessions WHERE id = $1)`,
          [session.sessionID],
        );
      expect(jobs).toEqual([{ type: 'service', ownerId: userId, task: 'session', sessionId: session.sessionID }]);
    });

    it('serves its working directory to requests with the secret only', async () => {
      const { port, secret } = await endpointOf(session.sessionID);
      expect(await direct(port, '/')).toEqual({ status: 403, body: 'Forbidden\n' });
      expect(await direct(port, '/', 'wrong')).toMatchObject({ status: 403 });
      const listing = await direct(port, '/', secret);
      expect(listing.status).toBe(200);
      expect((await direct(port, '/../../../../etc/passwd', secret)).status).toBe(404);
    });

    it('takes heartbeats from its owner only', async () => {
      const beat = await hub.inject({ method: 'PUT', url: `${SESSIONS}/${session.sessionID}/heartbeat`, headers: user });
      expect(beat.statusCode).toBe(200);
      const next = beat.json<{ nextExpectedHeartbeat: string }>().nextExpectedHeartbeat;
      const after = (await get(`${SESSIONS}/${session.sessionID}`)).json<Session>();
      expect(after.nextExpectedHeartbeat).toBe(next);
      expect(Date.parse(next) - Date.parse(after.lastHeartbeatTime as string)).toBe(60_000);
      expectProblem(await hub.inject({ method: 'PUT', url: `${SESSIONS}/${session.sessionID}/heartbeat`, headers: other }), 404);
      expectProblem(await hub.inject({ method: 'PUT', url: `${SESSIONS}/${session.sessionID}/heartbeat`, headers: admin }), 404);
    });

    it('takes heartbeats sent at once in shared writes, each answered with a time no earlier than it was sent, the last one what is kept', async () => {
      const sent = Date.now();
      const beats = await Promise.all(
        Array.from({ length: 30 }, (_, index) =>
          hub.inject({ method: 'PUT', url: `${SESSIONS}/${session.sessionID}/heartbeat`, headers: index % 10 === 9 ? other : user }),
        ),
      );
      // Another user's beats among them are still 404, and change nothing of the owner's.
      expect(beats.map((beat) => beat.statusCode)).toEqual(Array.from({ length: 30 }, (_, index) => (index % 10 === 9 ? 404 : 200)));
      const answered = beats
        .filter((beat) => beat.statusCode === 200)
        .map((beat) => Date.parse(beat.json<{ nextExpectedHeartbeat: string }>().nextExpectedHeartbeat));
      for (const next of answered) expect(next).toBeGreaterThanOrEqual(sent + 60_000);
      const after = (await get(`${SESSIONS}/${session.sessionID}`)).json<Session>();
      expect(Date.parse(after.nextExpectedHeartbeat)).toBe(Math.max(...answered));
      // Fewer writes than beats: those that came while one was under way shared the next.
      expect(new Set(answered).size).toBeLessThan(answered.length);
    });

    it('is listed among its owner’s sessions, newest first', async () => {
      const mine = (await get(`${BASE}/me/sessions`)).json<{ totalCount: number; data: Session[] }>();
      expect(mine.data.map((each) => each.sessionID)).toContain(session.sessionID);
      expect(mine.totalCount).toBe(mine.data.length);
      expect((await get(`${BASE}/me/sessions`, other)).json()).toEqual({ totalCount: 0, data: [] });
    });

    it('is terminated by its owner when Ready, its job dead, and stays queryable', async () => {
      expectProblem(await del(`${SESSIONS}/${session.sessionID}`, other), 404);
      const terminated = await del(`${SESSIONS}/${session.sessionID}`);
      expect([terminated.statusCode, terminated.json()]).toEqual([200, { message: `Link session ${session.sessionID} terminated` }]);
      const ended = (await get(`${SESSIONS}/${session.sessionID}`)).json<Session>();
      expect(ended).toMatchObject({ status: 'Terminated', finishedTime: expect.any(String) });
      expect(ended.accessToken).toBeUndefined();
      expect(ended.events.at(-1)).toMatchObject({ type: 'Terminated', details: { reason: 'terminated' } });
      expect(await jobStatusOf(session.sessionID)).toBe('dead');
      // Again: nothing changes.
      expect((await del(`${SESSIONS}/${session.sessionID}`)).json<{ message: string }>().message).toContain('ended already');
      expectProblem(await hub.inject({ method: 'PUT', url: `${SESSIONS}/${session.sessionID}/heartbeat`, headers: user }), 409);
      // Its cost stopped growing when it ended.
      const cost = ended.cost;
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect((await get(`${SESSIONS}/${session.sessionID}`)).json<Session>().cost).toBe(cost);
    });
  });

  describe('starting', () => {
    it('refuses an unknown configuration (400 naming it), one the caller may not Use (403), and a caller without Create (403), creating nothing', async () => {
      await configure(shell('admins-only', 'sleep 30'));
      const before = (await get(`${BASE}/me/sessions`)).json<{ totalCount: number }>().totalCount;
      const denial = await post(
        '/api/v2/rbac/roles',
        {
          name: 'no-admins-only',
          permissions: [{ object: '/LinkSessionConfigurations/admins-only', objectMatcher: 'simple', actions: ['Use'], effect: 'Deny' }],
        },
        admin,
      );
      expect((await post('/api/v2/rbac/rolebindings', { role: denial.json<{ id: string }>().id, principal: userId, namespace: '*' }, admin)).statusCode).toBe(
        201,
      );
      expectProblem(await post(SESSIONS, { configuration: 'no-such-thing' }), 400, "'no-such-thing'");
      expectProblem(await post(SESSIONS, { configuration: 'admins-only' }), 403, 'Use on /LinkSessionConfigurations/admins-only');
      expectProblem(await post(SESSIONS, {}, bare), 403);
      expectProblem(await post(SESSIONS, { configuration: 'no-such-thing' }, admin), 400, "'no-such-thing'");
      expect((await get(`${BASE}/me/sessions`)).json<{ totalCount: number }>().totalCount).toBe(before);
    });

    it('is refused past the owner’s quota (429), creating nothing', async () => {
      const quotaHub = await startTestHub({ env: { HUB_MAX_ACTIVE_JOBS_PER_USER: '1' } });
      try {
        const auth = bearer(quotaHub.adminToken);
        await quotaHub.inject({ method: 'POST', url: CONFIGURATIONS, headers: auth, payload: shell('sleeper', 'sleep 30') });
        const first = await quotaHub.inject({ method: 'POST', url: SESSIONS, headers: auth, payload: { configuration: 'sleeper' } });
        expect(first.statusCode).toBe(201);
        const second = await quotaHub.inject({ method: 'POST', url: SESSIONS, headers: auth, payload: { configuration: 'sleeper' } });
        expect(second.statusCode).toBe(429);
        expect((await quotaHub.inject({ method: 'GET', url: `${BASE}/me/sessions`, headers: auth })).json<{ totalCount: number }>().totalCount).toBe(1);
        await quotaHub.inject({ method: 'DELETE', url: `${SESSIONS}/${first.json<Session>().sessionID}`, headers: auth });
      } finally {
        await quotaHub.close();
      }
    });

    it('is Ready when a stdout line matches the pattern', async () => {
      await configure(
        shell('stdout-ready', 'echo starting; sleep 0.2; echo "server is up at $HUB_SESSION_PORT"; sleep 30', {
          readiness: { type: 'stdout', pattern: 'is up at [0-9]+$' },
        }),
      );
      const session = await start({ configuration: 'stdout-ready' });
      const ready = await until(session.sessionID, ['Ready', 'Failed']);
      expect(ready.status).toBe('Ready');
      expect(Date.parse(ready.events[1].when)).toBeGreaterThan(Date.parse(session.startTime));
      await del(`${SESSIONS}/${session.sessionID}`);
    });

    it('fails (exited, with the exit code) when the process exits before it is ready', async () => {
      await configure(shell('exits', 'echo bye; exit 3'));
      const session = await start({ configuration: 'exits' });
      const failed = await until(session.sessionID, ['Failed', 'Ready']);
      expect(failed.status).toBe('Failed');
      expect(failed.events.at(-1)).toMatchObject({ type: 'Failed', details: { reason: 'exited', exitCode: '3' } });
      expect(failed.finishedTime).toBeDefined();
    });

    it('fails (exited) when a Ready session’s process ends', async () => {
      await configure(shell('ready-then-exits', 'echo up; sleep 0.5; exit 0', { readiness: { type: 'stdout', pattern: '^up$' } }));
      const session = await start({ configuration: 'ready-then-exits' });
      await until(session.sessionID, ['Ready']);
      const failed = await until(session.sessionID, ['Failed']);
      expect(failed.events.map((event) => event.type)).toEqual(['Pending', 'Ready', 'Failed']);
      expect(failed.events.at(-1)?.details).toMatchObject({ reason: 'exited', exitCode: '0' });
    });

    it('fails (startTimeout) when it is not ready in time, its job stopped', async () => {
      await configure(shell('never-ready', 'sleep 30', { startTimeoutSeconds: 1 }));
      const session = await start({ configuration: 'never-ready' });
      const failed = await until(session.sessionID, ['Failed', 'Ready'], 10_000);
      expect(failed.status).toBe('Failed');
      expect(failed.events.at(-1)).toMatchObject({ type: 'Failed', details: { reason: 'startTimeout' } });
      // The session ends at once; its job is stopped right after.
      await poll(
        () => jobStatusOf(session.sessionID),
        (status) => status === 'dead',
        'the job of a session that timed out to be dead',
      );
    });

    it('does not count a listener of another uid on its port', async () => {
      // The session's process never listens; the test (root, not the session's uid) listens on the session's port instead.
      await configure(shell('never-listens', 'sleep 30', { startTimeoutSeconds: 30 }));
      const session = await start({ configuration: 'never-listens' });
      const { port } = await endpointOf(session.sessionID);
      const squatter = createServer((socket) => socket.end());
      await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
      try {
        await new Promise((resolve) => setTimeout(resolve, 500));
        const pending = (await get(`${SESSIONS}/${session.sessionID}`)).json<Session>();
        // Without root the hub's jobs run as its own uid, the test's too: the squatter would count.
        if (process.getuid?.() === 0) expect(pending.status).toBe('Pending');
      } finally {
        squatter.close();
      }
      const terminated = await del(`${SESSIONS}/${session.sessionID}`);
      expect(terminated.statusCode).toBe(200);
      expect((await get(`${SESSIONS}/${session.sessionID}`)).json<Session>()).toMatchObject({ status: 'Terminated' });
    });

    it('is Blocked while no node takes work, Pending again when one does, and terminated from Blocked', async () => {
      const [node] = (await get('/api/v2/cluster/nodes', admin)).json<{ data: { id: string }[] }>().data;
      await post(`/api/v2/cluster/nodes/${node.id}/drain`, { enable: true }, admin);
      let session: Session;
      try {
        session = await start({ configuration: 'never-listens' });
        const blocked = await until(session.sessionID, ['Blocked']);
        expect(blocked.events.at(-1)).toMatchObject({ type: 'Blocked', details: { message: expect.stringContaining('No node') } });
      } finally {
        await post(`/api/v2/cluster/nodes/${node.id}/drain`, { enable: false }, admin);
      }
      const pending = await until(session.sessionID, ['Pending']);
      expect(pending.events.map((event) => event.type)).toEqual(['Pending', 'Blocked', 'Pending']);
      await del(`${SESSIONS}/${session.sessionID}`);
      await post(`/api/v2/cluster/nodes/${node.id}/drain`, { enable: true }, admin);
      try {
        const again = await start({ configuration: 'never-listens' });
        await until(again.sessionID, ['Blocked']);
        expect((await del(`${SESSIONS}/${again.sessionID}`)).statusCode).toBe(200);
        expect((await get(`${SESSIONS}/${again.sessionID}`)).json<Session>()).toMatchObject({ status: 'Terminated' });
      } finally {
        await post(`/api/v2/cluster/nodes/${node.id}/drain`, { enable: false }, admin);
      }
    });

    it('ends Terminated (terminated) when its job is stopped through the cluster API', async () => {
      const session = await start({ configuration: 'never-listens' });
      const [{ jobId }] = await hub.app.get(DataSource).query('SELECT job_id AS "jobId" FROM link_sessions WHERE id = $1', [session.sessionID]);
      expect((await post(`/api/v2/cluster/jobs/${jobId}/stop`, {}, admin)).statusCode).toBe(200);
      const ended = await until(session.sessionID, ['Terminated', 'Failed']);
      expect(ended.events.at(-1)).toMatchObject({ type: 'Terminated', details: { reason: 'terminated' } });
    });
  });

  describe('logs', () => {
    it('answers windows of stdout and stderr as {message}, or raw bytes', async () => {
      await configure(
        shell('chatty', 'echo "first line"; echo "to stderr" >&2; echo "second line"; sleep 30', { readiness: { type: 'stdout', pattern: '^second' } }),
      );
      const session = await start({ configuration: 'chatty' });
      await until(session.sessionID, ['Ready']);
      const logs = `${SESSIONS}/${session.sessionID}/logs`;
      expect((await get(`${logs}/stdout`)).json()).toEqual({ message: 'first line\nsecond line\n' });
      expect((await get(`${logs}/stderr`)).json()).toEqual({ message: 'to stderr\n' });
      expect((await get(`${logs}/stdout?origin=end&limit=12`)).json()).toEqual({ message: 'second line\n' });
      expect((await get(`${logs}/stdout?offset=6&limit=4`)).json()).toEqual({ message: 'line' });
      const raw = await hub.inject({ method: 'GET', url: `${logs}/stdout?limit=5`, headers: { ...user, accept: 'application/octet-stream' } });
      expect([raw.headers['content-type'], raw.body]).toEqual(['application/octet-stream', 'first']);
      expectProblem(await get(`${logs}/stdout?limit=0`), 400);
      expectProblem(await get(`${logs}/stdout?origin=middle`), 400);
      expectProblem(await get(`${logs}/journal`), 404);
      expectProblem(await get(`${logs}/stdout`, other), 404);
      expectProblem(await get(`${logs}/stdout`, admin), 404);
      await del(`${SESSIONS}/${session.sessionID}`);
    });
  });

  describe('administration', () => {
    interface Page {
      totalCount: number;
      data: Session[];
    }
    const query = async (parameters: string) => {
      const response = await get(`${SESSIONS}${parameters}`, admin);
      expect([response.statusCode, response.body]).toEqual([200, expect.any(String)]);
      return response.json<Page>();
    };

    it('is for the sessions administrator only', async () => {
      expectProblem(await get(SESSIONS, user), 403);
      expectProblem(await del(`${SESSIONS}?filter[status][EQ]=Failed`, user), 403);
    });

    it('queries every session by each filter and sort of §4.10', async () => {
      const all = await query('?page[limit]=1000');
      expect(all.totalCount).toBeGreaterThanOrEqual(10);
      const starts = all.data.map((session) => session.startTime);
      expect(starts).toEqual([...starts].sort().reverse());
      const mine = await query(`?filter[ownerPrincipal][EQ]=${userId}`);
      expect(mine.data.every((session) => session.ownerPrincipal === userId)).toBe(true);
      expect(mine.totalCount).toBe(all.data.filter((session) => session.ownerPrincipal === userId).length);
      const failed = await query('?filter[status][EQ]=Failed');
      expect(failed.totalCount).toBeGreaterThan(0);
      expect(failed.data.every((session) => session.status === 'Failed')).toBe(true);
      const ended = await query('?filter[status][IN]=Failed,Terminated');
      expect(ended.totalCount).toBe(all.data.filter((session) => ['Failed', 'Terminated'].includes(session.status)).length);
      const exits = await query('?filter[configurationName][EQ]=exits');
      expect(exits.data.map((session) => session.configurationName)).toEqual(['exits']);
      const middle = all.data[Math.floor(all.data.length / 2)];
      const later = await query(`?filter[startTime][GT]=${middle.startTime}&page[limit]=1000`);
      expect(later.data.every((session) => session.startTime > middle.startTime)).toBe(true);
      const earlier = await query(`?filter[deathClock][LT]=${middle.deathClock}&page[limit]=1000`);
      expect(earlier.data.every((session) => session.deathClock < middle.deathClock)).toBe(true);
      const byName = (await query('?sort=configurationName&page[limit]=1000')).data.map((session) => session.configurationName);
      expect(byName).toEqual([...byName].sort());
      const byDeath = (await query('?sort=-deathClock&page[limit]=1000')).data.map((session) => session.deathClock);
      expect(byDeath).toEqual([...byDeath].sort().reverse());
      expect((await query('?page[limit]=2&page[offset]=1')).data.map((session) => session.sessionID)).toEqual(
        all.data.slice(1, 3).map((session) => session.sessionID),
      );
      // What reaches a session stays its owner's, in the administrator's list too.
      expect(mine.data.every((session) => session.accessToken === undefined)).toBe(true);
      for (const bad of [
        '?filter[status][EQ]=Sleeping',
        '?filter[name][EQ]=x',
        '?sort=owner',
        '?filter[startTime][GT]=yesterday',
        '?filter[ownerPrincipal][CO]=x',
      ])
        expectProblem(await get(`${SESSIONS}${bad}`, admin), 400);
    });

    it('deletes by filter, terminating what is live, and needs a filter', async () => {
      expectProblem(await del(SESSIONS, admin), 400);
      expectProblem(await del(`${SESSIONS}?filter[status][EQ]=Failed&page[limit]=5`, admin), 400);
      expectProblem(await del(`${SESSIONS}?filter[status][EQ]=Asleep`, admin), 400);
      expect((await del(`${SESSIONS}?filter[configurationName][EQ]=nothing-uses-this`, admin)).json()).toEqual({ countDeleted: 0, countFailed: 0 });
      await configure(shell('deletable', 'sleep 60', { startTimeoutSeconds: 3600 }));
      const live = [await start({ configuration: 'deletable' }), await start({ configuration: 'deletable' })];
      const deleted = await del(`${SESSIONS}?filter[configurationName][EQ]=deletable&filter[status][IN]=Pending,Ready,Blocked`, admin);
      expect([deleted.statusCode, deleted.json()]).toEqual([200, { countDeleted: 2, countFailed: 0 }]);
      for (const session of live) expectProblem(await get(`${SESSIONS}/${session.sessionID}`), 404);
      const jobs = await hub.app
        .get(DataSource)
        .query<{ status: string }[]>(`SELECT status FROM cluster_jobs WHERE properties->>'configuration' = 'deletable'`);
      expect(jobs.map((job) => job.status)).toEqual(['dead', 'dead']);
    });
  });

  describe('the reaper, on the fake clock', () => {
    afterAll(() => {
      jest.restoreAllMocks();
    });

    it('terminates a session with no heartbeat past the grace, keeps one that beats, and ends one at its death clock', async () => {
      const clock = freezeClock(hub);
      await configure(shell('short-lived', 'sleep 60', { maxLifetimeSeconds: 600, startTimeoutSeconds: 3600 }));
      await configure(shell('patient', 'sleep 60', { startTimeoutSeconds: 3600 }));
      const beating = await start({ configuration: 'patient' });
      const silent = await start({ configuration: 'patient' });
      const engine = hub.app.get(SessionEngine);
      // 60 s interval + 120 s grace: at 170 s nothing is due.
      clock.advance(170_000);
      expect((await hub.inject({ method: 'PUT', url: `${SESSIONS}/${beating.sessionID}/heartbeat`, headers: user })).statusCode).toBe(200);
      await engine.reap();
      expect((await get(`${SESSIONS}/${silent.sessionID}`)).json<Session>().status).toBe('Pending');
      clock.advance(20_000);
      await engine.reap();
      const reaped = (await get(`${SESSIONS}/${silent.sessionID}`)).json<Session>();
      expect(reaped).toMatchObject({ status: 'Terminated', finishedTime: clock.at(190_000).toISOString() });
      expect(reaped.events.at(-1)).toMatchObject({ type: 'Terminated', details: { reason: 'heartbeat' } });
      expect((await get(`${SESSIONS}/${beating.sessionID}`)).json<Session>().status).toBe('Pending');
      await del(`${SESSIONS}/${beating.sessionID}`);

      const mortal = await start({ configuration: 'short-lived' });
      expect(mortal.deathClock).toBe(new Date(Date.parse(mortal.startTime) + 600_000).toISOString());
      for (let elapsed = 0; elapsed < 600_000; elapsed += 60_000) {
        clock.advance(60_000);
        await hub.inject({ method: 'PUT', url: `${SESSIONS}/${mortal.sessionID}/heartbeat`, headers: user });
      }
      await engine.reap();
      const dead = (await get(`${SESSIONS}/${mortal.sessionID}`)).json<Session>();
      expect(dead.events.at(-1)).toMatchObject({ type: 'Terminated', details: { reason: 'deathClock' } });

      // Retained for HUB_SESSION_RETENTION_HOURS, then gone.
      clock.advance(23 * 3600_000);
      await engine.reap();
      expect((await get(`${SESSIONS}/${mortal.sessionID}`)).statusCode).toBe(200);
      clock.advance(3600_000 + 1000);
      await engine.reap();
      expectProblem(await get(`${SESSIONS}/${mortal.sessionID}`), 404);
    });

    it('ends a due session once when two hubs on one database reap at the same moment', async () => {
      jest.restoreAllMocks();
      const second = await startTestHub({ databaseUrl: hub.databaseUrl, env: { HUB_MAX_RUNNING_JOBS_PER_USER: '0' } });
      try {
        const now = new Date();
        const clocks = [freezeClock(hub, now), freezeClock(second, now)];
        await configure(shell('two-hubs', 'sleep 60', { startTimeoutSeconds: 3600 }));
        const session = await start({ configuration: 'two-hubs' });
        for (const clock of clocks) clock.advance(200_000);
        const ended = await Promise.all([hub.app.get(SessionEngine).reap(), second.app.get(SessionEngine).reap()]);
        expect(ended[0] + ended[1]).toBeGreaterThanOrEqual(1);
        const reaped = (await get(`${SESSIONS}/${session.sessionID}`)).json<Session>();
        expect(reaped.events.filter((event) => event.type === 'Terminated')).toEqual([
          expect.objectContaining({ details: expect.objectContaining({ reason: 'heartbeat' }) }),
        ]);
        await poll(
          () => jobStatusOf(session.sessionID),
          (status) => status === 'dead',
          'the reaped session’s job to be dead',
        );
      } finally {
        jest.restoreAllMocks();
        await second.close();
      }
    });
  });

  describe('a hub restart', () => {
    it('keeps a Ready session Ready and reachable', async () => {
      const session = await start();
      const ready = await until(session.sessionID, ['Ready']);
      await hub.restart();
      user = bearer(await hub.login('session-user', PASSWORD));
      const after = (await get(`${SESSIONS}/${session.sessionID}`)).json<Session>();
      expect(after).toMatchObject({ status: 'Ready', accessToken: ready.accessToken });
      // Reachable through the restarted hub's proxy, with the token it had before.
      const listing = await get(`${SESSIONS}/${session.sessionID}/proxy/`, { 'x-session-token': after.accessToken as string });
      expect(listing.statusCode).toBe(200);
      await del(`${SESSIONS}/${session.sessionID}`);
    });
  });

  it('answers 404 for a session that does not exist', async () => {
    expectProblem(await get(`${SESSIONS}/${UNKNOWN_ID}`), 404);
    expectProblem(await get(`${SESSIONS}/not-a-uuid`), 404);
  });
});

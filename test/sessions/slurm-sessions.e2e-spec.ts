import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { poll } from '../support/poll.js';
import { bearer, enterableTempDir, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

/**
 * Link sessions on a real Slurm cluster (scripts/slurm-up.sh; `.ci/run` sets HUB_TEST_SLURM=1,
 * skipped without): the job's own launch picks a port on its node and writes `host:port` into its
 * execution directory, the hub reads it, and the proxy reaches the session there (api-map §9).
 */
const withSlurm = process.env.HUB_TEST_SLURM === '1' ? describe : describe.skip;
/** The unix account the administrator's sessions run under (an ordinary one, made for the spec when missing). */
const ACCOUNT = 'hub-slurm-ada';
const SESSIONS = '/api/v2/linksessions/sessions';
const CONFIGURATIONS = '/api/v2/linksessions/configurations';
const WAIT_MS = 30_000;

interface Session {
  sessionID: string;
  status: string;
  accessToken?: string;
  events: { type: string; details: Record<string, string> }[];
}

type Headers = Record<string, string>;

/** A GET straight to a session's server, not through the hub. */
function direct(host: string, port: number, path: string, headers: Headers = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host, port, path, headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
    request.end();
  });
}

withSlurm('link sessions on a real Slurm cluster', () => {
  let hub: TestHub;
  let admin: Headers;
  let sharedDir: string;

  const get = (url: string, headers: Headers = admin) => hub.inject({ method: 'GET', url, headers });
  const post = (url: string, payload: object) => hub.inject({ method: 'POST', url, headers: admin, payload });
  const expectProblem = (response: InjectResponse, status: number) =>
    expect([response.statusCode, response.headers['content-type']]).toEqual([status, expect.stringContaining('application/problem+json')]);
  const start = async (payload: object = {}): Promise<Session> => {
    const response = await post(SESSIONS, payload);
    expect(response.statusCode === 201 ? 201 : response.body).toBe(201);
    return response.json();
  };
  const until = (id: string, statuses: string[]) =>
    poll(
      async () => (await get(`${SESSIONS}/${id}`)).json<Session>(),
      (session) => statuses.includes(session.status),
      `session ${id} to be ${statuses.join(' or ')}`,
      WAIT_MS,
    );
  const rowOf = async (id: string) =>
    (
      await hub.app.get(DataSource).query<{ host: string | null; port: number | null; secret: string; dir: string; status: string }[]>(
        `SELECT s.host, s.port, s.secret, e.execution_dir AS dir, j.status FROM link_sessions s
         JOIN cluster_jobs j ON j.id = s.job_id JOIN job_executions e ON e.job_id = s.job_id WHERE s.id = $1`,
        [id],
      )
    )[0];

  beforeAll(async () => {
    try {
      execFileSync('id', ['-u', ACCOUNT], { stdio: 'ignore' });
    } catch {
      execFileSync('useradd', ['--no-create-home', '--shell', '/bin/sh', ACCOUNT]);
    }
    sharedDir = enterableTempDir('hub-slurm-sessions-');
    hub = await startTestHub({ env: { HUB_CLUSTER_DRIVER: 'slurm', HUB_SHARED_DIR: sharedDir } });
    admin = bearer(hub.adminToken);
    const me = (await get('/api/v2/auth/me')).json<{ _id: string }>();
    const patched = await hub.inject({
      method: 'PATCH',
      url: `/api/v2/auth/users/${me._id}`,
      headers: { ...admin, 'content-type': 'application/json-patch+json' },
      payload: JSON.stringify([{ op: 'add', path: '/unixUserName', value: ACCOUNT }]),
    });
    expect(patched.statusCode).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await hub?.close();
    rmSync(sharedDir, { recursive: true, force: true });
  });

  it('runs the files session on a node: its launch writes host:port, the hub reads it, and the proxy reaches it', async () => {
    const session = await until((await start()).sessionID, ['Ready', 'Failed']);
    expect(session.status).toBe('Ready');
    const row = await rowOf(session.sessionID);
    // What the job's launch wrote in its execution directory is where the hub forwards to.
    expect(readFileSync(join(row.dir, 'endpoint'), 'utf8')).toBe(`${row.host}:${row.port}\n`);
    expect(row.port).toBeGreaterThanOrEqual(1024);
    execFileSync('sh', ['-c', `printf 'on the node\\n' > ${join(row.dir, 'work', 'hello.txt')}`]);
    const token = { 'x-session-token': session.accessToken as string };
    const listing = await get(`${SESSIONS}/${session.sessionID}/proxy/`, token);
    expect([listing.statusCode, listing.body]).toEqual([200, expect.stringContaining('hello.txt')]);
    const file = await get(`${SESSIONS}/${session.sessionID}/proxy/hello.txt`, token);
    expect([file.statusCode, file.body]).toEqual([200, 'on the node\n']);
    // Another job on the node reaches the port, and gets nothing without the secret.
    expect((await direct(row.host as string, row.port as number, '/hello.txt')).status).toBe(403);
    expect(await direct(row.host as string, row.port as number, '/hello.txt', { 'x-hub-service-secret': row.secret })).toEqual({
      status: 200,
      body: 'on the node\n',
    });
    // Its server runs as the job's user, in the job: terminating it ends the Slurm job (scancel).
    expect((await hub.inject({ method: 'DELETE', url: `${SESSIONS}/${session.sessionID}`, headers: admin })).statusCode).toBe(200);
    expect((await get(`${SESSIONS}/${session.sessionID}`)).json<Session>().status).toBe('Terminated');
    expect((await rowOf(session.sessionID)).status).toBe('dead');
    expectProblem(await get(`${SESSIONS}/${session.sessionID}/proxy/`, token), 503);
  }, 60_000);

  it('finds a session started before a restart of the hub Ready at the endpoint its launch wrote, and proxies to it', async () => {
    const started = await start();
    // Restarted at once: the job is still queued or starting, the new hub probes it from the beginning.
    await hub.restart();
    admin = bearer(hub.adminToken);
    const session = await until(started.sessionID, ['Ready', 'Failed']);
    expect(session.status).toBe('Ready');
    const listing = await get(`${SESSIONS}/${session.sessionID}/proxy/`, { 'x-session-token': session.accessToken as string });
    expect(listing.statusCode).toBe(200);
    expect((await hub.inject({ method: 'DELETE', url: `${SESSIONS}/${session.sessionID}`, headers: admin })).statusCode).toBe(200);
  }, 60_000);

  it('takes stdout readiness on a node once the launch has said where the session listens', async () => {
    const created = await post(CONFIGURATIONS, {
      name: 'slurm-stdout',
      command: 'sh',
      args: ['-c', 'echo "up on $HUB_SESSION_HOST:$HUB_SESSION_PORT"; exec sleep 60'],
      readiness: { type: 'stdout', pattern: '^up on [0-9.:]+:[0-9]+$' },
    });
    expect(created.statusCode).toBe(201);
    const session = await until((await start({ configuration: 'slurm-stdout' })).sessionID, ['Ready', 'Failed']);
    expect(session.status).toBe('Ready');
    const row = await rowOf(session.sessionID);
    const log = (await get(`${SESSIONS}/${session.sessionID}/logs/stdout`)).json<{ message: string }>().message;
    expect(log).toBe(`up on ${row.host}:${row.port}\n`);
    await hub.inject({ method: 'DELETE', url: `${SESSIONS}/${session.sessionID}`, headers: admin });
  }, 60_000);

  it('is not held up by a job that makes its stdout a FIFO: the probe opens nothing it would wait on', async () => {
    const created = await post(CONFIGURATIONS, {
      name: 'slurm-fifo',
      command: 'sh',
      // Its logs are the job user's on Slurm: it swaps its stdout file for a FIFO nobody writes to.
      args: ['-c', 'rm -f ../logs/stdout && mkfifo ../logs/stdout && exec sleep 60'],
      readiness: { type: 'stdout', pattern: 'never' },
      startTimeoutSeconds: 5,
    });
    expect(created.statusCode).toBe(201);
    // As many as the cluster runs at once (two nodes of two CPUs), more than the hub's file threads (libuv's four) a blocking open would hold.
    const sessions = await Promise.all([1, 2, 3, 4].map(() => start({ configuration: 'slurm-fifo' })));
    for (const session of sessions) {
      const ended = await until(session.sessionID, ['Ready', 'Failed']);
      expect([ended.status, ended.events.at(-1)?.details.reason]).toEqual(['Failed', 'startTimeout']);
    }
    // The hub's own file work still goes on (a log read, on libuv's threads).
    const log = await get(`${SESSIONS}/${sessions[0].sessionID}/logs/stderr`);
    expect(log.statusCode).toBe(200);
  }, 60_000);

  it('never forwards to an endpoint the job wrote that is not on its own node, nor to a privileged port', async () => {
    // A listener that would accept: on 127.0.0.2, an address of this host but not of the node (which is 127.0.0.1).
    const bait: Server = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => bait.listen(0, '127.0.0.2', resolve));
    const port = (bait.address() as { port: number }).port;
    try {
      for (const [name, endpoint] of [
        ['slurm-elsewhere', `127.0.0.2:${port}`],
        ['slurm-privileged', '127.0.0.1:22'],
      ]) {
        const created = await post(CONFIGURATIONS, {
          name,
          command: 'sh',
          // The launch has written its endpoint before the command runs; the job writes its own over it.
          args: ['-c', `printf '${endpoint}\\n' > ../endpoint.x && mv ../endpoint.x ../endpoint; exec sleep 60`],
          readiness: { type: 'port' },
          startTimeoutSeconds: 4,
        });
        expect(created.statusCode).toBe(201);
        const session = await until((await start({ configuration: name })).sessionID, ['Ready', 'Failed']);
        expect([session.status, session.events.at(-1)?.details.reason]).toEqual(['Failed', 'startTimeout']);
        expect(await rowOf(session.sessionID)).toMatchObject({ host: null, port: null });
      }
    } finally {
      bait.close();
    }
  }, 60_000);
});

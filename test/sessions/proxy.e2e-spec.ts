import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import WebSocket from 'ws';
import { poll } from '../support/poll.js';
import { bearer, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

interface Session {
  sessionID: string;
  status: string;
  accessToken?: string;
  sessionFilesystemURL?: string;
}

type Headers = Record<string, string>;

const BASE = '/api/v2/linksessions';
const SESSIONS = `${BASE}/sessions`;
const PASSWORD = 'a-session-user-password';

/**
 * The test's own session server (Node, CommonJS through -e): answers what it was sent as JSON,
 * echoes the body of POST /echo as it streams, and echoes WebSocket messages (with the `ws` the hub
 * ships), refusing anything without the session's secret as every session server should.
 */
const ECHO_SERVER = `
const http = require('node:http');
const { WebSocketServer } = require(process.env.WS_MODULE);
const secret = process.env.HUB_SESSION_SECRET;
const server = http.createServer((req, res) => {
  if (req.headers['x-hub-service-secret'] !== secret) { res.writeHead(403); return res.end('no secret'); }
  if (req.url.startsWith('/echo')) { res.writeHead(200, { 'content-type': 'application/octet-stream' }); return req.pipe(res); }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers }));
});
const wss = new WebSocketServer({ server, verifyClient: (info) => info.req.headers['x-hub-service-secret'] === secret });
wss.on('connection', (ws) => ws.on('message', (data, binary) => ws.send(data, { binary })));
server.listen(Number(process.env.HUB_SESSION_PORT), '127.0.0.1');
`;

describe('the link session proxy', () => {
  let hub: TestHub;
  let admin: Headers;
  let user: Headers;
  let other: Headers;
  let files: Session;
  let echo: Session;
  let hubPort: number;

  const get = (url: string, headers: Headers = user) => hub.inject({ method: 'GET', url, headers });
  const post = (url: string, payload: unknown, headers: Headers = user) => hub.inject({ method: 'POST', url, headers, payload: payload as object });
  const expectProblem = (response: InjectResponse, status: number) =>
    expect([response.statusCode, response.headers['content-type']]).toEqual([status, expect.stringContaining('application/problem+json')]);
  const ready = (id: string) =>
    poll(
      async () => (await get(`${SESSIONS}/${id}`)).json<Session>(),
      (session) => session.status !== 'Pending',
      `session ${id} to be ready`,
    );
  const proxied = (session: Session, path: string) => `${SESSIONS}/${session.sessionID}/proxy/${path}`;
  const token = (session: Session): Headers => ({ 'x-session-token': session.accessToken as string });
  /** A session of a configuration of its own, `name`, whose program is `script` run by Node; Ready once its port takes a connection. */
  const nodeSession = async (name: string, script: string) => {
    await post(`${BASE}/configurations`, { name, command: process.execPath, args: ['-e', script], readiness: { type: 'port' } }, admin);
    const session = await ready((await post(SESSIONS, { configuration: name })).json<Session>().sessionID);
    expect(session.status).toBe('Ready');
    return session;
  };
  const secretOf = async (id: string) =>
    (await hub.app.get(DataSource).query<{ secret: string }[]>('SELECT secret FROM link_sessions WHERE id = $1', [id]))[0].secret;
  const newUser = async (userName: string) => {
    const id = (await post('/api/v2/auth/users', { userName, password: PASSWORD }, admin)).json<{ _id: string }>()._id;
    const role = (await get('/api/v2/rbac/roles?filter[name][EQ]=SessionUser', admin)).json<{ data: { id: string }[] }>().data[0].id;
    await post('/api/v2/rbac/rolebindings', { role, principal: id, namespace: '*' }, admin);
    return bearer(await hub.login(userName, PASSWORD));
  };

  beforeAll(async () => {
    hub = await startTestHub({ env: { HUB_MAX_RUNNING_JOBS_PER_USER: '0' } });
    admin = bearer(hub.adminToken);
    user = await newUser('proxy-user');
    other = await newUser('proxy-other');
    await post(
      `${BASE}/configurations`,
      {
        name: 'echo',
        command: process.execPath,
        args: ['-e', ECHO_SERVER],
        envVars: [{ name: 'WS_MODULE', value: createRequire(import.meta.url).resolve('ws') }],
        readiness: { type: 'port' },
      },
      admin,
    );
    files = await ready((await post(SESSIONS, {})).json<Session>().sessionID);
    echo = await ready((await post(SESSIONS, { configuration: 'echo' })).json<Session>().sessionID);
    expect([files.status, echo.status]).toEqual(['Ready', 'Ready']);
    await hub.app.listen(0, '127.0.0.1');
    hubPort = (hub.app.getHttpServer().address() as { port: number }).port;
  });
  afterAll(() => hub?.close());

  it('serves the files session’s listing and a file with its token', async () => {
    const [{ dir }] = await hub.app
      .get(DataSource)
      .query<{ dir: string }[]>(`SELECT execution_dir AS dir FROM job_executions WHERE job_id = (SELECT job_id FROM link_sessions WHERE id = $1)`, [
        files.sessionID,
      ]);
    writeFileSync(join(dir, 'work', 'hello.txt'), 'hello through the proxy\n', { mode: 0o644 });
    const listing = await get(proxied(files, ''), token(files));
    expect([listing.statusCode, listing.body]).toEqual([200, expect.stringContaining('hello.txt')]);
    const file = await get(proxied(files, 'hello.txt'), token(files));
    expect([file.statusCode, file.body]).toEqual([200, 'hello through the proxy\n']);
    // The owner's own bearer token does too.
    expect((await get(proxied(files, 'hello.txt'), user)).statusCode).toBe(200);
  });

  it('refuses anyone else with 404, administrators included, and a request without credentials with 401', async () => {
    expectProblem(await get(proxied(files, 'hello.txt'), {}), 401);
    expectProblem(await get(proxied(files, 'hello.txt'), { 'x-session-token': 'not-the-token' }), 404);
    expectProblem(await get(proxied(files, 'hello.txt'), token(echo)), 404);
    expectProblem(await get(proxied(files, 'hello.txt'), other), 404);
    expectProblem(await get(proxied(files, 'hello.txt'), admin), 404);
    expectProblem(await get(`${SESSIONS}/6f1c4b1e-0000-4000-8000-000000000000/proxy/x`, user), 404);
  });

  it('forwards the path, query and method, without the hub’s credentials, with the forwarding headers and the secret', async () => {
    const response = await hub.inject({
      method: 'DELETE',
      url: proxied(echo, 'a/b?x=1&y=2'),
      headers: {
        ...token(echo),
        authorization: 'Bearer not-for-the-session',
        'x-hub-service-secret': 'forged',
        'x-forwarded-prefix': '/elsewhere',
        'x-custom': 'kept',
      },
    });
    expect(response.statusCode).toBe(200);
    const seen = response.json<{ method: string; url: string; headers: Record<string, string> }>();
    expect(seen).toMatchObject({ method: 'DELETE', url: '/a/b?x=1&y=2' });
    expect(seen.headers).toMatchObject({
      'x-custom': 'kept',
      'x-forwarded-prefix': `${SESSIONS}/${echo.sessionID}/proxy`,
      'x-forwarded-proto': 'http',
      'x-forwarded-for': expect.any(String),
      'x-hub-service-secret': await secretOf(echo.sessionID),
    });
    expect(seen.headers['x-session-token']).toBeUndefined();
    expect(seen.headers.authorization).toBeUndefined();
  });

  it('streams a large body both ways', async () => {
    const body = Buffer.alloc(8 * 1024 * 1024, 'abcdefgh');
    const response = await fetch(`http://127.0.0.1:${hubPort}${proxied(echo, 'echo')}`, {
      method: 'POST',
      headers: { ...token(echo), 'content-type': 'application/octet-stream' },
      body,
    });
    const received = Buffer.from(await response.arrayBuffer());
    expect([response.status, received.length < 4000 ? received.toString() : received.length]).toEqual([200, body.length]);
    expect(received.equals(body)).toBe(true);
  });

  it('passes WebSocket upgrades, and refuses another’s with an HTTP 404', async () => {
    const url = `ws://127.0.0.1:${hubPort}${proxied(echo, 'socket')}`;
    const socket = new WebSocket(url, { headers: token(echo) });
    const reply = await new Promise<string>((resolve, reject) => {
      socket.on('open', () => socket.send('ping over the proxy'));
      socket.on('message', (data: Buffer) => resolve(data.toString()));
      socket.on('error', reject);
    });
    expect(reply).toBe('ping over the proxy');
    socket.close();
    const refused = new WebSocket(url, { headers: { 'x-session-token': 'not-the-token' } });
    const status = await new Promise<number>((resolve) => {
      refused.on('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
      refused.on('error', () => resolve(-1));
    });
    expect(status).toBe(404);
  });

  it('answers 502 when the session’s server drops the connection', async () => {
    // Its CPU for the next session (the tests before are done with it).
    await hub.inject({ method: 'DELETE', url: `${SESSIONS}/${files.sessionID}`, headers: user });
    const hangup = await nodeSession(
      'hangup',
      "require('node:net').createServer((socket) => socket.destroy()).listen(Number(process.env.HUB_SESSION_PORT), '127.0.0.1')",
    );
    // Checked by the harness as every refusal of the hub's is: a problem, not the session's reply.
    const response = await get(proxied(hangup, 'x'), token(hangup));
    // Its CPU given back before anything is checked: a failure here does not hold up the tests after it.
    await hub.inject({ method: 'DELETE', url: `${SESSIONS}/${hangup.sessionID}`, headers: user });
    expectProblem(response, 502);
    // Closed or reset, as the timing of the server's destroy has it.
    expect(response.json<{ detail: string }>().detail).toMatch(
      new RegExp(`^The server of link session ${hangup.sessionID} failed the request \\((UND_ERR_SOCKET|ECONNRESET)\\)$`),
    );
  });

  it('answers 502 when the session’s server refuses the connection', async () => {
    // Ready at the readiness probe's connection, then listening no more (the process stays): the proxy's connection is refused.
    const closed = await nodeSession(
      'closed',
      "const server = require('node:net').createServer((socket) => { socket.destroy(); server.close(); }).listen(Number(process.env.HUB_SESSION_PORT), '127.0.0.1'); setInterval(() => {}, 60000)",
    );
    const response = await get(proxied(closed, 'x'), token(closed));
    await hub.inject({ method: 'DELETE', url: `${SESSIONS}/${closed.sessionID}`, headers: user });
    expectProblem(response, 502);
    expect(response.json<{ detail: string }>().detail).toBe(`The server of link session ${closed.sessionID} failed the request (ECONNREFUSED)`);
  });

  it('answers 503 to the owner while the session is not Ready', async () => {
    const pending = (await post(SESSIONS, { configuration: 'echo' })).json<Session>();
    await post(`${BASE}/configurations`, { name: 'slow', command: 'sleep', args: ['30'], readiness: { type: 'port' } }, admin);
    const slow = (await post(SESSIONS, { configuration: 'slow' })).json<Session>();
    expectProblem(await get(proxied(slow, ''), user), 503);
    await hub.inject({ method: 'DELETE', url: `${SESSIONS}/${slow.sessionID}`, headers: user });
    await hub.inject({ method: 'DELETE', url: `${SESSIONS}/${pending.sessionID}`, headers: user });
    // Ended: the proxy answers 503 to its owner, 404 to anyone else.
    expectProblem(await get(proxied(slow, ''), user), 503);
    expectProblem(await get(proxied(slow, ''), other), 404);
  });
});

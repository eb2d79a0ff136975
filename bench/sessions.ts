// Link sessions (issue 29), measured from the client in one run (`npm run bench:sessions`), on the
// local driver with the hub as it runs (as root: sessions as their owner's job uid), against
// PostgreSQL:
// - start → Ready of the built-in `files` configuration, BENCH_SESSION_STARTS (50) sessions one
//   after another, each terminated before the next starts: from sending POST /linksessions/sessions
//   to the first GET showing Ready (polled every 2 ms), p50 and p99; beside it, the server's own
//   part: from its process's start (the execution's taskStates.session.startedAt) to the Ready
//   event's `when` (the moment the probe saw it listen);
// - heartbeats: one Ready session, an open loop of PUT .../heartbeat at BENCH_HEARTBEAT_RATE (1,000)
//   per second for 10 s (each request sent on its schedule, whether or not the previous answered),
//   latency at the client p50 and p99, after BENCH_HEARTBEAT_WARMUP_SECONDS (2) at the same rate
//   whose p99 is shown apart;
// - proxy throughput: a 100 MiB file downloaded through the proxy, from the session directly (with
//   its secret) and through a bare Node TCP relay in its own process (the practical limit of any
//   user-space proxy on a small machine): MiB/s of each, the ratios, the hub's RSS before and at its
//   highest during the proxied downloads; BENCH_PROXY_ROUNDS (5) rounds of the three, the best of
//   each and the median of the rounds' own ratios (a round's three downloads share its load).
// Prints the figures and the load average; writes bench/results/sessions-<date>.json.
// BENCH_SESSION_PARTS (starts,heartbeats,proxy: all by default) picks the parts; BENCH_HUB runs
// another build's hub (a baseline's dist/src/main.js) and BENCH_HUB_NODE_ARGS gives its Node
// arguments (--cpu-prof --cpu-prof-dir=...), so that a baseline and a change alternate in one run.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { request as httpRequest, Agent } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { cpuMs, freePort, rssMiB, startNode, stop } from './processes.js';
import { ADMIN_PASSWORD, dropDatabase, freshDatabase, HUB, login, nowMs, percentile, percentileOf as p, round, sleep, writeResults } from './support.js';

const DATABASE = 'hub_bench_sessions';
const STARTS = Number(process.env.BENCH_SESSION_STARTS ?? 50);
const HEARTBEAT_RATE = Number(process.env.BENCH_HEARTBEAT_RATE ?? 1000);
const HEARTBEAT_SECONDS = 10;
/** Seconds of heartbeats at the same rate before the measured ten, not counted: the hub's cold path (its JIT) is not what is measured. */
const HEARTBEAT_WARMUP_SECONDS = Number(process.env.BENCH_HEARTBEAT_WARMUP_SECONDS ?? 2);
const FILE_MIB = Number(process.env.BENCH_PROXY_MIB ?? 100);
/** Rounds of the three downloads, one after another in each: the machine's load drifts, so each round's ratio is taken within it. */
const DOWNLOADS = Number(process.env.BENCH_PROXY_ROUNDS ?? 5);
const PARTS = new Set((process.env.BENCH_SESSION_PARTS ?? 'starts,heartbeats,proxy').split(','));
const HUB_SCRIPT = process.env.BENCH_HUB ?? HUB;

interface Session {
  sessionID: string;
  status: string;
  accessToken?: string;
  events: { type: string; when: string }[];
}

/** A bare TCP relay in its own process: what any user-space proxy costs at least. */
const RELAY = `
const net = require('node:net');
const [listenPort, targetPort] = process.argv.slice(1).map(Number);
net.createServer((client) => {
  const upstream = net.connect(targetPort, '127.0.0.1');
  client.pipe(upstream).pipe(client);
  const end = () => { client.destroy(); upstream.destroy(); };
  client.on('error', end); upstream.on('error', end);
}).listen(listenPort, '127.0.0.1', () => console.log('ready'));
`;

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

/** One request: status, body as text (or only its length, counted as it streams), and milliseconds. */
function call(
  url: string,
  method: string,
  headers: Record<string, string>,
  keepBody = true,
): Promise<{ status: number; body: string; bytes: number; ms: number }> {
  const began = performance.now();
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method, headers, agent }, (response) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      response.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (keepBody) chunks.push(chunk);
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString(), bytes, ms: performance.now() - began }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end();
  });
}

async function main(): Promise<void> {
  const databaseUrl = await freshDatabase(DATABASE);
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-bench-sessions-'));
  chmodSync(dataDir, 0o711);
  const hub = await startNode(
    HUB_SCRIPT,
    {
      DATABASE_URL: databaseUrl,
      HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
      HUB_DATA_DIR: dataDir,
      HUB_LOG_LEVEL: 'warn',
      HUB_MAX_RUNNING_JOBS_PER_USER: '0',
    },
    '/health/ready',
    (process.env.BENCH_HUB_NODE_ARGS ?? '').split(' ').filter(Boolean),
  );
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const relays: ReturnType<typeof spawn>[] = [];
  try {
    const token = await login(hub);
    const auth = { authorization: `Bearer ${token}` };
    const api = async <T>(method: string, path: string): Promise<T> => {
      const reply = await call(`${hub.url}/api/v2/linksessions/${path}`, method, { ...auth, ...(method === 'POST' && { 'content-type': 'application/json' }) });
      if (reply.status >= 300) throw new Error(`${method} ${path}: ${reply.status} ${reply.body}`);
      return JSON.parse(reply.body) as T;
    };
    const start = () =>
      new Promise<Session>((resolve, reject) => {
        const request = httpRequest(
          `${hub.url}/api/v2/linksessions/sessions`,
          { method: 'POST', agent, headers: { ...auth, 'content-type': 'application/json' } },
          (response) => {
            let text = '';
            response.on('data', (chunk: Buffer) => (text += chunk.toString()));
            response.on('end', () => (response.statusCode === 201 ? resolve(JSON.parse(text) as Session) : reject(new Error(text))));
          },
        );
        request.on('error', reject);
        request.end('{}');
      });
    const untilReady = async (id: string): Promise<Session> => {
      for (;;) {
        const session = await api<Session>('GET', `sessions/${id}`);
        if (session.status !== 'Pending') return session;
        await sleep(2);
      }
    };

    // Start → Ready.
    const toReady: number[] = [];
    const serverPart: number[] = [];
    for (let i = 0; PARTS.has('starts') && i < STARTS + 2; i += 1) {
      const sent = nowMs();
      const started = await start();
      const ready = await untilReady(started.sessionID);
      const seen = nowMs();
      if (ready.status !== 'Ready') throw new Error(`session ${started.sessionID} ended ${ready.status}`);
      const rows = await db.query<{ startedAt: string }>(
        `SELECT e.task_state->>'startedAt' AS "startedAt" FROM job_executions e JOIN link_sessions s ON s.job_id = e.job_id WHERE s.id = $1`,
        [started.sessionID],
      );
      await api('DELETE', `sessions/${started.sessionID}`);
      // The first two pay for cold paths (placing the program, compiling the hub's routes).
      if (i < 2) continue;
      toReady.push(seen - sent);
      const readyAt = Date.parse(ready.events.find((event) => event.type === 'Ready')?.when ?? '');
      // The start is written up to 50 ms after the cluster heard it (docs/cluster.md): a session
      // Ready sooner has none yet, and is left out of this part (its count is printed).
      const serverMs = readyAt - Date.parse(rows.rows[0]?.startedAt ?? '');
      if (Number.isFinite(serverMs)) serverPart.push(serverMs);
    }

    // Heartbeats, open loop.
    const beating = await untilReady((await start()).sessionID);
    const beats: Promise<number>[] = [];
    const warmup = HEARTBEAT_RATE * HEARTBEAT_WARMUP_SECONDS;
    const total = warmup + HEARTBEAT_RATE * HEARTBEAT_SECONDS;
    const began = performance.now();
    let failedBeats = 0;
    let hubCpuAtWarmupEnd = 0;
    for (let i = 0; PARTS.has('heartbeats') && i < total; i += 1) {
      if (i === warmup) hubCpuAtWarmupEnd = cpuMs(hub.process.pid as number);
      const due = began + (i * 1000) / HEARTBEAT_RATE;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      beats.push(
        call(`${hub.url}/api/v2/linksessions/sessions/${beating.sessionID}/heartbeat`, 'PUT', auth).then((reply) => {
          if (reply.status !== 200) failedBeats += 1;
          // From when it was due, not when it was sent: an open loop counts the time a late send waited.
          return performance.now() - due;
        }),
      );
    }
    const allBeatMs = await Promise.all(beats);
    const heartbeatSeconds = (performance.now() - began) / 1000;
    // What each measured heartbeat cost the hub in CPU, whatever it waited for (the reaper's and scheduler's passes included).
    const hubCpuMsPerBeat = (cpuMs(hub.process.pid as number) - hubCpuAtWarmupEnd) / (total - warmup);
    const warmupMs = allBeatMs.slice(0, warmup);
    const beatMs = allBeatMs.slice(warmup);

    // Proxy throughput.
    const {
      rows: [endpoint],
    } = await db.query<{ port: number; secret: string; dir: string }>(
      `SELECT s.port, s.secret, e.execution_dir AS dir FROM link_sessions s JOIN job_executions e ON e.job_id = s.job_id WHERE s.id = $1`,
      [beating.sessionID],
    );
    if (PARTS.has('proxy')) writeFileSync(join(endpoint.dir, 'work', 'big.bin'), Buffer.alloc(FILE_MIB * 1024 * 1024, 7), { mode: 0o644 });
    const relayPort = await freePort();
    const relay = spawn(process.execPath, ['-e', RELAY, String(relayPort), String(endpoint.port)], { stdio: ['ignore', 'pipe', 'inherit'] });
    relays.push(relay);
    await once(relay.stdout as NodeJS.ReadableStream, 'data');
    const download = async (url: string, headers: Record<string, string>) => {
      const reply = await call(url, 'GET', headers, false);
      if (reply.status !== 200 || reply.bytes !== FILE_MIB * 1024 * 1024) throw new Error(`download ${url}: ${reply.status}, ${reply.bytes} bytes`);
      return FILE_MIB / (reply.ms / 1000);
    };
    const hubPid = hub.process.pid as number;
    const rssBefore = rssMiB(hubPid);
    let rssHighest = rssBefore;
    const sampler = setInterval(() => (rssHighest = Math.max(rssHighest, rssMiB(hubPid))), 50);
    const proxied: number[] = [];
    const direct: number[] = [];
    const relayed: number[] = [];
    const secret = { 'x-hub-service-secret': endpoint.secret };
    for (let i = 0; PARTS.has('proxy') && i < DOWNLOADS; i += 1) {
      proxied.push(
        await download(`${hub.url}/api/v2/linksessions/sessions/${beating.sessionID}/proxy/big.bin`, { 'x-session-token': beating.accessToken as string }),
      );
      direct.push(await download(`http://127.0.0.1:${endpoint.port}/big.bin`, secret));
      relayed.push(await download(`http://127.0.0.1:${relayPort}/big.bin`, secret));
    }
    clearInterval(sampler);
    const best = (values: number[]) => Math.max(...values);
    const median = (values: number[]) =>
      percentile(
        [...values].sort((a, b) => a - b),
        0.5,
      );

    const results = {
      date: new Date().toISOString(),
      loadAverage: loadavg().map((value) => round(value, 2)),
      startToReady: { sessions: toReady.length, p50Ms: round(p(toReady, 0.5)), p99Ms: round(p(toReady, 0.99)) },
      serverStartToListen: { sessions: serverPart.length, p50Ms: round(p(serverPart, 0.5)), p99Ms: round(p(serverPart, 0.99)) },
      heartbeats: {
        ratePerSecond: HEARTBEAT_RATE,
        sent: total - warmup,
        warmupSeconds: HEARTBEAT_WARMUP_SECONDS,
        warmupP99Ms: round(p(warmupMs, 0.99), 2),
        achievedPerSecond: round(total / heartbeatSeconds),
        failed: failedBeats,
        p50Ms: round(p(beatMs, 0.5), 2),
        p99Ms: round(p(beatMs, 0.99), 2),
        hubCpuMsPerBeat: round(hubCpuMsPerBeat, 3),
      },
      proxy: {
        fileMiB: FILE_MIB,
        proxiedMiBps: round(best(proxied)),
        directMiBps: round(best(direct)),
        relayMiBps: round(best(relayed)),
        proxyToRelay: round(best(proxied) / best(relayed), 2),
        proxyToDirect: round(best(proxied) / best(direct), 2),
        rounds: proxied.length,
        medianRoundProxyToRelay: round(median(proxied.map((value, i) => value / relayed[i])), 2),
        medianRoundProxyToDirect: round(median(proxied.map((value, i) => value / direct[i])), 2),
        hubRssBeforeMiB: rssBefore,
        hubRssHighestMiB: rssHighest,
      },
    };
    console.log(JSON.stringify(results, null, 2));
    writeResults('sessions', results);
    await api('DELETE', `sessions/${beating.sessionID}`);
  } finally {
    for (const relay of relays) relay.kill();
    await db.end();
    await stop(hub);
    await dropDatabase(DATABASE);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();

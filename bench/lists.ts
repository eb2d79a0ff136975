// The cluster lists at a million jobs and their executions (`npm run bench:lists`), on PostgreSQL:
// seeds hub_bench_lists on BENCH_DATABASE_URL with bench/million.ts (SQL, before the hub starts),
// starts the built hub on it, then times each list through HTTP as an administrator, as a user
// whose access narrows them to one namespace (a ClusterAdministrator binding there; they own 5,000
// jobs spread over every namespace), and as a user narrowed alike whose roles also carry an
// item-level Deny (a regex hiding the namespace's jobs whose id starts with 0 to 3, a quarter),
// BENCH_LIST_REQUESTS requests each (default 40) one after another after 5 to warm up. Prints
// p50/p99 per list against its target (the Deny caller's against the plain narrowed user's) and
// one line of figures.
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions, migrate } from '../src/common/database/hub-database.js';
import { MILLION, seededTime, seedMillion } from './million.js';
import { startNode, stop } from './processes.js';
import { ADMIN_PASSWORD, dropDatabase, freshDatabase, HUB, login, percentile, writeResults } from './support.js';

const DATABASE = 'hub_bench_lists';
const REQUESTS = Number(process.env.BENCH_LIST_REQUESTS ?? 40);
const WARM_UP = 5;
const NARROWED_PASSWORD = 'a-narrowed-bench-password';
/** Hides a quarter of the jobs of the Deny caller's namespace (and their executions): those whose id starts with 0 to 3. */
const DENY = { object: '/ClusterJobs/[0-3].*', objectMatcher: 'regex', actions: ['Read'], effect: 'Deny' };

type Caller = 'admin' | 'narrowed' | 'denied';

interface ListCase {
  readonly name: string;
  readonly path: string;
  readonly caller?: Caller;
  /** Target p50 and p99 in ms; none for the Deny caller, who is compared with the plain narrowed user instead. */
  readonly target?: readonly [number, number];
}

const RECENT = seededTime(MILLION.jobs - 8_640); // the last day
const WEEK = [seededTime(MILLION.jobs / 2), seededTime(MILLION.jobs / 2 + 60_480)]; // a week in the middle
const SIMPLE = [50, 100] as const;
const HARD = [200, 200] as const;

function cases(nodeId: string, jobId: string): ListCase[] {
  const simple = (name: string, path: string, narrowed?: true): ListCase => ({ name, path, target: SIMPLE, ...(narrowed && { caller: 'narrowed' }) });
  const denied = (path: string): ListCase => ({ name: `denied ${path.replace(/^cluster\//, '')}`, path: `cluster/${path}`, caller: 'denied' });
  const jobLists = (narrowed?: true): ListCase[] => {
    const who = narrowed ? 'narrowed ' : '';
    return [
      simple(`${who}jobs`, 'cluster/jobs', narrowed),
      simple(`${who}jobs 1000`, 'cluster/jobs?page[limit]=1000', narrowed),
      simple(`${who}jobs status EQ running`, 'cluster/jobs?filter[status][EQ]=running', narrowed),
      simple(`${who}jobs status IN pending,running`, 'cluster/jobs?filter[status][IN]=pending,running', narrowed),
      simple(`${who}jobs status EQ dead`, 'cluster/jobs?filter[status][EQ]=dead', narrowed),
      simple(`${who}jobs name ST bulk-123`, 'cluster/jobs?filter[name][ST]=bulk-123', narrowed),
      simple(`${who}jobs submitTime GT last day`, `cluster/jobs?filter[submitTime][GT]=${RECENT}`, narrowed),
      simple(`${who}jobs submitTime a week`, `cluster/jobs?filter[submitTime][GT]=${WEEK[0]}&filter[submitTime][LT]=${WEEK[1]}`, narrowed),
      simple(`${who}jobs sort -submitTime`, 'cluster/jobs?sort=-submitTime', narrowed),
      simple(`${who}jobs sort name`, 'cluster/jobs?sort=name', narrowed),
      simple(`${who}jobs sort status`, 'cluster/jobs?sort=status', narrowed),
      simple(`${who}jobs sort -type`, 'cluster/jobs?sort=-type', narrowed),
    ];
  };
  const executionLists = (narrowed?: true): ListCase[] => {
    const who = narrowed ? 'narrowed ' : '';
    return [
      simple(`${who}executions`, 'cluster/executions', narrowed),
      simple(`${who}executions 1000`, 'cluster/executions?page[limit]=1000', narrowed),
      simple(`${who}executions status EQ running`, 'cluster/executions?filter[status][EQ]=running', narrowed),
      simple(`${who}executions status IN pending,running`, 'cluster/executions?filter[status][IN]=pending,running', narrowed),
      // Most of a narrowed user's: what the Deny caller's same list is compared with.
      ...(narrowed ? [simple(`${who}executions status EQ completed`, 'cluster/executions?filter[status][EQ]=completed', narrowed)] : []),
      simple(`${who}executions creationTime GT last day`, `cluster/executions?filter[creationTime][GT]=${RECENT}`, narrowed),
      simple(`${who}executions sort modifiedTime`, 'cluster/executions?sort=modifiedTime', narrowed),
      simple(`${who}executions jobId EQ`, `cluster/executions?filter[jobId][EQ]=${jobId}`, narrowed),
    ];
  };
  return [
    ...jobLists(),
    ...executionLists(),
    simple('executions nodeId EQ', `cluster/executions?filter[nodeId][EQ]=${nodeId}`),
    ...jobLists(true),
    ...executionLists(true),
    ...['jobs', 'jobs?page[limit]=1000', 'jobs?filter[status][EQ]=dead', 'jobs?sort=name'].map(denied),
    ...['executions', 'executions?page[limit]=1000', 'executions?filter[status][EQ]=completed', 'executions?sort=modifiedTime'].map(denied),
    { name: 'jobs status+type+time', path: `cluster/jobs?filter[status][EQ]=dead&filter[type][EQ]=service&filter[submitTime][GT]=${RECENT}`, target: HARD },
    { name: 'jobs name ST+status IN+sort name', path: 'cluster/jobs?filter[name][ST]=bulk-99&filter[status][IN]=dead,running&sort=name', target: HARD },
    {
      name: 'executions node+status+time',
      path: `cluster/executions?filter[nodeId][EQ]=${nodeId}&filter[status][EQ]=completed&filter[creationTime][GT]=${RECENT}`,
      target: HARD,
    },
    { name: 'jobs offset 900000', path: 'cluster/jobs?page[offset]=900000', target: HARD },
    { name: 'executions offset 900000', path: 'cluster/executions?page[offset]=900000', target: HARD },
    { name: 'jobs name CO 150000 (trigram)', path: 'cluster/jobs?filter[name][CO]=150000', target: HARD },
    { name: 'narrowed jobs offset 40000', path: 'cluster/jobs?page[offset]=40000', caller: 'narrowed', target: HARD },
  ];
}

async function query<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const url = await freshDatabase(DATABASE);
  const dataSource = new DataSource(dataSourceOptions(url, [], 2));
  await dataSource.initialize();
  await migrate(dataSource);
  await dataSource.destroy();
  const seedBegan = performance.now();
  await seedMillion(url, { jobs: MILLION.jobs, others: 0 }, (line) => console.log(`seeded ${line}`), { rebuildIndexes: true });
  const seedSeconds = Math.round((performance.now() - seedBegan) / 1000);
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-bench-'));
  const hub = await startNode(HUB, { DATABASE_URL: url, HUB_ADMIN_PASSWORD: ADMIN_PASSWORD, HUB_DATA_DIR: dataDir, HUB_LOG_LEVEL: 'warn' }, '/health/ready');
  try {
    const admin = { authorization: `Bearer ${await login(hub)}`, 'content-type': 'application/json' };
    const api = async <T>(method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; json: T }> => {
      const response = await fetch(`${hub.url}/api/v2/${path}`, { method, headers, ...(body !== undefined && { body: JSON.stringify(body) }) });
      return { status: response.status, json: (await response.json()) as T };
    };
    const [clusterAdministrator] = (await api<{ data: { id: string }[] }>('GET', 'rbac/roles?filter[name][EQ]=ClusterAdministrator', admin)).json.data;
    /**
     * A user with a ClusterAdministrator binding in seed-ns-03 (and a role of `also` there) who owns
     * `owner`'s jobs and executions (5,000 over every namespace): their bearer header.
     */
    const narrowedUser = async (userName: string, owner: string, also?: typeof DENY): Promise<Record<string, string>> => {
      const user = await api<{ _id: string }>('POST', 'auth/users', admin, { userName, password: NARROWED_PASSWORD });
      const bound = await api('POST', 'rbac/rolebindings', admin, { role: clusterAdministrator.id, principal: user.json._id, namespace: 'seed-ns-03' });
      if (user.status !== 201 || bound.status !== 201) throw new Error(`could not make ${userName}: ${user.status} ${bound.status}`);
      if (also) {
        const role = await api<{ id: string }>('POST', 'rbac/roles', admin, { name: `${userName}-role`, permissions: [also] });
        const alsoBound = await api('POST', 'rbac/rolebindings', admin, { role: role.json.id, principal: user.json._id, namespace: 'seed-ns-03' });
        if (role.status !== 201 || alsoBound.status !== 201) throw new Error(`could not give ${userName} its role: ${role.status} ${alsoBound.status}`);
      }
      for (const table of ['cluster_jobs', 'job_executions'])
        await query(url, `UPDATE ${table} SET owner_id = $1 WHERE owner_id = (SELECT id FROM users WHERE user_name = $2)`, [user.json._id, owner]);
      const response = await fetch(`${hub.url}/api/v2/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: userName, password: NARROWED_PASSWORD }),
      });
      return { authorization: `Bearer ${((await response.json()) as { token: string }).token}` };
    };
    const narrowed = await narrowedUser('narrowed', 'seed-user-007');
    const denied = await narrowedUser('denied', 'seed-user-008', DENY);
    await query(url, 'VACUUM ANALYZE');
    const headersOf: Record<Caller, Record<string, string>> = { admin, narrowed, denied };
    const [{ id: nodeId }] = await query<{ id: string }>(url, `SELECT id FROM cluster_nodes WHERE name = 'seed-node-2'`);
    const [{ id: jobId }] = await query<{ id: string }>(url, `SELECT id FROM cluster_jobs WHERE name = 'bulk-4242'`);

    const results: { name: string; path: string; caller: Caller; p50Ms: number; p99Ms: number; total: number; items: number; met?: boolean }[] = [];
    console.log(`\n| list | total | items | p50 ms | p99 ms | target p50/p99 |\n|---|---|---|---|---|---|`);
    for (const list of cases(nodeId, jobId)) {
      const caller = list.caller ?? 'admin';
      let last: { total: number; data: unknown[] } = { total: 0, data: [] };
      const times: number[] = [];
      for (let i = 0; i < WARM_UP + REQUESTS; i += 1) {
        const began = performance.now();
        const response = await fetch(`${hub.url}/api/v2/${list.path}`, { headers: headersOf[caller] });
        const body = (await response.json()) as { total: number; data: unknown[] };
        if (response.status !== 200) throw new Error(`${list.path}: ${response.status} ${JSON.stringify(body)}`);
        if (i >= WARM_UP) times.push(performance.now() - began);
        last = body;
      }
      times.sort((a, b) => a - b);
      const p50Ms = Math.round(percentile(times, 0.5) * 10) / 10;
      const p99Ms = Math.round(percentile(times, 0.99) * 10) / 10;
      const met = list.target && p50Ms <= list.target[0] && p99Ms <= list.target[1];
      results.push({ name: list.name, path: list.path, caller, p50Ms, p99Ms, total: last.total, items: last.data.length, met });
      // The Deny caller against the plain narrowed user on the same list (measured before it).
      const plain = results.find((result) => result.caller === 'narrowed' && result.path === list.path);
      const against = list.target
        ? `${list.target.join('/')}${met ? '' : ' MISSED'}`
        : `narrowed ${plain?.p50Ms} / ${plain?.p99Ms}: ×${plain ? (p50Ms / plain.p50Ms).toFixed(1) : '?'}`;
      console.log(`| ${list.name} | ${last.total} | ${last.data.length} | ${p50Ms} | ${p99Ms} | ${against} |`);
    }
    const date = new Date().toISOString();
    const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, PostgreSQL ${(await query<{ v: string }>(url, `SELECT current_setting('server_version') AS v`))[0].v}`;
    const targeted = results.filter((r) => r.met !== undefined);
    const p50s = targeted.map((r) => r.p50Ms).sort((a, b) => a - b);
    const deniedP50s = results.filter((r) => r.caller === 'denied').map((r) => r.p50Ms);
    console.log(
      `\nlists: ${targeted.length} lists, ${REQUESTS} requests each; median p50 ${percentile(p50s, 0.5)} ms, worst p50 ${p50s[p50s.length - 1]} ms, ` +
        `worst p99 ${Math.max(...targeted.map((r) => r.p99Ms))} ms; ${targeted.filter((r) => r.met).length}/${targeted.length} within target; ` +
        `Deny caller p50 ${Math.min(...deniedP50s)} to ${Math.max(...deniedP50s)} ms; seeded in ${seedSeconds} s; ${machine}`,
    );
    writeResults('lists', { date, machine, requests: REQUESTS, seedSeconds, results });
  } finally {
    await stop(hub);
    rmSync(dataDir, { recursive: true, force: true });
    await dropDatabase(DATABASE);
  }
}

await main();

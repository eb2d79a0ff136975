// Where a job's CPU goes, build against build (`node dist/bench/cluster-cpu.js <rounds> name=hub.js ...`):
// for each round, each build in turn runs 10 jobs one after another, a burst of 100 to warm up, then
// 500 `true` jobs by 10 concurrent submitters, and prints per job the CPU of the hub's process, of
// the rest of its cpuacct group (its launcher, every launch, the jobs), of PostgreSQL (its cpuacct
// group), the top-level statements run on its database (pg_stat_statements) and the notices on the
// change feed. Builds alternate within one session, so that the machine's load moves them alike.
//
// Needs root, cgroup v1's cpuacct at /sys/fs/cgroup/cpuacct, and a PostgreSQL of its own at
// BENCH_DATABASE_URL whose processes are in the cpuacct group BENCH_PG_CGROUP, started with
// shared_preload_libraries = 'pg_stat_statements' (docs/cluster.md "Where a job's CPU goes, build
// against build" says how). The hub is started in the group BENCH_HUB_CGROUP (made if missing).
// BENCH_STATEMENTS=1 lists each statement run 0.01 times a job or more.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { cpuMsOf, freePort } from './processes.js';
import { ADMIN_PASSWORD, clientOf, dropDatabase, freshDatabase, login, nowMs, round, sleep } from './support.js';

const CPUACCT = '/sys/fs/cgroup/cpuacct';
const HUB_GROUP = process.env.BENCH_HUB_CGROUP ?? 'bench-hub';
const PG_GROUP = process.env.BENCH_PG_CGROUP ?? 'bench-pg';
const JOBS = 500;
const SUBMITTERS = 10;
const DATABASE = 'hub_bench_cluster_cpu';

/** Milliseconds of CPU a cpuacct group's tasks have used, its descendants' included. */
const groupMs = (group: string) => Number(readFileSync(join(CPUACCT, group, 'cpuacct.usage'), 'utf8')) / 1e6;

/** Starts `script` as the benchmark starts a hub, but in HUB_GROUP from its first instruction, so that all it forks is counted there. */
async function startHub(script: string, env: Record<string, string>): Promise<{ process: ChildProcess; url: string }> {
  mkdirSync(join(CPUACCT, HUB_GROUP), { recursive: true });
  const port = await freePort();
  const child = spawn('sh', ['-c', `echo $$ > ${join(CPUACCT, HUB_GROUP, 'cgroup.procs')} && exec "$0" "$1"`, process.execPath, script], {
    env: { PATH: process.env.PATH, PORT: String(port), HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let errors = '';
  child.stderr?.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}: ${errors}`);
    try {
      if ((await fetch(`${url}/health/ready`)).status === 200) return { process: child, url };
    } catch {
      // Not listening yet.
    }
    await sleep(20);
  }
}

async function measure(name: string, script: string): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-bench-'));
  chmodSync(dataDir, 0o755);
  const databaseUrl = await freshDatabase(DATABASE);
  const hub = await startHub(script, {
    DATABASE_URL: databaseUrl,
    HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
    HUB_DATA_DIR: dataDir,
    HUB_LOCAL_SLOTS: '2',
    HUB_LOG_LEVEL: 'warn',
    HUB_MAX_ACTIVE_JOBS_PER_USER: '100000',
    HUB_MAX_RUNNING_JOBS_PER_USER: '0',
  });
  const c = clientOf({ ...hub, startMs: 0 }, await login({ ...hub, startMs: 0 }));
  await c.init();
  const burst = async (jobs: number, prefix: string): Promise<number> => {
    let next = 0;
    const began = nowMs();
    await Promise.all(
      Array.from({ length: SUBMITTERS }, async () => {
        while (next < jobs) await c.submit(`${prefix}-${next++}`, 'true');
      }),
    );
    while ((await c.unfinished()) > 0) await sleep(50);
    return ((await c.lastRecordedEnd()) - began) / 1000;
  };
  for (let i = 0; i < 10; i += 1) await c.until(await c.executionOf((await c.submit(`one-${i}`, 'true')).id), (e) => e.status === 'completed', 5);
  await burst(JOBS / 5, 'warm-up');
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const notices = new Map<string, number>();
  db.on('notification', (message) => {
    const table = (JSON.parse(message.payload ?? '{}') as { table?: string }).table ?? '?';
    notices.set(table, (notices.get(table) ?? 0) + 1);
  });
  await db.query('LISTEN hub_changes');
  await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  await db.query('SELECT pg_stat_statements_reset()');
  const pid = hub.process.pid as number;
  const before = { hub: cpuMsOf(pid), group: groupMs(HUB_GROUP), postgres: groupMs(PG_GROUP) };
  const seconds = await burst(JOBS, 'short');
  const after = { hub: cpuMsOf(pid), group: groupMs(HUB_GROUP), postgres: groupMs(PG_GROUP) };
  await sleep(200);
  const statements = (
    await db.query<{ calls: string; query: string }>(
      `SELECT calls, query FROM pg_stat_statements WHERE toplevel AND dbid = (SELECT oid FROM pg_database WHERE datname = $1)
       AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE 'LISTEN%' ORDER BY calls DESC`,
      [DATABASE],
    )
  ).rows;
  await db.end();
  const exited = new Promise((resolve) => hub.process.once('exit', resolve));
  hub.process.kill('SIGTERM');
  await exited;
  rmSync(dataDir, { recursive: true, force: true });
  await dropDatabase(DATABASE);

  const per = (ms: number) => round(ms / JOBS, 2);
  const hubMs = per(after.hub - before.hub);
  const launchesMs = per(after.group - before.group - (after.hub - before.hub));
  const postgresMs = per(after.postgres - before.postgres);
  const calls = statements.reduce((sum, row) => sum + Number(row.calls), 0);
  const noticed = [...notices].map(([table, count]) => `${table} ${round(count / JOBS, 2)}`).join(', ');
  console.log(
    `${name} (load ${loadavg()[0].toFixed(2)}): ${JOBS} jobs in ${seconds.toFixed(2)} s; CPU per job: the hub ${hubMs} + launches ${launchesMs} + PostgreSQL ${postgresMs} = ${round(hubMs + launchesMs + postgresMs, 2)} ms; statements per job ${round(calls / JOBS, 2)}; notices per job: ${noticed}`,
  );
  if (process.env.BENCH_STATEMENTS === '1')
    for (const row of statements.filter((row) => Number(row.calls) >= JOBS / 100))
      console.log(`  ${(Number(row.calls) / JOBS).toFixed(3)} ${row.query.replace(/\s+/g, ' ').slice(0, 160)}`);
}

const rounds = Number(process.argv[2]);
const builds = process.argv
  .slice(3)
  .map((argument) => argument.split('=') as [string, string])
  .map(([name, script]) => [name, script && resolve(script)] as const);
if (!(rounds > 0) || builds.length === 0 || builds.some(([, script]) => !script)) throw new Error('usage: cluster-cpu.js <rounds> <name>=<hub script> ...');
for (let index = 0; index < rounds; index += 1) for (const [name, script] of builds) await measure(name, script);

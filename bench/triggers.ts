// Triggers (issue 28), measured on one hub running as root (`npm run bench:triggers`): BENCH_TRIGGERS
// enabled cron triggers (default 10,000) due every minute, spread over BENCH_TRIGGER_OWNERS owners
// (default 100, each a PipelineDeveloper in namespace default), each starting a one-node pipeline
// of `true`, on the local driver with 2 slots:
// - the hub's CPU while idle before the first due time (the triggers armed, nothing due);
// - for BENCH_TRIGGER_MINUTES due minutes (default 2: the first pays each owner's first job identity,
//   a uid allocated and looked up with getent once per owner; the next fires while the engine and
//   the cluster run the runs of the one before, the steady state): the delay from each due time to its firing
//   (and run) inserted, p50/p99/max, from the firings' own rows (their `created` made
//   clock_timestamp() in this database, so that it is when the row was written, not when its
//   transaction began); whether every trigger fired once per minute;
// - runs finished in the minute after each due time.
// Prints one line of figures with the load average. Uses BENCH_DATABASE_URL (default: this
// machine's PostgreSQL), where it recreates hub_bench_triggers.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { cpuMsOf, startNode, stop } from './processes.js';
import { ADMIN_PASSWORD, clientOf, dropDatabase, freshDatabase, HUB, login, percentileOf as p, round, sleep, writeResults } from './support.js';

const DATABASE = 'hub_bench_triggers';
const TRIGGERS = Number(process.env.BENCH_TRIGGERS ?? 10_000);
const OWNERS = Number(process.env.BENCH_TRIGGER_OWNERS ?? 100);
const MINUTES = Number(process.env.BENCH_TRIGGER_MINUTES ?? 2);
const IDLE_SECONDS = 20;
const PASSWORD = 'bench-trigger-owner-password';

async function main(): Promise<void> {
  const loadAtStart = loadavg().map((value) => round(value, 2));
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-bench-'));
  chmodSync(dataDir, 0o755);
  const databaseUrl = await freshDatabase(DATABASE);
  const hub = await startNode(
    HUB,
    {
      DATABASE_URL: databaseUrl,
      HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
      HUB_DATA_DIR: dataDir,
      HUB_LOCAL_SLOTS: '2',
      HUB_LOG_LEVEL: 'warn',
      HUB_MAX_RUNNING_JOBS_PER_USER: '0',
    },
    '/health/ready',
    // To profile the hub: BENCH_HUB_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' (Node refuses --cpu-prof in NODE_OPTIONS).
    process.env.BENCH_HUB_NODE_ARGS?.split(' ').filter(Boolean) ?? [],
  );
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const c = clientOf(hub, await login(hub));
    await c.init();
    const pid = hub.process.pid as number;
    const developer = (await c.api<{ data: { id: string }[] }>('GET', 'rbac/roles?filter[name][EQ]=PipelineDeveloper')).data[0].id;
    const profileId = (await c.api<{ data: { _id: string }[] }>('GET', 'execution-profiles/execprofiles?filter[name][EQ]=Standard')).data[0]._id;
    const owners: { id: string; name: string }[] = [];
    for (let i = 0; i < OWNERS; i += 1) {
      const name = `trigger-owner-${i}`;
      const user = await c.api<{ _id: string }>('POST', 'auth/users', { userName: name, password: PASSWORD });
      await c.api('POST', 'rbac/rolebindings', { role: developer, principal: user._id, namespace: 'default' });
      owners.push({ id: user._id, name });
    }
    const pipeline = await c.api<{ _id: string }>('POST', 'pipelines/entries', {
      name: 'bench-true',
      namespace: 'default',
      spec: { nodes: [{ name: 'only', task: { type: 'rawexec', command: 'true' } }] },
    });
    // One trigger through the API (its checks), the rest as the same rows by SQL (10,000 requests would measure the API, not the firing).
    await c.api('POST', `pipelines/entries/${pipeline._id}/triggers`, {
      pipelineId: pipeline._id,
      disabled: true,
      trigger: { type: 'Cron', cronExpression: '* * * * *' },
      executionProfileId: profileId,
    });
    await db.query(`ALTER TABLE pipeline_trigger_firings ALTER COLUMN created SET DEFAULT clock_timestamp()`);
    // The first due minute at least IDLE_SECONDS + 10 s away.
    const firstDue = new Date(Math.ceil((Date.now() + (IDLE_SECONDS + 10) * 1000) / 60_000) * 60_000);
    await db.query(
      `INSERT INTO pipeline_triggers (pipeline_id, owner_id, owner_name, type, disabled, spec, execution_profile_id, enabled_at, next_due, version)
       SELECT $1, (o.owners)[1 + i % $2]::uuid, (o.names)[1 + i % $2], 'Cron', false, '{"type":"Cron","cronExpression":"* * * * *"}', $3, now(), $4, 1
       FROM generate_series(1, $5) i, (SELECT $6::text[] AS owners, $7::text[] AS names) o`,
      [pipeline._id, OWNERS, profileId, firstDue, TRIGGERS, owners.map((owner) => owner.id), owners.map((owner) => owner.name)],
    );
    await sleep(2000);
    const idleBefore = cpuMsOf(pid);
    await sleep(IDLE_SECONDS * 1000);
    const idleCpuPercent = round(((cpuMsOf(pid) - idleBefore) / (IDLE_SECONDS * 1000)) * 100, 2);
    const minutes: { due: string; fired: number; delayP50Ms: number; delayP99Ms: number; delayMaxMs: number; runsFinishedInTheMinute: number }[] = [];
    for (let minute = 0; minute < MINUTES; minute += 1) {
      const due = new Date(firstDue.getTime() + minute * 60_000);
      await sleep(Math.max(0, due.getTime() + 60_000 - Date.now()));
      const { rows } = await db.query<{ delay: number }>(
        `SELECT extract(epoch FROM created - trigger_time) * 1000 AS delay FROM pipeline_trigger_firings WHERE trigger_time = $1`,
        [due],
      );
      const delays = rows.map((row) => Number(row.delay));
      const finished = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pipeline_runs WHERE finished_at >= $1 AND finished_at < $1::timestamptz + interval '1 minute'`,
        [due],
      );
      minutes.push({
        due: due.toISOString(),
        fired: delays.length,
        delayP50Ms: round(p(delays, 0.5)),
        delayP99Ms: round(p(delays, 0.99)),
        delayMaxMs: round(Math.max(...delays)),
        runsFinishedInTheMinute: finished.rows[0].n,
      });
    }
    const twice = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT trigger_id, trigger_time FROM pipeline_trigger_firings GROUP BY 1, 2 HAVING count(*) > 1) d`,
    );
    const failed = await db.query<{ n: number; error: string | null }>(
      `SELECT count(*)::int AS n, min(error) AS error FROM pipeline_trigger_firings WHERE state = 'Failed'`,
    );
    const results = {
      date: new Date().toISOString(),
      cpus: cpus().length,
      loadAtStart,
      loadAtEnd: loadavg().map((value) => round(value, 2)),
      triggers: TRIGGERS,
      owners: OWNERS,
      idleCpuPercent,
      minutes,
      firedTwice: twice.rows[0].n,
      failedFirings: failed.rows[0].n,
      firstError: failed.rows[0].error,
      serverErrors: c.serverErrors(),
    };
    writeResults('triggers', results);
    console.log(
      `triggers (${results.cpus} CPUs, load ${loadAtStart.join(' ')} at start, ${results.loadAtEnd.join(' ')} at end): ${TRIGGERS} cron triggers over ${OWNERS} owners; idle CPU ${idleCpuPercent} % of one CPU` +
        minutes
          .map(
            (each) =>
              ` | ${each.due}: fired ${each.fired}, due → firing p50 ${each.delayP50Ms} ms p99 ${each.delayP99Ms} ms max ${each.delayMaxMs} ms, runs finished in the minute ${each.runsFinishedInTheMinute}`,
          )
          .join('') +
        ` | fired twice ${results.firedTwice}, failed ${results.failedFirings}${results.firstError ? ` (${results.firstError})` : ''}`,
    );
  } finally {
    await db.end();
    await stop(hub);
    await dropDatabase(DATABASE);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();

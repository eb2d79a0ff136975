// Benchmarks of the identity area (`npm run bench:identity`, after a build), on PostgreSQL:
// - the users list with filter[userName][CO] and sort=userName over 100,000 users, and the
//   principals list over them and 1,000 groups, through the whole hub: latency with one client,
//   throughput with ten;
// - effective-group resolution (what login and every uncached request run) for a user in a
//   5-level nesting of 1,000 groups, through the hub's own repository.
// Uses BENCH_DATABASE_URL (default: this machine's PostgreSQL), where it recreates hub_bench_identity.
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import '../src/app.module.js';
import { GroupsRepository } from '../src/auth/groups.repository.js';
import { DatabaseModule } from '../src/common/database/database.module.js';
import { dataSourceOptions } from '../src/common/database/hub-database.js';
import { startNode, stop } from './processes.js';
import { ADMIN_PASSWORD, dropDatabase, freshDatabase, HUB, load, loadRow, login, sql, timeRepeated, writeResults, type Load } from './support.js';

const DATABASE = 'hub_bench_identity';
const USERS = 100_000;
const LEVELS = 5;
const GROUPS_PER_LEVEL = 200;
const PARENTS_PER_GROUP = 2;
const DIRECT_GROUPS = 5;
const RESOLUTIONS = 2000;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);

/** Ten name families spread pseudo-randomly, so that `CO data` matches about a tenth of the users. */
const SEED_USERS = `
  INSERT INTO users (user_name, display_name, email, version, created, modified)
  SELECT format('user-%s-%s', lpad(i::text, 6, '0'), family), format('User %s', i), format('user%s@%s.example', i, family), 1,
         now() - make_interval(secs => i), now() - make_interval(secs => i)
  FROM generate_series(1, ${USERS}) AS i,
       LATERAL (SELECT (ARRAY['data','web','ml','ops','finance','hr','sales','infra','qa','research'])[1 + abs(hashint4(i)) % 10] AS family) f`;

/**
 * Level 1 to 5, 200 groups each; every group below level 5 is in two pseudo-random groups of the
 * level above. The user 'nested' is directly in five level-1 groups.
 */
const SEED_GROUPS = `
  INSERT INTO groups (name, version) SELECT format('level-%s-group-%s', level, n), 1
  FROM generate_series(1, ${LEVELS}) AS level, generate_series(1, ${GROUPS_PER_LEVEL}) AS n;
  INSERT INTO group_group_members (group_id, member_group_id)
  SELECT DISTINCT parent.id, child.id
  FROM generate_series(1, ${LEVELS - 1}) AS level, generate_series(1, ${GROUPS_PER_LEVEL}) AS n, generate_series(1, ${PARENTS_PER_GROUP}) AS k
  JOIN LATERAL (SELECT id FROM groups WHERE name = format('level-%s-group-%s', level, n)) child ON true
  JOIN LATERAL (SELECT id FROM groups WHERE name = format('level-%s-group-%s', level + 1, 1 + abs(hashint4(n * 7 + k * 131 + level)) % ${GROUPS_PER_LEVEL})) parent ON true;
  INSERT INTO users (user_name, version) VALUES ('nested', 1);
  INSERT INTO group_user_members (group_id, user_id)
  SELECT groups.id, users.id FROM groups, users
  WHERE users.user_name = 'nested' AND groups.name IN (SELECT format('level-1-group-%s', n * 37) FROM generate_series(1, ${DIRECT_GROUPS}) AS n)`;

interface ListFigures {
  readonly request: string;
  readonly matching: number;
  readonly oneClient: Load;
  readonly tenClients: Load;
}

async function listFigures(hubUrl: string, token: string, pathAndQuery: string): Promise<ListFigures> {
  const url = `${hubUrl}/api/v2/auth/${pathAndQuery}`;
  const headers = { authorization: `Bearer ${token}` };
  const check = await fetch(url, { headers });
  const { totalCount } = (await check.json()) as { totalCount: number };
  await load(url, headers, 5, 10); // Warm-up: JIT, pools, caches.
  return {
    request: `GET /api/v2/auth/${pathAndQuery}`,
    matching: totalCount,
    oneClient: await load(url, headers, DURATION_S, 1),
    tenClients: await load(url, headers, DURATION_S, 10),
  };
}

async function groupResolution(url: string): Promise<{ reached: number; p50Ms: number; p99Ms: number; meanMs: number }> {
  const dataSource = await new DataSource(dataSourceOptions(url, DatabaseModule.entities(), 2)).initialize();
  try {
    const groups = new GroupsRepository(dataSource);
    const [{ id }]: { id: string }[] = await dataSource.query(`SELECT id FROM users WHERE user_name = 'nested'`);
    const reached = (await groups.effectiveGroupIds(id)).length;
    return { reached, ...(await timeRepeated(() => groups.effectiveGroupIds(id), RESOLUTIONS)) };
  } finally {
    await dataSource.destroy();
  }
}

async function main(): Promise<void> {
  const env = {
    DATABASE_URL: await freshDatabase(DATABASE),
    HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
    HUB_DATA_DIR: mkdtempSync(join(tmpdir(), 'hub-bench-')),
    HUB_LOG_LEVEL: 'warn',
  };
  const migrating = await startNode(HUB, env, '/health/ready');
  await stop(migrating);
  await sql(env.DATABASE_URL, SEED_USERS);
  await sql(env.DATABASE_URL, SEED_GROUPS);
  await sql(env.DATABASE_URL, 'VACUUM ANALYZE'); // As autovacuum would, soon after a bulk load.

  const hub = await startNode(HUB, env, '/health/ready');
  const token = await login(hub);
  const lists = [
    await listFigures(hub.url, token, 'users?filter[userName][CO]=00042&sort=userName'),
    await listFigures(hub.url, token, 'users?filter[userName][CO]=data&sort=userName'),
    await listFigures(hub.url, token, 'principals?page[limit]=20'),
    await listFigures(hub.url, token, 'principals?filter[displayName][CO]=4242'),
  ];
  await stop(hub);
  const resolution = await groupResolution(env.DATABASE_URL);
  rmSync(env.HUB_DATA_DIR, { recursive: true, force: true });

  const results = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version },
    users: USERS,
    lists,
    resolution,
  };
  console.log(`\nUsers and principals lists over ${USERS} users and ${LEVELS * GROUPS_PER_LEVEL} groups, ${DURATION_S} s per run, ${cpus().length} CPUs\n`);
  console.log('| request | clients | req/s | p50 ms | p99 ms | non-2xx |\n|---|---|---|---|---|---|');
  for (const list of lists) {
    console.log(loadRow(`${list.request} (${list.matching} match) | 1`, list.oneClient));
    console.log(loadRow(`${list.request} (${list.matching} match) | 10`, list.tenClients));
  }
  console.log(
    `\nEffective groups of a user directly in ${DIRECT_GROUPS} of ${LEVELS * GROUPS_PER_LEVEL} groups nested ${LEVELS} levels deep (${resolution.reached} reached), ${RESOLUTIONS} resolutions: p50 ${resolution.p50Ms} ms, p99 ${resolution.p99Ms} ms, mean ${resolution.meanMs} ms (target <= 5)`,
  );
  writeResults('identity', results);
  await dropDatabase(DATABASE);
}

await main();

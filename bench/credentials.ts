// Benchmarks of auth domains and credentials (`npm run bench:credentials`, after a build), on PostgreSQL:
// - resolving the caller's credential for a user in 50 groups, in a domain of 10,000 credentials:
//   through the whole hub (one client: latency; ten: throughput) and through the hub's repository;
// - 1,000 random rank moves (High, Low, Mid, Above, Below, Between) over a domain of 1,000
//   credentials, ten at a time through the hub: throughput, and a check that the final ranks are a
//   strict total order with every credential still there.
// Uses BENCH_DATABASE_URL (default: this machine's PostgreSQL), where it recreates hub_bench_credentials.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import 'reflect-metadata';
import pg from 'pg';
import { DataSource } from 'typeorm';
import '../src/app.module.js';
import { CredentialCipher } from '../src/authdomains/credential-cipher.js';
import { RANK_GAP } from '../src/authdomains/credential-rank.js';
import { CredentialsRepository } from '../src/authdomains/credentials.repository.js';
import type { HubConfig } from '../src/common/config/hub-config.js';
import { DatabaseModule } from '../src/common/database/database.module.js';
import { dataSourceOptions } from '../src/common/database/hub-database.js';
import { startNode, stop } from './processes.js';
import { ADMIN_PASSWORD, dropDatabase, freshDatabase, HUB, load, loadRow, login, sql, timeRepeated, writeResults, type Timings } from './support.js';

const DATABASE = 'hub_bench_credentials';
const CREDENTIALS = 10_000;
const GROUPS = 50;
const RESOLUTIONS = 2000;
const MOVE_DOMAIN_SIZE = 1000;
const MOVES = 1000;
const MOVERS = 10;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const KEY = randomBytes(32);

const round = (ms: number) => Math.round(ms * 1000) / 1000;

interface Seeded {
  readonly resolveDomain: string;
  readonly moveDomain: string;
  readonly adminId: string;
  readonly groupIds: string[];
}

/**
 * The administrator directly in 50 groups; a domain of 10,000 credentials where 51 are theirs or
 * their groups' (spread over the order, the best one about two thirds down) and the rest belong to
 * principals that hold nothing else; a second domain of 1,000 credentials for the moves.
 */
async function seed(url: string): Promise<Seeded> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const [{ id: adminId }] = (await client.query<{ id: string }>(`SELECT id FROM users WHERE user_name = 'admin'`)).rows;
    const groups = await client.query<{ id: string }>(
      `INSERT INTO groups (name, version) SELECT format('bench-group-%s', n), 1 FROM generate_series(1, ${GROUPS}) n RETURNING id`,
    );
    const groupIds = groups.rows.map((row) => row.id);
    await client.query('INSERT INTO group_user_members (group_id, user_id) SELECT unnest($1::uuid[]), $2', [groupIds, adminId]);
    const [{ id: namespaceId }] = (await client.query<{ id: string }>(`SELECT id FROM namespaces WHERE name = 'default'`)).rows;
    const domain = async (name: string) =>
      (await client.query<{ id: string }>('INSERT INTO auth_domains (namespace_id, name, version) VALUES ($1, $2, 1) RETURNING id', [namespaceId, name]))
        .rows[0].id;
    const resolveDomain = await domain('bench-resolve');
    const moveDomain = await domain('bench-moves');
    const cipher = new CredentialCipher({ credentialsKey: KEY, dataDir: '' } as unknown as HubConfig);
    const insert = async (domainId: string, count: number, principalOf: (position: number) => string) => {
      const ids = Array.from({ length: count }, () => randomUUID());
      const principals = ids.map((_id, position) => principalOf(position));
      await client.query(
        `INSERT INTO credentials (id, auth_domain_id, principal_id, principal_type, label, type, rank, sealed_data, version)
         SELECT id, $1, principal, 'User', format('credential-%s', position), 'Internal', position * $5::bigint, sealed, 1
         FROM unnest($2::uuid[], $3::uuid[], $4::bytea[]) WITH ORDINALITY AS t(id, principal, sealed, position)`,
        [domainId, ids, principals, ids.map((id) => cipher.seal(id, { username: 'svc', password: randomBytes(12).toString('hex') })), String(RANK_GAP)],
      );
    };
    // Every 150th position from 6,500 on is one of the caller's groups', position 9,990 the caller's own.
    const ours = new Map<number, string>(groupIds.map((id, index) => [6500 + index * 60, id]));
    ours.set(9990, adminId);
    await insert(resolveDomain, CREDENTIALS, (position) => ours.get(position) ?? randomUUID());
    await insert(moveDomain, MOVE_DOMAIN_SIZE, () => randomUUID());
    return { resolveDomain, moveDomain, adminId, groupIds };
  } finally {
    await client.end();
  }
}

/** Resolutions through the hub's repository, as the service runs them: p50/p99 over 2,000. */
async function repositoryResolution(url: string, seeded: Seeded): Promise<Timings> {
  const dataSource = await new DataSource(dataSourceOptions(url, DatabaseModule.entities(), 2)).initialize();
  try {
    const credentials = new CredentialsRepository(dataSource);
    const principals = [seeded.adminId, ...seeded.groupIds];
    const best = await credentials.best(seeded.resolveDomain, principals);
    if (best?.principalId !== seeded.groupIds[0]) throw new Error(`resolved ${best?.principalId}, not the best-ranked group credential`);
    return await timeRepeated(() => credentials.best(seeded.resolveDomain, principals), RESOLUTIONS);
  } finally {
    await dataSource.destroy();
  }
}

/** A random rankDefinition against the domain's credentials. */
function randomMove(ids: readonly string[], self: string): object {
  const other = () => {
    for (;;) {
      const id = ids[Math.floor(Math.random() * ids.length)];
      if (id !== self) return id;
    }
  };
  switch (Math.floor(Math.random() * 6)) {
    case 0:
      return { position: 'High' };
    case 1:
      return { position: 'Low' };
    case 2:
      return { position: 'Mid' };
    case 3:
      return { position: 'Above', above: other() };
    case 4:
      return { position: 'Below', below: other() };
    default:
      return { position: 'Between', above: other(), below: other() };
  }
}

/** 1,000 random moves, ten in flight; Between with the pair in the wrong order is a 400, counted apart. */
async function rankMoves(hubUrl: string, token: string, url: string, domainId: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const ids = (await client.query<{ id: string }>('SELECT id FROM credentials WHERE auth_domain_id = $1', [domainId])).rows.map((row) => row.id);
    const statuses = new Map<number, number>();
    let next = 0;
    const began = performance.now();
    await Promise.all(
      Array.from({ length: MOVERS }, async () => {
        while (next < MOVES) {
          next += 1;
          const self = ids[Math.floor(Math.random() * ids.length)];
          const response = await fetch(`${hubUrl}/api/v2/authdomains/credentials/${self}/rank`, {
            method: 'PUT',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify(randomMove(ids, self)),
          });
          await response.arrayBuffer();
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        }
      }),
    );
    const seconds = (performance.now() - began) / 1000;
    const [order] = (
      await client.query<{ total: string; distinct: string }>(
        'SELECT count(*) AS total, count(DISTINCT rank) AS distinct FROM credentials WHERE auth_domain_id = $1',
        [domainId],
      )
    ).rows;
    const strictTotalOrder = Number(order.total) === MOVE_DOMAIN_SIZE && Number(order.distinct) === MOVE_DOMAIN_SIZE;
    return {
      moves: MOVES,
      concurrency: MOVERS,
      seconds: round(seconds),
      movesPerSecond: Math.round(MOVES / seconds),
      statuses: Object.fromEntries(statuses),
      strictTotalOrder,
    };
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const env = {
    DATABASE_URL: await freshDatabase(DATABASE),
    HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
    HUB_CREDENTIALS_KEY: KEY.toString('base64'),
    HUB_DATA_DIR: mkdtempSync(join(tmpdir(), 'hub-bench-')),
    HUB_LOG_LEVEL: 'warn',
  };
  const migrating = await startNode(HUB, env, '/health/ready');
  await stop(migrating);
  const seeded = await seed(env.DATABASE_URL);
  await sql(env.DATABASE_URL, 'VACUUM ANALYZE');

  const hub = await startNode(HUB, env, '/health/ready');
  const token = await login(hub);
  const resolveUrl = `${hub.url}/api/v2/authdomains/authdomains/${seeded.resolveDomain}/credential`;
  const headers = { authorization: `Bearer ${token}` };
  const check = (await (await fetch(resolveUrl, { headers })).json()) as { principal: string; data?: object };
  if (check.principal !== seeded.groupIds[0] || !check.data) throw new Error(`resolve answered ${JSON.stringify(check)}`);
  await load(resolveUrl, headers, 5, 10); // Warm-up: JIT, pools, caches.
  const http = { oneClient: await load(resolveUrl, headers, DURATION_S, 1), tenClients: await load(resolveUrl, headers, DURATION_S, 10) };
  const moves = await rankMoves(hub.url, token, env.DATABASE_URL, seeded.moveDomain);
  await stop(hub);
  const repository = await repositoryResolution(env.DATABASE_URL, seeded);
  rmSync(env.HUB_DATA_DIR, { recursive: true, force: true });

  const results = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version },
    credentials: CREDENTIALS,
    groups: GROUPS,
    http,
    repository,
    moves,
  };
  console.log(`\nResolve for a user in ${GROUPS} groups, in a domain of ${CREDENTIALS} credentials, ${DURATION_S} s per run, ${cpus().length} CPUs\n`);
  console.log('| request | clients | req/s | p50 ms | p99 ms | non-2xx |\n|---|---|---|---|---|---|');
  console.log(loadRow('GET /api/v2/authdomains/authdomains/{id}/credential | 1', http.oneClient));
  console.log(loadRow('GET /api/v2/authdomains/authdomains/{id}/credential | 10', http.tenClients));
  console.log(
    `\nThrough the repository, ${RESOLUTIONS} resolutions: p50 ${repository.p50Ms} ms, p99 ${repository.p99Ms} ms, mean ${repository.meanMs} ms (target p50 <= 5)`,
  );
  console.log(
    `\n${MOVES} random rank moves over ${MOVE_DOMAIN_SIZE} credentials, ${MOVERS} at a time: ${moves.seconds} s, ${moves.movesPerSecond} moves/s, statuses ${JSON.stringify(moves.statuses)}; strict total order at the end: ${moves.strictTotalOrder}`,
  );
  writeResults('credentials', results);
  await dropDatabase(DATABASE);
  if (!moves.strictTotalOrder) process.exitCode = 1;
}

await main();

// Benchmarks of access control (`npm run bench:access`, after a build):
// - in-process evaluation with a warm cache, for a user with 20 bindings of roles with 50
//   permissions each (target >= 100,000 decisions/s);
// - what the access guard (and its audit) costs: the foundation's namespaces list against the hub,
//   and against the same hub with the guard replaced by a pass-through, alternating in one run
//   (target <= 10% throughput loss).
// Uses BENCH_DATABASE_URL (default: this machine's PostgreSQL), where it recreates hub_bench_access.
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PrincipalPermissions, type BoundPermission } from '../src/rbac/access-evaluator.js';
import type { PermissionValue } from '../src/rbac/entities/role.entity.js';
import { compileObjectMatcher } from '../src/rbac/object-matcher.js';
import { startNode, stop } from './processes.js';
import { ADMIN_PASSWORD, dropDatabase, freshDatabase, HUB, load, loadRow, login, medianLoad, sql, writeResults, type Load } from './support.js';

const WITHOUT_ACCESS = join(dirname(fileURLToPath(import.meta.url)), 'hub-without-access.js');
const DATABASE = 'hub_bench_access';
const BINDINGS = 20;
const PERMISSIONS_PER_ROLE = 50;
const NAMESPACES = 5;
const DECISIONS = 1_000_000;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = 10;
const LIST_QUERY = `filter[name][CO]=data&sort=-_created&page[limit]=50`;
const COLLECTIONS = [
  'Pipelines',
  'Credentials',
  'AuthDomains',
  'ExecutionProfiles',
  'PublishedLibraries',
  'LibraryDefinitions',
  'LinkSessions',
  'ClusterNodes',
  'ClusterJobs',
  'Namespaces',
  'Users',
  'Groups',
];
const ACTIONS = ['Read', 'Create', 'Update', 'Delete', 'Use', 'Execute'];

/** A deterministic pseudo-random sequence, so that runs compare. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

/** Role r's permission p: mostly simple paths, some globs and regexes, one in ten a Deny. */
function permission(r: number, p: number, next: () => number): PermissionValue {
  const collection = COLLECTIONS[(r * 7 + p) % COLLECTIONS.length];
  const actions = ACTIONS.filter(() => next() < 0.4);
  const effect = p % 10 === 9 ? 'Deny' : 'Allow';
  if (p % 25 === 24) return { object: `/${collection}/[0-9a-f-]{36}/logs`, objectMatcher: 'regex', actions: ['Read'], effect };
  if (p % 5 === 4) return { object: `/${collection}/**`, objectMatcher: 'glob', actions: actions.length ? actions : ['Read'], effect };
  return { object: p % 2 ? `/${collection}/*` : `/${collection}`, objectMatcher: 'simple', actions: actions.length ? actions : ['Read'], effect };
}

function evaluation(): { decisionsPerSecond: number; allowed: number; rules: number } {
  const next = random(42);
  const bound: BoundPermission[] = [];
  for (let b = 0; b < BINDINGS; b += 1) {
    const namespaceId = b % 4 === 0 ? null : `namespace-${b % NAMESPACES}`;
    for (let p = 0; p < PERMISSIONS_PER_ROLE; p += 1) {
      const value = permission(b, p, next);
      bound.push({
        bindingId: `binding-${b}`,
        roleId: `role-${b}`,
        roleName: `Role ${b}`,
        principalId: b % 2 ? 'user' : `group-${b}`,
        principalType: b % 2 ? 'User' : 'Group',
        principalName: 'someone',
        namespaceId,
        namespaceName: namespaceId ?? '*',
        permissionIndex: p,
        permission: value,
        matcher: compileObjectMatcher(value.objectMatcher, value.object),
      });
    }
  }
  const permissions = new PrincipalPermissions(bound);
  const questions = Array.from({ length: 10_000 }, () => {
    const collection = COLLECTIONS[Math.floor(next() * COLLECTIONS.length)];
    const object = next() < 0.3 ? `/${collection}` : `/${collection}/0f8fad5b-d9cb-469f-a165-70867728950e${next() < 0.2 ? '/logs' : ''}`;
    const namespaceId = next() < 0.2 ? null : `namespace-${Math.floor(next() * NAMESPACES)}`;
    return { object, action: ACTIONS[Math.floor(next() * ACTIONS.length)], namespaceId };
  });
  for (const question of questions) permissions.decide(question); // Warm: every namespace's ability built.
  let allowed = 0;
  const began = performance.now();
  for (let i = 0; i < DECISIONS; i += 1) if (permissions.decide(questions[i % questions.length]) === 'Allow') allowed += 1;
  const seconds = (performance.now() - began) / 1000;
  return { decisionsPerSecond: Math.round(DECISIONS / seconds), allowed, rules: bound.length };
}

async function guardOverhead(): Promise<{ rounds: { guarded: Load; unguarded: Load }[]; guarded: Load; unguarded: Load; matching: number }> {
  const env = {
    DATABASE_URL: await freshDatabase(DATABASE),
    HUB_ADMIN_PASSWORD: ADMIN_PASSWORD,
    HUB_DATA_DIR: mkdtempSync(join(tmpdir(), 'hub-bench-')),
    HUB_LOG_LEVEL: 'info',
  };
  try {
    await stop(await startNode(HUB, env, '/health/ready'));
    await sql(
      env.DATABASE_URL,
      `INSERT INTO namespaces (name, description, is_default, version, created, modified)
       SELECT format('team-%s-%s', lpad(i::text, 5, '0'), (ARRAY['data','web','ml','ops','finance','hr','sales','infra','qa','research'])[1 + abs(hashint4(i)) % 10]),
              'Namespace number ' || i, false, 1, now() - make_interval(secs => i), now() - make_interval(secs => i)
       FROM generate_series(1, 10000) AS i`,
    );
    await sql(env.DATABASE_URL, 'VACUUM ANALYZE');
    const guardedHub = await startNode(HUB, env, '/health/ready');
    const unguardedHub = await startNode(WITHOUT_ACCESS, env, '/health/ready');
    try {
      const target = async (hub: typeof guardedHub) => ({
        url: `${hub.url}/api/v2/namespaces?${LIST_QUERY}`,
        headers: { authorization: `Bearer ${await login(hub)}` },
      });
      const guarded = await target(guardedHub);
      const unguarded = await target(unguardedHub);
      const { totalCount } = (await (await fetch(guarded.url, { headers: guarded.headers })).json()) as { totalCount: number };
      for (const t of [guarded, unguarded]) await load(t.url, t.headers, 5, CONNECTIONS);
      const rounds: { guarded: Load; unguarded: Load }[] = [];
      for (let round = 0; round < ROUNDS; round += 1) {
        rounds.push({
          guarded: await load(guarded.url, guarded.headers, DURATION_S, CONNECTIONS),
          unguarded: await load(unguarded.url, unguarded.headers, DURATION_S, CONNECTIONS),
        });
      }
      return { rounds, guarded: medianLoad(rounds.map((r) => r.guarded)), unguarded: medianLoad(rounds.map((r) => r.unguarded)), matching: totalCount };
    } finally {
      await stop(guardedHub);
      await stop(unguardedHub);
    }
  } finally {
    rmSync(env.HUB_DATA_DIR, { recursive: true, force: true });
    await dropDatabase(DATABASE);
  }
}

async function main(): Promise<void> {
  const evaluated = evaluation();
  console.log(
    `\nIn-process evaluation, warm: ${BINDINGS} bindings x ${PERMISSIONS_PER_ROLE} permissions (${evaluated.rules} rules), ${DECISIONS} decisions: ${evaluated.decisionsPerSecond} decisions/s (target >= 100000; ${evaluated.allowed} allowed)`,
  );
  const overhead = await guardOverhead();
  const loss = Math.round((1 - overhead.guarded.requestsPerSecond / overhead.unguarded.requestsPerSecond) * 1000) / 10;
  console.log(
    `\nNamespaces list (${overhead.matching} match), ${CONNECTIONS} connections, ${DURATION_S} s per run, ${ROUNDS} alternating rounds, ${cpus().length} CPUs\n`,
  );
  console.log('| hub | req/s | p50 ms | p99 ms | non-2xx |\n|---|---|---|---|---|');
  overhead.rounds.forEach((round, index) => {
    console.log(loadRow(`access guard on, round ${index + 1}`, round.guarded));
    console.log(loadRow(`access guard off, round ${index + 1}`, round.unguarded));
  });
  console.log(loadRow('**access guard on, median**', overhead.guarded));
  console.log(loadRow('**access guard off, median**', overhead.unguarded));
  console.log(`\nthroughput lost to the access guard: ${loss}% (target <= 10%)`);
  writeResults('access', {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version },
    evaluation: evaluated,
    overhead,
    lossPercent: loss,
  });
}

await main();

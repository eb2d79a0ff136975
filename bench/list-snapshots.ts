// Every list query, visible: its SQL and its plan's shape at a million rows, committed next to its
// area as src/<area>/queries/<list>.sql (docs/api-conventions.md "Lists at scale").
//   npm run queries          regenerates the files
//   npm run queries:check    regenerates them in memory and fails, showing the difference, if a
//                            committed file differs (CI runs this)
// Seeds a throwaway database (hub_list_snapshots on BENCH_DATABASE_URL or TEST_DATABASE_URL) with
// bench/million.ts, runs each list through its repository as the hub does (the list machinery
// reports the SQL it runs) and asks PostgreSQL for each statement's plan without costs; ids are
// masked, as they differ between runs. A plan that loses a declared index shows up in the diff,
// and the run fails if a list's plans use none of the indexes its request relies on.
import 'reflect-metadata';
import { readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { AppModule } from '../src/app.module.js';
import { GroupsRepository } from '../src/auth/groups.repository.js';
import { GROUP_LIST_QUERY, PRINCIPAL_LIST_QUERY, USER_LIST_QUERY } from '../src/auth/list-queries.js';
import { UsersRepository } from '../src/auth/users.repository.js';
import { CredentialsRepository } from '../src/authdomains/credentials.repository.js';
import { CREDENTIAL_LIST_QUERY } from '../src/authdomains/list-queries.js';
import { ClusterRepository } from '../src/cluster/cluster.repository.js';
import { EXECUTION_LIST_QUERY, JOB_LIST_QUERY } from '../src/cluster/list-queries.js';
import type { NamespaceScope } from '../src/common/http/access-scope.js';
import { DatabaseModule } from '../src/common/database/database.module.js';
import { dataSourceOptions, migrate } from '../src/common/database/hub-database.js';
import { observeListQueries } from '../src/common/query/list-page.js';
import { parseListQuery, type IndexUse, type ListQuerySpec } from '../src/common/query/list-query.js';
import type { RawQuery } from '../src/common/query/query-values.js';
import { AuditRepository } from '../src/rbac/audit.repository.js';
import { AUDIT_LIST_QUERY, ROLE_BINDING_LIST_QUERY } from '../src/rbac/list-queries.js';
import { RoleBindingsRepository } from '../src/rbac/role-bindings.repository.js';
import { MILLION, seededTime, seedMillion } from './million.js';
import { ROOT, sql } from './support.js';

const DATABASE = 'hub_list_snapshots';
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * Who a case lists as: everything (an administrator), one namespace and their own items, or the
 * same with a Deny that hides some of the namespace's jobs (a pattern on their ids).
 */
type Caller = 'administrator' | 'narrowed' | 'denied';

interface Seeded {
  readonly namespaceId: string;
  readonly userId: string;
  readonly domainId: string;
  readonly roleId: string;
  readonly nodeId: string;
  readonly jobId: string;
}

interface Repositories {
  readonly cluster: ClusterRepository;
  readonly users: UsersRepository;
  readonly groups: GroupsRepository;
  readonly credentials: CredentialsRepository;
  readonly bindings: RoleBindingsRepository;
  readonly audit: AuditRepository;
}

interface ListCase {
  /** src/<area>/queries/<file>.sql */
  readonly area: string;
  readonly file: string;
  readonly spec: ListQuerySpec;
  readonly path: string;
  readonly raw: (seeded: Seeded) => RawQuery;
  readonly caller?: Caller;
  readonly run: (repositories: Repositories, query: ReturnType<typeof parseListQuery>, scope: NamespaceScope, callerId: string) => Promise<unknown>;
}

const RECENT = seededTime(MILLION.jobs - 8_640); // the last day of a million jobs
const EARLY = seededTime(100_000);

function jobs(title: string, raw: RawQuery, caller: Caller = 'administrator'): ListCase {
  return {
    area: 'cluster',
    file: 'jobs',
    spec: JOB_LIST_QUERY,
    path: `GET /cluster/jobs${title}`,
    raw: () => raw,
    caller,
    run: (r, q, s, c) => r.cluster.listJobs(q, s, c),
  };
}

function executions(title: string, raw: (seeded: Seeded) => RawQuery, caller: Caller = 'administrator'): ListCase {
  return {
    area: 'cluster',
    file: 'executions',
    spec: EXECUTION_LIST_QUERY,
    path: `GET /cluster/executions${title}`,
    raw,
    caller,
    run: (r, q, s, c) => r.cluster.listExecutions(q, s, c),
  };
}

const CASES: ListCase[] = [
  jobs('', {}),
  jobs('?page[limit]=1000', { 'page[limit]': '1000' }),
  jobs('?filter[status][EQ]=running', { 'filter[status][EQ]': 'running' }),
  jobs('?filter[status][IN]=pending,running', { 'filter[status][IN]': 'pending,running' }),
  jobs('?filter[name][ST]=bulk-123', { 'filter[name][ST]': 'bulk-123' }),
  jobs('?filter[name][CO]=150000', { 'filter[name][CO]': '150000' }),
  jobs(`?filter[submitTime][GT]=<last day>`, { 'filter[submitTime][GT]': RECENT }),
  jobs(`?filter[submitTime][LT]=<early>`, { 'filter[submitTime][LT]': EARLY }),
  jobs('?sort=name', { sort: 'name' }),
  jobs('?sort=-status', { sort: '-status' }),
  jobs('?sort=type', { sort: 'type' }),
  jobs('?page[offset]=900000', { 'page[offset]': '900000' }),
  jobs('?filter[status][EQ]=dead&filter[type][EQ]=service&filter[submitTime][GT]=<last day>', {
    'filter[status][EQ]': 'dead',
    'filter[type][EQ]': 'service',
    'filter[submitTime][GT]': RECENT,
  }),
  jobs('', {}, 'narrowed'),
  jobs('?filter[status][EQ]=running', { 'filter[status][EQ]': 'running' }, 'narrowed'),
  jobs('?filter[name][ST]=bulk-123', { 'filter[name][ST]': 'bulk-123' }, 'narrowed'),
  jobs('?sort=name', { sort: 'name' }, 'narrowed'),
  jobs('', {}, 'denied'),
  executions('', () => ({})),
  executions('?page[limit]=1000', () => ({ 'page[limit]': '1000' })),
  executions('?filter[status][EQ]=running', () => ({ 'filter[status][EQ]': 'running' })),
  executions('?filter[status][IN]=pending,running', () => ({ 'filter[status][IN]': 'pending,running' })),
  executions('?filter[creationTime][GT]=<last day>', () => ({ 'filter[creationTime][GT]': RECENT })),
  executions('?filter[modifiedTime][LT]=<early>&sort=modifiedTime', () => ({ 'filter[modifiedTime][LT]': EARLY, sort: 'modifiedTime' })),
  executions('?filter[nodeId][EQ]=<a node>', (s) => ({ 'filter[nodeId][EQ]': s.nodeId })),
  executions('?filter[jobId][EQ]=<a job>', (s) => ({ 'filter[jobId][EQ]': s.jobId })),
  executions('?page[offset]=900000', () => ({ 'page[offset]': '900000' })),
  executions('', () => ({}), 'narrowed'),
  executions('?filter[status][EQ]=running', () => ({ 'filter[status][EQ]': 'running' }), 'narrowed'),
  executions('', () => ({}), 'denied'),
  ...(
    [
      ['', {}],
      ['?filter[userName][CO]=ber-12345', { 'filter[userName][CO]': 'ber-12345' }],
      ['?filter[system][EQ]=true', { 'filter[system][EQ]': 'true' }],
      ['?sort=-_created', { sort: '-_created' }],
    ] as const
  ).map(([title, raw]): ListCase => ({
    area: 'auth',
    file: 'users',
    spec: USER_LIST_QUERY,
    path: `GET /auth/users${title}`,
    raw: () => raw,
    run: (r, q) => r.users.list(q, undefined),
  })),
  ...(
    [
      ['', {}],
      ['?filter[name][CO]=am-4242', { 'filter[name][CO]': 'am-4242' }],
    ] as const
  ).map(([title, raw]): ListCase => ({
    area: 'auth',
    file: 'groups',
    spec: GROUP_LIST_QUERY,
    path: `GET /auth/groups${title}`,
    raw: () => raw,
    run: (r, q) => r.groups.list(q, undefined),
  })),
  ...(
    [
      ['', {}],
      ['?filter[displayName][SW]=Member 4242', { 'filter[displayName][SW]': 'Member 4242' }],
    ] as const
  ).map(([title, raw]): ListCase => ({
    area: 'auth',
    file: 'principals',
    spec: PRINCIPAL_LIST_QUERY,
    path: `GET /auth/principals${title}`,
    raw: () => raw,
    run: (r, q) => r.groups.listPrincipals(q),
  })),
  ...(
    [
      ['?filter[authDomain][EQ]=<the domain>', {}],
      ['?filter[authDomain][EQ]=<the domain>&sort=-_created', { sort: '-_created' }],
    ] as const
  ).map(([title, raw]): ListCase => ({
    area: 'authdomains',
    file: 'credentials',
    spec: CREDENTIAL_LIST_QUERY,
    path: `GET /authdomains/credentials${title}`,
    raw: (s) => ({ 'filter[authDomain][EQ]': s.domainId, ...raw }),
    run: (r, q, s) => r.credentials.list(q, s),
  })),
  ...(
    [
      ['', () => ({})],
      ['?filter[role][EQ]=<a role>', (s: Seeded) => ({ 'filter[role][EQ]': s.roleId })],
    ] as const
  ).map(([title, raw]): ListCase => ({
    area: 'rbac',
    file: 'role-bindings',
    spec: ROLE_BINDING_LIST_QUERY,
    path: `GET /rbac/rolebindings${title}`,
    raw,
    run: (r, q, s) => r.bindings.list(q, s),
  })),
  ...(
    [
      ['', () => ({})],
      ['?filter[userId][EQ]=<a user>', (s: Seeded) => ({ 'filter[userId][EQ]': s.userId })],
      ['?filter[object][SW]=cluster/jobs/bulk-4242', () => ({ 'filter[object][SW]': 'cluster/jobs/bulk-4242' })],
      ['?filter[decision][EQ]=Deny', () => ({ 'filter[decision][EQ]': 'Deny' })],
    ] as const
  ).map(([title, raw]): ListCase => ({
    area: 'rbac',
    file: 'audit',
    spec: AUDIT_LIST_QUERY,
    path: `GET /rbac/audit${title}`,
    raw,
    run: (r, q) => r.audit.list(q),
  })),
];

function databaseUrl(database: string): string {
  const url = new URL(SERVER_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

/** A readable statement: a line for each clause of the outer query. */
function format(sql: string): string {
  return sql.replace(/ (FROM|WHERE|ORDER BY|LIMIT|OFFSET) /g, '\n  $1 ').replace(/ (AND|OR) /g, ' $1 ');
}

const mask = (text: string) => text.replace(UUID, '<id>');

/** Index names a plan uses. */
function indexesIn(plan: string): Set<string> {
  return new Set([...plan.matchAll(/(?:using|on) ([a-z0-9_]+_(?:idx|key)|PK_[0-9a-f]+)/gi)].map((match) => match[1]));
}

/** The indexes a request relies on by its declarations: those of its sort and of its filters. */
function declaredFor(spec: ListQuerySpec, query: ReturnType<typeof parseListQuery>): string[] {
  const names = (use: IndexUse | undefined): string[] =>
    use === undefined || (typeof use === 'object' && 'unindexed' in use) ? [] : typeof use === 'string' ? [use] : [...use];
  return [...names(spec.indexes?.sorts[query.sort.key]), ...query.filters.flatMap((condition) => names(spec.indexes?.filters[condition.field]))];
}

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const began = performance.now();
  await sql(SERVER_URL, `DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
  await sql(SERVER_URL, `CREATE DATABASE ${DATABASE}`);
  const url = databaseUrl(DATABASE);
  void AppModule; // loaded for its areas' entity declarations
  const dataSource = new DataSource(dataSourceOptions(url, DatabaseModule.entities(), 4));
  const client = new pg.Client({ connectionString: url });
  const files = new Map<string, string[]>();
  const problems: string[] = [];
  try {
    await dataSource.initialize();
    await migrate(dataSource);
    await seedMillion(url, MILLION, (line) => console.log(`  seeded ${line}`), { rebuildIndexes: true });
    await client.connect();
    const one = async (text: string) => (await client.query<{ id: string }>(text)).rows[0].id;
    const seeded: Seeded = {
      namespaceId: await one(`SELECT id FROM namespaces WHERE name = 'seed-ns-03'`),
      userId: await one(`SELECT id FROM users WHERE user_name = 'seed-user-007'`),
      domainId: await one(`SELECT id FROM auth_domains WHERE name = 'seed-domain'`),
      roleId: await one('SELECT id FROM roles ORDER BY name LIMIT 1'),
      nodeId: await one(`SELECT id FROM cluster_nodes WHERE name = 'seed-node-2'`),
      jobId: await one(`SELECT id FROM cluster_jobs WHERE name = 'bulk-4242'`),
    };
    const repositories: Repositories = {
      cluster: new ClusterRepository(dataSource),
      users: new UsersRepository(dataSource),
      groups: new GroupsRepository(dataSource),
      credentials: new CredentialsRepository(dataSource),
      bindings: new RoleBindingsRepository(dataSource),
      audit: new AuditRepository(dataSource),
    };
    for (const listCase of CASES) {
      const statements: { sql: string; parameters: readonly unknown[] }[] = [];
      observeListQueries((sql, parameters) => statements.push({ sql, parameters }));
      const query = parseListQuery(listCase.spec, listCase.raw(seeded));
      const caller = listCase.caller ?? 'administrator';
      const scope: NamespaceScope = {
        administrator: { all: true, except: [] } as const,
        narrowed: { all: false, only: [seeded.namespaceId] } as const,
        denied: {
          all: false,
          only: [seeded.namespaceId],
          items: { prefix: '/ClusterJobs/', hidden: [{ namespaceId: seeded.namespaceId, pattern: '^(?:/ClusterJobs/[0-3].*)$' }] },
        } as const,
      }[caller];
      await listCase.run(repositories, query, scope, caller === 'administrator' ? '00000000-0000-0000-0000-000000000000' : seeded.userId);
      observeListQueries(undefined);
      const who = {
        administrator: '',
        narrowed: ' (a user narrowed to one namespace, who sees their own jobs anywhere)',
        denied: ' (narrowed alike, a Deny there hiding the jobs whose id starts with 0 to 3)',
      }[caller];
      const lines = [`-- ${listCase.path}${who}`];
      const used = new Set<string>();
      for (const { sql, parameters } of statements) {
        const plan = (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) ${sql}`, parameters as unknown[])).rows.map((row) => row['QUERY PLAN']);
        for (const name of indexesIn(plan.join('\n'))) used.add(name);
        lines.push(mask(format(sql)) + ';', `-- parameters: ${mask(JSON.stringify(parameters))}`, ...plan.map((line) => `--   ${mask(line)}`), '');
      }
      const declared = declaredFor(listCase.spec, query);
      if (declared.length > 0 && !declared.some((name) => used.has(name)))
        problems.push(`${listCase.path}: its plans use none of its declared indexes ${declared.join(', ')}`);
      const path = join('src', listCase.area, 'queries', `${listCase.file}.sql`);
      files.set(path, [
        ...(files.get(path) ?? [`-- Generated by npm run queries: the SQL of every list query and its plan at a million rows. Do not edit.`, '']),
        ...lines,
      ]);
    }
  } finally {
    observeListQueries(undefined);
    await client.end().catch(() => undefined);
    if (dataSource.isInitialized) await dataSource.destroy();
    await sql(SERVER_URL, `DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
  }
  let differ = 0;
  for (const [path, lines] of files) {
    const text = lines.join('\n');
    const absolute = join(ROOT, path);
    const committed = existsSync(absolute) ? readFileSync(absolute, 'utf8') : '';
    if (committed === text) continue;
    differ += 1;
    if (!check) {
      mkdirSync(dirname(absolute), { recursive: true });
      writeFileSync(absolute, text);
      console.log(`wrote ${path}`);
      continue;
    }
    console.log(`\n${path} differs from what the lists now run (npm run queries regenerates it):`);
    const before = committed.split('\n');
    lines.forEach((line, i) => {
      if (before[i] !== line) console.log(`  line ${i + 1}\n  - ${before[i] ?? '(none)'}\n  + ${line}`);
    });
  }
  for (const problem of problems) console.log(problem);
  console.log(`${CASES.length} list queries in ${files.size} files, ${((performance.now() - began) / 1000).toFixed(0)} s`);
  if ((check && differ > 0) || problems.length > 0) process.exit(1);
}

await main();

// Every list query, visible: its SQL, how it reads its page and its plan's shape at a million rows
// (or, for a list that stays small, at a deployment's size), committed next to its area as
// src/<area>/queries/<list>.sql (docs/api-conventions.md "Lists at scale"). The cases are
// bench/list-cases.ts; a list with none fails the run.
//   npm run queries          regenerates the files
//   npm run queries:check    regenerates them in memory and fails, showing the difference, if a
//                            committed file differs (CI runs this)
// Copies a database seeded with bench/million.ts (kept on the server as a template, seeded at the
// first run: copySeededDatabase) into a throwaway one (hub_list_snapshots_<pid> on
// BENCH_DATABASE_URL or TEST_DATABASE_URL), runs each list through its repository as the hub does (the list machinery
// reports the SQL it runs) and asks PostgreSQL for each statement's plan without costs; ids are
// masked, as they differ between runs. A plan that loses a declared index shows up in the diff,
// and the run fails if a list's plans use none of the indexes its request relies on.
// The check compares SQL and parameters exactly, plans by how they read the large tables (which
// index, or a sequential scan): ANALYZE samples rows at random, so from one seeding to the next
// the planner may join a few small tables another way (a merge join for a nested loop), which is
// no regression and must not fail CI; a large table read another way does.
import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { AppModule } from '../src/app.module.js';
import { GroupsRepository } from '../src/auth/groups.repository.js';
import { UsersRepository } from '../src/auth/users.repository.js';
import { AuthDomainsRepository } from '../src/authdomains/auth-domains.repository.js';
import { CredentialsRepository } from '../src/authdomains/credentials.repository.js';
import { ClusterRepository } from '../src/cluster/cluster.repository.js';
import type { NamespaceScope } from '../src/common/http/access-scope.js';
import { DatabaseModule } from '../src/common/database/database.module.js';
import { dataSourceOptions, migrate } from '../src/common/database/hub-database.js';
import { observeListQueries } from '../src/common/query/list-page.js';
import { LIST_QUERIES, parseListQuery, type IndexUse, type ListQuerySpec } from '../src/common/query/list-query.js';
import { ExecutionProfilesRepository } from '../src/execution-profiles/execution-profiles.repository.js';
import { ProfileBindingsRepository } from '../src/execution-profiles/profile-bindings.repository.js';
import { NamespacesRepository } from '../src/namespaces/namespaces.repository.js';
import { PipelineEntriesRepository } from '../src/pipelines/pipeline-entries.repository.js';
import { PipelineRunsRepository } from '../src/pipelines/pipeline-runs.repository.js';
import { PipelineTriggersRepository } from '../src/pipelines/pipeline-triggers.repository.js';
import { LinkSessionsRepository } from '../src/sessions/link-sessions.repository.js';
import { AuditRepository } from '../src/rbac/audit.repository.js';
import { RoleBindingsRepository } from '../src/rbac/role-bindings.repository.js';
import { RolesRepository } from '../src/rbac/roles.repository.js';
import { CASES, listsWithoutSnapshot, type Repositories, type Seeded } from './list-cases.js';
import { MILLION, seedDeployment, seedMillion } from './million.js';
import { ROOT, sql } from './support.js';

// One of its own per run, so that runs from several checkouts on one server never drop each other's.
const DATABASE = `hub_list_snapshots_${process.pid}`;
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

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

/** Tables of more than this many rows are those whose reading a plan's shape is judged by. */
const LARGE_TABLE = 100_000;

/**
 * A snapshot file with each plan reduced to how it reads the large tables: each run of plan lines
 * becomes one line listing the large tables' indexes it uses (with `byTable`, only which large
 * tables it reads through an index) and the large tables it scans whole.
 */
function planShapes(text: string, indexTable: Map<string, string>, largeTables: Set<string>, byTable = false): string {
  const out: string[] = [];
  let reads: Set<string> | undefined;
  const flush = () => {
    if (reads) out.push(`-- reads ${[...reads].sort().join(', ') || 'no large table'}`);
    reads = undefined;
  };
  for (const line of text.split('\n')) {
    if (!line.startsWith('--   ')) {
      flush();
      out.push(line);
      continue;
    }
    reads ??= new Set();
    const scanned = /Seq Scan on "?([a-z0-9_]+)/i.exec(line)?.[1];
    if (scanned && largeTables.has(scanned)) reads.add(`seq scan ${scanned}`);
    for (const index of indexesIn(line)) {
      const table = indexTable.get(index) ?? '';
      if (largeTables.has(table)) reads.add(byTable ? `an index of ${table}` : index);
    }
  }
  flush();
  return out.join('\n');
}

/** Index names a plan uses (a primary key's, in upper case, quoted). */
function indexesIn(plan: string): Set<string> {
  return new Set([...plan.matchAll(/(?:using|on) "?([a-z0-9_]+_(?:idx|key)|PK_[0-9a-f]+)/gi)].map((match) => match[1]));
}

/** The indexes a request relies on by its declarations: those of its sort and of its filters. */
function declaredFor(spec: ListQuerySpec, query: ReturnType<typeof parseListQuery>): string[] {
  const names = (use: IndexUse | undefined): string[] =>
    use === undefined || (typeof use === 'object' && 'unindexed' in use) ? [] : typeof use === 'string' ? [use] : [...use];
  return [...names(spec.indexes?.sorts[query.sort.key]), ...query.filters.flatMap((condition) => names(spec.indexes?.filters[condition.field]))];
}

/** What the seeded databases kept between runs are named after, with a hash of what made them. */
const SEED_PREFIX = 'hub_list_seed_';

/** One query's rows, on a connection of its own. */
async function rows<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: SERVER_URL });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/**
 * `database`, made a copy of the seeded database kept on the server as a template, named after a
 * hash of the seeding code and the migrations; seeded first (a million rows a table, two and a half
 * minutes here) when there is none yet, and the templates of other hashes dropped. A copy takes
 * seconds, and carries the template's statistics: the same plans from one run to the next, where
 * every seeding's ANALYZE sampled other rows.
 */
async function copySeededDatabase(database: string): Promise<void> {
  const hash = createHash('sha256');
  const migrations = new URL('../migrations/', import.meta.url);
  for (const file of [
    new URL('./million.js', import.meta.url),
    ...readdirSync(migrations)
      .filter((name) => name.endsWith('.js'))
      .sort()
      .map((name) => new URL(name, migrations)),
  ])
    hash.update(readFileSync(file));
  const template = `${SEED_PREFIX}${hash.digest('hex').slice(0, 12)}`;
  const present = await rows(`SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate`, [template]);
  if (present.length === 0) {
    const building = `${template}_${process.pid}`;
    await sql(SERVER_URL, `CREATE DATABASE ${building}`);
    const url = databaseUrl(building);
    const dataSource = new DataSource(dataSourceOptions(url, DatabaseModule.entities(), 4));
    try {
      await dataSource.initialize();
      await migrate(dataSource);
    } finally {
      if (dataSource.isInitialized) await dataSource.destroy();
    }
    await seedMillion(url, MILLION, (line) => console.log(`  seeded ${line}`), { rebuildIndexes: true });
    await seedDeployment(url, (line) => console.log(`  seeded ${line}`));
    for (const { datname } of await rows<{ datname: string }>(`SELECT datname FROM pg_database WHERE starts_with(datname, $1) AND datname <> $2`, [
      SEED_PREFIX,
      building,
    ])) {
      await sql(SERVER_URL, `ALTER DATABASE ${datname} IS_TEMPLATE false`);
      await sql(SERVER_URL, `DROP DATABASE ${datname} WITH (FORCE)`);
    }
    await sql(SERVER_URL, `ALTER DATABASE ${building} RENAME TO ${template}`);
    await sql(SERVER_URL, `ALTER DATABASE ${template} IS_TEMPLATE true`);
  } else console.log(`  seeded database kept from an earlier run: ${template}`);
  const [{ version }] = await rows<{ version: number }>(`SELECT current_setting('server_version_num')::int AS version`);
  // PostgreSQL 15's default strategy writes every block through the WAL; a file copy is much faster.
  await sql(SERVER_URL, `CREATE DATABASE ${database} TEMPLATE ${template}${version >= 150000 ? ' STRATEGY = FILE_COPY' : ''}`);
}

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  void AppModule; // loaded for its areas' entity declarations, and so every list is defined
  const unsnapshotted = listsWithoutSnapshot(LIST_QUERIES);
  if (unsnapshotted.length > 0) {
    for (const list of unsnapshotted) console.log(`${list} has no snapshot: add its cases to bench/list-cases.ts and run npm run queries`);
    process.exit(1);
  }
  const began = performance.now();
  await sql(SERVER_URL, `DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
  await copySeededDatabase(DATABASE);
  const url = databaseUrl(DATABASE);
  const dataSource = new DataSource(dataSourceOptions(url, DatabaseModule.entities(), 4));
  const client = new pg.Client({ connectionString: url });
  const files = new Map<string, string[]>();
  const problems: string[] = [];
  const indexTable = new Map<string, string>();
  const largeTables = new Set<string>();
  try {
    await dataSource.initialize();
    await migrate(dataSource);
    await client.connect();
    const one = async (text: string) => (await client.query<{ id: string }>(text)).rows[0].id;
    const seeded: Seeded = {
      namespaceId: await one(`SELECT id FROM namespaces WHERE name = 'seed-ns-03'`),
      userId: await one(`SELECT id FROM users WHERE user_name = 'seed-user-007'`),
      domainId: await one(`SELECT id FROM auth_domains WHERE name = 'seed-domain'`),
      roleId: await one(`SELECT id FROM roles WHERE name = 'seed-role'`),
      nodeId: await one(`SELECT id FROM cluster_nodes WHERE name = 'seed-node-2'`),
      jobId: await one(`SELECT id FROM cluster_jobs WHERE name = 'bulk-4242'`),
      groupId: await one(`SELECT id FROM groups WHERE name = 'team-1'`),
      memberId: await one(`SELECT id FROM users WHERE user_name = 'member-1'`),
      profileId: await one(`SELECT id FROM execution_profiles WHERE name = 'profile-0042'`),
      folderId: await one(`SELECT id FROM pipeline_entries WHERE name = 'folder-42'`),
      pipelineId: await one(`SELECT id FROM pipeline_entries WHERE folder_path = '/folder-42' ORDER BY name LIMIT 1`),
      triggerId: await one(
        `SELECT t.id FROM pipeline_triggers t WHERE t.pipeline_id = (SELECT id FROM pipeline_entries WHERE folder_path = '/folder-42' ORDER BY name LIMIT 1) ORDER BY t.created LIMIT 1`,
      ),
    };
    for (const row of (
      await client.query<{ index: string; table: string }>(`SELECT indexname AS index, tablename AS table FROM pg_indexes WHERE schemaname = 'public'`)
    ).rows)
      indexTable.set(row.index, row.table);
    for (const row of (await client.query<{ name: string }>(`SELECT relname AS name FROM pg_class WHERE relkind = 'r' AND reltuples > $1`, [LARGE_TABLE])).rows)
      largeTables.add(row.name);
    const repositories: Repositories = {
      cluster: new ClusterRepository(dataSource),
      users: new UsersRepository(dataSource),
      groups: new GroupsRepository(dataSource),
      credentials: new CredentialsRepository(dataSource),
      bindings: new RoleBindingsRepository(dataSource),
      audit: new AuditRepository(dataSource),
      namespaces: new NamespacesRepository(dataSource),
      roles: new RolesRepository(dataSource),
      domains: new AuthDomainsRepository(dataSource),
      profiles: new ExecutionProfilesRepository(dataSource),
      profileBindings: new ProfileBindingsRepository(dataSource),
      pipelineEntries: new PipelineEntriesRepository(dataSource),
      pipelineRuns: new PipelineRunsRepository(dataSource),
      pipelineTriggers: new PipelineTriggersRepository(dataSource),
      sessions: new LinkSessionsRepository(dataSource),
    };
    for (const listCase of CASES) {
      const statements: { sql: string; parameters: readonly unknown[]; read?: string }[] = [];
      observeListQueries((sql, parameters, read) => statements.push({ sql, parameters, read }));
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
      await listCase.run(repositories, query, scope, caller === 'administrator' ? '00000000-0000-0000-0000-000000000000' : seeded.userId, seeded);
      observeListQueries(undefined);
      const who = {
        administrator: '',
        narrowed:
          listCase.area === 'cluster'
            ? ' (a user narrowed to one namespace, who sees their own jobs anywhere)'
            : listCase.file === 'pipeline-runs'
              ? ' (a user narrowed to one namespace, who sees their own runs anywhere)'
              : ' (a user narrowed to one namespace)',
        denied: ' (narrowed alike, a Deny there hiding the jobs whose id starts with 0 to 3)',
      }[caller];
      const lines = [`-- ${listCase.path}${who}`];
      const used = new Set<string>();
      for (const { sql, parameters, read } of statements) {
        if (read) lines.push(`-- page read ${read}`);
        const plan = (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) ${sql}`, parameters as unknown[])).rows.map((row) => row['QUERY PLAN']);
        for (const name of indexesIn(plan.join('\n'))) used.add(name);
        lines.push(mask(format(sql)) + ';', `-- parameters: ${mask(JSON.stringify(parameters))}`, ...plan.map((line) => `--   ${mask(line)}`), '');
      }
      const declared = declaredFor(listCase.spec, query);
      if (declared.length > 0 && !declared.some((name) => used.has(name)))
        problems.push(`${listCase.path}: its plans use none of its declared indexes ${declared.join(', ')}`);
      const path = join('src', listCase.area, 'queries', `${listCase.file}.sql`);
      files.set(path, [
        ...(files.get(path) ?? [
          `-- Generated by npm run queries: the SQL of every list query, how it reads its page, and its plan ${listCase.spec.small ? "at a deployment's size" : 'at a million rows'}. Do not edit.`,
          '',
        ]),
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
    if (check && planShapes(committed, indexTable, largeTables) === planShapes(text, indexTable, largeTables)) {
      console.log(`${path}: a plan joins small tables otherwise than committed, reading the large ones alike (npm run queries refreshes it)`);
      continue;
    }
    // Where two indexes of a large table serve a page about equally (a namespace's firings: walk the
    // time index, or fetch its triggers' firings and sort them), ANALYZE's random sample tips the
    // planner either way from one seeding to the next. Still read through an index, never whole:
    // passed with a note, and the declared-index check above still holds each plan to its declarations.
    if (check && planShapes(committed, indexTable, largeTables, true) === planShapes(text, indexTable, largeTables, true)) {
      console.log(`${path}: a plan reads a large table through another of its indexes than committed, none of them whole (npm run queries refreshes it)`);
      continue;
    }
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

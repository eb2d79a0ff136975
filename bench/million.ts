// A million jobs and their executions (and a million audit records, users, groups, credentials,
// role bindings, pipeline entries and pipeline runs), seeded by SQL with generate_series into a migrated database: what the list
// benchmark measures and what the committed list-query plans are taken at. Deterministic (fixed
// names, times and spreads) so that plans and figures compare between runs; only ids are random.
import pg from 'pg';

/** Every seeded time is after this instant: job i is submitted SPACING seconds after job i - 1. */
export const SEED_EPOCH = '2026-01-01T00:00:00Z';
export const SEED_SPACING_SECONDS = 10;
export const SEED_NAMESPACES = 20;
export const SEED_OWNERS = 200;

export interface SeedSize {
  readonly jobs: number;
  /** Audit records, users, groups, credentials, role bindings, pipeline entries and pipeline runs, each. */
  readonly others: number;
}

export const MILLION: SeedSize = { jobs: 1_000_000, others: 1_000_000 };

/** Pipeline entries: a hundredth of them folders at the top level, the rest pipelines, nine in ten inside a folder. */
export const SEED_ENTRY_FOLDER_SHARE = 100;

/** The seeded creation time of pipeline entry `i` (1-based, folders first), a second apart; modified at twice that. */
export function seededEntryTime(i: number): string {
  return new Date(Date.parse(SEED_EPOCH) + i * 1000).toISOString();
}

/** Pipeline runs: owned by the first SEED_RUN_OWNERS seeded users, of SEED_RUN_PIPELINES pipelines (one in ten ad hoc). */
export const SEED_RUN_OWNERS = 10;
export const SEED_RUN_PIPELINES = 5;

/** The seeded creation time of pipeline run `i` (1-based), SEED_SPACING_SECONDS apart as the jobs. */
export function seededRunTime(i: number): string {
  return seededTime(i);
}

/** The seeded time of job `i` (1-based), as an ISO date-time. */
export function seededTime(i: number): string {
  return new Date(Date.parse(SEED_EPOCH) + i * SEED_SPACING_SECONDS * 1000).toISOString();
}

/**
 * Seeds a migrated database. Jobs: 99.5 % dead, 0.3 % running, 0.2 % pending, spread over
 * SEED_NAMESPACES namespaces (`seed-ns-00`...) and SEED_OWNERS users (`seed-user-000`...), named
 * `bulk-<i>`; each has one execution on one of four seeded nodes, pending ones included (claimed,
 * never started), so that a hub running on the database leaves them be.
 */
export async function seedMillion(
  url: string,
  size: SeedSize,
  log: (line: string) => void = () => undefined,
  options: { rebuildIndexes?: boolean } = {},
): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const step = async (what: string, text: string) => {
    const began = performance.now();
    await client.query(text);
    log(`${what}: ${((performance.now() - began) / 1000).toFixed(1)} s`);
  };
  try {
    await client.query("SET synchronous_commit = off; SET maintenance_work_mem = '256MB'");
    // Building an index once over a million rows is much faster than growing it row by row.
    // and in a throwaway database, foreign keys need no checking nor triggers firing (the counts are made at the end).
    const rebuilt = options.rebuildIndexes ? await dropIndexes(client) : [];
    if (options.rebuildIndexes) await client.query('SET session_replication_role = replica');
    await step(
      'namespaces, users, nodes',
      `INSERT INTO namespaces (name, version) SELECT format('seed-ns-%s', lpad(i::text, 2, '0')), 1 FROM generate_series(0, ${SEED_NAMESPACES - 1}) i;
       INSERT INTO users (user_name, display_name, email, version, created, modified)
         SELECT format('seed-user-%s', lpad(i::text, 3, '0')), format('Seed User %s', i), format('seed-user-%s@example.org', i), 1,
                '${SEED_EPOCH}'::timestamptz, '${SEED_EPOCH}'::timestamptz
         FROM generate_series(0, ${SEED_OWNERS - 1}) i;
       INSERT INTO cluster_nodes (name, hostname, address, type, is_worker, is_server, status, os, cpu, memory)
         SELECT format('seed-node-%s', i), format('seed-node-%s', i), format('10.0.0.%s', i), 'local', true, false, 'ready', 'linux', 64, 262144
         FROM generate_series(1, 4) i`,
    );
    await step(
      `${size.jobs} jobs`,
      `INSERT INTO cluster_jobs (name, status, type, priority, namespace_id, execution_profile_id, owner_id, task, properties, submit_time, finished_time, created, modified)
       SELECT format('bulk-%s', i),
              CASE WHEN i % 1000 < 3 THEN 'running' WHEN i % 1000 < 5 THEN 'pending' ELSE 'dead' END,
              CASE WHEN i % 10 = 0 THEN 'service' ELSE 'batch' END,
              50, ns.ids[1 + i % ${SEED_NAMESPACES}], (SELECT id FROM execution_profiles ORDER BY created LIMIT 1), us.ids[1 + (i / ${SEED_NAMESPACES}) % ${SEED_OWNERS}],
              jsonb_build_object('name', 'main', 'command', '/usr/bin/python3', 'args', jsonb_build_array('train.py', '--epoch', i::text),
                'envVars', '[]'::jsonb, 'environment', jsonb_build_object('PATH', '/usr/bin:/bin'), 'constraints', '[]'::jsonb),
              jsonb_build_object('pipeline', 'nightly'),
              t, CASE WHEN i % 1000 >= 5 THEN t + interval '1 minute' END, t, t + interval '1 minute'
       FROM generate_series(1, ${size.jobs}) i,
            LATERAL (SELECT '${SEED_EPOCH}'::timestamptz + i * interval '${SEED_SPACING_SECONDS} seconds' AS t) time,
            (SELECT array_agg(id ORDER BY name) AS ids FROM namespaces WHERE name LIKE 'seed-ns-%') ns,
            (SELECT array_agg(id ORDER BY user_name) AS ids FROM users WHERE user_name LIKE 'seed-user-%') us`,
    );
    await step(
      `${size.jobs} executions`,
      `INSERT INTO job_executions (job_id, namespace_id, owner_id, node_id, status, task_name, task_state, reserved_cpu, reserved_memory, driver_ref, exit_code, execution_dir, created, modified)
       SELECT j.id, j.namespace_id, j.owner_id, nodes.ids[1 + abs(hashtext(j.name)) % 4],
              CASE j.status WHEN 'dead' THEN CASE WHEN right(j.name, 2) = '13' THEN 'failed' ELSE 'completed' END ELSE j.status END,
              'main', jsonb_build_object('status', j.status, 'failed', false, 'restarts', 0, 'events', '[]'::jsonb), 1, 1024,
              CASE WHEN j.status <> 'pending' THEN j.name END, CASE WHEN j.status = 'dead' THEN 0 END,
              '/var/lib/hub/executions/' || j.name, j.submit_time, j.modified
       FROM cluster_jobs j, (SELECT array_agg(id ORDER BY name) AS ids FROM cluster_nodes WHERE name LIKE 'seed-node-%') nodes
       WHERE j.name LIKE 'bulk-%'`,
    );
    if (size.others > 0) await seedOthers(step, size.others);
    if (size.others > 0) await seedPipelineEntries(step, size.others);
    if (size.others > 0) await seedPipelineRuns(step, size.others);
    if (size.others > 0) await seedTriggerFirings(step, size.others);
    if (size.others > 0) await seedLinkSessions(step, size.others);
    if (options.rebuildIndexes) {
      const began = performance.now();
      await rebuild(url, rebuilt);
      log(`${rebuilt.length} indexes rebuilt: ${((performance.now() - began) / 1000).toFixed(1)} s`);
      await step(
        'counts',
        `DELETE FROM cluster_job_counts; DELETE FROM job_execution_counts; DELETE FROM job_execution_node_counts;
         INSERT INTO cluster_job_counts (namespace_id, owner_id, status, type, n) SELECT namespace_id, owner_id, status, type, count(*) FROM cluster_jobs GROUP BY 1, 2, 3, 4;
         INSERT INTO job_execution_counts (namespace_id, owner_id, status, n) SELECT namespace_id, owner_id, status, count(*) FROM job_executions GROUP BY 1, 2, 3;
         INSERT INTO job_execution_node_counts (node_id, namespace_id, owner_id, status, n)
           SELECT node_id, namespace_id, owner_id, status, count(*) FROM job_executions GROUP BY 1, 2, 3, 4;
         DELETE FROM pipeline_entry_counts;
         INSERT INTO pipeline_entry_counts (namespace_id, type, n) SELECT namespace_id, type, count(*) FROM pipeline_entries GROUP BY 1, 2`,
      );
    }
    await step('vacuum analyze', 'VACUUM ANALYZE');
  } finally {
    await client.end();
  }
}

const SEEDED_TABLES = [
  'cluster_jobs',
  'job_executions',
  'audit_records',
  'users',
  'groups',
  'role_bindings',
  'credentials',
  'pipeline_entries',
  'pipeline_runs',
  'pipeline_trigger_firings',
  'link_sessions',
];

/** Drops the seeded tables' indexes that back no constraint; returns the statements that make them again. */
async function dropIndexes(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ name: string; definition: string }>(
    `SELECT indexname AS name, indexdef AS definition FROM pg_indexes i
     WHERE schemaname = current_schema() AND tablename = ANY($1) AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.conname = i.indexname)`,
    [SEEDED_TABLES],
  );
  for (const row of rows) await client.query(`DROP INDEX "${row.name}"`);
  return rows.map((row) => row.definition);
}

/** Makes indexes again on two connections, largest tables first, as the machine has two cores or more. */
async function rebuild(url: string, definitions: readonly string[]): Promise<void> {
  const queue = [...definitions];
  const worker = async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query("SET maintenance_work_mem = '256MB'; SET max_parallel_maintenance_workers = 0");
      for (let next = queue.shift(); next !== undefined; next = queue.shift()) await client.query(next);
    } finally {
      await client.end();
    }
  };
  await Promise.all([worker(), worker()]);
}

async function seedOthers(step: (what: string, text: string) => Promise<void>, n: number): Promise<void> {
  await step(
    `${n} audit records`,
    `INSERT INTO audit_records ("when", object, namespace, action, user_id, groups, decision, purpose)
     SELECT '${SEED_EPOCH}'::timestamptz + i * interval '1 second', format('cluster/jobs/bulk-%s', i), 'seed-ns-' || lpad((i % ${SEED_NAMESPACES})::text, 2, '0'),
            CASE WHEN i % 3 = 0 THEN 'Update' ELSE 'Read' END, us.ids[1 + i % ${SEED_OWNERS}], '{}', CASE WHEN i % 50 = 0 THEN 'Deny' ELSE 'Allow' END, 'access'
     FROM generate_series(1, ${n}) i, (SELECT array_agg(id) AS ids FROM users WHERE user_name LIKE 'seed-user-%') us`,
  );
  await step(
    `${n} users`,
    `INSERT INTO users (user_name, display_name, email, version, created, modified)
     SELECT format('member-%s', i), format('Member %s', i), format('member-%s@example.org', i), 1,
            '${SEED_EPOCH}'::timestamptz + i * interval '1 second', '${SEED_EPOCH}'::timestamptz + i * interval '2 second'
     FROM generate_series(1, ${n}) i`,
  );
  await step(
    `${n} groups`,
    `INSERT INTO groups (name, version, created, modified)
     SELECT format('team-%s', i), 1, '${SEED_EPOCH}'::timestamptz + i * interval '1 second', '${SEED_EPOCH}'::timestamptz + i * interval '2 second'
     FROM generate_series(1, ${n}) i`,
  );
  await step(
    `${n} role bindings`,
    `INSERT INTO roles (name, version) SELECT 'seed-role', 1 WHERE NOT EXISTS (SELECT FROM roles);
     INSERT INTO role_bindings (role_id, principal_id, principal_type, namespace_id, created)
     SELECT r.id, u.id, 'user', ns.ids[1 + u.n % ${SEED_NAMESPACES}], u.created
     FROM (SELECT id, created, row_number() OVER () AS n FROM users WHERE user_name LIKE 'member-%') u,
          (SELECT id FROM roles ORDER BY name LIMIT 1) r,
          (SELECT array_agg(id ORDER BY name) AS ids FROM namespaces WHERE name LIKE 'seed-ns-%') ns`,
  );
  await step(
    `${n} credentials`,
    `INSERT INTO auth_domains (namespace_id, name, allow_personal_credentials, version)
       SELECT id, 'seed-domain', true, 1 FROM namespaces WHERE name = 'seed-ns-00';
     INSERT INTO credentials (id, auth_domain_id, principal_id, principal_type, label, type, rank, sealed_data, version, created, modified)
     SELECT gen_random_uuid(), d.id, u.id, 'user', 'key', 'password', u.n, '\\x00', 1, u.created, u.modified
     FROM (SELECT id, created, modified, row_number() OVER () AS n FROM users WHERE user_name LIKE 'member-%') u,
          (SELECT id FROM auth_domains WHERE name = 'seed-domain') d`,
  );
}

/**
 * `n` pipeline entries over the seeded namespaces: `folder-<i>` folders at the top level (a
 * hundredth), then `pipeline-<i>` pipelines, nine in ten inside a folder of their namespace (its
 * path `/folder-<k>`), one in ten at the top level. Created a second apart, folders first.
 */
async function seedPipelineEntries(step: (what: string, text: string) => Promise<void>, n: number): Promise<void> {
  const folders = Math.floor(n / SEED_ENTRY_FOLDER_SHARE);
  await step(
    `${n} pipeline entries`,
    `INSERT INTO pipeline_entries (namespace_id, type, name, folder_id, folder_path, spec, version, created, modified)
     SELECT ns.ids[1 + i % ${SEED_NAMESPACES}], 'Folder', format('folder-%s', i), NULL, '/', NULL, 1,
            '${SEED_EPOCH}'::timestamptz + i * interval '1 second', '${SEED_EPOCH}'::timestamptz + 2 * i * interval '1 second'
     FROM generate_series(1, ${folders}) i, (SELECT array_agg(id ORDER BY name) AS ids FROM namespaces WHERE name LIKE 'seed-ns-%') ns;
     INSERT INTO pipeline_entries (namespace_id, type, name, folder_id, folder_path, spec, version, created, modified)
     SELECT f.namespace_id, 'Pipeline', format('pipeline-%s', i), CASE WHEN i % 10 = 0 THEN NULL ELSE f.id END,
            CASE WHEN i % 10 = 0 THEN '/' ELSE '/' || f.name END,
            '{"nodes":[{"name":"main","task":{"type":"rawexec","command":"true"}}]}'::jsonb, 1,
            '${SEED_EPOCH}'::timestamptz + (${folders} + i) * interval '1 second', '${SEED_EPOCH}'::timestamptz + 2 * (${folders} + i) * interval '1 second'
     FROM generate_series(1, ${n - folders}) i
     JOIN (SELECT id, namespace_id, name, row_number() OVER (ORDER BY created) AS k FROM pipeline_entries WHERE type = 'Folder') f ON f.k = 1 + i % ${folders}`,
  );
}

/**
 * `n` pipeline runs over the seeded namespaces (run `i` in `seed-ns-<i % 20>`), owned by the first
 * SEED_RUN_OWNERS seeded users (`seed-user-000`...; twenty runs in a row each, so that every owner
 * has runs in every namespace), of the first SEED_RUN_PIPELINES pipelines of `/folder-42` by name
 * (what the snapshots' `pipelineId` names) or ad hoc (one in ten). Created SEED_SPACING_SECONDS
 * apart; 93 % ended (80 Succeeded, 11 Failed, 2 Cancelled: started 5 s and finished a minute after
 * they were created), 5 % Executing (started), 2 % Queued. They have no nodes: a hub running on the
 * database would take the unended ones up, so bench/lists.ts, which starts one, seeds no others.
 */
async function seedPipelineRuns(step: (what: string, text: string) => Promise<void>, n: number): Promise<void> {
  await step(
    `${n} pipeline runs`,
    `INSERT INTO pipeline_runs (namespace_id, pipeline_id, owner_id, owner_name, execution_profile_id, spec, state, created, started_at, finished_at)
     SELECT ns.ids[1 + i % ${SEED_NAMESPACES}], CASE WHEN i % 10 <> 0 THEN pl.ids[1 + i % ${SEED_RUN_PIPELINES}] END,
            us.ids[1 + (i / ${SEED_NAMESPACES}) % ${SEED_RUN_OWNERS}], us.names[1 + (i / ${SEED_NAMESPACES}) % ${SEED_RUN_OWNERS}],
            '00000000-0000-4000-8000-000000000042', '{"nodes":[{"name":"main","task":{"type":"rawexec","command":"true"}}]}'::jsonb, s.state,
            t, CASE WHEN s.state <> 'Queued' THEN t + interval '5 seconds' END, CASE WHEN s.state NOT IN ('Queued', 'Executing') THEN t + interval '1 minute' END
     FROM generate_series(1, ${n}) i,
          LATERAL (SELECT '${SEED_EPOCH}'::timestamptz + i * interval '${SEED_SPACING_SECONDS} seconds' AS t) time,
          LATERAL (SELECT CASE WHEN i % 100 < 2 THEN 'Queued' WHEN i % 100 < 7 THEN 'Executing' WHEN i % 100 < 9 THEN 'Cancelled'
                               WHEN i % 100 < 20 THEN 'Failed' ELSE 'Succeeded' END AS state) s,
          (SELECT array_agg(id ORDER BY name) AS ids FROM namespaces WHERE name LIKE 'seed-ns-%') ns,
          (SELECT array_agg(id ORDER BY user_name) AS ids, array_agg(user_name ORDER BY user_name) AS names
             FROM (SELECT id, user_name FROM users WHERE user_name LIKE 'seed-user-%' ORDER BY user_name LIMIT ${SEED_RUN_OWNERS}) u) us,
          (SELECT array_agg(id ORDER BY name) AS ids
             FROM (SELECT id, name FROM pipeline_entries WHERE folder_path = '/folder-42' ORDER BY name LIMIT ${SEED_RUN_PIPELINES}) p) pl`,
  );
}

/** Triggers: SEED_TRIGGERS_PER_PIPELINE of each of SEED_TRIGGER_PIPELINES pipelines (those of `/folder-42` first, by name), a tenth disabled, a tenth File. */
export const SEED_TRIGGERS_PER_PIPELINE = 100;
export const SEED_TRIGGER_PIPELINES = 100;

/** The seeded due time of trigger firing `i` (1-based), SEED_SPACING_SECONDS apart as the jobs. */
export function seededFiringTime(i: number): string {
  return seededTime(i);
}

/**
 * SEED_TRIGGERS_PER_PIPELINE triggers of each of SEED_TRIGGER_PIPELINES pipelines, those of
 * `/folder-42` by name first (created a second apart, those of the first pipeline first), none due
 * (a hub on the database leaves them be), and `n` firings over them round-robin, due
 * SEED_SPACING_SECONDS apart: 95 % Success with a run id, 5 % Failed with an error.
 */
async function seedTriggerFirings(step: (what: string, text: string) => Promise<void>, n: number): Promise<void> {
  const triggers = SEED_TRIGGER_PIPELINES * SEED_TRIGGERS_PER_PIPELINE;
  await step(
    `${triggers} triggers`,
    `INSERT INTO pipeline_triggers (pipeline_id, owner_id, owner_name, type, disabled, spec, execution_profile_id, enabled_at, next_due, version, created, modified)
     SELECT pl.ids[1 + (k - 1) / ${SEED_TRIGGERS_PER_PIPELINE}], u.id, u.user_name, CASE WHEN k % 10 = 5 THEN 'File' ELSE 'Cron' END, k % 10 = 0,
            CASE WHEN k % 10 = 5 THEN '{"type":"File","path":"/srv/inbox","pattern":"*.csv","event":"Arrival"}'::jsonb
                 ELSE '{"type":"Cron","cronExpression":"*/10 * * * * *"}'::jsonb END,
            '00000000-0000-4000-8000-000000000042', t, NULL, 1, t, t + interval '1 day'
     FROM generate_series(1, ${triggers}) k,
          LATERAL (SELECT '${SEED_EPOCH}'::timestamptz + k * interval '1 second' AS t) time,
          (SELECT id, user_name FROM users WHERE user_name = 'seed-user-000') u,
          (SELECT array_agg(id ORDER BY name) AS ids
             FROM (SELECT id, name FROM pipeline_entries WHERE type = 'Pipeline' ORDER BY folder_path = '/folder-42' DESC, name LIMIT ${SEED_TRIGGER_PIPELINES}) p) pl`,
  );
  await step(
    `${n} trigger firings`,
    `INSERT INTO pipeline_trigger_firings (trigger_id, trigger_time, kind, state, run_id, error, created)
     SELECT tr.ids[1 + i % ${triggers}], t, 'Cron', CASE WHEN i % 20 = 0 THEN 'Failed' ELSE 'Success' END,
            CASE WHEN i % 20 <> 0 THEN gen_random_uuid() END, CASE WHEN i % 20 = 0 THEN 'The run was refused' END, t
     FROM generate_series(1, ${n}) i,
          LATERAL (SELECT '${SEED_EPOCH}'::timestamptz + i * interval '${SEED_SPACING_SECONDS} seconds' AS t) time,
          (SELECT array_agg(id ORDER BY created) AS ids FROM pipeline_triggers) tr`,
  );
}

/** The size a real deployment gives the lists that stay small (docs/api-conventions.md "Shallow pages"). */
export const DEPLOYMENT = { namespaces: 10_000, roles: 1_000, authDomains: 1_000, profiles: 1_000, profileBindings: 1_000, nodes: 100, groupMembers: 100 };

/**
 * Seeds the small lists at a deployment's size beside a million-row seed: namespaces (with their
 * names and times spread as bench/run.ts's, `team-<i>-<family>`), roles, authentication domains,
 * execution profiles and their bindings, nodes (to DEPLOYMENT.nodes with the four seeded ones) and
 * the members of one group (`team-1`, with one group inside it). Names are deterministic.
 */
export async function seedDeployment(url: string, log: (line: string) => void = () => undefined): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const began = performance.now();
  const d = DEPLOYMENT;
  try {
    await client.query(`
      INSERT INTO namespaces (name, description, is_default, version, created, modified)
      SELECT format('team-%s-%s', lpad(i::text, 5, '0'), (ARRAY['data','web','ml','ops','finance','hr','sales','infra','qa','research'])[1 + abs(hashint4(i)) % 10]),
             'Namespace number ' || i, false, 1, '${SEED_EPOCH}'::timestamptz + make_interval(secs => i), '${SEED_EPOCH}'::timestamptz + make_interval(secs => 2 * i)
      FROM generate_series(1, ${d.namespaces - SEED_NAMESPACES - 1}) i;
      INSERT INTO roles (name, description, permissions, version, created, modified)
      SELECT format('role-%s', lpad(i::text, 4, '0')), 'Role number ' || i, '[]', 1, '${SEED_EPOCH}'::timestamptz + make_interval(secs => i), '${SEED_EPOCH}'::timestamptz + make_interval(secs => i)
      FROM generate_series(1, ${d.roles}) i;
      INSERT INTO auth_domains (namespace_id, name, allow_personal_credentials, version, created, modified)
      SELECT ns.id, format('domain-%s', lpad(ns.n::text, 4, '0')), ns.n % 2 = 0, 1, '${SEED_EPOCH}'::timestamptz + make_interval(secs => ns.n), '${SEED_EPOCH}'::timestamptz + make_interval(secs => ns.n)
      FROM (SELECT id, row_number() OVER (ORDER BY name) AS n FROM namespaces WHERE name LIKE 'team-%') ns WHERE ns.n < ${d.authDomains};
      INSERT INTO execution_profiles (name, description, version, created, modified)
      SELECT format('profile-%s', lpad(i::text, 4, '0')), 'Profile number ' || i, 1, '${SEED_EPOCH}'::timestamptz + make_interval(secs => i), '${SEED_EPOCH}'::timestamptz + make_interval(secs => i)
      FROM generate_series(1, ${d.profiles - 1}) i;
      INSERT INTO execution_profile_bindings (id, execution_profile_id, namespace_id, is_default, version)
      SELECT gen_random_uuid(), p.id, ns.id, false, 1
      FROM (SELECT id, row_number() OVER (ORDER BY name) AS n FROM execution_profiles WHERE name LIKE 'profile-%') p
      JOIN (SELECT id, row_number() OVER (ORDER BY name) AS n FROM namespaces WHERE name LIKE 'team-%') ns ON ns.n = p.n
      UNION ALL
      SELECT gen_random_uuid(), (SELECT id FROM execution_profiles WHERE name = 'Standard'), id, true, 1 FROM namespaces WHERE name = 'seed-ns-03';
      INSERT INTO cluster_nodes (name, hostname, address, type, is_worker, is_server, status, labels, os, cpu, memory)
      SELECT format('node-%s', lpad(i::text, 3, '0')), format('node-%s', i), format('10.1.%s.%s', i / 256, i % 256), 'local', true, i <= 3,
             CASE WHEN i % 20 = 0 THEN 'down' ELSE 'ready' END, CASE WHEN i % 4 = 0 THEN '{gpu}'::text[] ELSE '{}'::text[] END, 'linux', 64, 262144
      FROM generate_series(1, ${d.nodes - 4}) i;
      INSERT INTO groups (name, version) VALUES ('team-inside-1', 1) ON CONFLICT DO NOTHING;
      INSERT INTO group_user_members (group_id, user_id)
      SELECT (SELECT id FROM groups WHERE name = 'team-1'), id FROM users WHERE user_name LIKE 'member-%' ORDER BY user_name LIMIT ${d.groupMembers};
      INSERT INTO group_group_members (group_id, member_group_id)
      SELECT (SELECT id FROM groups WHERE name = 'team-1'), (SELECT id FROM groups WHERE name = 'team-inside-1');
      INSERT INTO group_user_members (group_id, user_id)
      SELECT id, (SELECT id FROM users WHERE user_name = 'member-1') FROM groups WHERE name IN ('team-2', 'team-3', 'team-inside-1')`);
    const tables = [
      'namespaces',
      'roles',
      'auth_domains',
      'execution_profiles',
      'execution_profile_bindings',
      'cluster_nodes',
      'group_user_members',
      'group_group_members',
    ];
    for (const table of tables) await client.query(`VACUUM ANALYZE ${table}`);
    log(`deployment-size namespaces, roles, domains, profiles, bindings, nodes: ${((performance.now() - began) / 1000).toFixed(1)} s`);
  } finally {
    await client.end();
  }
}

/** Link session configurations the seeded sessions name, one in SEED_SESSION_CONFIGURATIONS each. */
export const SEED_SESSION_CONFIGURATIONS = ['files', 'notebook', 'desktop', 'rstudio', 'vscode'];

/**
 * Link sessions: SEED_SPACING_SECONDS apart as the jobs, of every seeded user, 0.3 % Ready, 0.2 %
 * Pending, 0.1 % Blocked, the rest ended (a fifth Failed); each lives a day. None has a job, so a
 * hub on the database would reap the live ones, never start anything.
 */
async function seedLinkSessions(step: (what: string, text: string) => Promise<void>, n: number): Promise<void> {
  const configurations = `ARRAY[${SEED_SESSION_CONFIGURATIONS.map((name) => `'${name}'`).join(', ')}]`;
  await step(
    `${n} link sessions`,
    `INSERT INTO link_sessions (id, owner_id, owner_name, configuration_name, status, host, port, secret, access_token, readiness, start_timeout_seconds,
       start_time, ready_time, finished_time, death_clock, next_expected_heartbeat, events)
     SELECT gen_random_uuid(), us.ids[1 + (i / ${SEED_NAMESPACES}) % ${SEED_OWNERS}], us.names[1 + (i / ${SEED_NAMESPACES}) % ${SEED_OWNERS}],
            (${configurations})[1 + i % ${SEED_SESSION_CONFIGURATIONS.length}], s.status, '127.0.0.1', 40000 + i % 20000, md5(i::text), md5('token' || i),
            '{"type":"port"}'::jsonb, 60, t, CASE WHEN s.status NOT IN ('Pending', 'Blocked') THEN t + interval '1 second' END,
            CASE WHEN s.status IN ('Failed', 'Terminated') THEN t + interval '1 hour' END, t + interval '1 day', t + interval '1 minute', '[]'::jsonb
     FROM generate_series(1, ${n}) i,
          LATERAL (SELECT '${SEED_EPOCH}'::timestamptz + i * interval '${SEED_SPACING_SECONDS} seconds' AS t) time,
          LATERAL (SELECT CASE WHEN i % 1000 < 3 THEN 'Ready' WHEN i % 1000 < 5 THEN 'Pending' WHEN i % 1000 < 6 THEN 'Blocked'
                               WHEN i % 5 = 0 THEN 'Failed' ELSE 'Terminated' END AS status) s,
          (SELECT array_agg(id ORDER BY user_name) AS ids, array_agg(user_name ORDER BY user_name) AS names FROM users WHERE user_name LIKE 'seed-user-%') us`,
  );
}

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { ListCounts } from '../../src/common/query/list-counts.js';
import { LIST_QUERIES, type IndexUse } from '../../src/common/query/list-query.js';
import { bearer, startTestHub, type TestHub } from '../support/test-hub.js';

const SOURCE = join(import.meta.dirname, '..', '..', 'src');

/** Every source file that defines a list query, loaded so that each registers itself. */
async function loadEveryListQuery(): Promise<void> {
  const files = readdirSync(SOURCE, { recursive: true, encoding: 'utf8' }).filter(
    (file) => file.endsWith('.ts') && !file.endsWith('.spec.ts') && !file.includes('common/query/'),
  );
  for (const file of files) if (readFileSync(join(SOURCE, file), 'utf8').includes('defineListQuery(')) await import(join(SOURCE, file));
}

function indexNames(use: IndexUse): string[] {
  if (typeof use === 'string') return [use];
  return 'unindexed' in use ? [] : [...use];
}

/** `alias.column` or an expression over one (`lower(alias.column) COLLATE "C"`) as an index definition spells it, without the alias. */
function asIndexed(expression: string): string | undefined {
  if (!/^[a-z(]/.test(expression) || expression.includes('"') !== expression.includes('COLLATE')) return undefined; // a derived table's column
  return expression.replace(/\b[a-z_]+\.([a-z_]+)/g, '$1');
}

describe('lists at scale', () => {
  let hub: TestHub;
  let db: pg.Pool;

  beforeAll(async () => {
    hub = await startTestHub();
    db = new pg.Pool({ connectionString: hub.databaseUrl, max: 12 });
    await loadEveryListQuery();
  });

  afterAll(async () => {
    await db.end();
    await hub.close();
  });

  describe('declared indexes, against the database', () => {
    let indexes: Map<string, { table: string; definition: string; valid: boolean }>;

    beforeAll(async () => {
      const { rows } = await db.query<{ name: string; table: string; definition: string; valid: boolean }>(
        `SELECT c.relname AS name, t.relname AS "table", pg_get_indexdef(c.oid) AS definition, i.indisvalid AS valid
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = current_schema()`,
      );
      indexes = new Map(rows.map((row) => [row.name, row]));
    });

    it('finds the list queries of every area, each declaring its indexes or why it stays small', () => {
      const specs = [...LIST_QUERIES];
      expect(specs.length).toBeGreaterThanOrEqual(18);
      for (const spec of specs) expect(spec.indexes !== undefined || (spec.small ?? '').length > 0).toBe(true);
      // The lists that grow with use declare their indexes.
      const declared = specs.filter((spec) => spec.indexes).map((spec) => spec.tieBreaker);
      expect(declared).toEqual(
        expect.arrayContaining(['job.id', 'execution."id"', 'users.id', 'groups.id', 'principal."id"', 'credential."id"', 'binding."id"', 'audit.id']),
      );
    });

    it('names only valid indexes that exist, and each sort and filter over a table column is a key of its index', () => {
      const problems: string[] = [];
      for (const spec of [...LIST_QUERIES].filter((candidate) => candidate.indexes)) {
        const declarations: [string, string, IndexUse][] = [
          ...Object.entries(spec.indexes?.sorts ?? {}).map(([key, use]): [string, string, IndexUse] => [`sort ${key}`, spec.sorts[key], use]),
          ...Object.entries(spec.indexes?.filters ?? {}).map(([field, use]): [string, string, IndexUse] => [
            `filter ${field}`,
            spec.filters[field].prefixColumn ?? spec.filters[field].column ?? '',
            use,
          ]),
        ];
        for (const [what, expression, use] of declarations) {
          const names = indexNames(use);
          if (typeof use === 'object' && 'unindexed' in use) expect(use.unindexed.length).toBeGreaterThan(10);
          for (const name of names) {
            const index = indexes.get(name);
            if (!index) problems.push(`${spec.tieBreaker} ${what}: no index ${name}`);
            else if (!index.valid) problems.push(`${spec.tieBreaker} ${what}: ${name} is not valid`);
          }
          const column = asIndexed(expression);
          const definitions = names.map((name) => indexes.get(name)?.definition ?? '');
          if (column && names.length > 0 && !definitions.some((definition) => definition.includes(column)))
            problems.push(`${spec.tieBreaker} ${what}: none of ${names.join(', ')} has ${column} as a key`);
        }
      }
      expect(problems).toEqual([]);
    });

    it('keeps the counts a list declares in a table with the declared columns, by triggers on every change', async () => {
      const counted = [...LIST_QUERIES].flatMap((spec) => spec.counts ?? []);
      expect(counted.map((counts) => counts.table).sort()).toEqual([
        'cluster_job_counts',
        'job_execution_counts',
        'job_execution_node_counts',
        'pipeline_entry_counts',
      ]);
      for (const counts of counted) {
        const { rows } = await db.query<{ name: string }>(`SELECT column_name AS name FROM information_schema.columns WHERE table_name = $1`, [counts.table]);
        expect(rows.map((row) => row.name)).toEqual(
          expect.arrayContaining(['n', counts.namespace, ...(counts.owner ? [counts.owner] : []), ...Object.values(counts.filters)]),
        );
        const triggers = await db.query<{ name: string }>(`SELECT tgname AS name FROM pg_trigger WHERE tgname LIKE $1 AND tgenabled = 'O'`, [
          `${counts.table}_%`,
        ]);
        expect(triggers.rows.map((row) => row.name).sort()).toEqual(['delete', 'insert', 'truncate', 'update'].map((event) => `${counts.table}_${event}`));
      }
    });
  });

  describe("a job's name through the trigram index's pending list", () => {
    it('finds by a part of their names jobs whose keys wait in the list, after status changes, and once the list is emptied', async () => {
      const index = await db.query<{ options: string[] }>(`SELECT reloptions AS options FROM pg_class WHERE relname = 'cluster_jobs_name_trgm_idx'`);
      expect(index.rows[0].options).toEqual(expect.arrayContaining(['fastupdate=on', 'gin_pending_list_limit=64']));
      const ids = await db.query<{ namespace: string; profile: string }>(
        `SELECT (SELECT id FROM namespaces WHERE name = 'default') AS namespace, (SELECT id FROM execution_profiles LIMIT 1) AS profile`,
      );
      const { namespace, profile } = ids.rows[0];
      await db.query(
        `INSERT INTO cluster_jobs (name, status, type, priority, namespace_id, execution_profile_id, task, submit_time)
         SELECT format('pending-list-%s-fan', i), 'pending', 'batch', 50, $1, $2, '{}', now() FROM generate_series(1, 300) i`,
        [namespace, profile],
      );
      const auth = bearer(hub.adminToken);
      const found = async (part: string) => {
        const reply = await hub.inject({ method: 'GET', url: `/api/v2/cluster/jobs?filter[name][CO]=${part}`, headers: auth });
        expect(reply.statusCode).toBe(200);
        return reply.json<{ total: number }>().total;
      };
      expect(await found('list-17')).toBe(11); // 17, 170–179
      // Every status change inserts the name's keys again: still one job each.
      await db.query(`UPDATE cluster_jobs SET status = 'running' WHERE name LIKE 'pending-list-%'`);
      await db.query(`UPDATE cluster_jobs SET status = 'dead' WHERE name LIKE 'pending-list-1__-fan'`);
      expect(await found('list-17')).toBe(11);
      expect(await found('t-299-f')).toBe(1);
      // What the list held moves into the index: found the same.
      const moved = await db.query<{ pages: number }>(`SELECT gin_clean_pending_list('cluster_jobs_name_trgm_idx'::regclass)::int AS pages`);
      expect(moved.rows[0].pages).toBeGreaterThan(0);
      expect(await found('list-17')).toBe(11);
      expect(await found('list-301')).toBe(0);
      await db.query(`DELETE FROM cluster_jobs WHERE name LIKE 'pending-list-%'`);
    });
  });

  describe('total under concurrent writes', () => {
    const WRITERS = 6;
    const ROUNDS = 15;

    it('stays exact while jobs and executions are inserted, changed, deleted and rolled back, and the counts folded, alongside', async () => {
      const auth = bearer(hub.adminToken);
      const created = await hub.inject({ method: 'POST', url: '/api/v2/namespaces', headers: auth, payload: { name: 'counted' } });
      expect(created.statusCode).toBe(201);
      const user = await hub.inject({
        method: 'POST',
        url: '/api/v2/auth/users',
        headers: auth,
        payload: { userName: 'counted-user', password: 'a-counted-password' },
      });
      const roles = await hub.inject({ method: 'GET', url: '/api/v2/rbac/roles?filter[name][EQ]=ClusterAdministrator', headers: auth });
      const bound = await hub.inject({
        method: 'POST',
        url: '/api/v2/rbac/rolebindings',
        headers: auth,
        payload: { role: roles.json<{ data: { id: string }[] }>().data[0].id, principal: user.json<{ _id: string }>()._id, namespace: 'counted' },
      });
      expect(bound.statusCode).toBe(201);
      const narrowed = bearer(await hub.login('counted-user', 'a-counted-password'));
      const ids = await db.query<{ namespaces: string[]; profile: string; owners: string[]; node: string }>(
        `SELECT (SELECT array_agg(id) FROM namespaces) AS namespaces, (SELECT id FROM execution_profiles LIMIT 1) AS profile,
                (SELECT array_agg(id) FROM users WHERE user_name IN ('admin', 'counted-user')) AS owners, (SELECT id FROM cluster_nodes LIMIT 1) AS node`,
      );
      const { namespaces, profile, owners, node } = ids.rows[0];
      expect(node).toEqual(expect.any(String));

      // Each writer: a transaction per round inserting a few jobs (one execution each), moving some jobs'
      // and executions' statuses, deleting one; every third round rolled back.
      const writer = async (w: number) => {
        for (let round = 0; round < ROUNDS; round += 1) {
          const client = await db.connect();
          try {
            await client.query('BEGIN');
            await client.query(
              `WITH jobs AS (
                 INSERT INTO cluster_jobs (name, status, type, priority, namespace_id, execution_profile_id, owner_id, task, submit_time)
                 SELECT format('w%s-%s-%s', $1::int, $2::int, i), 'pending', CASE WHEN i % 2 = 0 THEN 'batch' ELSE 'service' END, 50,
                        ($3::uuid[])[1 + (i + $1::int) % cardinality($3::uuid[])], $4, ($5::uuid[])[1 + (i + $2::int) % 2], '{}', now()
                 FROM generate_series(1, 1 + ($1::int + $2::int) % 4) i RETURNING id)
               INSERT INTO job_executions (job_id, status, task_name, task_state, reserved_cpu, reserved_memory, execution_dir)
               SELECT id, 'pending', 'main', '{}', 1, 1, '' FROM jobs`,
              [w, round, namespaces, profile, owners],
            );
            await client.query(
              `UPDATE job_executions SET status = 'running', node_id = $1
               WHERE id IN (SELECT id FROM job_executions WHERE status = 'pending' ORDER BY random() LIMIT 2 FOR UPDATE SKIP LOCKED)`,
              [node],
            );
            await client.query(
              `UPDATE cluster_jobs SET status = 'dead' WHERE id IN (SELECT id FROM cluster_jobs WHERE status = 'pending' ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED)`,
            );
            if (round % 4 === 3)
              await client.query(`DELETE FROM cluster_jobs WHERE id IN (SELECT id FROM cluster_jobs ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED)`);
            await client.query(round % 3 === 2 ? 'ROLLBACK' : 'COMMIT');
          } catch (error) {
            // A delete cascades to executions another writer may hold: PostgreSQL then aborts one of
            // the two (a deadlock), which is one more rolled-back transaction for the counts to survive.
            if ((error as { code?: string }).code !== '40P01') throw error;
            await client.query('ROLLBACK');
          } finally {
            client.release();
          }
        }
      };

      // Meanwhile: in any one snapshot, the counts sum to the rows; folding changes no sum.
      let writing = true;
      const mismatches: string[] = [];
      const watcher = async () => {
        const counts = hub.app.get(ListCounts);
        while (writing) {
          const client = await db.connect();
          try {
            await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
            const { rows } = await client.query<{
              jobs: string;
              counted: string;
              executions: string;
              countedExecutions: string;
              onNode: string;
              countedOnNode: string;
            }>(
              `SELECT (SELECT count(*) FROM cluster_jobs) AS jobs, (SELECT coalesce(sum(n), 0) FROM cluster_job_counts) AS counted,
                      (SELECT count(*) FROM job_executions) AS executions, (SELECT coalesce(sum(n), 0) FROM job_execution_counts) AS "countedExecutions",
                      (SELECT count(*) FROM job_executions WHERE node_id = $1) AS "onNode",
                      (SELECT coalesce(sum(n), 0) FROM job_execution_node_counts WHERE node_id = $1) AS "countedOnNode"`,
              [node],
            );
            await client.query('COMMIT');
            const [{ jobs, counted, executions, countedExecutions, onNode, countedOnNode }] = rows;
            if (jobs !== counted || executions !== countedExecutions || onNode !== countedOnNode) mismatches.push(JSON.stringify(rows[0]));
          } finally {
            client.release();
          }
          await Promise.all(ListCounts.tables().map((table) => counts.fold(table)));
        }
      };
      const watching = watcher();
      await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
      writing = false;
      await watching;
      expect(mismatches).toEqual([]);

      // Afterwards, every total the lists answer is the number of matching rows.
      const user0 = user.json<{ _id: string }>()._id;
      const namespaceId = (await db.query<{ id: string }>(`SELECT id FROM namespaces WHERE name = 'counted'`)).rows[0].id;
      const cases: [string, Record<string, string>, string, unknown[]][] = [
        ['cluster/jobs', auth, 'SELECT count(*) FROM cluster_jobs', []],
        ['cluster/jobs?filter[status][EQ]=pending', auth, `SELECT count(*) FROM cluster_jobs WHERE status = 'pending'`, []],
        [
          'cluster/jobs?filter[status][IN]=dead,running&filter[type][EQ]=batch',
          auth,
          `SELECT count(*) FROM cluster_jobs WHERE status IN ('dead', 'running') AND type = 'batch'`,
          [],
        ],
        ['cluster/jobs?filter[name][ST]=w1-', auth, `SELECT count(*) FROM cluster_jobs WHERE name LIKE 'w1-%'`, []],
        ['cluster/jobs', narrowed, 'SELECT count(*) FROM cluster_jobs WHERE namespace_id = $1 OR owner_id = $2', [namespaceId, user0]],
        [
          'cluster/jobs?filter[status][EQ]=dead',
          narrowed,
          `SELECT count(*) FROM cluster_jobs WHERE (namespace_id = $1 OR owner_id = $2) AND status = 'dead'`,
          [namespaceId, user0],
        ],
        ['cluster/executions', auth, 'SELECT count(*) FROM job_executions', []],
        ['cluster/executions?filter[status][EQ]=running', auth, `SELECT count(*) FROM job_executions WHERE status = 'running'`, []],
        [`cluster/executions?filter[nodeId][EQ]=${node}`, auth, 'SELECT count(*) FROM job_executions WHERE node_id = $1', [node]],
        [
          `cluster/executions?filter[nodeId][EQ]=${node}&filter[status][IN]=running,completed`,
          narrowed,
          `SELECT count(*) FROM job_executions e JOIN cluster_jobs j ON j.id = e.job_id WHERE (j.namespace_id = $1 OR j.owner_id = $2) AND e.node_id = $3 AND e.status IN ('running', 'completed')`,
          [namespaceId, user0, node],
        ],
        [
          'cluster/executions',
          narrowed,
          'SELECT count(*) FROM job_executions e JOIN cluster_jobs j ON j.id = e.job_id WHERE j.namespace_id = $1 OR j.owner_id = $2',
          [namespaceId, user0],
        ],
      ];
      const totalsAre = async (expectations: typeof cases) => {
        for (const [path, headers, sql, values] of expectations) {
          const response = await hub.inject({ method: 'GET', url: `/api/v2/${path}`, headers });
          expect(response.statusCode).toBe(200);
          const expected = Number((await db.query<{ count: string }>(sql, values)).rows[0].count);
          expect({ path, total: response.json<{ total: number }>().total }).toEqual({ path, total: expected });
        }
      };
      await totalsAre(cases);
      // With a Deny that hides half the namespace's jobs (those whose id starts with 0 to 7), counted row by row in two
      // parts: what the scope leaves them, and what they own besides (hidden or elsewhere), each once.
      const deny = await hub.inject({
        method: 'POST',
        url: '/api/v2/rbac/roles',
        headers: auth,
        payload: { name: 'counted-deny', permissions: [{ object: '/ClusterJobs/[0-7].*', objectMatcher: 'regex', actions: ['Read'], effect: 'Deny' }] },
      });
      const denyBound = await hub.inject({
        method: 'POST',
        url: '/api/v2/rbac/rolebindings',
        headers: auth,
        payload: { role: deny.json<{ id: string }>().id, principal: user0, namespace: 'counted' },
      });
      expect([deny.statusCode, denyBound.statusCode]).toEqual([201, 201]);
      const shown = `(j.namespace_id = $1 AND j.id::text !~ '^[0-7]') OR j.owner_id = $2`;
      await totalsAre([
        ['cluster/jobs', narrowed, `SELECT count(*) FROM cluster_jobs j WHERE ${shown}`, [namespaceId, user0]],
        ['cluster/jobs?filter[status][EQ]=dead', narrowed, `SELECT count(*) FROM cluster_jobs j WHERE (${shown}) AND status = 'dead'`, [namespaceId, user0]],
        ['cluster/executions', narrowed, `SELECT count(*) FROM job_executions e JOIN cluster_jobs j ON j.id = e.job_id WHERE ${shown}`, [namespaceId, user0]],
      ]);
      // Folded, a table holds at most a row per key.
      await hub.app.get(ListCounts).foldAll();
      const keys = await db.query<{ rows: string; keys: string }>(
        'SELECT count(*) AS rows, count(DISTINCT (namespace_id, owner_id, status, type)) AS keys FROM cluster_job_counts',
      );
      expect(keys.rows[0].rows).toBe(keys.rows[0].keys);
    });

    it('reads a deep page from the nearer end: the same items as walking there from the start', async () => {
      const auth = bearer(hub.adminToken);
      await db.query(
        `INSERT INTO cluster_jobs (name, status, type, priority, namespace_id, execution_profile_id, task, submit_time)
         SELECT format('deep-%s', i), 'dead', 'batch', 50, (SELECT id FROM namespaces LIMIT 1), (SELECT id FROM execution_profiles LIMIT 1), '{}',
                '2026-01-01T00:00:00Z'::timestamptz + (i / 3) * interval '1 second'
         FROM generate_series(1, 25000) i`,
      );
      const total = (await hub.inject({ method: 'GET', url: '/api/v2/cluster/jobs?page[limit]=1', headers: auth })).json<{ total: number }>().total;
      for (const [offset, sort] of [
        [total - 150, '-submitTime'],
        [12_000, 'name'],
        [total - 1, 'submitTime'],
      ] as const) {
        const deep = await hub.inject({ method: 'GET', url: `/api/v2/cluster/jobs?page[offset]=${offset}&page[limit]=200&sort=${sort}`, headers: auth });
        const column = sort.endsWith('name') ? `lower(name) COLLATE "C"` : 'submit_time';
        const direction = sort.startsWith('-') ? 'DESC' : 'ASC';
        const expected = await db.query<{ id: string }>(`SELECT id FROM cluster_jobs ORDER BY ${column} ${direction}, id ${direction} OFFSET $1 LIMIT 200`, [
          offset,
        ]);
        expect(deep.json<{ total: number; data: { id: string }[] }>()).toEqual({
          total,
          data: expected.rows.map((row) => expect.objectContaining({ id: row.id })),
        });
      }
      const past = await hub.inject({ method: 'GET', url: `/api/v2/cluster/jobs?page[offset]=${total + 5}`, headers: auth });
      expect(past.json()).toEqual({ total, data: [] });
    });
  });
});

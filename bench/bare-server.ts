// The baseline of the namespaces list benchmark: bare Fastify and a pg pool running exactly the SQL
// the hub sends for `GET /api/v2/namespaces?filter[name][CO]=…&sort=-_created&page[limit]=50`
// (the count and the page, in parallel), with the same JSON out. No authentication, no framework.
import Fastify from 'fastify';
import pg from 'pg';

const COUNT = `SELECT COUNT(*) AS "count" FROM "namespaces" "namespace" WHERE "namespace"."name" ILIKE $1 ESCAPE '\\'`;
const PAGE = `SELECT "namespace"."id" AS "namespace_id", "namespace"."name" AS "namespace_name", "namespace"."description" AS "namespace_description", "namespace"."is_default" AS "namespace_is_default", "namespace"."version" AS "namespace_version", "namespace"."created" AS "namespace_created", "namespace"."modified" AS "namespace_modified" FROM "namespaces" "namespace" WHERE "namespace"."name" ILIKE $1 ESCAPE '\\' ORDER BY "namespace"."created" DESC, "namespace"."id" DESC LIMIT $2 OFFSET 0`;

interface Row {
  namespace_id: string;
  namespace_name: string;
  namespace_description: string | null;
  namespace_is_default: boolean;
  namespace_created: Date;
  namespace_modified: Date;
}

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.HUB_DB_POOL_SIZE ?? 10) });
const app = Fastify();

app.get('/health', (_request, reply) => reply.send({ status: 'ok' }));
app.get('/namespaces', async (request) => {
  const query = request.query as Record<string, string>;
  const pattern = `%${(query['filter[name][CO]'] ?? '').replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const [count, page] = await Promise.all([
    pool.query<{ count: string }>(COUNT, [pattern]),
    pool.query<Row>(PAGE, [pattern, Number(query['page[limit]'] ?? 100)]),
  ]);
  return {
    totalCount: Number(count.rows[0].count),
    data: page.rows.map((row) => ({
      _id: row.namespace_id,
      _created: row.namespace_created.toISOString(),
      _modified: row.namespace_modified.toISOString(),
      name: row.namespace_name,
      ...(row.namespace_description !== null && { description: row.namespace_description }),
      isDefault: row.namespace_is_default,
    })),
  };
});

await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });

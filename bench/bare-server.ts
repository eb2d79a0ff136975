// The baseline of the namespaces list benchmark: bare Fastify and a pg pool running the plain SQL
// of `GET /api/v2/namespaces?filter[name][CO]=…&sort=-_created&page[limit]=…` as the hub sent it
// before issue 26 (the count and the page as two statements, in parallel; TypeORM writes LIMIT and
// OFFSET into the text; the hub now sends one, the page carrying its count), with the same JSON
// out. No authentication, no validation, no framework. Kept as it was, so that figures compare.
import Fastify from 'fastify';
import pg from 'pg';

const COUNT = `SELECT COUNT(*) AS "count" FROM "namespaces" "namespace" WHERE "namespace"."name" ILIKE $1 ESCAPE '\\'`;
const page = (limit: number) =>
  `SELECT "namespace"."id" AS "id", "namespace"."name" AS "name", "namespace"."description" AS "description", "namespace"."is_default" AS "isDefault", "namespace"."version" AS "version", "namespace"."created" AS "created", "namespace"."modified" AS "modified" FROM "namespaces" "namespace" WHERE "namespace"."name" ILIKE $1 ESCAPE '\\' ORDER BY "namespace"."created" DESC, "namespace"."id" DESC LIMIT ${limit} OFFSET 0`;

interface Row {
  id: string;
  name: string;
  description: string | null;
  isDefault: boolean;
  created: Date;
  modified: Date;
}

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.HUB_DB_POOL_SIZE ?? 10) });
const app = Fastify();

app.get('/health', (_request, reply) => reply.send({ status: 'ok' }));
app.get('/namespaces', async (request) => {
  const query = request.query as Record<string, string>;
  const pattern = `%${(query['filter[name][CO]'] ?? '').replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const limit = Math.min(Math.max(Number(query['page[limit]'] ?? 100) || 100, 1), 1000);
  const [count, rows] = await Promise.all([pool.query<{ count: string }>(COUNT, [pattern]), pool.query<Row>(page(limit), [pattern])]);
  return {
    totalCount: Number(count.rows[0].count),
    data: rows.rows.map((row) => ({
      _id: row.id,
      _created: row.created.toISOString(),
      _modified: row.modified.toISOString(),
      name: row.name,
      description: row.description ?? undefined,
      isDefault: row.isDefault,
    })),
  };
});

await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });

import type { INestApplication } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { OpenAPIObject, ReferenceObject, SchemaObject } from '@nestjs/swagger';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HUB_VERSION } from '../hub-version.js';
import { openApiTooling } from './openapi-decorators.js';
import { PATH_NAMES_EXTENSION } from './route.decorator.js';

const DESCRIPTION = `Management API of the compute hub.

- **Authentication**: \`Authorization: Bearer <token>\` with a token from \`POST /api/v2/auth/login\`, or HTTP Basic (checked like a login).
- **Errors**: RFC 9457 \`application/problem+json\`; \`msg\` repeats \`detail\`, \`errors[{path, message}]\` lists invalid inputs, \`requestId\` matches the \`X-Request-Id\` header and the logs.
- **Lists**: \`filter[<field>][<OP>]\`, \`page[offset]\` (default 0), \`page[limit]\` (default 100, at most 1000), \`sort\` (\`x\` or \`-x\`); each operation lists what it accepts, and anything else is a 400 naming the parameter. CO, SW and ST ignore case. IN takes repeated parameters or comma-separated values.
- **Timestamps** are ISO 8601 UTC with milliseconds, stored at millisecond precision, so a value read from the API can be used as an LT/GT bound exactly.
- **Updates**: PUT replaces, PATCH takes an RFC 6902 document (\`add\`, \`remove\`, \`replace\`) as \`application/json-patch+json\` or \`application/json\`; the result is validated like a replace. \`_id\`, \`_created\` and \`_modified\` are ignored on input.
- **Concurrency**: single-resource replies carry an \`ETag\`; PUT, PATCH and DELETE honour \`If-Match\` (412 on mismatch) and GET honours \`If-None-Match\` (304).
- **Access**: \`x-hub-permission\` on each operation names the object and action the access model checks.`;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/**
 * Reply schemas are closed: every object schema a reply can hold (named or inline, nested at any
 * depth) gets `additionalProperties: false` unless it states its own (a documented map), so the
 * document lists every property the hub sends and a client, or the tests' check of every reply
 * (fuzz/reply-contract.ts), can tell an undocumented field. Schemas only requests use stay as the
 * DTOs declare them (inputs accept the server-owned fields they ignore, hidden from the document).
 */
function closeReplySchemas(document: OpenAPIObject): void {
  const named = document.components?.schemas ?? {};
  const seen = new Set<object>();
  const close = (schema: SchemaObject | ReferenceObject | undefined): void => {
    if (!schema || seen.has(schema)) return;
    seen.add(schema);
    if ('$ref' in schema) return close(named[schema.$ref.slice(schema.$ref.lastIndexOf('/') + 1)]);
    const composed = [...(schema.allOf ?? []), ...(schema.oneOf ?? []), ...(schema.anyOf ?? [])];
    if (schema.properties && schema.additionalProperties === undefined && composed.length === 0) schema.additionalProperties = false;
    const map = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined;
    for (const child of [...Object.values(schema.properties ?? {}), schema.items, map, ...composed]) close(child);
  };
  for (const operations of Object.values(document.paths))
    for (const operation of METHODS.map((method) => operations[method]))
      for (const response of Object.values(operation?.responses ?? {}))
        if (response && !('$ref' in response)) for (const media of Object.values(response.content ?? {})) close(media.schema);
}

/** Applies each operation's `pathNames` (route.decorator.ts) to its path and parameters. */
function renamePathParameters(document: OpenAPIObject): void {
  for (const [path, operations] of Object.entries(document.paths)) {
    let renamed = path;
    for (const operation of METHODS.map((method) => operations[method])) {
      const extended = operation as unknown as Record<string, unknown> | undefined;
      const names = extended?.[PATH_NAMES_EXTENSION] as Record<string, string> | undefined;
      if (!operation || !extended || !names) continue;
      delete extended[PATH_NAMES_EXTENSION];
      for (const [from, to] of Object.entries(names)) {
        renamed = renamed.replace(`{${from}}`, `{${to}}`);
        for (const parameter of operation.parameters ?? []) if ('in' in parameter && parameter.in === 'path' && parameter.name === from) parameter.name = to;
      }
    }
    if (renamed !== path) {
      delete document.paths[path];
      document.paths[renamed] = operations;
    }
  }
}

/**
 * What the decorators cannot say: `@Route` gives every operation that needs credentials its
 * security requirements, so the others are the public ones (api-map §0), which say so with an
 * empty list rather than by leaving it out; and the tags the controllers use are declared once.
 */
function completed(document: OpenAPIObject): OpenAPIObject {
  renamePathParameters(document);
  const tags = new Set<string>();
  for (const operations of Object.values(document.paths)) {
    for (const operation of METHODS.map((method) => operations[method])) {
      if (!operation) continue;
      operation.security ??= [];
      operation.tags?.forEach((tag) => tags.add(tag));
    }
  }
  closeReplySchemas(document);
  return { ...document, tags: [...tags].map((name) => ({ name })) };
}

/** Where the document and its interactive UI are served: `@nestjs/swagger`'s routes, and its static assets below `/api/docs/`. */
const DOCUMENT_ROUTES = ['/api/openapi.json', '/api/docs', '/api/docs/', '/api/docs/*'];

/** Headers of the inner reply that belong to its own connection, not to the reply forwarded. */
const CONNECTION_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date']);

/**
 * `@nestjs/swagger`'s own document, UI and assets routes (`SwaggerModule.setup`), on a Fastify
 * instance of their own that nothing listens on: made on the first request, when the package is
 * loaded and the decorations recorded until then are applied (openapi-decorators.ts).
 */
async function documentServer(app: INestApplication): Promise<FastifyInstance> {
  const { DocumentBuilder, SwaggerModule } = await openApiTooling();
  const config = new DocumentBuilder()
    .setTitle('Hub API')
    .setVersion(HUB_VERSION)
    .setDescription(DESCRIPTION)
    .setLicense('Apache-2.0', 'https://www.apache.org/licenses/LICENSE-2.0')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A token from POST /api/v2/auth/login' }, 'bearerAuth')
    .addBasicAuth({ type: 'http', scheme: 'basic', description: 'User name and password, checked like a login' }, 'basicAuth')
    .addServer('/', 'This hub: paths are relative to the address the document was read from')
    .build();
  const build = (): OpenAPIObject => completed(SwaggerModule.createDocument(app, config, { operationIdFactory: (_controller, method) => method }));
  const adapter = new FastifyAdapter();
  // SwaggerModule.setup reads only the HTTP adapter (and the global prefix, which the hub does not set) of the application it is given.
  const routesOnly = { getHttpAdapter: () => adapter } as unknown as INestApplication;
  SwaggerModule.setup('api/docs', routesOnly, build, { jsonDocumentUrl: 'api/openapi.json', raw: ['json'], customSiteTitle: 'Hub API' });
  const server = adapter.getInstance<FastifyInstance>();
  await server.ready();
  return server;
}

/**
 * Serves the document at /api/openapi.json and the interactive UI at /api/docs, built on first
 * request: the hub's routes there hand each request to `@nestjs/swagger`'s (see documentServer),
 * so neither the package nor the document costs the start anything. What they do not serve (a
 * missing asset) is the hub's own 404.
 */
export function setupOpenApi(app: INestApplication): void {
  let server: Promise<FastifyInstance> | undefined;
  const forward = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | void> => {
    // A failed first build is tried again by the next request rather than kept.
    server ??= documentServer(app).catch((error: unknown) => {
      server = undefined;
      throw error;
    });
    const answer = await (await server).inject({ method: request.method as 'GET' | 'HEAD', url: request.url, headers: request.headers });
    if (answer.statusCode === 404) return reply.callNotFound();
    const headers = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !CONNECTION_HEADERS.has(name.toLowerCase())));
    return reply.code(answer.statusCode).headers(headers).send(answer.rawPayload);
  };
  const http = app.getHttpAdapter();
  for (const route of DOCUMENT_ROUTES) http.get(route, forward);
}

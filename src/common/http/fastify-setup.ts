import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { Readable, type Duplex } from 'node:stream';
import { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Logger } from 'pino';
import { InvalidInputError, type FieldError } from '../errors/hub-errors.js';
import { fastifyProblem, problemBody, sendProblem } from '../errors/problem.filter.js';
import type { MetricsService } from '../metrics/metrics.service.js';

export const BODY_LIMIT_BYTES = 1_048_576;
export const MAX_BODY_DEPTH = 64;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A client's `X-Request-Id` is kept when it is a sane token; otherwise the hub makes one. */
function requestId(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * What no body may hold, checked once after parsing and before anything walks it recursively:
 * nesting deeper than MAX_BODY_DEPTH (validation would overflow the stack) and NUL characters,
 * which PostgreSQL cannot store in text. Iterative, so that it cannot overflow itself.
 */
export function bodyProblem(body: unknown): FieldError | undefined {
  const pending: [unknown, string, number][] = [[body, '', 0]];
  for (let item = pending.pop(); item; item = pending.pop()) {
    const [node, path, depth] = item;
    if (typeof node === 'string') {
      if (node.includes('\0')) return { path, message: 'must not contain NUL characters' };
      continue;
    }
    if (typeof node !== 'object' || node === null) continue;
    if (depth >= MAX_BODY_DEPTH) return { path, message: `nests deeper than ${MAX_BODY_DEPTH} levels` };
    for (const [key, child] of Object.entries(node)) {
      const childPath = `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if (key.includes('\0')) return { path: childPath, message: 'must not contain NUL characters in its name' };
      pending.push([child, childPath, depth + 1]);
    }
  }
  return undefined;
}

/**
 * What Node's HTTP parser refuses before there is a request to route (headers over its 16 KiB, a
 * URL it cannot parse, a timeout) is answered on the socket as a problem too, like every error.
 */
function clientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, detail] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'The request line and headers are larger than the 16 KiB allowed']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'The request was not received in time']
        : [400, 'The request is not well-formed HTTP'];
  const body = JSON.stringify(problemBody(randomUUID(), { status, detail }));
  if (socket.writable)
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  socket.destroy();
}

/** Fastify's own compilers, loaded from where Fastify itself loads them. */
const fromFastify = createRequire(import.meta.resolve('fastify'));
type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
/** A compiler builder, as the two packages export it (a selector called once) and as Fastify calls it. */
type Builder = (externalSchemas: unknown, options: unknown) => unknown;
const builders = new Map<string, Builder>();
const loaded = (name: string): Builder => builders.get(name) ?? builders.set(name, (fromFastify(name) as () => Builder)()).get(name)!;

/**
 * Fastify's default schema compilers (Ajv, fast-json-stringify), loaded when a route first has a
 * JSON schema to compile rather than when an instance is made: loading them is about 40 ms of a
 * start, and the hub's routes declare none (class-validator checks what they take, and replies are
 * plain JSON). Such a route would still be compiled by the same compilers, called as Fastify calls
 * them (a schema for headers is then compiled as given, not lower-cased first: name its headers in
 * lower case).
 */
const lazyCompilers = {
  buildValidator: (externalSchemas: unknown, options: unknown) => loaded('@fastify/ajv-compiler')(externalSchemas, options),
  buildSerializer: (externalSchemas: unknown, options: unknown) => loaded('@fastify/fast-json-stringify-compiler')(externalSchemas, options),
} as CompilersFactory;

/** Options of the Fastify instance under Nest. */
export function fastifyOptions(logger: Logger): FastifyServerOptions {
  return {
    schemaController: { compilersFactory: lazyCompilers },
    loggerInstance: logger,
    // One access-log line per request is written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    genReqId: requestId,
    bodyLimit: BODY_LIMIT_BYTES,
    // Malformed URLs and over-long path parameters are refused before routing, where Nest's
    // exception filter does not reach: they get the same problem replies here.
    frameworkErrors: (error, request, reply) => {
      void reply.header('x-request-id', request.id);
      sendProblem(reply, request.id, fastifyProblem(error, request) ?? { status: 400, detail: error.message });
    },
    clientErrorHandler: clientError,
    // While it drains, the hub still serves requests on open connections (the database is open) and
    // closes each connection after its reply (below); readiness answers 503 meanwhile.
    return503OnClosing: false,
    // No forceCloseConnections: Nest's adapter reads any value of it as "destroy every open socket
    // on close", which would cut requests in flight. Node's server.close() ends idle keep-alive
    // connections and lets active ones finish.
  };
}

/**
 * Hooks every request goes through, matched or not: the request id echoed, one access-log line,
 * and the metrics. Also teaches Fastify the JSON Patch media type.
 */
export function installHttpHooks(fastify: FastifyInstance, metrics: MetricsService): void {
  // Once the hub is closing, each reply ends its connection: Node closes only the connections idle
  // when close begins, so a keep-alive connection whose request finishes later would hold the
  // shutdown open until its client or the keep-alive timeout (72 s) ends it.
  let closing = false;
  fastify.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  fastify.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) void reply.header('connection', 'close');
    done(null, payload);
  });
  fastify.addContentTypeParser(
    'application/json-patch+json',
    { parseAs: 'string', bodyLimit: BODY_LIMIT_BYTES },
    fastify.getDefaultJsonParser('error', 'error'),
  );
  fastify.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    done();
  });
  fastify.addHook('preValidation', (request, _reply, done) => {
    // A body passed through unparsed (the link session proxy streams it on) is not the hub's to walk.
    const problem = request.body instanceof Readable ? undefined : bodyProblem(request.body);
    done(problem && InvalidInputError.at(problem.path, `The request body ${problem.path ? `at ${problem.path} ` : ''}${problem.message}`));
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const seconds = reply.elapsedTime / 1000;
    metrics.observeRequest(request.method, route, reply.statusCode, seconds);
    const fields = {
      method: request.method,
      url: request.url,
      route,
      statusCode: reply.statusCode,
      durationMs: Math.round(reply.elapsedTime * 10) / 10,
      userId: request.caller?.userId,
    };
    if (reply.statusCode >= 500) request.log.error(fields, 'request');
    else request.log.info(fields, 'request');
    done();
  });
}

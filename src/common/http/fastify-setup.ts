import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Logger } from 'pino';
import { InvalidInputError } from '../errors/hub-errors.js';
import { fastifyProblem, sendProblem } from '../errors/problem.filter.js';
import type { MetricsService } from '../metrics/metrics.service.js';

export const BODY_LIMIT_BYTES = 1_048_576;
/** Deeper JSON is refused before anything walks it recursively (validation would overflow the stack). */
export const MAX_BODY_DEPTH = 64;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A client's `X-Request-Id` is kept when it is a sane token; otherwise the hub makes one. */
function requestId(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** True when a parsed JSON value nests arrays or objects deeper than `limit`; iterative, so it cannot overflow. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const pending: [unknown, number][] = [[value, 0]];
  for (let item = pending.pop(); item; item = pending.pop()) {
    const [node, depth] = item;
    if (typeof node !== 'object' || node === null) continue;
    if (depth >= limit) return true;
    for (const child of Object.values(node)) pending.push([child, depth + 1]);
  }
  return false;
}

/** Options of the Fastify instance under Nest. */
export function fastifyOptions(logger: Logger): FastifyServerOptions {
  return {
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
    return503OnClosing: true,
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
    done(nestsDeeperThan(request.body, MAX_BODY_DEPTH) ? InvalidInputError.at('', `The request body nests deeper than ${MAX_BODY_DEPTH} levels`) : undefined);
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

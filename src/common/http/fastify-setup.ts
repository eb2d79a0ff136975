import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Logger } from 'pino';
import type { MetricsService } from '../metrics/metrics.service.js';

export const BODY_LIMIT_BYTES = 1_048_576;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A client's `X-Request-Id` is kept when it is a sane token; otherwise the hub makes one. */
function requestId(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** Options of the Fastify instance under Nest. */
export function fastifyOptions(logger: Logger): FastifyServerOptions {
  return {
    loggerInstance: logger,
    // One access-log line per request is written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    genReqId: requestId,
    bodyLimit: BODY_LIMIT_BYTES,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  };
}

/**
 * Hooks every request goes through, matched or not: the request id echoed, one access-log line,
 * and the metrics. Also teaches Fastify the JSON Patch media type.
 */
export function installHttpHooks(fastify: FastifyInstance, metrics: MetricsService): void {
  fastify.addContentTypeParser(
    'application/json-patch+json',
    { parseAs: 'string', bodyLimit: BODY_LIMIT_BYTES },
    fastify.getDefaultJsonParser('error', 'error'),
  );
  fastify.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    done();
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

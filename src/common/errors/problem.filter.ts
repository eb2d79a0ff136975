import { STATUS_CODES } from 'node:http';
import { Catch, HttpException, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { QueryFailedError } from 'typeorm';
import { HubLogger } from '../logging/hub-logger.js';
import { HubError, MAX_LISTED_ERRORS, RefusedError, type FieldError } from './hub-errors.js';

export interface Problem {
  readonly status: number;
  readonly detail: string;
  readonly errors?: readonly FieldError[];
  /** A RefusedError's messages, answered as `errors` of strings. */
  readonly problems?: readonly string[];
  readonly headers?: Readonly<Record<string, string>>;
}

/** An error Fastify raised before the request reached a route: bad JSON, oversize body, media type. */
interface FastifyError {
  readonly statusCode: number;
  readonly code?: string;
  readonly message: string;
}

function isFastifyError(error: unknown): error is FastifyError {
  const status = (error as FastifyError | undefined)?.statusCode;
  return error instanceof Error && typeof status === 'number' && status >= 400 && status < 500;
}

function fastifyDetail(error: FastifyError, request: FastifyRequest): string {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return `Unsupported media type ${JSON.stringify(request.headers['content-type'] ?? '')}; send application/json`;
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return `The request body is larger than the ${request.routeOptions.bodyLimit ?? 1_048_576} bytes allowed`;
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'The request body is empty; send a JSON document or no Content-Type';
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return 'The request body is not valid JSON';
    case 'FST_ERR_BAD_URL':
      return 'The URL is malformed (a bad percent-encoding, say)';
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return 'A path parameter of the URL is too long';
    default:
      return error.message;
  }
}

/** PostgreSQL errors that bad input or a race can cause; anything else is the hub's fault. */
function databaseProblem(driverError: unknown): Problem | undefined {
  const code = (driverError as { code?: string } | undefined)?.code ?? '';
  if (code === '23505') return { status: 409, detail: 'The request conflicts with an existing resource' };
  if (code === '23503') return { status: 409, detail: 'The request refers to a resource that does not exist or is still referred to' };
  // Data exceptions: malformed text for a type, out-of-range numbers and dates, NUL characters.
  if (code.startsWith('22')) return { status: 400, detail: 'A value in the request is out of range or malformed' };
  if (code === '40001' || code === '40P01')
    return { status: 503, detail: 'The request collided with a concurrent one; retry it', headers: { 'retry-after': '1' } };
  return undefined;
}

/** The problem for an error Fastify raised itself: body parsing, media types, malformed URLs. */
export function fastifyProblem(error: unknown, request: FastifyRequest): Problem | undefined {
  return isFastifyError(error) ? { status: error.statusCode, detail: fastifyDetail(error, request) } : undefined;
}

/**
 * Whether an error is pg-pool's when every connection stayed busy for the whole wait: the hub is
 * overloaded, not broken (a 503 with Retry-After). pg-pool gives it no code, only this text, which
 * test/common/pool-busy.e2e-spec.ts takes from a real pool so that a pg upgrade that rewords it
 * fails there rather than turning the 503 back into a 500.
 */
export function poolBusy(error: unknown): boolean {
  // runNamed (named-statements.ts) wraps every failure of its statement, this one included.
  if (error instanceof QueryFailedError) return poolBusy((error as QueryFailedError<Error>).driverError);
  return error instanceof Error && error.message === 'timeout exceeded when trying to connect';
}

function toProblem(exception: unknown, request: FastifyRequest): Problem | undefined {
  if (exception instanceof RefusedError) return { status: exception.status, detail: exception.message, problems: exception.problems };
  if (exception instanceof HubError) {
    return { status: exception.status, detail: exception.message, errors: exception.errors, headers: exception.headers };
  }
  if (exception instanceof HttpException) {
    // Nest wraps Fastify's own 4xx errors, keeping them as the cause.
    const fastify = fastifyProblem(exception.cause, request);
    if (fastify) return fastify;
    const status = exception.getStatus();
    if (status === 404 && /^Cannot [A-Z]+ /.test(exception.message)) {
      return { status, detail: `No route ${request.method} ${request.url.split('?')[0]}` };
    }
    return status < 500 ? { status, detail: exception.message } : undefined;
  }
  if (exception instanceof QueryFailedError && !poolBusy(exception)) return databaseProblem((exception as QueryFailedError<Error>).driverError);
  if (poolBusy(exception)) return { status: 503, detail: 'The hub is too busy to take this request now; retry it', headers: { 'retry-after': '1' } };
  return undefined;
}

/**
 * The one place errors become replies: RFC 9457 `application/problem+json` with `msg` repeating
 * `detail`, `errors` for validation, and the request id. Anything unexpected is a 500 whose details
 * go to the log, never to the client.
 */
@Catch()
export class ProblemFilter implements ExceptionFilter {
  private readonly logger: Logger;

  constructor(logger: HubLogger) {
    this.logger = logger.for('http');
  }

  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const problem = toProblem(exception, request) ?? { status: 500, detail: 'Internal server error' };
    if (problem.status >= 500) this.logger.error({ err: exception, requestId: request.id }, 'Request failed');
    // Input the hub let through to PostgreSQL: a 4xx for the client, but a gap in validation (or a
    // bug in the hub's SQL) for whoever reads the logs.
    else if (exception instanceof QueryFailedError) this.logger.warn({ err: exception, requestId: request.id }, 'PostgreSQL refused a value');
    if (!reply.sent) sendProblem(reply, request.id, problem);
  }
}

/** Bytes (as JSON text) a problem's detail, an error's path and an error's message may take. */
const MAX_DETAIL_BYTES = 2048;
const MAX_PATH_BYTES = 256;
const MAX_MESSAGE_BYTES = 512;

/**
 * The text cut to at most `maxBytes` once written as a JSON string: what the client sent (a
 * property name, a value) may be long, and control characters take six bytes each in JSON.
 */
function clip(text: string, maxBytes: number): string {
  const jsonBytes = (value: string) => Buffer.byteLength(JSON.stringify(value));
  if (jsonBytes(text) <= maxBytes) return text;
  let cut = text.slice(0, maxBytes);
  while (cut.length > 0 && jsonBytes(`${cut}…`) > maxBytes) cut = cut.slice(0, Math.floor(cut.length * 0.75));
  return `${cut}…`;
}

/**
 * A problem's reply stays small whatever the input (well under 64 KiB): at most MAX_LISTED_ERRORS
 * errors, the detail saying how many there were, and every text cut to a bound.
 */
function boundedProblem(problem: Problem): { detail: string; errors?: FieldError[] | string[] } {
  if (problem.problems) {
    const listed = problem.problems.length > MAX_LISTED_ERRORS ? ` (${problem.problems.length} problems; errors lists the first ${MAX_LISTED_ERRORS})` : '';
    return {
      detail: clip(problem.detail, MAX_DETAIL_BYTES - Buffer.byteLength(listed)) + listed,
      errors: problem.problems.slice(0, MAX_LISTED_ERRORS).map((text) => clip(text, MAX_MESSAGE_BYTES)),
    };
  }
  const errors = problem.errors ?? [];
  const count = errors.length > MAX_LISTED_ERRORS ? ` (${errors.length} problems; errors lists the first ${MAX_LISTED_ERRORS})` : '';
  const detail = clip(problem.detail, MAX_DETAIL_BYTES - Buffer.byteLength(count)) + count;
  if (errors.length === 0) return { detail };
  return {
    detail,
    errors: errors.slice(0, MAX_LISTED_ERRORS).map((error) => ({ path: clip(error.path, MAX_PATH_BYTES), message: clip(error.message, MAX_MESSAGE_BYTES) })),
  };
}

/** The RFC 9457 body of a problem: `msg` repeats `detail`, and the request id ties it to the logs. */
export function problemBody(requestId: string, problem: Problem): Record<string, unknown> {
  const { detail, errors } = boundedProblem(problem);
  return {
    type: 'about:blank',
    title: STATUS_CODES[problem.status] ?? 'Error',
    status: problem.status,
    detail,
    msg: detail,
    ...(errors && { errors }),
    requestId,
  };
}

/** Writes a problem as the reply. */
export function sendProblem(reply: FastifyReply, requestId: string, problem: Problem): void {
  const body = problemBody(requestId, problem);
  void reply
    .status(problem.status)
    .headers(problem.headers ?? {})
    .type('application/problem+json; charset=utf-8')
    .send(body);
}

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import fastifyHttpProxy, { type FastifyHttpProxyOptions } from '@fastify/http-proxy';
import { Injectable, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AuthService } from '../auth/auth.service.js';
import { SERVICE_SECRET_HEADER } from '../cluster/service-endpoints.js';
import { type Problem, sendProblem } from '../common/errors/problem.filter.js';
import { UnauthorizedError } from '../common/errors/hub-errors.js';
import { originOf } from '../common/http/client-address.js';
import { isUuid } from '../common/query/query-values.js';
import { LinkSessionsRepository, type SessionRow } from './link-sessions.repository.js';
import { proxyPrefix } from './link-sessions.service.js';

/** Where the proxy is mounted; `:sessionId` is the session's id. */
export const PROXY_PREFIX = proxyPrefix(':sessionId');
export const SESSION_TOKEN_HEADER = 'x-session-token';

/** What the proxy resolved for a request it forwards. */
const TARGET = Symbol('sessionTarget');
/** Set once the session's own reply has come: what the reply then carries is the session's, not the hub's. */
const FORWARDED = Symbol('forwardedFromSession');
type Targeted = FastifyRequest & { [TARGET]?: SessionRow; [FORWARDED]?: true };

/**
 * Whether the reply to `request` is a session's own, forwarded by the proxy, rather than the hub's
 * (a refusal, or a failed upstream): the reply check (fuzz/reply-contract.ts) checks only the hub's.
 */
export function forwardedFromSession(request: FastifyRequest): boolean {
  return (request as Targeted)[FORWARDED] === true;
}

/** Headers the hub sets (replacing any a client sent) or removes before forwarding (api-map §8). */
const STRIPPED = [
  SESSION_TOKEN_HEADER,
  'authorization',
  SERVICE_SECRET_HEADER,
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-prefix',
  'x-forwarded-host',
];
/** What a WebSocket's upstream handshake carries of the client's (the ws client makes the rest of it). */
const WS_PASSED = ['cookie', 'origin', 'user-agent', 'accept-language'];

function sameToken(given: string, token: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(token));
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The origin of a Ready session's server (an IPv6 host in brackets). */
function upstreamOf(session: SessionRow): string {
  const host = session.host ?? '';
  return `http://${host.includes(':') ? `[${host}]` : host}:${session.port}`;
}

/**
 * The hub's reply when the session's server fails a request forwarded to it, as a gateway says it:
 * 504 when it did not answer in time, 503 when its address could not be found, else 502 (the
 * connection refused or dropped, a reply that is not HTTP). reply-from's own errors would make most
 * of these a 500, which says the hub failed.
 */
function upstreamFailure(session: SessionRow, error: Error & { statusCode?: number; code?: string }): Problem {
  const status = error.statusCode === 503 || error.statusCode === 504 ? error.statusCode : 502;
  const what = status === 504 ? 'did not answer in time' : status === 503 ? 'could not be reached' : 'failed the request';
  const cause = (error.cause as { code?: unknown } | undefined)?.code;
  const code = typeof cause === 'string' ? cause : error.code;
  return { status, detail: `The server of link session ${session.id} ${what}${code ? ` (${code})` : ''}` };
}

/** The headers a forwarded request carries: the client's, less the hub's credentials, with who asked and the session's secret. */
function forwardedHeaders(request: FastifyRequest, session: SessionRow, headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const forwarded: IncomingHttpHeaders = { ...headers };
  for (const name of STRIPPED) delete forwarded[name];
  return {
    ...forwarded,
    'x-forwarded-for': request.ip,
    'x-forwarded-proto': request.protocol,
    'x-forwarded-host': request.host,
    'x-forwarded-prefix': proxyPrefix(session.id),
    [SERVICE_SECRET_HEADER]: session.secret,
  };
}

/**
 * The proxy to link sessions (api-map §8), `/api/v2/linksessions/sessions/{id}/proxy/...`, built on
 * @fastify/http-proxy (reply-from for HTTP, ws for WebSocket upgrades): every method, bodies streamed
 * both ways (its own context passes request bodies through unparsed), upgrades dispatched through
 * the same hooks. A request is forwarded only for the session's owner, by its X-Session-Token or the
 * owner's own credentials; anyone else gets 404, an upgrade too (an HTTP reply on the socket). The
 * endpoint and secret are read from the database, so any hub on it forwards.
 */
@Injectable()
export class SessionProxy implements OnModuleInit {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly sessions: LinkSessionsRepository,
    private readonly auth: AuthService,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    // In a context of its own, where the hub's body parsers give way to the proxy's, which pass bodies through as streams.
    void fastify.register(async (context) => {
      context.removeAllContentTypeParsers();
      await context.register(fastifyHttpProxy, this.options());
    });
  }

  private options(): FastifyHttpProxyOptions & { websocket: true } {
    return {
      prefix: PROXY_PREFIX,
      upstream: '',
      websocket: true,
      httpMethods: ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'OPTIONS'],
      preHandler: (request, reply, done) => {
        this.admit(request, reply).then(
          () => done(),
          (error: unknown) => done(error as Error),
        );
      },
      replyOptions: {
        getUpstream: (request) => upstreamOf((request as Targeted)[TARGET] as SessionRow),
        rewriteRequestHeaders: (request, headers) => forwardedHeaders(request as FastifyRequest, (request as Targeted)[TARGET] as SessionRow, headers),
        onResponse: (request, reply, response) => {
          (request as Targeted)[FORWARDED] = true;
          void reply.send(response.stream);
        },
        onError: (reply, { error }) =>
          sendProblem(reply as FastifyReply, reply.request.id, upstreamFailure((reply.request as Targeted)[TARGET] as SessionRow, error)),
      },
      // The library's types leave out what it calls to make the upstream handshake's headers.
      wsClientOptions: {
        rewriteRequestHeaders: (_headers: IncomingHttpHeaders, request: FastifyRequest) => {
          const passed = Object.fromEntries(WS_PASSED.flatMap((name) => (request.headers[name] === undefined ? [] : [[name, request.headers[name]]])));
          return forwardedHeaders(request, (request as Targeted)[TARGET] as SessionRow, passed);
        },
      } as object,
    };
  }

  /**
   * Lets a request through to its session (noting the session on it) or answers it: 401 with no
   * credentials at all, 404 for a session that is not the caller's or a token that is not its own,
   * 503 (to its owner) while the session is not Ready.
   */
  private async admit(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const id = (request.params as { sessionId?: string }).sessionId ?? '';
    const token = single(request.headers[SESSION_TOKEN_HEADER]);
    const authorization = request.headers.authorization;
    const refuse = (status: number, detail: string) => sendProblem(reply, request.id, { status, detail });
    if (token === undefined && authorization === undefined) return refuse(401, 'An X-Session-Token or the owner’s bearer token is required');
    const session = isUuid(id) ? await this.sessions.find(id.toLowerCase()) : undefined;
    let owner = false;
    if (session && token !== undefined) owner = sameToken(token, session.accessToken);
    else if (session && authorization !== undefined) {
      try {
        owner = (await this.auth.authenticate(authorization, originOf(request))).caller.userId === session.ownerId;
      } catch (error) {
        if (!(error instanceof UnauthorizedError)) throw error;
      }
    }
    if (!session || !owner) return refuse(404, `Link session ${id} not found`);
    if (session.status !== 'Ready') return refuse(503, `Link session ${id} is ${session.status}, not Ready`);
    (request as Targeted)[TARGET] = session;
  }
}

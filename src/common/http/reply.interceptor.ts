import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { map, type Observable } from 'rxjs';
import { acceptsBytes, ByteWindowReply, OCTET_STREAM } from './byte-reply.js';
import { conditionMatches, entityTag, parseEntityTags, Versioned } from './entity-tag.js';
import { StatusReply } from './status-reply.js';

function resourceId(body: unknown): string | undefined {
  const record = body as { _id?: unknown; id?: unknown } | undefined;
  const id = record?._id ?? record?.id;
  return typeof id === 'string' ? id : undefined;
}

/** A window of bytes as the request asked for it, streamed: raw, or `{msg}`; its file and budget share are given back once the reply has gone. */
function byteWindow(window: ByteWindowReply, context: ExecutionContext): unknown {
  const request = context.switchToHttp().getRequest<FastifyRequest>();
  const reply = context.switchToHttp().getResponse<FastifyReply>();
  reply.raw.once('finish', window.release);
  reply.raw.once('close', window.release);
  if (window.rawMediaType) {
    void reply.header('content-type', window.rawMediaType);
    return window.bytes();
  }
  if (acceptsBytes(request.headers.accept)) {
    void reply.header('content-type', OCTET_STREAM);
    return window.bytes();
  }
  void reply.header('content-type', 'application/json; charset=utf-8');
  return window.message();
}

/** A reply as the service shaped it: its status, its headers, and JSON text sent as it is. */
function statusReply(value: StatusReply, context: ExecutionContext): unknown {
  const reply = context.switchToHttp().getResponse<FastifyReply>();
  if (value.status !== undefined) void reply.status(value.status);
  void reply.headers(value.headers);
  if (value.rawJson) void reply.header('content-type', 'application/json; charset=utf-8');
  return value.body;
}

/**
 * Turns a {@link Versioned} result into its body with an `ETag` (and `Location` for a creation),
 * and answers a GET whose `If-None-Match` still holds with 304; answers a {@link ByteWindowReply}
 * as the request's `Accept` asks, and a {@link StatusReply} as the service shaped it.
 */
@Injectable()
export class ReplyInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      map((value: unknown) => {
        if (value instanceof ByteWindowReply) return byteWindow(value, context);
        if (value instanceof StatusReply) return statusReply(value, context);
        if (!(value instanceof Versioned)) return value;
        const result = value as Versioned<unknown>;
        const request = context.switchToHttp().getRequest<FastifyRequest>();
        const reply = context.switchToHttp().getResponse<FastifyReply>();
        void reply.header('etag', entityTag(result.version));
        const noneMatch = parseEntityTags(request.headers['if-none-match']);
        if (request.method === 'GET' && noneMatch && conditionMatches(noneMatch, result.version)) {
          void reply.status(304);
          return undefined;
        }
        const id = resourceId(result.body);
        if (request.method === 'POST' && reply.statusCode === 201 && id) {
          void reply.header('location', `${request.url.split('?')[0].replace(/\/$/, '')}/${id}`);
        }
        return result.body;
      }),
    );
  }
}

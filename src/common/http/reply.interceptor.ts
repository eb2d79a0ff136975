import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { map, type Observable } from 'rxjs';
import { conditionMatches, entityTag, parseEntityTags, Versioned } from './entity-tag.js';

function resourceId(body: unknown): string | undefined {
  const record = body as { _id?: unknown; id?: unknown } | undefined;
  const id = record?._id ?? record?.id;
  return typeof id === 'string' ? id : undefined;
}

/**
 * Turns a {@link Versioned} result into its body with an `ETag` (and `Location` for a creation),
 * and answers a GET whose `If-None-Match` still holds with 304.
 */
@Injectable()
export class ReplyInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      map((value: unknown) => {
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

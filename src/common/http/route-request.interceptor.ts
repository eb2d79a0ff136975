import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { Observable } from 'rxjs';
import { UnsupportedMediaTypeError, type FieldError } from '../errors/hub-errors.js';
import { invalidQuery, parseListQuery, type ListQuery } from '../query/list-query.js';
import { parseProjection, type Projection } from '../query/projection.js';
import type { RawQuery } from '../query/query-values.js';
import { acceptedMediaTypes, routeOptionsOf, type RouteOptions } from './route.decorator.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The query string parsed against the route's `list` spec. */
    listQuery?: ListQuery;
    /** The `fields`/`excludeFields` of a route declared with `projection`. */
    projection?: Projection;
  }
}

function checkMediaType(request: FastifyRequest, options: RouteOptions): void {
  const accepted = acceptedMediaTypes(options);
  const mediaType = request.headers['content-type']?.split(';')[0].trim().toLowerCase();
  if (accepted && mediaType && request.body !== undefined && !accepted.includes(mediaType)) {
    throw new UnsupportedMediaTypeError(`Unsupported media type "${mediaType}"; this operation accepts ${accepted.join(' or ')}`);
  }
}

/** Every query parameter must be one the route declares: a list's, a projection's, its own plain ones, or none. */
function parseQuery(request: FastifyRequest, options: RouteOptions): void {
  const raw = (request.query ?? {}) as RawQuery;
  if (options.list) {
    request.listQuery = parseListQuery(options.list, raw);
    return;
  }
  const errors: FieldError[] = Object.keys(raw)
    .filter((name) => !(options.projection && (name === 'fields' || name === 'excludeFields')) && !Object.hasOwn(options.query ?? {}, name))
    .map((name) => ({ path: name, message: 'is not a parameter of this operation' }));
  // An operation whose own parameter is named `fields` (getRecords' columns) is no projection.
  if (!Object.hasOwn(options.query ?? {}, 'fields')) request.projection = parseProjection(options.projection, raw, errors);
  if (errors.length > 0) throw invalidQuery(errors);
}

/**
 * Checks a request against its `@Route` before the handler runs: the body's media type (Fastify
 * parses JSON and JSON Patch for every route) and the query string, parsed once here so that
 * `@ListParams()` and `@ProjectionParams()` only read the result.
 */
@Injectable()
export class RouteRequestInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const options = routeOptionsOf(context);
    if (options) {
      const request = context.switchToHttp().getRequest<FastifyRequest>();
      checkMediaType(request, options);
      parseQuery(request, options);
    }
    return next.handle();
  }
}

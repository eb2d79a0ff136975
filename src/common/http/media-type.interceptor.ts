import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import type { Observable } from 'rxjs';
import { UnsupportedMediaTypeError } from '../errors/hub-errors.js';
import { acceptedMediaTypes, ROUTE_OPTIONS, type RouteOptions } from './route.decorator.js';

/**
 * Fastify parses JSON and JSON Patch bodies for every route; this makes each route accept only its
 * own media types, so that, say, a JSON Patch sent to a create is refused with 415.
 */
@Injectable()
export class MediaTypeInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const options = this.reflector.get<RouteOptions | undefined>(ROUTE_OPTIONS, context.getHandler());
    const accepted = options && acceptedMediaTypes(options);
    const mediaType = request.headers['content-type']?.split(';')[0].trim().toLowerCase();
    if (accepted && mediaType && request.body !== undefined && !accepted.includes(mediaType)) {
      throw new UnsupportedMediaTypeError(`Unsupported media type "${mediaType}"; this operation accepts ${accepted.join(' or ')}`);
    }
    return next.handle();
  }
}

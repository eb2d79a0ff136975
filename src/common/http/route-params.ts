import { createParamDecorator, type ExecutionContext, type PipeTransform } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { NotFoundError } from '../errors/hub-errors.js';
import { parseJsonPatch, type JsonPatch } from '../patch/json-patch.js';
import type { ListQuery } from '../query/list-query.js';
import type { Projection } from '../query/projection.js';
import { isUuid } from '../query/query-values.js';

function request(context: ExecutionContext): FastifyRequest {
  return context.switchToHttp().getRequest<FastifyRequest>();
}

/** The request's filters, page, sort and projection, parsed against the route's `list` spec. */
export const ListParams = createParamDecorator((_data: unknown, context: ExecutionContext): ListQuery => {
  const query = request(context).listQuery;
  if (!query) throw new Error('@ListParams() needs a route declared with `list`');
  return query;
});

/** The `fields`/`excludeFields` of a single-resource read declared with `projection`. */
export const ProjectionParams = createParamDecorator((_data: unknown, context: ExecutionContext): Projection | undefined => request(context).projection);

/** The body of a PATCH, checked to be a JSON Patch document of allowed operations. */
export const PatchBody = createParamDecorator((_data: unknown, context: ExecutionContext): JsonPatch => parseJsonPatch(request(context).body));

/**
 * A resource id from the path: ids are UUIDs, so anything else names nothing (404), and never
 * reaches the database. `@Param('id', new ResourceId('Namespace'))`.
 */
export class ResourceId implements PipeTransform<string, string> {
  constructor(private readonly resource: string) {}

  transform(value: string): string {
    if (!isUuid(value)) throw new NotFoundError(`${this.resource} ${value} not found`);
    // The canonical form, as the access guard checks it and the database stores it.
    return value.toLowerCase();
  }
}

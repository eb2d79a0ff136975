import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { FieldError } from '../errors/hub-errors.js';
import { parseJsonPatch, type JsonPatch } from '../patch/json-patch.js';
import { invalidQuery, parseListQuery, type ListQuery } from '../query/list-query.js';
import { parseProjection, type Projection } from '../query/projection.js';
import type { RawQuery } from '../query/query-values.js';
import { ROUTE_OPTIONS, type RouteOptions } from './route.decorator.js';

function routeOptions(context: ExecutionContext): RouteOptions {
  const options = Reflect.getMetadata(ROUTE_OPTIONS, context.getHandler()) as RouteOptions | undefined;
  if (!options) throw new Error(`${context.getClass().name}.${context.getHandler().name} has no @Route`);
  return options;
}

function rawQuery(context: ExecutionContext): RawQuery {
  return (context.switchToHttp().getRequest<FastifyRequest>().query ?? {}) as RawQuery;
}

/** The request's filters, page, sort and projection, parsed against the route's `list` spec. */
export const ListParams = createParamDecorator((_data: unknown, context: ExecutionContext): ListQuery => {
  const spec = routeOptions(context).list;
  if (!spec) throw new Error('@ListParams() needs a route declared with `list`');
  return parseListQuery(spec, rawQuery(context));
});

/** The `fields`/`excludeFields` of a single-resource read; any other query parameter is refused. */
export const ProjectionParams = createParamDecorator((_data: unknown, context: ExecutionContext): Projection | undefined => {
  const raw = rawQuery(context);
  const errors: FieldError[] = Object.keys(raw)
    .filter((name) => name !== 'fields' && name !== 'excludeFields')
    .map((name) => ({ path: name, message: 'is not a parameter of this operation' }));
  const projection = parseProjection(routeOptions(context).projection, raw, errors);
  if (errors.length > 0) throw invalidQuery(errors);
  return projection;
});

/** The body of a PATCH, checked to be a JSON Patch document of allowed operations. */
export const PatchBody = createParamDecorator((_data: unknown, context: ExecutionContext): JsonPatch =>
  parseJsonPatch(context.switchToHttp().getRequest<FastifyRequest>().body),
);

import { STATUS_CODES } from 'node:http';
import { applyDecorators, Delete, Get, HttpCode, Patch, Post, Put, SetMetadata, type ExecutionContext, type Type } from '@nestjs/common';
import {
  ApiBasicAuth,
  ApiBearerAuth,
  ApiBody,
  ApiConsumes,
  ApiExtension,
  ApiExtraModels,
  ApiHeader,
  ApiOperation,
  ApiProduces,
  ApiQuery,
  ApiResponse,
  getSchemaPath,
} from './openapi-decorators.js';
import type { SchemaObject } from '@nestjs/swagger';
import { ProblemDetailsDto } from '../errors/problem-details.dto.js';
import { OCTET_STREAM } from './byte-reply.js';
import { Projected } from './list-envelope.js';
import { MessageDto } from './message.dto.js';
import { PATCH_OPERATIONS } from '../patch/json-patch.js';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, type FilterFieldSpec, type FilterOperator, type ListQuerySpec } from '../query/list-query.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export const ACTIONS = ['Read', 'Create', 'Update', 'Delete', 'Use', 'Execute'] as const;
export type Action = (typeof ACTIONS)[number];

/**
 * Where a route finds the namespace its permission is checked in: a path parameter holding a
 * namespace id; a body property or query parameter holding a namespace name (`*`: all); or the
 * namespace a resource of some area lives in (`resource`: the kind its area registered with the
 * namespaces service), its id taken from a path parameter or a body property. Without one, the
 * check is made in `*`; a body property that is absent means `*` too, or its `default` when the
 * operation gives one (the namespace an absent property stands for).
 */
export type NamespaceSource =
  | { readonly param: string }
  | { readonly body: string; readonly default?: string }
  | { readonly query: string }
  | { readonly resource: string; readonly param: string }
  | { readonly resource: string; readonly body: string };

/** A permission a route needs (api-map §6); `{param}` in `object` names a path parameter. */
export interface RoutePermission {
  readonly object: string;
  readonly action: Action;
  readonly namespace?: NamespaceSource;
  /**
   * A list whose items live in namespaces: it needs Read on the collection in at least one
   * namespace, and is narrowed to the namespaces where the caller has it.
   */
  readonly namespaced?: true;
  /**
   * Who may act without the permission, as themself (the service then limits what they may do):
   * the user a path parameter or a body property names; (`{owner: true}`) the user who owns the
   * resource the namespace source looked up; or, on a `namespaced` list, (`{owned: true}`) anyone,
   * for the items they own.
   */
  readonly self?: string | { readonly body: string } | { readonly owner: true } | { readonly owned: true };
}

/**
 * Who may call a route: anyone (`public`), any authenticated caller acting on themself only
 * (`self`), or callers with a permission, which the access guard evaluates. Authentication is
 * required for everything but `public`.
 */
export type RouteAccess = { readonly public: true } | { readonly self: true } | RoutePermission;

export interface RouteOptions {
  readonly method: HttpMethod;
  /** Below the controller's path; `:id` style parameters. */
  readonly path?: string;
  readonly summary: string;
  readonly description?: string;
  readonly access: RouteAccess;
  /** Success status; 200 unless given. */
  readonly status?: number;
  /** Schema of the success body; `[Dto]` for a plain array. */
  readonly response?: Type<unknown> | [Type<unknown>];
  /** Schema of a success body that no DTO describes (an array of enumerated strings, say); instead of `response`. */
  readonly responseSchema?: SchemaObject;
  /** A list operation: its filters, sorts, paging and projection. */
  readonly list?: ListQuerySpec;
  /** Plain query parameters the route takes (name to description), read with `@Query(name)`. */
  readonly query?: Readonly<Record<string, string>>;
  /** Fields a single-resource read accepts in `fields`/`excludeFields`. */
  readonly projection?: readonly string[];
  /** The body is a JSON Patch document. */
  readonly patch?: boolean;
  /** A single resource: replies carry `ETag`, writes honour `If-Match`. */
  readonly etag?: boolean;
  /** Error replies beyond those the other options imply (status to example detail), e.g. 409. */
  readonly errors?: Readonly<Record<number, string>>;
  /** Schema of a body the handler's parameter type cannot tell (an array: `[ItemDto]`). */
  readonly body?: [Type<unknown>];
  /** Body media types; by default `application/json` (and `application/json-patch+json` for PATCH). */
  readonly consumes?: readonly string[];
  /** Success media type when it is not JSON. */
  readonly produces?: string;
  /**
   * The reply is a window of bytes (a `ByteWindowReply`): `{msg}` as JSON, or the raw bytes as
   * application/octet-stream when the request's `Accept` prefers them; with `rawAnyType` (which
   * says when), also raw bytes of any media type (a stored result as its own content type).
   */
  readonly bytes?: true | { readonly rawAnyType: string } | { readonly key: 'message' };
  /**
   * Path parameters the document names otherwise than the route (router parameters cannot hold
   * `-`): `{ workerIndex: 'worker-index' }` documents `:workerIndex` as `{worker-index}`.
   */
  readonly pathNames?: Readonly<Record<string, string>>;
}

/** The operation extension that carries `pathNames` to the document's completion (openapi.ts), which removes it. */
export const PATH_NAMES_EXTENSION = 'x-hub-path-names';

export const ROUTE_OPTIONS = 'hub:route';

/** The `@Route` options of the handler a request is routed to. */
export function routeOptionsOf(context: ExecutionContext): RouteOptions | undefined {
  return Reflect.getMetadata(ROUTE_OPTIONS, context.getHandler()) as RouteOptions | undefined;
}

const METHODS = { GET: Get, POST: Post, PUT: Put, PATCH: Patch, DELETE: Delete } as const;

const BODY_MEDIA_TYPES: Partial<Record<HttpMethod, readonly string[]>> = {
  POST: ['application/json'],
  PUT: ['application/json'],
  PATCH: ['application/json-patch+json', 'application/json'],
};

/** The media types a route's body may have; undefined for routes without a body. */
export function acceptedMediaTypes(options: RouteOptions): readonly string[] | undefined {
  return options.consumes ?? BODY_MEDIA_TYPES[options.method];
}

/** `Retry-After`, on the refusals that say when to try again (429, 503). */
const RETRY_AFTER = { 'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer', minimum: 0 } } };

function problem(status: number, detail: string, errors?: { path: string; message: string }[]): MethodDecorator {
  const title = STATUS_CODES[status] ?? 'Error';
  const example = { type: 'about:blank', title, status, detail, msg: detail, ...(errors && { errors }), requestId: '5f0c6a1e-4b8e-4a5e-9a55-0d7f3c1c2b11' };
  return ApiResponse({
    status,
    description: title,
    headers: status === 429 || status === 503 ? RETRY_AFTER : undefined,
    content: { 'application/problem+json': { schema: { $ref: getSchemaPath(ProblemDetailsDto) }, example } },
  });
}

function valueSchema(spec: FilterFieldSpec, operator: FilterOperator): SchemaObject {
  const item: SchemaObject =
    typeof spec.type !== 'string' ? { type: 'string', enum: [...spec.type] } : spec.type === 'uuid' ? { type: 'string', format: 'uuid' } : { type: 'string' };
  switch (operator) {
    case 'IN':
    case 'ALL':
    case 'ANY':
      return { type: 'array', items: item };
    case 'PR':
      return { type: 'boolean' };
    case 'LT':
    case 'GT':
      return { type: 'string', format: 'date-time' };
    default:
      return spec.type === 'boolean' ? { type: 'boolean' } : item;
  }
}

const OPERATOR_MEANINGS: Record<FilterOperator, string> = {
  EQ: 'equals',
  IN: 'is any of (repeat the parameter or separate values with commas)',
  CO: 'contains, ignoring case',
  SW: 'starts with, ignoring case',
  ST: 'starts with, ignoring case',
  PR: 'is present (true) or absent (false)',
  LT: 'is before',
  GT: 'is after',
  ALL: 'holds all of',
  ANY: 'holds any of',
};

function projectionParameters(fields: readonly string[]): MethodDecorator[] {
  const schema: SchemaObject = { type: 'array', items: { type: 'string', enum: [...fields] } };
  return [
    ApiQuery({ name: 'fields', required: false, schema, description: 'Return only these fields (repeat or separate with commas)' }),
    ApiQuery({ name: 'excludeFields', required: false, schema, description: 'Return all fields but these' }),
  ];
}

function listParameters(spec: ListQuerySpec): MethodDecorator[] {
  const filters = Object.entries(spec.filters).flatMap(([field, filter]) => [
    ...filter.operators.map((operator) =>
      ApiQuery({
        name: `filter[${field}][${operator}]`,
        required: filter.required === true && filter.operators.length === 1,
        schema: valueSchema(filter, operator),
        description: `${field} ${OPERATOR_MEANINGS[operator]}${filter.required ? ' (required)' : ''}`,
      }),
    ),
    ...(filter.plain
      ? [ApiQuery({ name: field, required: false, schema: valueSchema(filter, filter.plain), description: `The same as filter[${field}][${filter.plain}]` })]
      : []),
  ]);
  const sorts = Object.keys(spec.sorts).flatMap((key) => [key, `-${key}`]);
  const projection = spec.projection ? projectionParameters(spec.projection) : [];
  if (spec.paged === false) return [...filters, ...projection];
  return [
    ...filters,
    ApiQuery({ name: 'page[offset]', required: false, schema: { type: 'integer', minimum: 0, default: 0 }, description: 'Items to skip' }),
    ApiQuery({
      name: 'page[limit]',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT },
      description: 'Items per page',
    }),
    ApiQuery({
      name: 'sort',
      required: false,
      schema: { type: 'string', enum: sorts, default: spec.defaultSort },
      description: 'Sort key; a leading - reverses the order',
    }),
    ...projection,
  ];
}

function accessDecorators(access: RouteAccess): MethodDecorator[] {
  if ('public' in access) return [];
  const requirement = 'object' in access ? { object: access.object, action: access.action, ...(access.self && { self: true }) } : { self: true };
  return [ApiBearerAuth('bearerAuth'), ApiBasicAuth('basicAuth'), ApiExtension('x-hub-permission', requirement)];
}

function errorResponses(options: RouteOptions): MethodDecorator[] {
  const takesBody = ['POST', 'PUT', 'PATCH'].includes(options.method);
  const details: Record<number, string> = {};
  if (!('public' in options.access)) {
    details[401] = 'A bearer token or HTTP Basic credentials are required';
    // HTTP Basic credentials are checked like a login, under its limits (api-map §1).
    details[429] = 'Too many failed logins for this user name; try again later';
  }
  if ('object' in options.access) details[403] = `Not allowed: ${options.access.action} on ${options.access.object}`;
  if (options.path?.includes(':')) details[404] = 'Not found';
  if (options.etag && ['PUT', 'PATCH', 'DELETE'].includes(options.method))
    details[412] = 'If-Match does not match the current version "3"; read the resource again';
  // A write retried past its attempts while concurrent ones kept changing the row (see locked-rows.ts).
  if (options.etag && ['PUT', 'PATCH'].includes(options.method)) details[409] = 'The resource kept changing while this request was applied; retry';
  // Any request's URL or headers may be longer than the server takes.
  details[414] = 'The URL is longer than the server takes';
  details[431] = 'The request headers are larger than the server takes';
  // Fastify reads a body sent with any method but GET, whether the operation takes one or not.
  if (options.method !== 'GET') {
    details[413] = 'The request body is larger than the 1048576 bytes allowed';
    details[415] = 'Unsupported media type "text/plain"; this operation accepts application/json';
  }
  // A write's transaction may collide with a concurrent one (a serialization failure or a deadlock),
  // and any request may find every database connection busy for the pool's whole wait.
  details[503] = options.method === 'GET' ? 'The hub is too busy to take this request now; retry it' : 'The request collided with a concurrent one; retry it';
  Object.assign(details, options.errors);
  // Every route refuses query parameters it does not declare; routes with a body refuse bad bodies.
  const invalid = takesBody
    ? problem(400, 'Invalid request body: name must be a string', [{ path: '/name', message: 'name must be a string' }])
    : problem(400, 'Invalid query parameter: filter[nam][EQ] names an unknown field "nam"', [
        { path: 'filter[nam][EQ]', message: 'names an unknown field "nam"' },
      ]);
  return [invalid, ...Object.entries(details).map(([status, detail]) => problem(Number(status), detail))];
}

function bodyDecorators(options: RouteOptions): MethodDecorator[] {
  if (options.patch) {
    const operation: SchemaObject = {
      type: 'object',
      required: ['op', 'path'],
      properties: { op: { type: 'string', enum: [...PATCH_OPERATIONS] }, path: { type: 'string', example: '/description' }, value: {} },
    };
    return [
      ApiConsumes('application/json-patch+json', 'application/json'),
      ApiBody({ schema: { type: 'array', items: operation }, description: 'RFC 6902 JSON Patch' }),
    ];
  }
  return [...(options.consumes ? [ApiConsumes(...options.consumes)] : []), ...(options.body ? [ApiBody({ type: options.body })] : [])];
}

function successResponse(options: RouteOptions): MethodDecorator {
  const status = options.status ?? 200;
  const headers =
    options.etag && options.method !== 'DELETE'
      ? { ETag: { description: 'Version of the resource, for If-Match', required: true, schema: { type: 'string' } } }
      : undefined;
  if (options.produces) return ApiResponse({ status, description: 'OK', headers, content: { [options.produces]: { schema: { type: 'string' } } } });
  if (options.bytes) {
    const rawAnyType = options.bytes !== true && 'rawAnyType' in options.bytes ? options.bytes.rawAnyType : undefined;
    const keyed = options.bytes !== true && 'key' in options.bytes;
    return ApiResponse({
      status,
      description: `The window as \`{${keyed ? 'message' : 'msg'}}\`, or its exact bytes when \`Accept\` prefers application/octet-stream${rawAnyType ? `; ${rawAnyType}` : ''}`,
      headers,
      content: {
        'application/json': {
          schema: keyed
            ? { type: 'object', required: ['message'], properties: { message: { type: 'string' } }, additionalProperties: false }
            : { $ref: getSchemaPath(MessageDto) },
        },
        [OCTET_STREAM]: { schema: { type: 'string', format: 'binary' } },
        ...(rawAnyType && { '*/*': { schema: { type: 'string', format: 'binary' } } }),
      },
    });
  }
  const description = status === 201 ? 'Created' : 'OK';
  if (options.responseSchema) return ApiResponse({ status, description, schema: options.responseSchema, headers });
  return ApiResponse({ status, description, type: documentedResponse(options), headers });
}

/** A GET of a single resource answers 304, without a body, while `If-None-Match` still holds. */
function notModifiedResponse(options: RouteOptions): MethodDecorator[] {
  if (!options.etag || options.method !== 'GET') return [];
  return [ApiResponse({ status: 304, description: 'Not Modified: the resource still has the ETag If-None-Match gave' })];
}

/** The schema of a route's success body: with `fields`/`excludeFields`, its projected form, which requires no field of the entity. */
function documentedResponse(options: RouteOptions): Type<unknown> | [Type<unknown>] | undefined {
  const projects = options.projection !== undefined || options.list?.projection !== undefined;
  if (!projects || options.response === undefined || Array.isArray(options.response)) return options.response;
  return Projected(options.response);
}

/**
 * Declares a route in one place: method and path, who may call it, its OpenAPI description and
 * error replies, and, for lists, every filter, sort and paging parameter it accepts.
 */
export function Route(options: RouteOptions): MethodDecorator {
  const writes = options.method !== 'GET';
  return applyDecorators(
    METHODS[options.method](options.path ?? ''),
    HttpCode(options.status ?? 200),
    SetMetadata(ROUTE_OPTIONS, options),
    ApiOperation({ summary: options.summary, description: options.description }),
    ApiExtraModels(ProblemDetailsDto, ...(options.bytes ? [MessageDto] : [])),
    successResponse(options),
    ...notModifiedResponse(options),
    ...(options.produces ? [ApiProduces(options.produces)] : []),
    ...accessDecorators(options.access),
    ...errorResponses(options),
    ...bodyDecorators(options),
    ...(options.list ? listParameters(options.list) : []),
    ...(options.projection ? projectionParameters(options.projection) : []),
    ...Object.entries(options.query ?? {}).map(([name, description]) => ApiQuery({ name, required: false, schema: { type: 'string' }, description })),
    ...(options.etag && ['PUT', 'PATCH', 'DELETE'].includes(options.method)
      ? [ApiHeader({ name: 'If-Match', required: false, description: 'Apply only if the resource still has this ETag' })]
      : []),
    ...(options.pathNames ? [ApiExtension(PATH_NAMES_EXTENSION, options.pathNames)] : []),
    ...(options.etag && !writes ? [ApiHeader({ name: 'If-None-Match', required: false, description: 'Answer 304 if the resource still has this ETag' })] : []),
  );
}

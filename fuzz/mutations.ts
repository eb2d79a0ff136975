import { createHmac, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { disarm, percentEncode, type Draw, type HubRequest, type Operation } from './requests.js';

/** What the fuzzer knows to forge tokens: the hub's key, and a real token to copy claims from. */
export interface Credentials {
  readonly token: string;
  readonly jwtSecret: string;
  readonly userName: string;
}

export interface Mutation {
  readonly kind: string;
  /** Whether the request carries no valid credentials (so a non-public operation must answer 401). */
  readonly unauthenticated?: boolean;
  readonly apply: (request: HubRequest, operation: Operation, draw: Draw, credentials: Credentials) => HubRequest | undefined;
  /** For a mutation of one field, made at every field in turn ("null in every field"): how many fields a request has, and the request mutated at one. */
  readonly fields?: (request: HubRequest) => number;
  readonly applyAt?: (request: HubRequest, index: number, draw: Draw) => HubRequest | undefined;
}

/** Strings that have broken servers: traversal, NUL, SQL and shell metacharacters, templates, odd Unicode. */
const HOSTILE_STRINGS = [
  '../',
  '../../../../etc/passwd',
  '..%2f..%2f..%2fetc%2fpasswd',
  '%00',
  '\0',
  'a\0b',
  "' OR '1'='1",
  "'; DROP TABLE users; --",
  '" OR ""="',
  "1' AND pg_sleep(5)--",
  '$(id)',
  '`id`',
  '; ls -la /',
  '| cat /etc/passwd',
  '&& echo pwned',
  '${7*7}',
  '{{7*7}}',
  '%s%s%s%n',
  '\\',
  '\r\n\r\nX-Injected: 1',
  '\u202e\u0000\uffff',
  '\ud800',
  '🙂',
  '',
  ' ',
  '%',
  '-1',
  '99999999999999999999999',
  'NaN',
  'null',
  'true',
  '[]',
  '{}',
  '*',
  ',,,',
];

const hostileString = fc.oneof(fc.constantFrom(...HOSTILE_STRINGS), fc.string({ unit: 'binary', maxLength: 64 }), fc.string({ maxLength: 8 }));

/** A JSON value of any type. */
// Without `__proto__` keys: Fastify refuses them as it parses, before authentication (a 400 by
// design, test/common/http.e2e-spec.ts); the 'prototype poisoning' mutation sends them on purpose.
const anyJson = fc.jsonValue({ maxDepth: 3 }).filter((value) => !JSON.stringify(value).includes('"__proto__"'));

const OPERATORS = ['EQ', 'IN', 'CO', 'SW', 'ST', 'PR', 'LT', 'GT', 'ALL', 'ANY', 'eq', 'XX', '', 'EQ]['];

const BAD_FILTER_VALUES = ['', 'maybe', '2026-13-45T99:99:99Z', 'not-a-uuid', '0', '-1', '1e309', 'a,b,,c', ...HOSTILE_STRINGS];

/** Every place in a JSON body: `[]` is the body itself. */
function placesIn(body: unknown, path: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(path);
  if (out.length > 500) return out;
  if (Array.isArray(body)) body.slice(0, 20).forEach((item, index) => placesIn(item, [...path, index], out));
  else if (typeof body === 'object' && body !== null) Object.entries(body).forEach(([key, value]) => placesIn(value, [...path, key], out));
  return out;
}

/** A copy of `body` with the value at `path` replaced (or removed, for `undefined`). */
function replaced(body: unknown, path: readonly (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  if (Array.isArray(body)) return body.map((item, index) => (index === head ? replaced(item, rest, value) : item));
  const record = { ...(body as Record<string, unknown>) };
  if (rest.length === 0 && value === undefined) delete record[head];
  else record[head] = replaced(record[head], rest, value);
  return record;
}

/**
 * A mutation of one place in the body (a property, an item, or the body itself); with `everyField`,
 * the first pass makes it at every place in turn.
 */
function atSomePlace(kind: string, value: (draw: Draw, current: unknown) => unknown, { placesOnly = false, everyField = false } = {}): Mutation {
  const places = (request: HubRequest) =>
    request.body === undefined ? [] : placesIn(request.body).filter((path) => !placesOnly || typeof path[path.length - 1] === 'string');
  const at = (request: HubRequest, path: (string | number)[] | undefined, draw: Draw): HubRequest | undefined => {
    if (!path) return undefined;
    const current = path.reduce<unknown>((node, key) => (node as Record<string | number, unknown> | undefined)?.[key], request.body);
    return { ...request, body: disarm(replaced(request.body, path, value(draw, current))) };
  };
  return {
    kind,
    apply: (request, _operation, draw) => {
      const candidates = places(request);
      return candidates.length === 0 ? undefined : at(request, draw.pick(candidates), draw);
    },
    ...(everyField && {
      fields: (request: HubRequest) => places(request).length,
      applyAt: (request: HubRequest, index: number, draw: Draw) => at(request, places(request)[index], draw),
    }),
  };
}

function withBodyText(request: HubRequest, raw: Buffer): HubRequest {
  return { ...request, body: undefined, raw, headers: { ...request.headers, 'content-type': String(request.headers['content-type'] ?? 'application/json') } };
}

function nested(depth: number, kind: 'array' | 'object'): unknown {
  let value: unknown = 1;
  for (let level = 0; level < depth; level += 1) value = kind === 'array' ? [value] : { a: value };
  return value;
}

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function jwt(header: Record<string, unknown>, claims: Record<string, unknown>, key: string | undefined): string {
  const unsigned = `${base64url(header)}.${base64url(claims)}`;
  return `${unsigned}.${key === undefined ? '' : createHmac('sha256', key).update(unsigned).digest('base64url')}`;
}

/** Credentials that identify no one, each of which must be a 401: forged, expired, malformed, or wrong. */
function badAuthorization(draw: Draw, credentials: Credentials): [string | undefined, string] {
  const kind = draw.pick(['none', 'garbage', 'alg-none', 'other-key', 'expired', 'unknown-user', 'no-exp', 'basic-wrong', 'basic-garbage', 'tampered']);
  return [forged(kind, draw, credentials), kind];
}

function forged(kind: string, draw: Draw, credentials: Credentials): string | undefined {
  const claims = JSON.parse(Buffer.from(credentials.token.split('.')[1], 'base64url').toString()) as Record<string, unknown>;
  const now = Math.floor(Date.now() / 1000);
  switch (kind) {
    case 'none':
      return undefined;
    case 'garbage':
      return draw.pick(['Bearer', 'Bearer ', 'Bearer x.y.z', `Bearer ${draw.value(hostileString)}`, 'Token abc', 'Bearer '.repeat(200)]);
    case 'alg-none':
      return `Bearer ${jwt({ alg: 'none', typ: 'JWT' }, claims, undefined)}`;
    case 'other-key':
      return `Bearer ${jwt({ alg: 'HS256', typ: 'JWT' }, claims, 'another key, not the hub one, 32+ characters long')}`;
    case 'expired':
      return `Bearer ${jwt({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now - 7200, exp: now - 3600 }, credentials.jwtSecret)}`;
    case 'unknown-user':
      return `Bearer ${jwt({ alg: 'HS256', typ: 'JWT' }, { ...claims, sub: randomUUID(), iat: now, exp: now + 600 }, credentials.jwtSecret)}`;
    case 'no-exp': {
      const { exp: _exp, ...rest } = claims;
      return `Bearer ${jwt({ alg: 'HS256', typ: 'JWT' }, rest, credentials.jwtSecret)}`;
    }
    case 'basic-wrong':
      return `Basic ${Buffer.from(`${draw.chance(0.3) ? credentials.userName : draw.value(fc.stringMatching(/^[a-z]{1,12}$/))}:wrong-password`).toString('base64')}`;
    case 'basic-garbage':
      return draw.pick(['Basic', 'Basic !!!', `Basic ${Buffer.from('no-colon').toString('base64')}`, `Basic ${Buffer.from(':').toString('base64')}`]);
    default: {
      const [header, , signature] = credentials.token.split('.');
      return `Bearer ${header}.${base64url({ ...claims, userName: 'someone-else', groups: [] })}.${signature}`;
    }
  }
}

/**
 * Mutations of what a readable request says, which the hub decides on only once it knows who asks:
 * with bad credentials, they must still be a 401. The others (bad JSON, wrong media types, oversize
 * or too deeply nested bodies, malformed paths, repeated headers) are refused while the request is
 * read and routed, before credentials are looked at, and reveal nothing.
 */
const AFTER_READING = new Set([
  'wrong type',
  'null',
  'missing field',
  'extra field',
  'huge string',
  'wide value',
  'query injection',
  'filter',
  'paging and sorting',
]);

/** The mutations, each a kind of hostile input; every operation gets every one that applies to it. */
export const MUTATIONS: readonly Mutation[] = [
  atSomePlace(
    'wrong type',
    (draw, current) => draw.value(anyJson.filter((value) => typeof value !== typeof current || Array.isArray(value) !== Array.isArray(current))),
    { everyField: true },
  ),
  atSomePlace('null', () => null, { placesOnly: true, everyField: true }),
  atSomePlace('missing field', () => undefined, { placesOnly: true, everyField: true }),
  {
    kind: 'extra field',
    apply: (request, _operation, draw) =>
      typeof request.body === 'object' && request.body !== null && !Array.isArray(request.body)
        ? {
            ...request,
            body: { ...request.body, [draw.value(fc.oneof(fc.string(), fc.constantFrom('_id', 'x', 'toString')))]: draw.value(anyJson) },
          }
        : undefined,
  },
  atSomePlace('huge string', (draw) =>
    draw.value(fc.constantFrom('x', 'é', '\u0001', '🙂', '%00')).repeat(draw.value(fc.integer({ min: 100_000, max: 240_000 }))),
  ),
  atSomePlace('deep nesting', (draw) => nested(draw.value(fc.integer({ min: 60, max: 3_000 })), draw.pick(['array', 'object'] as const))),
  atSomePlace('wide value', (draw) =>
    draw.chance(0.5)
      ? Array.from({ length: draw.value(fc.integer({ min: 1_000, max: 100_000 })) }, () => draw.pick([[[]], {}, 1, 'x', null]))
      : Object.fromEntries(Array.from({ length: draw.value(fc.integer({ min: 1_000, max: 30_000 })) }, (_, index) => [`k${index}`, index])),
  ),
  {
    kind: 'prototype poisoning',
    apply: (request, operation) =>
      operation.mediaTypes.length === 0
        ? undefined
        : withBodyText(
            request,
            Buffer.from(`{"__proto__":{"admin":true},"constructor":{"prototype":{"admin":true}},"a":${JSON.stringify(request.body ?? null)}}`),
          ),
  },
  {
    kind: 'bad JSON',
    apply: (request, operation, draw) =>
      operation.mediaTypes.length === 0
        ? undefined
        : withBodyText(
            request,
            draw.pick([
              Buffer.from('{'),
              Buffer.from('{"a":}'),
              Buffer.from('[1,2,'),
              Buffer.from('\ufeff{}'),
              Buffer.from([0xff, 0xfe, 0x00, 0x7b]),
              Buffer.from('{"a":1}{"b":2}'),
              Buffer.from('"just a string"'),
              Buffer.from('null'),
              Buffer.from('1e999999'),
              Buffer.from(`${'['.repeat(200_000)}${']'.repeat(200_000)}`),
              Buffer.from(JSON.stringify(request.body ?? {}).slice(0, -1)),
            ]),
          ),
  },
  {
    kind: 'wrong media type',
    apply: (request, operation, draw) => ({
      ...request,
      body: request.body ?? (operation.mediaTypes.length === 0 ? { a: 1 } : undefined),
      headers: {
        ...request.headers,
        'content-type': draw.pick([
          'text/plain',
          'application/xml',
          'multipart/form-data; boundary=x',
          'application/x-www-form-urlencoded',
          'application/json; charset=latin1',
          'application/json-patch+json',
          ';;;',
          'application/',
          '*/*',
        ]),
      },
    }),
  },
  {
    kind: 'bad credentials',
    unauthenticated: true,
    apply: (request, operation, draw, credentials) => {
      const { authorization: _authorization, ...headers } = request.headers;
      const [authorization, note] = badAuthorization(draw, credentials);
      const mutated = { ...request, note: `credentials: ${note}`, headers: authorization === undefined ? headers : { ...headers, authorization } };
      // Credentials come before anything the hub decides: a bad body or an unknown parameter too is a 401.
      // (A request it cannot read or route, malformed or oversize, is refused as such first: see AFTER_READING.)
      if (!draw.chance(0.5)) return mutated;
      const other = draw.pick(MUTATIONS.filter((mutation) => AFTER_READING.has(mutation.kind)));
      const both = other.apply(mutated, operation, draw, credentials);
      if (!both) return mutated;
      const { authorization: _other, ...rest } = both.headers;
      return { ...both, headers: authorization === undefined ? rest : { ...rest, authorization } };
    },
  },
  {
    kind: 'path injection',
    apply: (request, operation, draw) => {
      const names = [...operation.path.matchAll(/\{([^}]+)\}/g)];
      if (names.length === 0) return undefined;
      const segments = operation.path.split('/');
      const requested = request.path.split('/');
      const index = segments.indexOf(`{${draw.pick(names)[1]}}`);
      const payload = draw.value(hostileString);
      const raw = draw.chance(0.3) && /^[\x21-\x7e]*$/.test(payload) && !payload.includes('?') && !payload.includes('#');
      requested[index] = raw ? payload : percentEncode(payload).repeat(draw.chance(0.2) ? draw.value(fc.integer({ min: 2, max: 2_000 })) : 1);
      return { ...request, path: requested.join('/') };
    },
  },
  {
    kind: 'query injection',
    apply: (request, operation, draw) => {
      const known = operation.parameters.filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name);
      const name =
        known.length > 0 && draw.chance(0.7)
          ? draw.pick(known)
          : draw.value(fc.oneof(hostileString, fc.constantFrom('filter', 'filter[]', 'filter[a][b][c]', 'page', 'fields')));
      return { ...request, query: [...request.query, [name, draw.value(hostileString)]] };
    },
  },
  {
    kind: 'filter',
    apply: (request, operation, draw) => {
      const fields = [...new Set(operation.parameters.flatMap((parameter) => /^filter\[([^\]]+)\]/.exec(parameter.name)?.[1] ?? []))];
      if (fields.length === 0) return undefined;
      const field = draw.chance(0.9) ? draw.pick(fields) : draw.value(hostileString);
      const value = draw.chance(0.7) ? draw.pick(BAD_FILTER_VALUES) : draw.value(hostileString);
      return { ...request, query: [...request.query, [`filter[${field}][${draw.pick(OPERATORS)}]`, value]] };
    },
  },
  {
    kind: 'paging and sorting',
    apply: (request, operation, draw) => {
      const names = operation.parameters.filter((parameter) => ['page[limit]', 'page[offset]', 'sort', 'fields', 'excludeFields'].includes(parameter.name));
      if (names.length === 0) return undefined;
      const value = draw.pick(['-1', '0', '1001', '1e309', 'abc', '', '999999999999999999999', '1.5', ' 1', '0x10', '-', '--name', ',', ...HOSTILE_STRINGS]);
      return { ...request, query: [...request.query, [draw.pick(names).name, value]] };
    },
  },
  {
    kind: 'repeated parameters',
    apply: (request, operation, draw) => {
      const query = operation.parameters.filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name);
      const repeated = [...request.query, ...request.query.map(([name]) => [name, draw.value(hostileString)] as const)];
      const extra = query.length > 0 ? [[draw.pick(query), '1'] as const, [draw.pick(query), '2'] as const] : [];
      const contentType = request.headers['content-type'];
      return {
        ...request,
        query: [...repeated, ...extra],
        headers: contentType ? { ...request.headers, 'content-type': [String(contentType), 'text/plain'] } : request.headers,
      };
    },
  },
  {
    kind: 'oversize body',
    apply: (request) => ({
      ...request,
      body: undefined,
      raw: Buffer.from(JSON.stringify({ ...(typeof request.body === 'object' ? request.body : {}), padding: 'x'.repeat(1_200_000) })),
      headers: { ...request.headers, 'content-type': String(request.headers['content-type'] ?? 'application/json') },
    }),
  },
];

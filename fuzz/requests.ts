import { Agent, request as httpRequest } from 'node:http';
import fc from 'fast-check';
import { sample } from 'openapi-sampler';

/** What the fuzzer reads of the hub's OpenAPI document. */
export interface Schema {
  readonly $ref?: string;
  readonly type?: string;
  readonly enum?: readonly unknown[];
  readonly items?: Schema;
  readonly [key: string]: unknown;
}

interface Parameter {
  readonly name: string;
  readonly in: 'path' | 'query' | 'header';
  readonly required?: boolean;
  readonly schema?: Schema;
}

interface OperationObject {
  readonly operationId: string;
  readonly parameters?: readonly Parameter[];
  readonly requestBody?: { readonly content: Record<string, { readonly schema?: Schema }> };
  readonly security?: readonly unknown[];
}

export interface OpenApiDocument {
  readonly openapi: string;
  readonly paths: Record<string, Record<string, OperationObject>>;
  readonly components: { readonly schemas: Record<string, Schema> };
}

/** One operation of the document, as the fuzzer drives it. */
export interface Operation {
  readonly id: string;
  readonly method: string;
  /** The path template, `{name}` for parameters. */
  readonly path: string;
  readonly parameters: readonly Parameter[];
  readonly mediaTypes: readonly string[];
  readonly bodySchema?: Schema;
  /** No credentials needed (an empty `security`, api-map §0). */
  readonly public: boolean;
}

/** A request as sent: the body is JSON unless `raw` is given. */
export interface HubRequest {
  readonly method: string;
  /** The path with its parameters filled in, encoded (and possibly hostile). */
  readonly path: string;
  readonly query: readonly (readonly [string, string])[];
  readonly headers: Readonly<Record<string, string | string[]>>;
  readonly body?: unknown;
  readonly raw?: Buffer;
  /** What a mutation did that the request does not show plainly (the kind of a forged token). */
  readonly note?: string;
}

export interface HubResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Buffer;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** Every operation of the document: the fuzzer covers whatever routes exist, listing none by hand. */
export function operationsOf(document: OpenApiDocument): Operation[] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]) => {
        const content = operation.requestBody?.content ?? {};
        const mediaTypes = Object.keys(content);
        return {
          id: `${method.toUpperCase()} ${path}`,
          method: method.toUpperCase(),
          path,
          parameters: operation.parameters ?? [],
          mediaTypes,
          bodySchema: mediaTypes.length > 0 ? content[mediaTypes[0]].schema : undefined,
          public: Array.isArray(operation.security) && operation.security.length === 0,
        };
      }),
  );
}

/**
 * Draws values from fast-check arbitraries, reproducibly: each draw has its own seed, taken in
 * turn from the run's seed.
 */
export class Draw {
  private count = 0;

  constructor(readonly seed: number) {}

  value<T>(arbitrary: fc.Arbitrary<T>): T {
    this.count += 1;
    return fc.sample(arbitrary, { seed: (this.seed + Math.imul(this.count, 0x9e3779b1)) | 0, numRuns: 1 })[0];
  }

  pick<T>(items: readonly T[]): T {
    return items[this.value(fc.nat({ max: items.length - 1 }))];
  }

  chance(probability: number): boolean {
    return this.value(fc.double({ min: 0, max: 1, noNaN: true })) < probability;
  }
}

/** Ids and names the hub has answered with, by the collection path they came from: valid path parameters and references. */
export class Pools {
  private readonly ids = new Map<string, Set<string>>();
  private readonly names = new Map<string, Set<string>>();
  /** Ids that existed before the run (the administrator, built-in roles): never the target of a write. */
  readonly protectedIds = new Set<string>();

  /** Learns the ids and names in a successful JSON reply to a request of `collection`. */
  learn(collection: string, body: unknown, protect = false): void {
    const visit = (node: unknown, depth: number): void => {
      if (depth > 3 || typeof node !== 'object' || node === null) return;
      if (Array.isArray(node)) return node.slice(0, 200).forEach((item) => visit(item, depth + 1));
      const record = node as Record<string, unknown>;
      const id = record._id ?? record.id;
      if (typeof id === 'string') {
        add(this.ids, collection, id);
        if (protect) this.protectedIds.add(id);
        const name = record.name ?? record.userName;
        if (typeof name === 'string') add(this.names, collection, name);
      }
      Object.values(record).forEach((value) => visit(value, depth + 1));
    };
    visit(body, 0);
  }

  idsOf(collection: string): string[] {
    return [...(this.ids.get(collection) ?? [])];
  }

  /** Ids or names of the collection a property or parameter seems to refer to: `executionProfileId` to `…/execution-profiles…`. */
  referred(property: string, kind: 'id' | 'name'): string[] {
    const wanted = normalise(property.replace(/Ids?$/, ''));
    if (!wanted) return [];
    const pool = kind === 'id' ? this.ids : this.names;
    const matches = (collection: string) => normalise(collection.split('/').pop() ?? '').startsWith(wanted) || normalise(collection).includes(wanted);
    return [...pool.entries()].filter(([collection]) => matches(collection)).flatMap(([, values]) => [...values]);
  }

  allIds(): string[] {
    return [...this.ids.values()].flatMap((values) => [...values]);
  }
}

function add(pool: Map<string, Set<string>>, key: string, value: string): void {
  const values = pool.get(key) ?? new Set<string>();
  if (values.size < 500) values.add(value);
  pool.set(key, values);
}

function normalise(text: string): string {
  return text.toLowerCase().replace(/[^a-z]/g, '');
}

/** The collection a path template's requests read or write: the template up to its last parameter. */
export function collectionOf(template: string): string {
  return template.replace(/\/\{[^}]+\}.*$/, '');
}

/**
 * Commands the fuzzer's workloads may run. A job runs a real process: whatever the fuzzer sends
 * as a `command`, a request that could start one runs this, or a value that names no program.
 */
const HARMLESS_COMMAND = 'true';

/** Whether a `command` value cannot start a program that does anything: not a string, or not a plausible program name. */
function harmlessCommand(value: unknown): boolean {
  return typeof value !== 'string' || value === HARMLESS_COMMAND || value.length > 4096 || value.includes('\0');
}

/**
 * Makes every `command` in a body harmless (see HARMLESS_COMMAND), keeping the mutations that cannot
 * run anything. Below a few levels a body is junk the hub refuses, however deep it goes.
 */
export function disarm(body: unknown, depth = 0): unknown {
  if (depth > 8 || typeof body !== 'object' || body === null) return body;
  if (Array.isArray(body)) return body.map((item) => disarm(item, depth + 1));
  return Object.fromEntries(
    Object.entries(body).map(([key, value]) => [key, key === 'command' && !harmlessCommand(value) ? HARMLESS_COMMAND : disarm(value, depth + 1)]),
  );
}

/**
 * A valid request for an operation, as far as the document and what the hub has answered allow:
 * `plain`, without optional parameters or properties; `full`, with every optional property.
 */
export function validRequest(
  operation: Operation,
  document: OpenApiDocument,
  pools: Pools,
  draw: Draw,
  auth: Record<string, string>,
  { plain = false, full = false }: { plain?: boolean; full?: boolean } = {},
): HubRequest {
  const writes = operation.method !== 'GET';
  const path = operation.path.replace(/\{([^}]+)\}/g, (_match, name: string, offset: number) => {
    const collection = collectionOf(operation.path.slice(0, offset + 1 + name.length + 1));
    const candidates = [...pools.idsOf(collection), ...pools.referred(name, 'id')].filter((id) => !writes || !pools.protectedIds.has(id));
    const parameter = operation.parameters.find((item) => item.in === 'path' && item.name === name);
    const value = candidates.length > 0 && draw.chance(0.9) ? draw.pick(candidates) : String(sampled(parameter?.schema ?? { type: 'string' }, document));
    return percentEncode(value);
  });
  // The required parameters and at most two optional ones (together, some exclude each other).
  const queryParameters = operation.parameters.filter((parameter) => parameter.in === 'query');
  const optional = queryParameters.filter((parameter) => !parameter.required);
  const chosen = [
    ...queryParameters.filter((parameter) => parameter.required),
    ...(optional.length > 0 && !plain ? Array.from({ length: draw.value(fc.nat({ max: 2 })) }, () => draw.pick(optional)) : []),
  ];
  const query = [...new Set(chosen)].map((parameter) => [parameter.name, queryValue(parameter.schema, document, draw)] as const);
  // Half the bodies hold only the required properties: the optional ones' examples do not always fit together.
  const skipNonRequired = !full && (plain || draw.chance(0.5));
  const body = operation.bodySchema ? disarm(withReferences(sampled(operation.bodySchema, document, skipNonRequired), pools, draw)) : undefined;
  const headers: Record<string, string> = { ...auth, ...(body !== undefined ? { 'content-type': operation.mediaTypes[0] } : {}) };
  return { method: operation.method, path, query, headers, body };
}

function sampled(schema: Schema, document: OpenApiDocument, skipNonRequired = false): unknown {
  return sample(schema as never, { skipReadOnly: true, skipNonRequired, quiet: true, enablePatterns: true }, document);
}

function queryValue(schema: Schema | undefined, document: OpenApiDocument, draw: Draw): string {
  if (schema?.enum) return String(draw.pick(schema.enum));
  if (schema?.type === 'array' && schema.items?.enum) return String(draw.pick(schema.items.enum));
  const value = sampled(schema ?? { type: 'string' }, document);
  return Array.isArray(value) ? value.map(String).join(',') : String(value);
}

/**
 * Sampled bodies hold the schema's examples; where a property refers to something the hub has
 * (a `namespace` name, an `executionProfileId`), one of those is used instead, often, and names
 * get a random suffix, so that creates do not all collide.
 */
function withReferences(body: unknown, pools: Pools, draw: Draw): unknown {
  if (Array.isArray(body)) return body.map((item) => withReferences(item, pools, draw));
  if (typeof body !== 'object' || body === null) return body;
  return Object.fromEntries(
    Object.entries(body).map(([key, value]) => {
      if (typeof value !== 'string') return [key, withReferences(value, pools, draw)];
      const references = pools.referred(key, /Ids?$/.test(key) ? 'id' : 'name');
      if (references.length > 0 && draw.chance(0.8)) return [key, draw.pick(references)];
      if (/^(name|userName)$/.test(key) && draw.chance(0.8)) return [key, `${value}${draw.value(fc.stringMatching(/^[a-z0-9]{6}$/))}`];
      return [key, value];
    }),
  );
}

/** Percent-encodes every byte but the unreserved ones; unlike encodeURIComponent it takes lone surrogates too. */
export function percentEncode(text: string): string {
  return Buffer.from(text)
    .toString('latin1')
    .replace(/[^A-Za-z0-9\-_.~]/g, (character) => `%${character.charCodeAt(0).toString(16).padStart(2, '0').toUpperCase()}`);
}

/** Errors of Node's HTTP client for a request it will not write (a control character in a header, say): not the hub's. */
export const UNSENDABLE = new Set(['ERR_INVALID_CHAR', 'ERR_UNESCAPED_CHARACTERS', 'ERR_INVALID_HTTP_TOKEN', 'ERR_HTTP_INVALID_HEADER_VALUE']);

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/**
 * Sends a request with node:http, which writes the path as given (`..` segments and all, unlike
 * fetch). A keep-alive connection the hub closed after its last reply (a 413 does) fails the next
 * request at once (ECONNRESET, or EPIPE while its body is written): that one is sent again, once,
 * on a connection of its own.
 */
export async function send(baseUrl: string, request: HubRequest, timeoutMs = 30_000): Promise<HubResponse> {
  try {
    return await sendOnce(baseUrl, request, timeoutMs, agent);
  } catch (error) {
    // EPIPE: the same close, met while the request's body was still being written.
    if (!['ECONNRESET', 'EPIPE'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error;
    return sendOnce(baseUrl, request, timeoutMs, false);
  }
}

function sendOnce(baseUrl: string, request: HubRequest, timeoutMs: number, via: Agent | false): Promise<HubResponse> {
  const url = new URL(baseUrl);
  const search = request.query.map(([name, value]) => `${percentEncode(name)}=${percentEncode(value)}`).join('&');
  const payload = request.raw ?? (request.body === undefined ? undefined : Buffer.from(JSON.stringify(request.body)));
  return new Promise((resolve, reject) => {
    // Node's client throws at once on what it will not write (see UNSENDABLE).
    const outgoing = httpRequest(
      {
        agent: via,
        host: url.hostname,
        port: url.port,
        method: request.method,
        path: `${request.path}${search ? `?${search}` : ''}`,
        headers: { ...request.headers, ...(payload ? { 'content-length': String(payload.length) } : {}) },
        timeout: timeoutMs,
      },
      (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, body: Buffer.concat(chunks) }));
        incoming.on('error', reject);
      },
    );
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no reply within ${timeoutMs} ms`)));
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';

/**
 * The hub's replies checked against its own OpenAPI document: each reply must be one its operation
 * documents (status, media type, body schema, documented headers). The end-to-end harness
 * (test/support/test-hub.ts) checks every `inject` with it and the fuzz suite every reply; the
 * schemas are checked by Ajv, compiled once per operation, status and media type, when first met.
 */

/**
 * Routes the hub serves outside its document: the interactive documentation, its assets and the
 * document itself (`@nestjs/swagger` serves them, not a controller). Fastify's route templates.
 */
export const OUTSIDE_THE_DOCUMENT: readonly string[] = ['/api/docs', '/api/docs/', '/api/docs/*', '/api/openapi.json'];

/**
 * Routes that forward to a workload (the link session proxy): a reply they forwarded is the
 * workload's own, which the document cannot describe; one the hub made itself (a refusal: 401, 404,
 * 503, a failed upstream) is a problem as every other error reply is (docs/sessions.md).
 */
export const FORWARDING_ROUTES: readonly string[] = [
  '/api/v2/linksessions/sessions/{sessionId}/proxy',
  '/api/v2/linksessions/sessions/{sessionId}/proxy/',
  '/api/v2/linksessions/sessions/{sessionId}/proxy/*',
];

interface SchemaObject {
  readonly [keyword: string]: unknown;
}

interface ResponseObject {
  readonly content?: Readonly<Record<string, { readonly schema?: SchemaObject }>>;
  readonly headers?: Readonly<Record<string, { readonly required?: boolean; readonly schema?: SchemaObject }>>;
}

interface OperationObject {
  readonly operationId?: string;
  readonly responses?: Readonly<Record<string, ResponseObject>>;
}

/** What the contract reads of the document. */
export interface ContractDocument {
  readonly openapi: string;
  readonly paths: Readonly<Record<string, Readonly<Record<string, OperationObject>>>>;
  readonly components?: { readonly schemas?: Readonly<Record<string, SchemaObject>> };
}

/** One reply as the client saw it, and the route that answered it. */
export interface ContractReply {
  readonly method: string;
  /**
   * The route's template in the document's form (`/api/v2/auth/users/{id}`; Fastify's `:id` is
   * taken too), or undefined when no route took the request (an unknown path, a URL the router
   * refused): such a reply must be a problem.
   */
  readonly route: string | undefined;
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | number | undefined>>;
  readonly body: Buffer | string;
  /** On a forwarding route: whether the reply was forwarded from the workload (its own, unchecked) rather than made by the hub. */
  readonly forwarded?: boolean;
}

/** What the check found: the operation, named as `GET /path/{id} (operationId)`, and each violation. */
export interface ContractCheck {
  readonly operation: string;
  /** False when the reply is outside the document (OUTSIDE_THE_DOCUMENT, or forwarded from a workload): nothing was checked. */
  readonly checked: boolean;
  readonly violations: readonly string[];
}

const DOCUMENT_ID = 'hub-openapi.json';

/**
 * Words of OpenAPI that are not JSON Schema keywords and assert nothing: the annotations of schema
 * objects, and the document's own fields (the document is added as a schema whose parts are referred
 * to; its root is compiled, and these words are then known and skipped).
 */
const OPENAPI_WORDS = [
  'example',
  'xml',
  'externalDocs',
  'discriminator',
  'openapi',
  'info',
  'jsonSchemaDialect',
  'servers',
  'paths',
  'webhooks',
  'components',
  'security',
  'tags',
];

/** `application/problem+json; charset=utf-8` → `application/problem+json`. */
function mediaTypeOf(contentType: string): string {
  return contentType.split(';')[0].trim().toLowerCase();
}

function isJson(mediaType: string): boolean {
  return mediaType === 'application/json' || mediaType.endsWith('+json');
}

/** A JSON Pointer token, as a URI fragment takes it. */
function pointerToken(token: string): string {
  return encodeURIComponent(token.replace(/~/g, '~0').replace(/\//g, '~1'));
}

function text(body: Buffer | string): string {
  return typeof body === 'string' ? body : body.toString('utf8');
}

function shown(value: string, limit = 300): string {
  return value.length > limit ? `${value.slice(0, limit)}…` : value;
}

/** Ajv's errors as `/data/0: must have required property '_id'`, one a line. */
function described(errors: readonly ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((error) => {
    const where = error.instancePath || '(the body)';
    const extra =
      error.keyword === 'additionalProperties'
        ? ` '${String((error.params as { additionalProperty: string }).additionalProperty)}'`
        : error.keyword === 'enum'
          ? ` ${JSON.stringify((error.params as { allowedValues: unknown[] }).allowedValues)}`
          : '';
    return `${where} ${error.message ?? error.keyword}${extra}`;
  });
}

export class ReplyContract {
  private readonly ajv: Ajv;
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly templates: { readonly template: string; readonly segments: readonly string[] }[];
  private readonly problem: ValidateFunction;

  constructor(private readonly document: ContractDocument) {
    // OpenAPI 3.1 schemas are JSON Schema 2020-12; 3.0's are draft-07-like with `nullable`, which Ajv knows.
    const options: Options = { allErrors: true, strict: true, strictTypes: false, discriminator: false, validateFormats: true };
    this.ajv = document.openapi.startsWith('3.1') ? new Ajv2020(options) : new Ajv(options);
    this.ajv.addVocabulary(OPENAPI_WORDS);
    formats.default(this.ajv);
    // The whole document, so that a response's `$ref`s resolve; only the schemas referred to are compiled.
    this.ajv.addSchema({ ...document, $id: DOCUMENT_ID }, undefined, undefined, false);
    this.templates = Object.keys(document.paths).map((template) => ({ template, segments: template.split('/') }));
    this.problem = this.ajv.compile({ $ref: `${DOCUMENT_ID}#/components/schemas/ProblemDetailsDto` });
  }

  /** Replies checked so far, by operation (for the figures); a reply outside the document is not counted. */
  readonly counts = new Map<string, number>();

  /**
   * The document's template of a concrete path (for clients that do not know which route answered,
   * like the fuzzer): the one whose segments match, a fixed segment winning over a parameter, as
   * Fastify's router chooses. Undefined when none matches.
   */
  routeOf(method: string, path: string): string | undefined {
    const segments = path.split('?')[0].split('/');
    let best: { template: string; score: string } | undefined;
    for (const { template, segments: wanted } of this.templates) {
      if (wanted.length !== segments.length || !this.document.paths[template][method.toLowerCase()]) continue;
      let score = '';
      let matches = true;
      for (const [index, segment] of wanted.entries()) {
        if (segment.startsWith('{')) {
          matches = segments[index].length > 0;
          score += '0';
        } else {
          matches = segment === segments[index];
          score += '1';
        }
        if (!matches) break;
      }
      if (matches && (!best || score > best.score)) best = { template, score };
    }
    return best?.template;
  }

  check(reply: ContractReply): ContractCheck {
    const method = reply.method.toLowerCase();
    const route = reply.route?.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    if (route !== undefined && OUTSIDE_THE_DOCUMENT.includes(route)) return { operation: `${reply.method} ${route}`, checked: false, violations: [] };
    if (route === undefined) return this.checkUnrouted(reply);
    if (FORWARDING_ROUTES.includes(route))
      return reply.forwarded ? { operation: `${reply.method} ${route}`, checked: false, violations: [] } : this.checkRefusal(reply, route);
    const operationObject = this.document.paths[route]?.[method];
    const name = `${reply.method.toUpperCase()} ${route}${operationObject?.operationId ? ` (${operationObject.operationId})` : ''}`;
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
    if (!operationObject) return { operation: name, checked: true, violations: ['the route is not in the document'] };
    const responses = operationObject.responses ?? {};
    const statusKey = [String(reply.status), `${String(reply.status)[0]}XX`, 'default'].find((key) => responses[key]);
    if (!statusKey)
      return {
        operation: name,
        checked: true,
        violations: [`status ${reply.status} is not documented (documented: ${Object.keys(responses).join(', ')}): ${shown(text(reply.body))}`],
      };
    const response = responses[statusKey];
    const pointer = `#/paths/${pointerToken(route)}/${method}/responses/${statusKey}`;
    return {
      operation: name,
      checked: true,
      violations: [...this.contentViolations(reply, response, pointer), ...this.headerViolations(reply, response, pointer)],
    };
  }

  /** A request no route took (an unknown path, a URL the router refused) is answered with a problem, 4xx. */
  private checkUnrouted(reply: ContractReply): ContractCheck {
    const operation = `${reply.method.toUpperCase()} (no route)`;
    const violations = reply.status < 400 || reply.status >= 500 ? [`status ${reply.status} to a request no route took`] : [];
    return this.checkProblem(reply, operation, violations);
  }

  /** What the hub answers itself on a forwarding route is a refusal: a problem, 4xx or 5xx. */
  private checkRefusal(reply: ContractReply, route: string): ContractCheck {
    const operation = `${reply.method.toUpperCase()} ${route} (the hub's own reply)`;
    const violations = reply.status < 400 ? [`status ${reply.status} made by the hub on a route that forwards, not a refusal`] : [];
    return this.checkProblem(reply, operation, violations);
  }

  /** A reply that must be a problem (application/problem+json, the document's schema), with what is already wrong with it. */
  private checkProblem(reply: ContractReply, operation: string, violations: string[]): ContractCheck {
    this.counts.set(operation, (this.counts.get(operation) ?? 0) + 1);
    const mediaType = mediaTypeOf(String(reply.headers['content-type'] ?? ''));
    if (mediaType !== 'application/problem+json') violations.push(`content type ${JSON.stringify(mediaType)}, not application/problem+json`);
    else violations.push(...this.bodyViolations(reply.body, this.problem));
    return { operation, checked: true, violations };
  }

  private contentViolations(reply: ContractReply, response: ResponseObject, pointer: string): string[] {
    const content = response.content ?? {};
    const documented = Object.keys(content);
    const contentType = reply.headers['content-type'];
    if (documented.length === 0) return reply.body.length === 0 ? [] : [`a body where none is documented: ${shown(text(reply.body))}`];
    if (reply.status === 304) return [];
    const mediaType = mediaTypeOf(String(contentType ?? ''));
    // An exact media type first, then a range (`text/*`, `*/*`) as OpenAPI lets a document give.
    const key =
      documented.find((candidate) => mediaTypeOf(candidate) === mediaType) ??
      documented.find((candidate) => {
        const range = mediaTypeOf(candidate);
        return range === '*/*' || (range.endsWith('/*') && mediaType.startsWith(range.slice(0, -1)));
      });
    if (!key) return [`content type ${JSON.stringify(contentType ?? null)} is not documented (documented: ${documented.join(', ')})`];
    // Raw bytes and other non-JSON media types are checked for status and media type only.
    if (!isJson(mediaType) || !content[key].schema) return [];
    const schemaPointer = `${pointer}/content/${pointerToken(key)}/schema`;
    let validate = this.validators.get(schemaPointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `${DOCUMENT_ID}${schemaPointer}` });
      this.validators.set(schemaPointer, validate);
    }
    return this.bodyViolations(reply.body, validate);
  }

  private bodyViolations(body: Buffer | string, validate: ValidateFunction): string[] {
    let value: unknown;
    try {
      value = JSON.parse(text(body));
    } catch {
      return [`the body is not JSON: ${shown(text(body))}`];
    }
    if (validate(value)) return [];
    return [...described(validate.errors), `in ${shown(text(body))}`];
  }

  private headerViolations(reply: ContractReply, response: ResponseObject, pointer: string): string[] {
    const violations: string[] = [];
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      const value = reply.headers[name.toLowerCase()];
      if (value === undefined) {
        if (header.required && reply.status !== 304) violations.push(`header ${name} is documented as required but absent`);
        continue;
      }
      if (!header.schema) continue;
      const schemaPointer = `${pointer}/headers/${pointerToken(name)}/schema`;
      let validate = this.validators.get(schemaPointer);
      if (!validate) {
        validate = this.ajv.compile({ $ref: `${DOCUMENT_ID}${schemaPointer}` });
        this.validators.set(schemaPointer, validate);
      }
      const written = Array.isArray(value) ? value.join(', ') : String(value);
      // A header is text; a schema of a number is met by its decimal form.
      const numeric = ['integer', 'number'].includes(String(header.schema.type)) && /^-?[0-9]+(\.[0-9]+)?$/.test(written);
      if (!validate(numeric ? Number(written) : written)) violations.push(`header ${name}: ${described(validate.errors).join('; ')}`);
    }
    return violations;
  }
}

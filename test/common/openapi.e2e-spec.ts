import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Validator } from '@seriousme/openapi-schema-validator';
import { startTestHub, type TestHub } from '../support/test-hub.js';

interface Schema {
  type?: string;
  nullable?: boolean;
  $ref?: string;
  allOf?: Schema[];
  items?: Schema;
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  format?: string;
}

interface Document {
  openapi: string;
  servers?: { url: string }[];
  components: { schemas: Record<string, Schema> };
  paths: Record<string, Record<string, { security?: unknown[] }>>;
}

/** Every property of every named schema, with its schema. */
function properties(document: Document): { name: string; schema: Schema }[] {
  return Object.entries(document.components.schemas).flatMap(([model, schema]) =>
    Object.entries(schema.properties ?? {}).map(([property, propertySchema]) => ({ name: `${model}.${property}`, schema: propertySchema })),
  );
}

describe('the OpenAPI document', () => {
  let hub: TestHub;
  let document: Document;

  beforeAll(async () => {
    hub = await startTestHub();
    const response = await hub.inject({ method: 'GET', url: '/api/openapi.json' });
    expect(response.statusCode).toBe(200);
    document = response.json();
  });
  afterAll(() => hub.close());

  it('validates as OpenAPI 3, every $ref resolving (TaskStateDto among them)', async () => {
    expect(document.openapi).toMatch(/^3\./);
    const validator = new Validator();
    expect(await validator.validate(structuredClone(document) as never)).toEqual({ valid: true });
    expect(() => validator.resolveRefs()).not.toThrow();
    const references = [...JSON.stringify(document).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((match) => match[1]);
    expect(references).toContain('TaskStateDto');
    for (const name of new Set(references)) expect(Object.keys(document.components.schemas)).toContain(name);
  });

  it('gives every property a real type: no bare object without properties', () => {
    const untyped = properties(document).filter(
      ({ schema }) =>
        schema.$ref === undefined &&
        schema.allOf === undefined &&
        (schema.type === undefined || (schema.type === 'object' && !schema.properties && !schema.additionalProperties)),
    );
    expect(untyped.map(({ name }) => name)).toEqual([]);
  });

  it.each([
    ['UserInputDto.displayName', 'string'],
    ['UserInputDto.email', 'string'],
    ['UserInputDto.active', 'boolean'],
    ['SubmitJobDto.priority', 'integer'],
    ['CredentialInputDto.vaultPath', 'string'],
    ['ExecutionProfileInputDto.constraints', 'array'],
  ])('marks %s nullable, typed %s', (name, type) => {
    const [model, property] = name.split('.');
    expect(document.components.schemas[model].properties?.[property]).toMatchObject({ type, nullable: true });
  });

  it('marks nothing nullable that refuses null: EvaluateItemDto.namespace', () => {
    expect(document.components.schemas.EvaluateItemDto.properties?.namespace).not.toHaveProperty('nullable');
  });

  it('states servers, and the security of every operation (an empty list on the public ones)', () => {
    expect(document.servers?.length).toBeGreaterThan(0);
    for (const methods of Object.values(document.paths)) for (const operation of Object.values(methods)) expect(Array.isArray(operation.security)).toBe(true);
    expect(document.paths['/api/v2/auth/login'].post.security).toEqual([]);
  });
});

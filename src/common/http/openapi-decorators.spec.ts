import { describe, expect, it } from '@jest/globals';
import * as swagger from '@nestjs/swagger';
import * as deferred from './openapi-decorators.js';

type Decorators = Pick<
  typeof swagger,
  | 'ApiTags'
  | 'ApiExtraModels'
  | 'ApiResponse'
  | 'ApiQuery'
  | 'ApiProduces'
  | 'ApiOperation'
  | 'ApiHeader'
  | 'ApiExtension'
  | 'ApiConsumes'
  | 'ApiBody'
  | 'ApiBearerAuth'
  | 'ApiBasicAuth'
  | 'ApiHideProperty'
  | 'ApiProperty'
  | 'ApiPropertyOptional'
>;

/** The same classes, decorated by `api`, so that the package's and the deferred decorators can be compared. */
function decorate(api: Decorators) {
  class Item {
    @api.ApiProperty({ description: 'Name', example: 'a' })
    name!: string;

    @api.ApiPropertyOptional({ enum: ['x', 'y'], isArray: true })
    kinds?: string[];

    // Two decorations of one property merge, the later's defined options over the earlier's.
    @api.ApiProperty({ nullable: true, type: String })
    @api.ApiProperty({ description: 'Cleared by null' })
    note!: string | null;

    @api.ApiHideProperty()
    secret?: string;
  }

  class Detailed extends Item {
    @api.ApiProperty({ type: [Item] })
    children!: Item[];
  }

  @api.ApiTags('Things')
  @api.ApiExtraModels(Item)
  class Controller {
    @api.ApiOperation({ summary: 'Read' })
    @api.ApiResponse({ status: 200, type: Detailed })
    @api.ApiQuery({ name: 'q', required: false, schema: { type: 'string' } })
    @api.ApiHeader({ name: 'If-Match', required: false })
    @api.ApiExtension('x-hub-permission', { object: '/Things', action: 'Read' })
    @api.ApiBearerAuth('bearerAuth')
    @api.ApiBasicAuth('basicAuth')
    @api.ApiProduces('text/plain')
    @api.ApiConsumes('application/json')
    @api.ApiBody({ type: [Item] })
    read(): void {}
  }
  return { Item, Detailed, Controller };
}

/** Every metadata reflect-metadata holds on a target (and a property or method of it), by key; but the hub's own record of a property. */
function metadataOf(target: object, property?: string): Record<string, unknown> {
  const keys = (property === undefined ? Reflect.getOwnMetadataKeys(target) : Reflect.getOwnMetadataKeys(target, property)).filter(
    (key: unknown) => key !== 'hub:openapi-property',
  );
  return Object.fromEntries(
    keys.map((key: unknown) => [String(key), property === undefined ? Reflect.getOwnMetadata(key, target) : Reflect.getOwnMetadata(key, target, property)]),
  );
}

/** Class references replaced by their names, so that the two sets of classes compare. */
function named(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_key, item: unknown) => (typeof item === 'function' ? `class ${(item as { name: string }).name}` : item)));
}

describe('deferred OpenAPI decorators', () => {
  it('record what the package would when it is loaded, and what validation reads at once', async () => {
    const made = decorate(deferred);
    // Before @nestjs/swagger is loaded through them: nothing of it recorded, but whether a property is documented and nullable is known.
    expect(Reflect.getOwnMetadataKeys(made.Item.prototype, 'name')).not.toContain(swagger.DECORATORS.API_MODEL_PROPERTIES);
    expect(deferred.documentedProperty(made.Item.prototype, 'name')).toEqual({});
    expect(deferred.documentedProperty(made.Item.prototype, 'note')).toEqual({ nullable: true });
    expect(deferred.documentedProperty(made.Detailed.prototype, 'note')).toEqual({ nullable: true });
    expect(deferred.documentedProperty(made.Item.prototype, 'secret')).toBeUndefined();

    await deferred.openApiTooling();
    const expected = decorate(swagger);
    for (const name of ['Item', 'Detailed'] as const) {
      expect(named(metadataOf(made[name].prototype))).toEqual(named(metadataOf(expected[name].prototype)));
      for (const property of ['name', 'kinds', 'note', 'secret', 'children'])
        expect(named(metadataOf(made[name].prototype, property))).toEqual(named(metadataOf(expected[name].prototype, property)));
    }
    expect(named(metadataOf(made.Controller))).toEqual(named(metadataOf(expected.Controller)));
    const method = (type: { prototype: object }) => (type.prototype as { read: () => void }).read;
    expect(named(metadataOf(method(made.Controller)))).toEqual(named(metadataOf(method(expected.Controller))));
    expect(Object.keys(metadataOf(method(made.Controller)))).toContain(swagger.DECORATORS.API_RESPONSE);
  });

  it('apply at once once the package is loaded', async () => {
    await deferred.openApiTooling();
    class Late {
      @deferred.ApiProperty({ example: 1 })
      count!: number;
    }
    expect(Reflect.getOwnMetadata(swagger.DECORATORS.API_MODEL_PROPERTIES, Late.prototype, 'count')).toEqual({ type: Number, example: 1 });
  });

  it('give a partial schema the package’s PartialType metadata', async () => {
    class Whole {
      @deferred.ApiProperty({ description: 'Name' })
      name!: string;

      @deferred.ApiPropertyOptional({ example: 2 })
      size?: number;
    }
    const partial = deferred.PartialSchema(Whole);
    await deferred.openApiTooling();
    const expected = swagger.PartialType(Whole);
    for (const property of ['name', 'size'])
      expect(metadataOf(partial.prototype as object, property)).toEqual(metadataOf(expected.prototype as object, property));
    expect(metadataOf(partial.prototype as object)).toEqual(metadataOf(expected.prototype as object));
    expect(Reflect.getOwnMetadata(swagger.DECORATORS.API_MODEL_PROPERTIES, partial.prototype as object, 'name')).toMatchObject({ required: false });
  });

  it('name a schema by its class', () => {
    class Thing {}
    expect(deferred.getSchemaPath(Thing)).toBe(swagger.getSchemaPath(Thing));
    expect(deferred.getSchemaPath('Other')).toBe(swagger.getSchemaPath('Other'));
  });
});

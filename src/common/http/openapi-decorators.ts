// Like @nestjs/swagger's own entry point, which DTOs used to load first: the decorators read and write reflected metadata.
import 'reflect-metadata';
import type { Type } from '@nestjs/common';
import type * as Swagger from '@nestjs/swagger';

/**
 * The `@nestjs/swagger` decorators the hub uses, applied when the OpenAPI document is first wanted
 * rather than when each class is defined. Loading `@nestjs/swagger` costs a start about 0.15 s
 * (its decorators import all of `es-toolkit/compat`, some 430 modules), and nothing before the first
 * request of the document needs what they record: each decoration is kept, in the order the classes
 * made it, and {@link openApiTooling} loads the package and applies them all, in that order, so the
 * metadata (and the document) is exactly what the package's own decorators write. Import these
 * from here, never from `@nestjs/swagger` (lint refuses it; types may still come from there).
 *
 * What the hub reads of a property's decoration before that (whether the document declares it, and
 * whether it is nullable, for input validation) is recorded at once: {@link documentedProperty}.
 */

type SwaggerModule = typeof Swagger;
type Step = (swagger: SwaggerModule) => void;
type AnyDecorator = (target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => unknown;

const pending: Step[] = [];
let loaded: SwaggerModule | undefined;
let loading: Promise<SwaggerModule> | undefined;

/** A decoration to make with the package: now if it is loaded, else when it is. */
function defer(step: Step): void {
  if (loaded) step(loaded);
  else pending.push(step);
}

/**
 * `@nestjs/swagger`, loaded on first call, with every decoration made so far applied in the order
 * it was made; later decorations apply at once.
 */
export function openApiTooling(): Promise<SwaggerModule> {
  loading ??= import('@nestjs/swagger').then((swagger) => {
    // A step may defer another (none does today): drain until none is left.
    for (let step = pending.shift(); step; step = pending.shift()) step(swagger);
    loaded = swagger;
    return swagger;
  });
  return loading;
}

type DecoratorName =
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
  | 'ApiHideProperty';

/** The package's decorator factory `name`, deferred: the factory is called with the same arguments and its decorator applied to the same target later. */
function deferred<Name extends DecoratorName>(name: Name): SwaggerModule[Name] {
  const factory = (...args: unknown[]) =>
    function (target: object, key?: string | symbol, descriptor?: PropertyDescriptor) {
      defer((swagger) => (swagger[name] as (...given: unknown[]) => AnyDecorator)(...args)(target, key, descriptor));
      // The package's decorators change neither a class nor a method descriptor: they only record metadata.
      return descriptor;
    };
  return factory as unknown as SwaggerModule[Name];
}

export const ApiTags = deferred('ApiTags');
export const ApiExtraModels = deferred('ApiExtraModels');
export const ApiResponse = deferred('ApiResponse');
export const ApiQuery = deferred('ApiQuery');
export const ApiProduces = deferred('ApiProduces');
export const ApiOperation = deferred('ApiOperation');
export const ApiHeader = deferred('ApiHeader');
export const ApiExtension = deferred('ApiExtension');
export const ApiConsumes = deferred('ApiConsumes');
export const ApiBody = deferred('ApiBody');
export const ApiBearerAuth = deferred('ApiBearerAuth');
export const ApiBasicAuth = deferred('ApiBasicAuth');
/** Records nothing (as the package's): a property without `ApiProperty` is not in the document. */
export const ApiHideProperty = deferred('ApiHideProperty');

/** What the hub reads of a property's `ApiProperty` options before the document is built. */
export interface DocumentedProperty {
  readonly nullable?: boolean;
}

const DOCUMENTED_PROPERTY = 'hub:openapi-property';

/**
 * The options of a property's `ApiProperty` decorations, merged as the package merges them (the
 * later decoration's defined options over the earlier's, inherited from a base class too);
 * undefined when none declares the property.
 */
export function documentedProperty(prototype: object, property: string): DocumentedProperty | undefined {
  return Reflect.getMetadata(DOCUMENTED_PROPERTY, prototype, property) as DocumentedProperty | undefined;
}

type PropertyOptions = Parameters<SwaggerModule['ApiProperty']>[0];

export const ApiProperty = (options: PropertyOptions = {}): PropertyDecorator =>
  function (target: object, key: string | symbol) {
    const earlier = Reflect.getMetadata(DOCUMENTED_PROPERTY, target, key) as DocumentedProperty | undefined;
    const nullable = options.nullable ?? earlier?.nullable;
    Reflect.defineMetadata(DOCUMENTED_PROPERTY, nullable === undefined ? {} : { nullable }, target, key);
    defer((swagger) => swagger.ApiProperty(options)(target, key));
  };

/** `ApiProperty` with `required: false`, as the package's. */
export const ApiPropertyOptional = (options: PropertyOptions = {}): PropertyDecorator =>
  // The package spreads the same way; its options' type cannot say that `required` is then the property's own.
  ApiProperty({ ...options, required: false } as PropertyOptions);

/** `#/components/schemas/<name>` of a class (the package's `getSchemaPath`, which `ApiSchema`, unused here, could rename). */
export function getSchemaPath(model: string | Type<unknown>): string {
  return `#/components/schemas/${typeof model === 'string' ? model : model.name}`;
}

/**
 * A class whose document schema is `type`'s with no property required: the package's
 * `PartialType`, for the document only (it inherits no validation, and is never instantiated).
 */
export function PartialSchema(type: Type<unknown>): Type<unknown> {
  class PartialSchemaClass {}
  defer((swagger) => {
    const from = swagger.PartialType(type).prototype as object;
    const to = PartialSchemaClass.prototype;
    const properties = (Reflect.getOwnMetadata(swagger.DECORATORS.API_MODEL_PROPERTIES_ARRAY, from) ?? []) as string[];
    for (const key of Reflect.getOwnMetadataKeys(from)) Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, from), to);
    // Each property's, listed as `:name`.
    for (const property of properties.map((listed) => listed.slice(1)))
      for (const key of Reflect.getOwnMetadataKeys(from, property)) Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, from, property), to, property);
  });
  return PartialSchemaClass;
}

import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { registerDecorator, validateSync, type ValidationArguments, type ValidationError } from 'class-validator';

export interface MapOfRules {
  readonly maxEntries: number;
  /** Keys must match this; by default any non-empty key of up to 256 characters. */
  readonly key?: { readonly pattern: RegExp; readonly rule: string };
}

function firstMessage(errors: readonly ValidationError[]): string | undefined {
  for (const error of errors) {
    const own = Object.values(error.constraints ?? {})[0];
    if (own) return own;
    const nested = firstMessage(error.children ?? []);
    if (nested) return `${error.property}: ${nested}`;
  }
  return undefined;
}

/** Why a value is not a map of `dto`-shaped objects under `rules`; undefined when it is one. */
function problemWith(value: unknown, dto: ClassConstructor<object>, rules: MapOfRules): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'must be an object';
  const entries: [string, unknown][] = Object.entries(value);
  if (entries.length > rules.maxEntries) return `must have at most ${rules.maxEntries} entries`;
  for (const [key, item] of entries) {
    if (rules.key ? !rules.key.pattern.test(key) : key.length === 0 || key.length > 256)
      return `has the key ${JSON.stringify(key.slice(0, 64))}: ${rules.key?.rule ?? 'keys must be 1-256 characters'}`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return `has a value that is not an object at key ${JSON.stringify(key)}`;
    // null is no value of these objects' properties (api-map §0), as validateInput says of a DTO's own.
    const nulled = Object.entries(item as Record<string, unknown>).find(([, property]) => property === null)?.[0];
    if (nulled !== undefined) return `at key ${JSON.stringify(key)}: ${nulled} must not be null`;
    const errors = validateSync(plainToInstance(dto, item), { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true });
    const message = firstMessage(errors);
    if (message) return `at key ${JSON.stringify(key)}: ${message}`;
  }
  return undefined;
}

/**
 * A body property holding an object whose values are each an object of one DTO class (a map of
 * named inputs, say), validated as that class is, unknown properties refused. Its document says so
 * with `additionalProperties: { $ref }` in its ApiProperty.
 */
export function IsMapOf(dto: ClassConstructor<object>, rules: MapOfRules): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isMapOf',
      target: target.constructor,
      propertyName: propertyName as string,
      options: { message: (args: ValidationArguments) => `${args.property} ${problemWith(args.value, dto, rules) ?? 'is invalid'}` },
      validator: { validate: (value: unknown) => problemWith(value, dto, rules) === undefined },
    });
}

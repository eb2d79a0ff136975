import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { validateSync, type ValidationError } from 'class-validator';
import { mapDecorator, mapProblem, type MapRules } from './is-string-map.js';

function firstMessage(errors: readonly ValidationError[]): string | undefined {
  for (const error of errors) {
    const own = Object.values(error.constraints ?? {})[0];
    if (own) return own;
    const nested = firstMessage(error.children ?? []);
    if (nested) return `${error.property}: ${nested}`;
  }
  return undefined;
}

/** Why a map value is not a valid `dto` object. */
function itemProblem(key: string, item: unknown, dto: ClassConstructor<object>): string | undefined {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return `has a value that is not an object at key ${JSON.stringify(key)}`;
  // null is no value of these objects' properties (api-map §0), as validateInput says of a DTO's own.
  const nulled = Object.entries(item as Record<string, unknown>).find(([, property]) => property === null)?.[0];
  if (nulled !== undefined) return `at key ${JSON.stringify(key)}: ${nulled} must not be null`;
  const errors = validateSync(plainToInstance(dto, item), { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true });
  const message = firstMessage(errors);
  return message ? `at key ${JSON.stringify(key)}: ${message}` : undefined;
}

/**
 * A body property holding an object whose values are each an object of one DTO class (a map of
 * named inputs, say), validated as that class is, unknown properties refused. Its document says so
 * with `additionalProperties: { $ref }` in its ApiProperty.
 */
export function IsMapOf(dto: ClassConstructor<object>, rules: MapRules): PropertyDecorator {
  return mapDecorator('isMapOf', (value) => mapProblem(value, rules, 'must be an object', (key, item) => itemProblem(key, item, dto)));
}

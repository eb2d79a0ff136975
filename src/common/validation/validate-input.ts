import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { validate, type ValidationError } from 'class-validator';
import { InvalidInputError, type FieldError } from '../errors/hub-errors.js';

function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** One entry per invalid property (its messages joined), in the order of the properties. */
function fieldErrors(errors: readonly ValidationError[], parent = ''): FieldError[] {
  return errors.flatMap((error) => {
    const path = `${parent}/${escapePointer(error.property)}`;
    const messages = Object.values(error.constraints ?? {});
    const own = messages.length > 0 ? [{ path, message: messages.join('; ') }] : [];
    return [...own, ...fieldErrors(error.children ?? [], path)];
  });
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Validates a JSON body against its DTO class: unknown properties are refused, and each problem is
 * reported with the JSON Pointer of the property. Used for every body, including the result of a
 * JSON Patch, so a patch is validated exactly like a replace.
 */
export async function validateInput<T extends object>(dto: ClassConstructor<T>, body: unknown): Promise<T> {
  if (!isPlainObject(body)) throw InvalidInputError.at('', 'The request body must be a JSON object');
  const instance = plainToInstance(dto, body);
  const errors = await validate(instance, {
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    validationError: { target: false, value: false },
  });
  if (errors.length > 0) {
    const problems = fieldErrors(errors);
    throw new InvalidInputError(`Invalid request body: ${problems.map((p) => p.message).join('; ')}`, problems);
  }
  return instance;
}

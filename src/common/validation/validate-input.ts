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

async function instanceAndProblems<T extends object>(dto: ClassConstructor<T>, body: unknown, path: string): Promise<{ instance: T; problems: FieldError[] }> {
  if (!isPlainObject(body)) throw InvalidInputError.at(path, path ? `Item ${path} must be a JSON object` : 'The request body must be a JSON object');
  const instance = plainToInstance(dto, body);
  const errors = await validate(instance, {
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    validationError: { target: false, value: false },
  });
  return { instance, problems: fieldErrors(errors, path) };
}

/** The 400 for a body with these problems; the detail lists them all. */
export function invalidBody(problems: readonly FieldError[]): InvalidInputError {
  return new InvalidInputError(`Invalid request body: ${problems.map((p) => p.message).join('; ')}`, problems);
}

/**
 * Validates a JSON body against its DTO class: unknown properties are refused, and each problem is
 * reported with the JSON Pointer of the property. Used for every body, including the result of a
 * JSON Patch, so a patch is validated exactly like a replace.
 */
export async function validateInput<T extends object>(dto: ClassConstructor<T>, body: unknown): Promise<T> {
  const { instance, problems } = await instanceAndProblems(dto, body, '');
  if (problems.length > 0) throw invalidBody(problems);
  return instance;
}

/** Validates a body that is a JSON array of 1 to `maxItems` objects of one DTO class, like {@link validateInput}. */
export async function validateInputList<T extends object>(dto: ClassConstructor<T>, body: unknown, maxItems: number): Promise<T[]> {
  if (!Array.isArray(body)) throw InvalidInputError.at('', 'The request body must be a JSON array');
  if (body.length === 0 || body.length > maxItems) throw InvalidInputError.at('', `The request body must hold 1 to ${maxItems} items`);
  const results = await Promise.all(body.map((item: unknown, index) => instanceAndProblems(dto, item, `/${index}`)));
  const problems = results.flatMap((result) => result.problems);
  if (problems.length > 0) throw invalidBody(problems);
  return results.map((result) => result.instance);
}

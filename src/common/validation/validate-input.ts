import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { getMetadataStorage, validate, type ValidationError } from 'class-validator';
import { InvalidInputError, MAX_LISTED_ERRORS, type FieldError } from '../errors/hub-errors.js';
import { isDocumented, isNullable } from './nullable.js';

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

/** An object class-transformer made from a DTO class (a nested `@Type`), as opposed to free-form JSON. */
function isDtoInstance(value: unknown): value is object {
  return isPlainObject(value) && Object.getPrototypeOf(value) !== Object.prototype;
}

/**
 * `null` where the document does not mark a property nullable is a wrong type like any other
 * (api-map §0): class-validator's `@IsOptional` would let it through as if absent. Walks the DTO
 * instances only (free-form objects may hold nulls), skipping properties already reported.
 */
function nullProblems(instance: object, path: string, reported: ReadonlySet<string>): FieldError[] {
  const prototype = Object.getPrototypeOf(instance) as object;
  return Object.entries(instance).flatMap(([property, value]: [string, unknown]) => {
    const at = `${path}/${escapePointer(property)}`;
    if (value === null)
      return isDocumented(prototype, property) && !isNullable(prototype, property) && !reported.has(at)
        ? [{ path: at, message: `${property} must not be null` }]
        : [];
    if (Array.isArray(value)) return value.flatMap((item: unknown, index) => (isDtoInstance(item) ? nullProblems(item, `${at}/${index}`, reported) : []));
    return isDtoInstance(value) ? nullProblems(value, at, reported) : [];
  });
}

const arrayLimits = new WeakMap<object, ReadonlyMap<string, number>>();

/** The `@ArrayMaxSize` of each property of a DTO class that has one. */
function arrayLimitsOf(dto: object): ReadonlyMap<string, number> {
  let limits = arrayLimits.get(dto);
  if (!limits) {
    const metadata = getMetadataStorage().getTargetValidationMetadatas(dto as new () => object, '', true, false);
    limits = new Map(metadata.filter((item) => item.name === 'arrayMaxSize').map((item) => [item.propertyName, Number(item.constraints[0])]));
    arrayLimits.set(dto, limits);
  }
  return limits;
}

/**
 * Cuts every array longer than its `@ArrayMaxSize` to one item over it: the array is refused all
 * the same, and validation then walks (and reports on) at most that many items, so its work is
 * bounded by the DTOs' limits, not by what the client sent (10,000 nested arrays are one error).
 */
function clipOversizeArrays(instance: object): void {
  const limits = arrayLimitsOf(instance.constructor);
  const record = instance as Record<string, unknown>;
  for (const [property, value] of Object.entries(record)) {
    const limit = limits.get(property);
    const items = Array.isArray(value) && limit !== undefined && value.length > limit + 1 ? value.slice(0, limit + 1) : value;
    if (items !== value) record[property] = items;
    if (Array.isArray(items)) items.forEach((item: unknown) => isDtoInstance(item) && clipOversizeArrays(item));
    else if (isDtoInstance(items)) clipOversizeArrays(items);
  }
}

async function instanceAndProblems<T extends object>(dto: ClassConstructor<T>, body: unknown, path: string): Promise<{ instance: T; problems: FieldError[] }> {
  if (!isPlainObject(body)) throw InvalidInputError.at(path, path ? `Item ${path} must be a JSON object` : 'The request body must be a JSON object');
  const instance = plainToInstance(dto, body);
  clipOversizeArrays(instance);
  const errors = await validate(instance, {
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    validationError: { target: false, value: false },
  });
  const problems = fieldErrors(errors, path);
  const reported = new Set(problems.map((problem) => problem.path));
  return { instance, problems: [...problems, ...nullProblems(instance, path, reported)] };
}

/** The 400 for a body with these problems; the detail names the first ones (the problem filter adds how many there were). */
export function invalidBody(problems: readonly FieldError[]): InvalidInputError {
  const listed = problems.slice(0, MAX_LISTED_ERRORS).map((problem) => problem.message);
  return new InvalidInputError(`Invalid request body: ${listed.join('; ')}`, problems);
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

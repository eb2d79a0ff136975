import { registerDecorator, type ValidationArguments } from 'class-validator';

/** What every map a body holds keeps to: how many entries, and which keys. */
export interface MapRules {
  readonly maxEntries: number;
  /** Keys must match this; by default any non-empty key of up to 256 characters. */
  readonly key?: { readonly pattern: RegExp; readonly rule: string };
}

export interface StringMapRules extends MapRules {
  readonly maxValueLength: number;
}

/**
 * Why a value is not a map under `rules`, its values judged by `itemProblem`; undefined when it
 * is one. `notObject` says what the value must be.
 */
export function mapProblem(
  value: unknown,
  rules: MapRules,
  notObject: string,
  itemProblem: (key: string, item: unknown) => string | undefined,
): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return notObject;
  const entries: [string, unknown][] = Object.entries(value);
  if (entries.length > rules.maxEntries) return `must have at most ${rules.maxEntries} entries`;
  for (const [key, item] of entries) {
    if (rules.key ? !rules.key.pattern.test(key) : key.length === 0 || key.length > 256)
      return `has the key ${JSON.stringify(key.slice(0, 64))}: ${rules.key?.rule ?? 'keys must be 1-256 characters'}`;
    const problem = itemProblem(key, item);
    if (problem) return problem;
  }
  return undefined;
}

/** A body property decorator whose one rule is `problem` (undefined: valid), its message naming the property. */
export function mapDecorator(name: string, problem: (value: unknown) => string | undefined): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name,
      target: target.constructor,
      propertyName: propertyName as string,
      options: { message: (args: ValidationArguments) => `${args.property} ${problem(args.value) ?? 'is invalid'}` },
      validator: { validate: (value: unknown) => problem(value) === undefined },
    });
}

/** Why a map value is not a string of at most `maxValueLength` characters without NUL. */
function stringProblem(key: string, item: unknown, maxValueLength: number): string | undefined {
  if (typeof item !== 'string') return `has a value that is not a string at key ${JSON.stringify(key)}`;
  if (item.length > maxValueLength) return `has a value longer than ${maxValueLength} characters at key ${JSON.stringify(key)}`;
  if (item.includes('\0')) return `has a value with a NUL character at key ${JSON.stringify(key)}`;
  return undefined;
}

/** A body property holding an object whose values are all strings (secrets, environment variables). */
export function IsStringMap(rules: StringMapRules): PropertyDecorator {
  return mapDecorator('isStringMap', (value) =>
    mapProblem(value, rules, 'must be an object of strings', (key, item) => stringProblem(key, item, rules.maxValueLength)),
  );
}

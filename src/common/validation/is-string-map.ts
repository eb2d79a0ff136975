import { registerDecorator, type ValidationArguments } from 'class-validator';

export interface StringMapRules {
  readonly maxEntries: number;
  readonly maxValueLength: number;
  /** Keys must match this; by default any non-empty key of up to 256 characters. */
  readonly key?: { readonly pattern: RegExp; readonly rule: string };
}

/** Why a value is not a map of strings to strings under `rules`; undefined when it is one. */
function problemWith(value: unknown, rules: StringMapRules): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'must be an object of strings';
  const entries = Object.entries(value);
  if (entries.length > rules.maxEntries) return `must have at most ${rules.maxEntries} entries`;
  for (const [key, item] of entries) {
    if (rules.key ? !rules.key.pattern.test(key) : key.length === 0 || key.length > 256)
      return `has the key ${JSON.stringify(key.slice(0, 64))}: ${rules.key?.rule ?? 'keys must be 1-256 characters'}`;
    if (typeof item !== 'string') return `has a value that is not a string at key ${JSON.stringify(key)}`;
    if (item.length > rules.maxValueLength) return `has a value longer than ${rules.maxValueLength} characters at key ${JSON.stringify(key)}`;
    if (item.includes('\0')) return `has a value with a NUL character at key ${JSON.stringify(key)}`;
  }
  return undefined;
}

/** A body property holding an object whose values are all strings (secrets, environment variables). */
export function IsStringMap(rules: StringMapRules): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isStringMap',
      target: target.constructor,
      propertyName: propertyName as string,
      options: { message: (args: ValidationArguments) => `${args.property} ${problemWith(args.value, rules) ?? 'is invalid'}` },
      validator: { validate: (value: unknown) => problemWith(value, rules) === undefined },
    });
}

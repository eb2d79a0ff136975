import { registerDecorator } from 'class-validator';
import { parseDateTime } from '../query/query-values.js';

/** A body property holding an RFC 3339 date-time with a zone offset, the form every reply uses. */
export function IsDateTime(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isDateTime',
      target: target.constructor,
      propertyName: propertyName as string,
      options: { message: '$property must be an ISO 8601 date-time with a time zone, e.g. 2026-11-22T10:15:30.123Z' },
      validator: { validate: (value: unknown) => typeof value === 'string' && parseDateTime(value) !== undefined },
    });
}

/** A query string as Fastify parses it: flat keys, a repeated key as an array. */
export type RawQuery = Readonly<Record<string, string | readonly string[] | undefined>>;

/** Why a value was refused; completes the sentence "<parameter> ...". */
export class Rejection {
  constructor(readonly message: string) {}
}

export function firstValue(raw: string | readonly string[]): string {
  return typeof raw === 'string' ? raw : (raw[0] ?? '');
}

/** An array parameter may be repeated, comma-separated, or both. */
export function listValues(raw: string | readonly string[]): string[] {
  const parts = (typeof raw === 'string' ? [raw] : raw).flatMap((value) => value.split(','));
  return parts.length === 1 && parts[0] === '' ? [] : parts;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+\- ]\d{2}:\d{2})$/;

/**
 * Accepts an RFC 3339 date-time with a zone offset and returns it in a form PostgreSQL parses, with
 * every digit kept so that comparisons are exact. An unescaped `+` in a query string arrives as a
 * space, so a space before the offset is read as `+`. Returns undefined for anything else:
 * impossible dates such as February 30, year 0000 and offsets beyond ±15:59, which PostgreSQL
 * does not take.
 */
export function parseDateTime(raw: string): string | undefined {
  const match = DATE_TIME.exec(raw);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second, fraction = '', zone] = match;
  const [y, mo, d, h, mi, s] = [year, month, day, hour, minute, second].map(Number);
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  date.setUTCFullYear(y);
  const valid = y > 0 && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d && h < 24 && mi < 60 && s < 60;
  if (!valid) return undefined;
  const offset = zone.toUpperCase() === 'Z' ? 'Z' : zone.replace(' ', '+');
  if (offset !== 'Z' && (Number(offset.slice(1, 3)) > 15 || Number(offset.slice(4, 6)) > 59)) return undefined;
  return `${year}-${month}-${day}T${hour}:${minute}:${second}${fraction}${offset}`;
}

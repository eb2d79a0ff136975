import { describe, expect, it } from '@jest/globals';
import { firstValue, isUuid, listValues, parseDateTime, Rejection } from './query-values.js';

describe('firstValue', () => {
  it('returns a single value as it is', () => {
    expect(firstValue('a,b')).toBe('a,b');
  });

  it('returns the first of a repeated parameter', () => {
    expect(firstValue(['first', 'second'])).toBe('first');
  });

  it('returns an empty string for an empty list', () => {
    expect(firstValue([])).toBe('');
  });
});

describe('listValues', () => {
  it('splits a comma-separated value', () => {
    expect(listValues('a,b,c')).toEqual(['a', 'b', 'c']);
  });

  it('keeps a single value as a one-item list', () => {
    expect(listValues('a')).toEqual(['a']);
  });

  it('takes every value of a repeated parameter', () => {
    expect(listValues(['a', 'b'])).toEqual(['a', 'b']);
  });

  it('splits and flattens repeated and comma-separated values together, in order', () => {
    expect(listValues(['a,b', 'c', 'd,e'])).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('reads an empty value as no values', () => {
    expect(listValues('')).toEqual([]);
    expect(listValues([''])).toEqual([]);
    expect(listValues([])).toEqual([]);
  });

  it('keeps empty items next to other items, for the caller to judge', () => {
    expect(listValues('a,')).toEqual(['a', '']);
    expect(listValues(',')).toEqual(['', '']);
    expect(listValues(['a', ''])).toEqual(['a', '']);
  });
});

describe('isUuid', () => {
  it.each(['123e4567-e89b-12d3-a456-426614174000', '123E4567-E89B-12D3-A456-426614174000', '00000000-0000-0000-0000-000000000000'])('accepts %s', (value) => {
    expect(isUuid(value)).toBe(true);
  });

  it.each([
    ['no dashes', '123e4567e89b12d3a456426614174000'],
    ['braces', '{123e4567-e89b-12d3-a456-426614174000}'],
    ['a non-hex digit', '123e4567-e89b-12d3-a456-42661417400g'],
    ['one digit short', '123e4567-e89b-12d3-a456-42661417400'],
    ['one digit long', '123e4567-e89b-12d3-a456-4266141740000'],
    ['a trailing newline', '123e4567-e89b-12d3-a456-426614174000\n'],
    ['surrounding spaces', ' 123e4567-e89b-12d3-a456-426614174000 '],
    ['misplaced dashes', '123e4567e-89b-12d3-a456-426614174000'],
    ['the empty string', ''],
  ])('rejects %s', (_what, value) => {
    expect(isUuid(value)).toBe(false);
  });
});

describe('parseDateTime', () => {
  it.each([
    ['whole seconds in UTC', '2026-11-22T10:15:30Z', '2026-11-22T10:15:30Z'],
    ['milliseconds', '2026-11-22T10:15:30.123Z', '2026-11-22T10:15:30.123Z'],
    ['microseconds', '2026-11-22T10:15:30.123456Z', '2026-11-22T10:15:30.123456Z'],
    ['nanoseconds', '2026-11-22T10:15:30.123456789Z', '2026-11-22T10:15:30.123456789Z'],
    ['trailing zeros in the fraction', '2026-11-22T10:15:30.100000Z', '2026-11-22T10:15:30.100000Z'],
    ['a positive offset', '2026-11-22T10:15:30+02:00', '2026-11-22T10:15:30+02:00'],
    ['a negative offset', '2026-11-22T10:15:30.5-05:30', '2026-11-22T10:15:30.5-05:30'],
    ['a zero negative offset', '2026-11-22T10:15:30-00:00', '2026-11-22T10:15:30-00:00'],
    ['a space for the + of an unescaped offset', '2026-11-22T10:15:30.123456 02:00', '2026-11-22T10:15:30.123456+02:00'],
    ['a lower-case t and z', '2026-11-22t10:15:30.1z', '2026-11-22T10:15:30.1Z'],
    ['a leap day', '2024-02-29T00:00:00Z', '2024-02-29T00:00:00Z'],
    ['the last instant of a year', '2026-12-31T23:59:59.999999+14:00', '2026-12-31T23:59:59.999999+14:00'],
    ['the largest offset PostgreSQL takes', '2026-11-22T10:15:30-15:59', '2026-11-22T10:15:30-15:59'],
    ['a year before 100', '0099-03-01T00:00:00Z', '0099-03-01T00:00:00Z'],
    ['a leap day in a year before 100', '0004-02-29T12:00:00Z', '0004-02-29T12:00:00Z'],
  ])('accepts %s, keeping every digit', (_what, raw, expected) => {
    expect(parseDateTime(raw)).toBe(expected);
  });

  it.each([
    ['no time zone', '2026-11-22T10:15:30'],
    ['no time zone but a fraction', '2026-11-22T10:15:30.123'],
    ['a date alone', '2026-11-22'],
    ['no seconds', '2026-11-22T10:15Z'],
    ['a space between date and time', '2026-11-22 10:15:30Z'],
    ['February 30', '2026-02-30T00:00:00Z'],
    ['February 29 of a common year', '2025-02-29T00:00:00Z'],
    ['February 29 of a century that is not a leap year', '2100-02-29T00:00:00Z'],
    ['April 31', '2026-04-31T00:00:00Z'],
    ['month 13', '2026-13-01T00:00:00Z'],
    ['month 0', '2026-00-10T00:00:00Z'],
    ['day 0', '2026-01-00T00:00:00Z'],
    ['day 32', '2026-01-32T00:00:00Z'],
    ['hour 24', '2026-11-22T24:00:00Z'],
    ['minute 60', '2026-11-22T10:60:00Z'],
    ['second 60', '2026-11-22T10:15:60Z'],
    ['offset hour 24', '2026-11-22T10:15:30+24:00'],
    ['offset minute 60', '2026-11-22T10:15:30+02:60'],
    ['an offset without a colon', '2026-11-22T10:15:30+0200'],
    ['an offset without minutes', '2026-11-22T10:15:30+02'],
    ['a zone name', '2026-11-22T10:15:30UTC'],
    ['an empty fraction', '2026-11-22T10:15:30.Z'],
    ['ten fraction digits', '2026-11-22T10:15:30.1234567890Z'],
    ['a two-digit year', '26-11-22T10:15:30Z'],
    ['a five-digit year', '12026-11-22T10:15:30Z'],
    ['single-digit fields', '2026-1-2T3:04:05Z'],
    ['a leading space', ' 2026-11-22T10:15:30Z'],
    ['a trailing space', '2026-11-22T10:15:30Z '],
    ['a trailing newline', '2026-11-22T10:15:30Z\n'],
    ['a word', 'now'],
    ['a Unix time', '1795774530'],
    ['the empty string', ''],
  ])('rejects %s', (_what, raw) => {
    expect(parseDateTime(raw)).toBeUndefined();
  });

  // The result must be "a form PostgreSQL parses": PostgreSQL refuses zone offsets beyond ±15:59
  // (SQLSTATE 22009), so the parser should refuse them and name the parameter.
  it.each(['2026-11-22T10:15:30+16:00', '2026-11-22T10:15:30-23:59'])('rejects the offset of %s, which PostgreSQL cannot parse', (raw) => {
    expect(parseDateTime(raw)).toBeUndefined();
  });

  // PostgreSQL has no year 0 (SQLSTATE 22008): the parser should refuse it and name the parameter.
  it('rejects year 0000, which PostgreSQL cannot parse', () => {
    expect(parseDateTime('0000-01-01T00:00:00Z')).toBeUndefined();
  });
});

describe('Rejection', () => {
  it('carries the message completing "<parameter> ..."', () => {
    expect(new Rejection('must be a UUID').message).toBe('must be a UUID');
  });
});

import { describe, expect, it } from '@jest/globals';
import { CronSchedule, nextPollAfter } from './trigger-schedule.js';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The due times of `schedule` after `from` up to `to`, as ISO strings. */
function dues(schedule: CronSchedule, from: string, to: string): string[] {
  const found: string[] = [];
  for (let due = schedule.nextAfter(at(from)); due !== null && due <= at(to); due = schedule.nextAfter(due)) found.push(iso(due) as string);
  return found;
}

describe('CronSchedule', () => {
  it('takes 5 fields, or 6 with seconds first, and refuses anything else naming the field', () => {
    expect(dues(new CronSchedule('*/20 * * * * *'), '2026-01-01T00:00:00Z', '2026-01-01T00:01:00Z')).toEqual([
      '2026-01-01T00:00:20.000Z',
      '2026-01-01T00:00:40.000Z',
      '2026-01-01T00:01:00.000Z',
    ]);
    expect(iso(new CronSchedule('30 4 * * *').nextAfter(at('2026-01-01T00:00:00Z')))).toBe('2026-01-01T04:30:00.000Z');
    for (const bad of ['* * * *', '* * * * * * *', '61 * * * *', 'every day', '@daily', ''])
      expect(() => new CronSchedule(bad)).toThrow(expect.objectContaining({ field: 'cronExpression' }));
    for (const zone of ['Mars/Olympus', '', 'utc+1']) expect(() => new CronSchedule('* * * * *', zone)).toThrow(expect.objectContaining({ field: 'timezone' }));
  });

  it('evaluates in its time zone', () => {
    expect(iso(new CronSchedule('0 9 * * *', 'America/New_York').nextAfter(at('2026-06-01T00:00:00Z')))).toBe('2026-06-01T13:00:00.000Z');
  });

  it('fires a local time that does not exist (spring forward) once, at the first valid instant after it', () => {
    // Europe/Berlin, 29 March 2026: 02:00 CET becomes 03:00 CEST (01:00 UTC).
    const daily = new CronSchedule('30 2 * * *', 'Europe/Berlin');
    expect(dues(daily, '2026-03-28T00:00:00Z', '2026-03-31T00:00:00Z')).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
    // Every minute of the skipped hour is one firing at 03:00 CEST, then 03:01 on.
    expect(dues(new CronSchedule('* * * * *', 'Europe/Berlin'), '2026-03-29T00:58:00Z', '2026-03-29T01:02:00Z')).toEqual([
      '2026-03-29T00:59:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-29T01:01:00.000Z',
      '2026-03-29T01:02:00.000Z',
    ]);
  });

  it('fires a local time that occurs twice (fall back) once, at its first occurrence', () => {
    // Europe/Berlin, 25 October 2026: 03:00 CEST becomes 02:00 CET (01:00 UTC); 02:30 occurs at 00:30 and 01:30 UTC.
    expect(dues(new CronSchedule('30 2 * * *', 'Europe/Berlin'), '2026-10-24T00:00:00Z', '2026-10-27T00:00:00Z')).toEqual([
      '2026-10-24T00:30:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
    ]);
    // Hourly: the repeated 02:00 is not fired again; 03:00 CET follows 02:00 CEST.
    expect(dues(new CronSchedule('0 * * * *', 'Europe/Berlin'), '2026-10-24T23:30:00Z', '2026-10-25T03:00:00Z')).toEqual([
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T02:00:00.000Z',
      '2026-10-25T03:00:00.000Z',
    ]);
  });

  it('finds the latest missed due time, however many were missed', () => {
    const everySecond = new CronSchedule('* * * * * *');
    expect(iso(everySecond.latestIn(at('2026-01-01T00:00:00Z'), at('2026-01-08T12:34:56.789Z')))).toBe('2026-01-08T12:34:56.000Z');
    const yearly = new CronSchedule('0 0 1 1 *');
    expect(iso(yearly.latestIn(at('2020-06-01T00:00:00Z'), at('2026-06-01T00:00:00Z')))).toBe('2026-01-01T00:00:00.000Z');
    expect(yearly.latestIn(at('2026-02-01T00:00:00Z'), at('2026-06-01T00:00:00Z'))).toBeNull();
  });
});

describe('nextPollAfter', () => {
  it('counts poll instants from the anchor', () => {
    expect(nextPollAfter(1000, 30_000, 1000)).toBe(31_000);
    expect(nextPollAfter(1000, 30_000, 60_999)).toBe(61_000);
    expect(nextPollAfter(1000, 30_000, 61_000)).toBe(91_000);
  });
});

import type * as Cron from 'cron';
import type { CronTime } from 'cron';
import type * as Luxon from 'luxon';
import type { IANAZone } from 'luxon';
import { onFirstUse } from '../common/on-first-use.js';

/** The cron and time zone packages, loaded at the first schedule read, not at start. */
const cron = onFirstUse<typeof Cron>('cron');
const luxon = onFirstUse<typeof Luxon>('luxon');

/** How far the search for the next due time may go, in matching wall-clock times: past it the schedule has none. */
const SEARCH_LIMIT = 100_000;
/** The windows back from now in which the latest missed due time is looked for, smallest first (ms). */
const CATCH_UP_WINDOWS = [60_000, 3600_000, 86_400_000, 32 * 86_400_000, 367 * 86_400_000];
const DAY_MS = 86_400_000;
/** Schedules kept parsed, by expression and zone (cleared whole past it); and due times each keeps, by the instant asked after. */
const MAX_SCHEDULES = 1000;
const MAX_KEPT_DUES = 64;

/** Why a cron expression or a time zone was refused, for a 400 naming the field. */
export class ScheduleProblem extends Error {
  constructor(
    readonly field: 'cronExpression' | 'timezone',
    message: string,
  ) {
    super(message);
  }
}

/** An IANA zone the hub's time-zone database knows; null for anything else (an empty string too). */
export function knownZone(name: string): IANAZone | null {
  const { IANAZone } = luxon();
  if (name.trim() === '' || !IANAZone.isValidZone(name)) return null;
  return IANAZone.create(name);
}

/**
 * A cron schedule in a time zone (api-map §7): 5 fields, or 6 with seconds first, parsed by the
 * `cron` library, which also finds the next matching wall-clock time. Each wall-clock time becomes
 * one instant: a time that does not exist (spring forward) the first valid instant after it (the
 * transition), one that occurs twice (fall back) its first occurrence. Several wall-clock times
 * that become one instant (every minute of a skipped hour) fire once, and a wall-clock time that
 * has already passed does not fire again (the repeated hour of a fall back fires nothing).
 */
export class CronSchedule {
  private readonly cron: CronTime;
  private readonly zone: IANAZone;
  /** nextAfter's answers: a pure function of the instant, asked alike for every trigger of a batch that shares the schedule. */
  private readonly dues = new Map<number, number | null>();

  constructor(expression: string, timezone = 'UTC') {
    const fields = expression.trim().split(/\s+/).length;
    if (expression.trim().startsWith('@') || (fields !== 5 && fields !== 6))
      throw new ScheduleProblem('cronExpression', `cronExpression '${expression}' must have 5 fields, or 6 with seconds first`);
    try {
      this.cron = new (cron().CronTime)(expression, 'UTC');
    } catch (error) {
      throw new ScheduleProblem('cronExpression', `cronExpression '${expression}' is not a cron expression: ${(error as Error).message}`);
    }
    const zone = knownZone(timezone);
    if (!zone) throw new ScheduleProblem('timezone', `timezone '${timezone}' is not an IANA time zone the hub knows`);
    this.zone = zone;
  }

  /** The first due instant strictly after `after` (ms), or null when the schedule has none. */
  nextAfter(after: number): number | null {
    const kept = this.dues.get(after);
    if (kept !== undefined) return kept;
    const due = this.searchAfter(after);
    if (this.dues.size >= MAX_KEPT_DUES) this.dues.clear();
    this.dues.set(after, due);
    return due;
  }

  private searchAfter(after: number): number | null {
    // Wall-clock times are handled as if they were UTC instants, so that the library never meets a transition.
    let wall = this.wallOf(after);
    for (let step = 0; step < SEARCH_LIMIT; step += 1) {
      const next = this.nextWall(wall);
      if (next === null) return null;
      const instant = this.instantOf(next);
      if (instant > after) return instant;
      wall = next;
    }
    return null;
  }

  /** The latest due instant after `after` and at or before `now`, or null when there is none. */
  latestIn(after: number, now: number): number | null {
    for (const window of [...CATCH_UP_WINDOWS, now - after]) {
      const from = Math.max(after, now - window);
      let latest: number | null = null;
      for (let due = this.nextAfter(from); due !== null && due <= now; due = this.nextAfter(due)) latest = due;
      if (latest !== null || from === after) return latest;
    }
    return null;
  }

  private nextWall(wall: number): number | null {
    try {
      return this.cron.getNextDateFrom(new Date(wall), 'UTC').toMillis();
    } catch {
      // The library gives up on a schedule that never matches (30 February).
      return null;
    }
  }

  private offsetMs(instant: number): number {
    return this.zone.offset(instant) * 60_000;
  }

  private wallOf(instant: number): number {
    return instant + this.offsetMs(instant);
  }

  /** The instant a wall-clock time stands for: its first occurrence, or for one that does not exist the transition after it. */
  private instantOf(wall: number): number {
    const before = this.offsetMs(wall - DAY_MS);
    const after = this.offsetMs(wall + DAY_MS);
    const candidates = [wall - before, wall - after].filter((instant) => this.wallOf(instant) === wall);
    if (candidates.length > 0) return Math.min(...candidates);
    // In a gap: the transition lies between the two readings; find its first millisecond.
    let low = Math.min(wall - before, wall - after);
    let high = Math.max(wall - before, wall - after);
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if (this.offsetMs(middle) === before) low = middle;
      else high = middle;
    }
    return high;
  }
}

const schedules = new Map<string, CronSchedule>();

/**
 * The schedule of a stored trigger's spec, kept parsed: parsing and checking the zone cost about
 * a millisecond each (luxon's zone check most of it), which a batch of thousands of triggers
 * sharing a few expressions would otherwise pay once per trigger. A schedule never changes: only
 * its expression and zone make it.
 */
export function scheduleOf(expression: string, timezone = 'UTC'): CronSchedule {
  const key = `${timezone} ${expression}`;
  let schedule = schedules.get(key);
  if (!schedule) {
    schedule = new CronSchedule(expression, timezone);
    if (schedules.size >= MAX_SCHEDULES) schedules.clear();
    schedules.set(key, schedule);
  }
  return schedule;
}

/** The first poll instant strictly after `after`: `anchor` + k × `periodMs` (api-map §7: poll instants are due times like cron's). */
export function nextPollAfter(anchor: number, periodMs: number, after: number): number {
  if (after < anchor) return anchor + periodMs;
  return anchor + (Math.floor((after - anchor) / periodMs) + 1) * periodMs;
}

/** What the due times of a trigger depend on (its spec as stored). */
export interface DueSpec {
  readonly type: 'Cron' | 'File';
  readonly cronExpression?: string;
  readonly timezone?: string;
  readonly startTime?: string;
  readonly endTime?: string;
  readonly pollSeconds?: number;
}

export const DEFAULT_POLL_MS = 30_000;

/**
 * The first instant strictly after `after` a trigger is due: a cron due time after `anchor` (when
 * it was created or last enabled) within [startTime, endTime]; or a poll instant, `anchor` + k ×
 * pollSeconds. Null when none is left.
 */
export function dueAfter(spec: DueSpec, anchor: number, after: number): number | null {
  if (spec.type === 'File') return nextPollAfter(anchor, spec.pollSeconds ? spec.pollSeconds * 1000 : DEFAULT_POLL_MS, after);
  const schedule = scheduleOf(spec.cronExpression ?? '', spec.timezone);
  const start = spec.startTime ? Date.parse(spec.startTime) - 1 : -Infinity;
  const due = schedule.nextAfter(Math.max(after, anchor, start));
  return due !== null && spec.endTime && due > Date.parse(spec.endTime) ? null : due;
}

/**
 * The due instant to fire for a trigger due at `due` when the time is `now`: `due` itself, or,
 * when later due times have passed too (no hub ran, or none got to it), the latest of them only
 * (api-map §7: no backfill). For a File trigger, the latest poll instant.
 */
export function dueToFire(spec: DueSpec, anchor: number, due: number, now: number): number {
  if (spec.type === 'File') {
    const period = spec.pollSeconds ? spec.pollSeconds * 1000 : DEFAULT_POLL_MS;
    return Math.max(due, anchor + Math.floor((now - anchor) / period) * period);
  }
  const end = spec.endTime ? Math.min(now, Date.parse(spec.endTime)) : now;
  const latest = scheduleOf(spec.cronExpression ?? '', spec.timezone).latestIn(due, end);
  return latest ?? due;
}

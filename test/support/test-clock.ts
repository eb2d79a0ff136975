import { jest } from '@jest/globals';
import { Clock } from '../../src/common/clock/clock.js';
import type { TestHub } from './test-hub.js';

interface FakeTimer {
  readonly at: number;
  readonly callback: () => unknown;
  cancelled: boolean;
}

/**
 * Replaces the clock of a hub (or of several hubs, which then share one time) with one that stands
 * still at `start` until moved; undo it with `jest.restoreAllMocks()`. Timers set on it fire when
 * `tick` passes their time: those due at one instant all at once (as hubs' timers would race), in
 * order of time, each awaited, so that what a timer started has finished when `tick` resolves.
 */
export function freezeClock(hubs: TestHub | readonly TestHub[], start = new Date()) {
  let now = start.getTime();
  const timers: FakeTimer[] = [];
  for (const hub of Array.isArray(hubs) ? (hubs as readonly TestHub[]) : [hubs as TestHub]) {
    const clock = hub.app.get(Clock);
    jest.spyOn(clock, 'now').mockImplementation(() => new Date(now));
    jest.spyOn(clock, 'setTimer').mockImplementation((at: Date, callback: () => unknown) => {
      const timer: FakeTimer = { at: at.getTime(), callback, cancelled: false };
      timers.push(timer);
      return () => {
        timer.cancelled = true;
      };
    });
  }
  /** Fires the timers due by now, those of the earliest instant first, until none is left. */
  const fireDue = async (until: number) => {
    for (;;) {
      const live = timers.filter((timer) => !timer.cancelled);
      timers.splice(0, timers.length, ...live);
      const earliest = Math.min(...live.map((timer) => timer.at));
      if (!Number.isFinite(earliest) || earliest > until) return;
      now = Math.max(now, earliest);
      const due = live.filter((timer) => timer.at <= now);
      for (const timer of due) timer.cancelled = true;
      await Promise.all(due.map((timer) => timer.callback()));
    }
  };
  return {
    /** The time `offset` milliseconds after `start`. */
    at: (offset: number) => new Date(start.getTime() + offset),
    now: () => new Date(now),
    /** Moves time forward without firing timers (they fire at the next `tick` or `settle`). */
    advance(milliseconds: number) {
      now += milliseconds;
    },
    /** Moves time forward, firing the timers it passes; resolves when what they started has finished. */
    async tick(milliseconds: number): Promise<void> {
      const until = now + milliseconds;
      await fireDue(until);
      now = until;
    },
    /** Fires the timers already due (set by something that woke meanwhile), without moving time. */
    settle: () => fireDue(now),
  };
}

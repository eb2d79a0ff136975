import { jest } from '@jest/globals';
import { Clock } from '../../src/common/clock/clock.js';
import type { TestHub } from './test-hub.js';

/**
 * Replaces a hub's clock with one that stands still at `start` until moved; undo it with
 * `jest.restoreAllMocks()`.
 */
export function freezeClock(hub: TestHub, start = new Date()) {
  let now = start.getTime();
  jest.spyOn(hub.app.get(Clock), 'now').mockImplementation(() => new Date(now));
  return {
    /** The time `offset` milliseconds after `start`. */
    at: (offset: number) => new Date(start.getTime() + offset),
    advance(milliseconds: number) {
      now += milliseconds;
    },
  };
}

import { Global, Injectable, Module } from '@nestjs/common';

/** The longest delay setTimeout keeps (about 24.8 days); a later timer is re-armed on the way. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/** Cancels a timer set with {@link Clock.setTimer}. */
export type CancelTimer = () => void;

/**
 * The current time, for rules that depend on it (login lockouts, invitation expiry), and timers
 * for loops that sleep until a time (trigger firings). Injected, so that a test can move time
 * forward instead of waiting (test/support/test-clock.ts fires the timers it passes).
 */
@Injectable()
export class Clock {
  now(): Date {
    return new Date();
  }

  /**
   * Calls `callback` once `at` has come by this clock (at once if it has), unless cancelled first.
   * The timer does not keep the process alive.
   */
  setTimer(at: Date, callback: () => unknown): CancelTimer {
    let handle: NodeJS.Timeout | undefined;
    const arm = () => {
      const delay = at.getTime() - this.now().getTime();
      handle = setTimeout(delay > MAX_DELAY_MS ? arm : () => void callback(), Math.max(0, Math.min(delay, MAX_DELAY_MS)));
      handle.unref();
    };
    arm();
    return () => clearTimeout(handle);
  }
}

@Global()
@Module({ providers: [Clock], exports: [Clock] })
export class ClockModule {}

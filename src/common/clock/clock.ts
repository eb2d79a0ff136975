import { Global, Injectable, Module } from '@nestjs/common';

/**
 * The current time, for rules that depend on it (login lockouts, invitation expiry). Injected, so
 * that a test can move time forward instead of waiting.
 */
@Injectable()
export class Clock {
  now(): Date {
    return new Date();
  }
}

@Global()
@Module({ providers: [Clock], exports: [Clock] })
export class ClockModule {}

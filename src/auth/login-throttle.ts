import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { TooManyRequestsError } from '../common/errors/hub-errors.js';

/** How often rows of names that are neither locked nor recently failed are deleted. */
const PRUNE_INTERVAL_MS = 10 * 60 * 1000;

/**
 * Throttles password checks per user name (login, HTTP Basic, password change): after
 * HUB_LOGIN_FAILURE_LIMIT failures within HUB_LOGIN_LOCKOUT seconds, the name is locked for
 * HUB_LOGIN_LOCKOUT seconds, correct password or not. The state is in the database, so every
 * replica enforces it, and names that do not exist are throttled alike. Locks are temporary by
 * design: an attacker can delay a user, never lock them out for good.
 *
 * Within a process, checks of one name run one after another, so that guesses sent in parallel
 * cannot all be checked before the first failures are recorded; across replicas, at most one
 * check per replica runs past the limit.
 */
@Injectable()
export class LoginThrottle {
  /** The tail of each name's queue of checks. */
  private readonly queues = new Map<string, Promise<void>>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly config: HubConfig,
    private readonly clock: Clock,
  ) {}

  /**
   * Runs `check` (a password check: its result, or null for a failure) for `userName` unless the
   * name is locked (429 with `Retry-After`), and records the outcome: a failure counts towards the
   * lock, a success clears the count.
   */
  async throttled<T>(userName: string, check: () => Promise<T | null>): Promise<T | null> {
    const key = userName.toLowerCase();
    const previous = this.queues.get(key) ?? Promise.resolve();
    let done: () => void = () => undefined;
    const tail = previous.then(() => new Promise<void>((resolve) => (done = resolve)));
    this.queues.set(key, tail);
    await previous;
    try {
      const hadFailures = await this.refuseIfLocked(userName);
      const result = await check();
      if (result === null) await this.recordFailure(userName);
      else if (hadFailures) await this.clear(userName);
      return result;
    } finally {
      done();
      if (this.queues.get(key) === tail) this.queues.delete(key);
    }
  }

  /** Refuses while the name is locked; tells whether failures are on record. */
  private async refuseIfLocked(userName: string): Promise<boolean> {
    const rows: { locked_until: Date | null }[] = await this.dataSource.query('SELECT locked_until FROM login_failures WHERE name_key = lower($1)', [userName]);
    const lockedUntil = rows[0]?.locked_until;
    const now = this.clock.now().getTime();
    if (lockedUntil && lockedUntil.getTime() > now) {
      throw new TooManyRequestsError('Too many failed logins for this user name; try again later', (lockedUntil.getTime() - now) / 1000);
    }
    return rows.length > 0;
  }

  /** Records a failure; the one that reaches the limit locks the name. */
  private async recordFailure(userName: string): Promise<void> {
    const now = this.clock.now();
    const windowStart = now.getTime() - this.config.loginLockoutSeconds * 1000;
    await this.dataSource.transaction(async (manager) => {
      await manager.query(`INSERT INTO login_failures (name_key, failed_at) VALUES (lower($1), '{}') ON CONFLICT DO NOTHING`, [userName]);
      const [row]: { failed_at: Date[] }[] = await manager.query('SELECT failed_at FROM login_failures WHERE name_key = lower($1) FOR UPDATE', [userName]);
      const failures = [...row.failed_at.filter((time) => time.getTime() > windowStart), now];
      const lockedUntil = failures.length >= this.config.loginFailureLimit ? new Date(now.getTime() + this.config.loginLockoutSeconds * 1000) : null;
      await manager.query('UPDATE login_failures SET failed_at = $2, locked_until = $3 WHERE name_key = lower($1)', [userName, failures, lockedUntil]);
    });
  }

  private async clear(userName: string): Promise<void> {
    await this.dataSource.query('DELETE FROM login_failures WHERE name_key = lower($1)', [userName]);
  }

  /** Deletes the rows that no longer lock anything or count towards a lock. */
  @Interval('login-failures-prune', PRUNE_INTERVAL_MS)
  async prune(): Promise<number> {
    const now = this.clock.now();
    const windowStart = new Date(now.getTime() - this.config.loginLockoutSeconds * 1000);
    const [, count]: [unknown, number] = await this.dataSource.query(
      `DELETE FROM login_failures
       WHERE coalesce(locked_until, '-infinity') <= $1 AND NOT EXISTS (SELECT 1 FROM unnest(failed_at) AS failure(time) WHERE failure.time > $2)`,
      [now, windowStart],
    );
    return count;
  }
}

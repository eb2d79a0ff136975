import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { TooManyRequestsError } from '../common/errors/hub-errors.js';

/** How often rows of names that are neither locked nor recently failed are deleted. */
const PRUNE_INTERVAL_MS = 10 * 60 * 1000;

/** Where failures are counted: one row per user name (lower case), or per client address. */
interface FailureTable {
  readonly table: 'login_failures' | 'login_address_failures';
  readonly column: string;
  /** The SQL of the stored key, from the key given as `$1`. */
  readonly value: string;
}

const BY_NAME: FailureTable = { table: 'login_failures', column: 'name_key', value: 'lower($1)' };
const BY_ADDRESS: FailureTable = { table: 'login_address_failures', column: 'address', value: '$1' };

const matching = (where: FailureTable) => `${where.column} = ${where.value}`;

/**
 * Throttles password checks (login, HTTP Basic, password change) per user name and per client
 * address. After HUB_LOGIN_FAILURE_LIMIT failures for a name within HUB_LOGIN_LOCKOUT seconds,
 * the name is locked for HUB_LOGIN_LOCKOUT seconds, correct password or not; after
 * HUB_LOGIN_MAX_FAILURES_PER_ADDRESS failures from one address within that window, whatever names
 * they tried, the address is refused until the window no longer holds that many (so that spraying
 * many names, each check paying for a password hash, cannot starve the hub). A refused check
 * costs no hash. The state is in the database, so every replica enforces it, and names that do
 * not exist are throttled alike. Locks are temporary by design: an attacker can delay a user,
 * never lock them out for good; an administrator can lift a name's lock at once.
 *
 * Within a process, checks of one name run one after another, so that guesses sent in parallel
 * cannot all be checked before the first failures are recorded; across replicas, at most one
 * check per replica runs past the limit. A success clears its name's failures, not its address's:
 * one valid account must not let an address spray the others.
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
   * Runs `check` (a password check: its result, or null for a failure) for `userName` from
   * `address` unless either is refused (429 with `Retry-After`), and records the outcome: a
   * failure counts towards both limits, a success clears the name's count.
   */
  async throttled<T>(userName: string, address: string, check: () => Promise<T | null>): Promise<T | null> {
    const key = userName.toLowerCase();
    const previous = this.queues.get(key) ?? Promise.resolve();
    let done: () => void = () => undefined;
    const tail = previous.then(() => new Promise<void>((resolve) => (done = resolve)));
    this.queues.set(key, tail);
    await previous;
    try {
      const limitsAddress = this.config.loginMaxFailuresPerAddress > 0;
      if (limitsAddress) await this.refuseIfLocked(BY_ADDRESS, address, 'Too many failed logins from this address; try again later');
      const hadFailures = await this.refuseIfLocked(BY_NAME, userName, 'Too many failed logins for this user name; try again later');
      const result = await check();
      if (result === null) {
        await this.recordFailure(BY_NAME, userName, (failures, now) =>
          failures.length >= this.config.loginFailureLimit ? now + this.config.loginLockoutSeconds * 1000 : null,
        );
        if (limitsAddress) {
          const limit = this.config.loginMaxFailuresPerAddress;
          // Refused until the oldest failure that makes up the limit leaves the window.
          await this.recordFailure(BY_ADDRESS, address, (failures) =>
            failures.length >= limit ? failures[failures.length - limit] + this.config.loginLockoutSeconds * 1000 : null,
          );
        }
      } else if (hadFailures) await this.unlock(userName);
      return result;
    } finally {
      done();
      if (this.queues.get(key) === tail) this.queues.delete(key);
    }
  }

  /** Clears a user name's failures and lock (an administrator's unlock, or a success). */
  async unlock(userName: string): Promise<void> {
    await this.dataSource.query(`DELETE FROM ${BY_NAME.table} WHERE ${matching(BY_NAME)}`, [userName]);
  }

  /** Refuses while the name or address is locked; tells whether failures are on record. */
  private async refuseIfLocked(where: FailureTable, key: string, refusal: string): Promise<boolean> {
    const rows: { locked_until: Date | null }[] = await this.dataSource.query(`SELECT locked_until FROM ${where.table} WHERE ${matching(where)}`, [key]);
    const lockedUntil = rows[0]?.locked_until;
    const now = this.clock.now().getTime();
    if (lockedUntil && lockedUntil.getTime() > now) throw new TooManyRequestsError(refusal, (lockedUntil.getTime() - now) / 1000);
    return rows.length > 0;
  }

  /** Records a failure; `lockUntil` tells from the failures in the window (oldest first, this one last) until when it locks, if it does. */
  private async recordFailure(where: FailureTable, key: string, lockUntil: (failures: number[], now: number) => number | null): Promise<void> {
    const now = this.clock.now();
    const windowStart = now.getTime() - this.config.loginLockoutSeconds * 1000;
    await this.dataSource.transaction(async (manager) => {
      await manager.query(`INSERT INTO ${where.table} (${where.column}, failed_at) VALUES (${where.value}, '{}') ON CONFLICT DO NOTHING`, [key]);
      const [row]: { failed_at: Date[] }[] = await manager.query(`SELECT failed_at FROM ${where.table} WHERE ${matching(where)} FOR UPDATE`, [key]);
      const failures = [...row.failed_at.filter((time) => time.getTime() > windowStart), now];
      const until = lockUntil(
        failures.map((time) => time.getTime()),
        now.getTime(),
      );
      await manager.query(`UPDATE ${where.table} SET failed_at = $2, locked_until = $3 WHERE ${matching(where)}`, [
        key,
        failures,
        until === null ? null : new Date(until),
      ]);
    });
  }

  /** Deletes the rows that no longer lock anything or count towards a lock. */
  @Interval('login-failures-prune', PRUNE_INTERVAL_MS)
  async prune(): Promise<number> {
    const now = this.clock.now();
    const windowStart = new Date(now.getTime() - this.config.loginLockoutSeconds * 1000);
    let pruned = 0;
    for (const { table } of [BY_NAME, BY_ADDRESS]) {
      const [, count]: [unknown, number] = await this.dataSource.query(
        `DELETE FROM ${table}
         WHERE coalesce(locked_until, '-infinity') <= $1 AND NOT EXISTS (SELECT 1 FROM unnest(failed_at) AS failure(time) WHERE failure.time > $2)`,
        [now, windowStart],
      );
      pruned += count;
    }
    return pruned;
  }
}

import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { TooManyRequestsError } from '../common/errors/hub-errors.js';
import { addressNetwork } from '../common/http/client-address.js';

/** How often rows of names that are neither locked nor recently failed are deleted. */
const PRUNE_INTERVAL_MS = 10 * 60 * 1000;
/** How often a familiar address's last success is written again: HTTP Basic checks a password per request, and must not write per request. */
const FAMILIAR_REFRESH_MS = 24 * 3600 * 1000;
const DAY_MS = 24 * 3600 * 1000;

/** Where failures are counted: one row per user name (lower case) and address kind, or per client address. */
interface FailureTable {
  readonly table: 'login_failures' | 'login_address_failures';
  readonly columns: readonly string[];
  /** The SQL of each stored key column, from the keys given as `$1`, `$2`. */
  readonly values: readonly string[];
}

/** A name's counts: `network` '' for every address unfamiliar to the user, else the familiar address's. */
const BY_NAME: FailureTable = { table: 'login_failures', columns: ['name_key', 'network'], values: ['lower($1)', '$2'] };
const BY_ADDRESS: FailureTable = { table: 'login_address_failures', columns: ['address'], values: ['$1'] };

const matching = (where: FailureTable) => where.columns.map((column, index) => `${column} = ${where.values[index]}`).join(' AND ');
/** The unfamiliar addresses' count of a name. */
const UNFAMILIAR = '';

/**
 * Throttles password checks (login, HTTP Basic, password change) per user name and per client
 * address, as smart lockout does (api-map §1, docs/identity.md). An address (IPv4, or IPv6 /64)
 * from which the user logged in within HUB_LOGIN_FAMILIAR_DAYS is familiar: each familiar address
 * has a count of its own, and every other address shares one. After HUB_LOGIN_FAILURE_LIMIT
 * failures in one count within HUB_LOGIN_LOCKOUT seconds, the name is locked for
 * HUB_LOGIN_LOCKOUT seconds where that count applies, correct password or not: failures from
 * elsewhere never lock a user out of the addresses they use. After
 * HUB_LOGIN_MAX_FAILURES_PER_ADDRESS failures from one address within that window, whatever names
 * they tried, the address is refused until the window no longer holds that many (so that spraying
 * many names, each check paying for a password hash, cannot starve the hub). A refused check
 * costs no hash. The state is in the database, so every replica enforces it, and names that do
 * not exist are throttled alike. Locks are temporary by design: an attacker can delay a user,
 * never lock them out for good; an administrator can lift a name's lock at once.
 *
 * Within a process, checks of one name run one after another, so that guesses sent in parallel
 * cannot all be checked before the first failures are recorded; across replicas, at most one
 * check per replica runs past the limit. A success clears its own count only — never the lock at
 * unfamiliar addresses, nor its address's failures: one valid account must not let an address
 * spray the others.
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
   * failure counts towards both limits, a success clears the name's count where it counted and
   * makes (or keeps) its address familiar.
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
      if (limitsAddress) await this.refuseIfLocked(BY_ADDRESS, [address], 'Too many failed logins from this address; try again later');
      const network = addressNetwork(address);
      const lastSuccess = await this.familiarSince(userName, network);
      const count = [userName, lastSuccess ? network : UNFAMILIAR];
      const hadFailures = await this.refuseIfLocked(BY_NAME, count, 'Too many failed logins for this user name; try again later');
      const result = await check();
      if (result === null) {
        await this.recordFailure(BY_NAME, count, (failures, now) =>
          failures.length >= this.config.loginFailureLimit ? now + this.config.loginLockoutSeconds * 1000 : null,
        );
        if (limitsAddress) {
          const limit = this.config.loginMaxFailuresPerAddress;
          // Refused until the oldest failure that makes up the limit leaves the window.
          await this.recordFailure(BY_ADDRESS, [address], (failures) =>
            failures.length >= limit ? failures[failures.length - limit] + this.config.loginLockoutSeconds * 1000 : null,
          );
        }
        return result;
      }
      if (hadFailures) await this.dataSource.query(`DELETE FROM ${BY_NAME.table} WHERE ${matching(BY_NAME)}`, count);
      if (!lastSuccess || this.clock.now().getTime() - lastSuccess.getTime() >= FAMILIAR_REFRESH_MS) await this.remember(userName, network);
      return result;
    } finally {
      done();
      if (this.queues.get(key) === tail) this.queues.delete(key);
    }
  }

  /** Clears a user name's failures and locks, at every address (an administrator's unlock). */
  async unlock(userName: string): Promise<void> {
    await this.dataSource.query(`DELETE FROM ${BY_NAME.table} WHERE name_key = lower($1)`, [userName]);
  }

  /** When the user of that name last logged in from `network`, if within HUB_LOGIN_FAMILIAR_DAYS (so it is familiar). */
  private async familiarSince(userName: string, network: string): Promise<Date | undefined> {
    const since = new Date(this.clock.now().getTime() - this.config.loginFamiliarDays * DAY_MS);
    const rows: { last_success: Date }[] = await this.dataSource.query(
      `SELECT familiar.last_success FROM login_familiar_addresses familiar JOIN users ON users.id = familiar.user_id
       WHERE lower(users.user_name) = lower($1) AND familiar.network = $2 AND familiar.last_success > $3`,
      [userName, network, since],
    );
    return rows[0]?.last_success;
  }

  /** Records a success of the user of that name from `network`: familiar from now on, for HUB_LOGIN_FAMILIAR_DAYS. */
  private async remember(userName: string, network: string): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO login_familiar_addresses (user_id, network, last_success) SELECT id, $2, $3 FROM users WHERE lower(user_name) = lower($1)
       ON CONFLICT (user_id, network) DO UPDATE SET last_success = greatest(login_familiar_addresses.last_success, excluded.last_success)`,
      [userName, network, this.clock.now()],
    );
  }

  /** Refuses while the name or address is locked; tells whether failures are on record. */
  private async refuseIfLocked(where: FailureTable, key: readonly string[], refusal: string): Promise<boolean> {
    const rows: { locked_until: Date | null }[] = await this.dataSource.query(`SELECT locked_until FROM ${where.table} WHERE ${matching(where)}`, [...key]);
    const lockedUntil = rows[0]?.locked_until;
    const now = this.clock.now().getTime();
    if (lockedUntil && lockedUntil.getTime() > now) throw new TooManyRequestsError(refusal, (lockedUntil.getTime() - now) / 1000);
    return rows.length > 0;
  }

  /** Records a failure; `lockUntil` tells from the failures in the window (oldest first, this one last) until when it locks, if it does. */
  private async recordFailure(where: FailureTable, key: readonly string[], lockUntil: (failures: number[], now: number) => number | null): Promise<void> {
    const now = this.clock.now();
    const windowStart = now.getTime() - this.config.loginLockoutSeconds * 1000;
    const params = [...key];
    await this.dataSource.transaction(async (manager) => {
      await manager.query(
        `INSERT INTO ${where.table} (${where.columns.join(', ')}, failed_at) VALUES (${where.values.join(', ')}, '{}') ON CONFLICT DO NOTHING`,
        params,
      );
      const [row]: { failed_at: Date[] }[] = await manager.query(`SELECT failed_at FROM ${where.table} WHERE ${matching(where)} FOR UPDATE`, params);
      const failures = [...row.failed_at.filter((time) => time.getTime() > windowStart), now];
      const until = lockUntil(
        failures.map((time) => time.getTime()),
        now.getTime(),
      );
      const n = params.length;
      await manager.query(`UPDATE ${where.table} SET failed_at = $${n + 1}, locked_until = $${n + 2} WHERE ${matching(where)}`, [
        ...params,
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
    const [, forgotten]: [unknown, number] = await this.dataSource.query('DELETE FROM login_familiar_addresses WHERE last_success <= $1', [
      new Date(now.getTime() - this.config.loginFamiliarDays * DAY_MS),
    ]);
    return pruned + forgotten;
  }
}

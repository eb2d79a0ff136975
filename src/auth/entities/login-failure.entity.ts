import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * Recent failed logins for one user name (lower case), whether or not such a user exists, so that
 * a lockout says nothing about which names exist. Kept apart from users: it is throttling state,
 * not part of a user.
 */
@Entity({ name: 'login_failures' })
export class LoginFailure {
  @PrimaryColumn({ name: 'name_key', type: 'text' })
  nameKey!: string;

  /** When each failure within the current window happened. */
  @Column({ name: 'failed_at', type: 'timestamptz', array: true })
  failedAt!: Date[];

  @Column({ name: 'locked_until', type: 'timestamptz', precision: 3, nullable: true })
  lockedUntil!: Date | null;
}

/** Recent failed logins from one client address, whatever names they tried (spraying many names). */
@Entity({ name: 'login_address_failures' })
export class LoginAddressFailure {
  @PrimaryColumn({ type: 'text' })
  address!: string;

  @Column({ name: 'failed_at', type: 'timestamptz', array: true })
  failedAt!: Date[];

  @Column({ name: 'locked_until', type: 'timestamptz', precision: 3, nullable: true })
  lockedUntil!: Date | null;
}

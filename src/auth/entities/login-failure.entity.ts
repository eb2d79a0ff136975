import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { User } from './user.entity.js';

/**
 * Recent failed logins for one user name (lower case), whether or not such a user exists, so that
 * a lockout says nothing about which names exist: one count for the addresses unfamiliar to the
 * user (`network` ''), one for each familiar one. Kept apart from users: it is throttling state,
 * not part of a user.
 */
@Entity({ name: 'login_failures' })
export class LoginFailure {
  @PrimaryColumn({ name: 'name_key', type: 'text', primaryKeyConstraintName: 'login_failures_pkey' })
  nameKey!: string;

  /** The familiar address (IPv4, or IPv6 /64) this count is of; '' for every unfamiliar one. */
  @PrimaryColumn({ type: 'text', default: '', primaryKeyConstraintName: 'login_failures_pkey' })
  network!: string;

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

/** An address (IPv4, or IPv6 /64) from which a user logged in successfully, and when last (refreshed at most daily). */
@Entity({ name: 'login_familiar_addresses' })
export class LoginFamiliarAddress {
  @PrimaryColumn({ name: 'user_id', type: 'uuid', primaryKeyConstraintName: 'login_familiar_addresses_pkey' })
  userId!: string;

  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'login_familiar_addresses_pkey' })
  network!: string;

  @Column({ name: 'last_success', type: 'timestamptz', precision: 3 })
  lastSuccess!: Date;

  @ManyToOne(() => User, { onDelete: 'CASCADE', nullable: false })
  @JoinColumn({ name: 'user_id', foreignKeyConstraintName: 'login_familiar_addresses_user_id_fkey' })
  user?: User;
}

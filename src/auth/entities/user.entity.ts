import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn, VersionColumn } from 'typeorm';

/**
 * A person or script that logs in. User names are unique ignoring case, external ids and unix
 * user names unique (the latter as the node compares account names: exactly), and
 * the text filters have trigram indexes (all made by hand in the migrations).
 */
@Entity({ name: 'users' })
@Index('users_system_idx', { synchronize: false })
@Index('users_inactive_idx', { synchronize: false })
@Index('users_invitation_pending_idx', { synchronize: false })
@Index('users_created_idx', ['created', 'id'])
@Index('users_modified_idx', ['modified', 'id'])
@Index('users_user_name_lower_key', { synchronize: false })
@Index('users_external_id_key', { synchronize: false })
@Index('users_unix_user_name_key', { synchronize: false })
@Index('users_user_name_trgm_idx', { synchronize: false })
@Index('users_display_name_trgm_idx', { synchronize: false })
@Index('users_email_trgm_idx', { synchronize: false })
@Index('users_display_name_lower_idx', { synchronize: false })
@Index('users_principal_name_lower_idx', { synchronize: false })
@Index('users_principal_name_trgm_idx', { synchronize: false })
export class User {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'user_name', type: 'text' })
  userName!: string;

  @Column({ name: 'display_name', type: 'text', nullable: true })
  displayName!: string | null;

  @Column({ type: 'text', nullable: true })
  email!: string | null;

  @Column({ type: 'boolean', default: true })
  active!: boolean;

  @Column({ type: 'boolean', default: false })
  system!: boolean;

  @Column({ name: 'external_id', type: 'text', nullable: true })
  externalId!: string | null;

  @Column({ name: 'unix_home_directory', type: 'text', nullable: true })
  unixHomeDirectory!: string | null;

  @Column({ name: 'unix_user_name', type: 'text', nullable: true })
  unixUserName!: string | null;

  @Column({ name: 'user_principal_name', type: 'text', nullable: true })
  userPrincipalName!: string | null;

  @Column({ name: 'invitation_pending', type: 'boolean', default: false })
  invitationPending!: boolean;

  @Column({ name: 'invitation_expiry', type: 'timestamptz', precision: 3, nullable: true })
  invitationExpiry!: Date | null;

  /** argon2id, PHC string format; null while an invitation is pending. */
  @Column({ name: 'password_hash', type: 'text', nullable: true })
  passwordHash!: string | null;

  /**
   * Carried in every token issued to the user and compared at each request: a password change, a
   * reset or a deactivation increments it, which revokes every token issued before.
   */
  @Column({ name: 'token_version', type: 'integer', default: 0 })
  tokenVersion!: number;

  @VersionColumn()
  version!: number;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz', precision: 3 })
  modified!: Date;
}

import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, Unique, UpdateDateColumn, VersionColumn } from 'typeorm';
import { AuthDomain } from './auth-domain.entity.js';

export const CREDENTIAL_TYPES = ['Internal', 'Vault'] as const;
export type CredentialType = (typeof CREDENTIAL_TYPES)[number];

/**
 * A secret a principal (a user or a group) holds in an auth domain. `data` is stored sealed
 * (AES-256-GCM, bound to the credential's id), so its id is chosen before the insert. Within a
 * domain, credentials are totally ordered by `rank`, lowest first: a deferrable unique constraint,
 * so that a renumbering can pass through duplicates inside its transaction. The domain's deletion
 * deletes them; so does the principal's (a trigger, as principals live in two tables).
 */
@Entity({ name: 'credentials' })
@Unique('credentials_domain_rank_key', ['authDomainId', 'rank'], { deferrable: 'INITIALLY IMMEDIATE' })
@Index('credentials_resolve_idx', ['authDomainId', 'principalId', 'rank'])
@Index('credentials_principal_id_idx', ['principalId'])
@Index('credentials_created_idx', ['created', 'id'])
@Index('credentials_modified_idx', ['modified', 'id'])
export class Credential {
  @PrimaryColumn('uuid')
  id!: string;

  @Column({ name: 'auth_domain_id', type: 'uuid' })
  authDomainId!: string;

  @ManyToOne(() => AuthDomain, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'auth_domain_id', foreignKeyConstraintName: 'credentials_auth_domain_id_fkey' })
  authDomain?: AuthDomain;

  @Column({ name: 'principal_id', type: 'uuid' })
  principalId!: string;

  @Column({ name: 'principal_type', type: 'text' })
  principalType!: 'User' | 'Group';

  @Column({ type: 'boolean', default: false })
  disabled!: boolean;

  @Column({ type: 'text' })
  label!: string;

  @Column({ type: 'text' })
  type!: CredentialType;

  /** int64; the driver returns it as a string. */
  @Column({ type: 'bigint' })
  rank!: string;

  @Column({ name: 'vault_path', type: 'text', nullable: true })
  vaultPath!: string | null;

  /** `data`, sealed; null for Vault credentials. */
  @Column({ name: 'sealed_data', type: 'bytea', nullable: true })
  sealedData!: Buffer | null;

  @VersionColumn()
  version!: number;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz', precision: 3 })
  modified!: Date;
}

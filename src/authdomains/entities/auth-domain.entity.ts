import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, UpdateDateColumn, VersionColumn } from 'typeorm';

/**
 * A named container, in a namespace, for the credentials programs use to reach an outside system
 * (api-map §3). Names are unique within a namespace ignoring case; the namespace cannot be deleted
 * while it holds domains (a foreign key, ON DELETE RESTRICT).
 */
@Entity({ name: 'auth_domains' })
@Index('auth_domains_name_lower_key', { synchronize: false })
@Index('auth_domains_name_trgm_idx', { synchronize: false })
@Index('auth_domains_created_idx', ['created', 'id'])
@Index('auth_domains_modified_idx', ['modified', 'id'])
export class AuthDomain {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'namespace_id', type: 'uuid' })
  namespaceId!: string;

  // The namespaces area's entity, named rather than imported (areas do not import each other's entities).
  @ManyToOne('Namespace', { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'namespace_id', foreignKeyConstraintName: 'auth_domains_namespace_id_fkey' })
  namespace?: unknown;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text', nullable: true })
  description!: string | null;

  @Column({ name: 'allow_personal_credentials', type: 'boolean', default: false })
  allowPersonalCredentials!: boolean;

  @VersionColumn()
  version!: number;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz', precision: 3 })
  modified!: Date;
}

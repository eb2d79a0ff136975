import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, UpdateDateColumn, VersionColumn } from 'typeorm';
import { ExecutionProfile } from './execution-profile.entity.js';

/**
 * Makes a profile usable in a namespace (hub-interface §2.8). A profile is bound once per
 * namespace; at most one binding per namespace is its default (a partial unique index, so that
 * concurrent requests cannot make two). Neither the profile nor the namespace can be deleted while
 * bound (foreign keys, ON DELETE RESTRICT). The id may be chosen by the client.
 */
@Entity({ name: 'execution_profile_bindings' })
@Index('execution_profile_bindings_unique_key', ['executionProfileId', 'namespaceId'], { unique: true })
@Index('execution_profile_bindings_one_default_key', { synchronize: false })
@Index('execution_profile_bindings_namespace_id_idx', ['namespaceId'])
export class ProfileBinding {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'execution_profile_bindings_pkey' })
  id!: string;

  @Column({ name: 'execution_profile_id', type: 'uuid' })
  executionProfileId!: string;

  @ManyToOne(() => ExecutionProfile, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'execution_profile_id', foreignKeyConstraintName: 'execution_profile_bindings_profile_id_fkey' })
  executionProfile?: ExecutionProfile;

  @Column({ name: 'namespace_id', type: 'uuid' })
  namespaceId!: string;

  // The namespaces area's entity, named rather than imported (areas do not import each other's entities).
  @ManyToOne('Namespace', { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'namespace_id', foreignKeyConstraintName: 'execution_profile_bindings_namespace_id_fkey' })
  namespace?: unknown;

  @Column({ name: 'is_default', type: 'boolean', default: false })
  isDefault!: boolean;

  @VersionColumn()
  version!: number;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz', precision: 3 })
  modified!: Date;
}

import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn, VersionColumn } from 'typeorm';
import type { NodeConstraint } from '../node-constraints.js';

/**
 * How workloads run (hub-interface §2.8): environment variables set for each, node constraints
 * deciding where, and free-form properties. Profiles are not in a namespace: bindings make them
 * usable in namespaces. Names are unique ignoring case; at most one is the hub's default.
 */
@Entity({ name: 'execution_profiles' })
@Index('execution_profiles_name_lower_key', { synchronize: false })
@Index('execution_profiles_name_trgm_idx', { synchronize: false })
@Index('execution_profiles_one_default_key', { synchronize: false })
@Index('execution_profiles_created_idx', ['created', 'id'])
@Index('execution_profiles_modified_idx', ['modified', 'id'])
export class ExecutionProfile {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text', nullable: true })
  description!: string | null;

  @Column({ name: 'is_default', type: 'boolean', default: false })
  isDefault!: boolean;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  environment!: Record<string, string>;

  @Column({ type: 'jsonb', default: () => "'[]'" })
  constraints!: NodeConstraint[];

  @Column({ type: 'jsonb', default: () => "'{}'" })
  properties!: Record<string, unknown>;

  @VersionColumn()
  version!: number;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz', precision: 3 })
  modified!: Date;
}

import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn, VersionColumn } from 'typeorm';
import type { ObjectMatcherKind } from '../object-matcher.js';

/** One permission of a role (hub-interface §2.7b), stored as given. */
export interface PermissionValue {
  object: string;
  objectMatcher: ObjectMatcherKind;
  actions: string[];
  effect: 'Allow' | 'Deny';
}

/** A named set of permissions. Names are unique ignoring case; built-in roles are `system` and read-only. */
@Entity({ name: 'roles' })
@Index('roles_name_lower_key', { synchronize: false })
@Index('roles_name_trgm_idx', { synchronize: false })
@Index('roles_created_idx', ['created', 'id'])
@Index('roles_modified_idx', ['modified', 'id'])
export class Role {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text', nullable: true })
  description!: string | null;

  @Column({ type: 'jsonb', default: () => "'[]'" })
  permissions!: PermissionValue[];

  @Column({ type: 'boolean', default: false })
  system!: boolean;

  @VersionColumn()
  version!: number;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz', precision: 3 })
  modified!: Date;
}

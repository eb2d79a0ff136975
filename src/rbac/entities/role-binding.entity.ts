import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Role } from './role.entity.js';

/**
 * Gives a role to a principal (a user or a group) in one namespace, or in all of them when
 * `namespaceId` is null (`*`). The principal's deletion deletes its bindings (a trigger, as
 * principals live in two tables); a namespace with bindings cannot be deleted.
 */
@Entity({ name: 'role_bindings' })
@Index('role_bindings_unique_key', { synchronize: false })
@Index('role_bindings_principal_id_idx', ['principalId'])
@Index('role_bindings_created_idx', ['created', 'id'])
@Index('role_bindings_namespace_id_idx', ['namespaceId'])
export class RoleBinding {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'role_id', type: 'uuid' })
  roleId!: string;

  @ManyToOne(() => Role, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'role_id' })
  role?: Role;

  @Column({ name: 'principal_id', type: 'uuid' })
  principalId!: string;

  @Column({ name: 'principal_type', type: 'text' })
  principalType!: 'User' | 'Group';

  /** Null: every namespace. */
  @Column({ name: 'namespace_id', type: 'uuid', nullable: true })
  namespaceId!: string | null;

  // The namespaces area's entity, named rather than imported (areas do not import each other's entities).
  @ManyToOne('Namespace', { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'namespace_id', foreignKeyConstraintName: 'role_bindings_namespace_id_fkey' })
  namespace?: unknown;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;
}

import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** One access decision (hub-interface §2.7b "Audit record"); written in batches, pruned after the retention period. */
@Entity({ name: 'audit_records' })
@Index('audit_records_object_prefix_idx', { synchronize: false })
@Index('audit_records_when_idx', ['when', 'id'])
@Index('audit_records_user_id_idx', ['userId', 'when'])
@Index('audit_records_decision_idx', ['decision', 'when'])
@Index('audit_records_object_idx', ['object', 'id'])
@Index('audit_records_object_trgm_idx', { synchronize: false })
export class AuditRecord {
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS' })
  id!: string;

  @Column({ type: 'timestamptz', precision: 3 })
  when!: Date;

  @Column({ type: 'text' })
  object!: string;

  /** The namespace's name, or `*`. */
  @Column({ type: 'text' })
  namespace!: string;

  @Column({ type: 'text' })
  action!: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId!: string;

  @Column({ type: 'uuid', array: true })
  groups!: string[];

  @Column({ type: 'text' })
  decision!: 'Allow' | 'Deny';

  @Column({ type: 'text' })
  purpose!: 'Request' | 'Filter';
}

import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

/**
 * A Cron or File trigger of a pipeline (see the Triggers migration): whose runs it starts (its
 * owner), with which profile, and `nextDue`, the next instant it is due (null while disabled),
 * which hubs claim with row locks. This entity serves the list; the repository writes plain SQL.
 */
@Entity({ name: 'pipeline_triggers' })
@Index('pipeline_triggers_pipeline_created_idx', ['pipelineId', 'created', 'id'])
@Index('pipeline_triggers_pipeline_modified_idx', ['pipelineId', 'modified', 'id'])
@Index('pipeline_triggers_due_idx', { synchronize: false })
export class PipelineTrigger {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'PK_5d1f3b7a9c2e4a6b8d0f1c3e5a7b9d2f' })
  id!: string;

  @Column({ name: 'pipeline_id', type: 'uuid' })
  pipelineId!: string;

  @Column({ name: 'owner_id', type: 'uuid' })
  ownerId!: string;

  @Column({ name: 'owner_name', type: 'text' })
  ownerName!: string;

  @Column({ type: 'text' })
  type!: string;

  @Column({ type: 'boolean' })
  disabled!: boolean;

  @Column({ type: 'jsonb' })
  spec!: Record<string, unknown>;

  @Column({ name: 'execution_profile_id', type: 'uuid' })
  executionProfileId!: string;

  @Column({ name: 'enabled_at', type: 'timestamptz', precision: 3 })
  enabledAt!: Date;

  @Column({ name: 'next_due', type: 'timestamptz', precision: 3, nullable: true })
  nextDue!: Date | null;

  @Column({ name: 'last_triggered', type: 'timestamptz', precision: 3, nullable: true })
  lastTriggered!: Date | null;

  @Column({ type: 'integer' })
  version!: number;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz', precision: 3 })
  modified!: Date;
}

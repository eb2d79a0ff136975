import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One firing of a trigger (see the Triggers migration): a cron due time, a file's arrival, or a
 * file seen at a poll, and the run it started or why none could be. This entity serves the lists.
 */
@Entity({ name: 'pipeline_trigger_firings' })
@Index('pipeline_trigger_firings_trigger_time_idx', ['triggerId', 'triggerTime', 'id'])
@Index('pipeline_trigger_firings_time_idx', ['triggerTime', 'id'])
@Index('pipeline_trigger_firings_trigger_idx', ['triggerId', 'id'])
@Index('pipeline_trigger_firings_cron_key', { synchronize: false })
@Index('pipeline_trigger_firings_arrival_key', { synchronize: false })
@Index('pipeline_trigger_firings_existence_key', { synchronize: false })
export class TriggerFiring {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'PK_8a2c4e6b0d1f3a5c7e9b2d4f6a8c0e1b' })
  id!: string;

  @Column({ name: 'trigger_id', type: 'uuid' })
  triggerId!: string;

  @Column({ name: 'trigger_time', type: 'timestamptz', precision: 3 })
  triggerTime!: Date;

  @Column({ type: 'text' })
  kind!: string;

  @Column({ type: 'text', nullable: true })
  path!: string | null;

  @Column({ type: 'bigint', nullable: true })
  size!: string | null;

  @Column({ type: 'timestamptz', precision: 3, nullable: true })
  mtime!: Date | null;

  @Column({ type: 'text' })
  state!: string;

  @Column({ name: 'run_id', type: 'uuid', nullable: true })
  runId!: string | null;

  @Column({ type: 'text', nullable: true })
  error!: string | null;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;
}

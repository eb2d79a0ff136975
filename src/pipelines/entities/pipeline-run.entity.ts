import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import type { RunState } from '../dto/pipeline-run.dto.js';
import type { PipelineSpecShape } from '../pipeline-validation.js';

/**
 * A run of a pipeline: the spec it was started with (a copy: later edits of the pipeline do not
 * change it), its owner and profile, and its state. Its nodes are rows of pipeline_run_nodes,
 * its results of pipeline_results (see the PipelineRuns migration); this entity serves the list.
 */
@Entity({ name: 'pipeline_runs' })
@Index('pipeline_runs_created_idx', ['created', 'id'])
@Index('pipeline_runs_namespace_created_idx', ['namespaceId', 'created', 'id'])
@Index('pipeline_runs_owner_created_idx', ['ownerId', 'created', 'id'])
@Index('pipeline_runs_pipeline_created_idx', ['pipelineId', 'created', 'id'])
@Index('pipeline_runs_state_created_idx', ['state', 'created', 'id'])
@Index('pipeline_runs_started_idx', ['startedAt', 'id'])
@Index('pipeline_runs_finished_idx', ['finishedAt', 'id'])
@Index('pipeline_runs_active_idx', { synchronize: false })
export class PipelineRun {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'PK_7e3c1a9f5b2d4c8e9a6f0b1d2c3e4f5a' })
  id!: string;

  @Column({ name: 'namespace_id', type: 'uuid' })
  namespaceId!: string;

  @Column({ name: 'pipeline_id', type: 'uuid', nullable: true })
  pipelineId!: string | null;

  @Column({ name: 'owner_id', type: 'uuid' })
  ownerId!: string;

  @Column({ name: 'owner_name', type: 'text' })
  ownerName!: string;

  @Column({ name: 'execution_profile_id', type: 'uuid' })
  executionProfileId!: string;

  @Column({ type: 'jsonb' })
  spec!: PipelineSpecShape;

  @Column({ name: 'entry_point', type: 'text', nullable: true })
  entryPoint!: string | null;

  /** Variables every node of the run gets besides its own (a File trigger's HUB_TRIGGER_FILE). */
  @Column({ type: 'jsonb', default: () => `'[]'` })
  environment!: { name: string; value: string }[];

  @Column({ type: 'text', default: 'Queued' })
  state!: RunState;

  @Column({ type: 'boolean', default: false })
  cancelled!: boolean;

  /** Raised by every write of the run's nodes (see the RunRevisions migration). */
  @Column({ type: 'integer', default: 0 })
  revision!: number;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;

  @Column({ name: 'started_at', type: 'timestamptz', precision: 3, nullable: true })
  startedAt!: Date | null;

  @Column({ name: 'finished_at', type: 'timestamptz', precision: 3, nullable: true })
  finishedAt!: Date | null;
}

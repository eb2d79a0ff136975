import type { NodeConstraint } from '../../execution-profiles/node-constraints.js';
import type { ExecutionLimits, JobIdentity } from '../drivers/cluster-driver.js';
import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

export const JOB_STATUSES = ['pending', 'running', 'dead'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export const JOB_TYPES = ['batch', 'service'] as const;
export type JobType = (typeof JOB_TYPES)[number];

/**
 * What a job runs: one task (hub-interface §2.10, api-map §9), with the environment and node
 * constraints of its execution profile as they were when it was submitted.
 */
export interface TaskSpec {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly envVars: readonly { readonly name: string; readonly value: string }[];
  readonly environment: Readonly<Record<string, string>>;
  readonly constraints: readonly NodeConstraint[];
  /**
   * Who it runs as, settled when it was submitted: null for the hub's own user (a local hub that is
   * not root); absent on jobs submitted before jobs ran as their users, which never start.
   */
  readonly identity?: JobIdentity | null;
  /** Its profile's limits on each execution, as they were when it was submitted. */
  readonly limits?: ExecutionLimits;
}

/**
 * Work submitted to the cluster in a namespace, under an execution profile, for a user: a task
 * run by one or more executions. `dead` once every execution has ended. The namespace and the
 * profile cannot be deleted while jobs refer to them (ON DELETE RESTRICT); the retention prune
 * deletes dead jobs, their executions and their files.
 */
@Entity({ name: 'cluster_jobs' })
@Index('cluster_jobs_submit_time_idx', { synchronize: false })
@Index('cluster_jobs_owner_submit_time_idx', ['ownerId', 'submitTime', 'id'])
@Index('cluster_jobs_namespace_submit_time_idx', ['namespaceId', 'submitTime', 'id'])
@Index('cluster_jobs_status_submit_time_idx', { synchronize: false })
@Index('cluster_jobs_status_idx', { synchronize: false })
@Index('cluster_jobs_type_idx', { synchronize: false })
@Index('cluster_jobs_name_lower_idx', { synchronize: false })
@Index('cluster_jobs_name_trgm_idx', { synchronize: false })
@Index('cluster_jobs_execution_profile_id_idx', ['executionProfileId'])
@Index('cluster_jobs_finished_idx', { synchronize: false })
@Index('cluster_jobs_workload_key_key', { synchronize: false })
export class ClusterJob {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text' })
  status!: JobStatus;

  @Column({ type: 'text' })
  type!: JobType;

  @Column({ type: 'integer' })
  priority!: number;

  @Column({ name: 'namespace_id', type: 'uuid' })
  namespaceId!: string;

  // Other areas' entities, named rather than imported (areas do not import each other's entities).
  @ManyToOne('Namespace', { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'namespace_id', foreignKeyConstraintName: 'cluster_jobs_namespace_id_fkey' })
  namespace?: unknown;

  @Column({ name: 'execution_profile_id', type: 'uuid' })
  executionProfileId!: string;

  @ManyToOne('ExecutionProfile', { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'execution_profile_id', foreignKeyConstraintName: 'cluster_jobs_execution_profile_id_fkey' })
  executionProfile?: unknown;

  /** The user who submitted it; null once that user is deleted. */
  @Column({ name: 'owner_id', type: 'uuid', nullable: true })
  ownerId!: string | null;

  @ManyToOne('User', { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'owner_id', foreignKeyConstraintName: 'cluster_jobs_owner_id_fkey' })
  owner?: unknown;

  @Column({ type: 'jsonb' })
  task!: TaskSpec;

  /** The key another area submitted it under (see Workload.key); unique among jobs that have one. */
  @Column({ name: 'workload_key', type: 'text', nullable: true })
  workloadKey!: string | null;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  properties!: Record<string, string>;

  @Column({ name: 'submit_time', type: 'timestamptz', precision: 3 })
  submitTime!: Date;

  @Column({ name: 'finished_time', type: 'timestamptz', precision: 3, nullable: true })
  finishedTime!: Date | null;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz', precision: 3 })
  modified!: Date;
}

import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { ClusterJob } from './cluster-job.entity.js';
import { ClusterNode } from './cluster-node.entity.js';

export const EXECUTION_STATUSES = ['pending', 'running', 'completed', 'failed', 'lost'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];

/** One event in a task's life (hub-interface §6 "Task events"). */
export interface TaskEvent {
  readonly type: string;
  readonly time: string;
  readonly displayMessage: string;
  readonly details: Record<string, string>;
  readonly message: string;
}

/** A task's state in an execution (hub-interface §2.10 `taskStates` values). */
export interface TaskState {
  status: 'pending' | 'running' | 'dead';
  failed: boolean;
  restarts: number;
  lastRestart: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  events: TaskEvent[];
}

/** An event of a task, now. */
export function taskEvent(type: string, message: string, details: Record<string, string> = {}): TaskEvent {
  return { type, time: new Date().toISOString(), displayMessage: message, details, message };
}

/** The state of a task not yet placed, its first events given (a submission's, an attempt's). */
export function pendingTaskState(events: TaskEvent[]): TaskState {
  return { status: 'pending', failed: false, restarts: 0, lastRestart: null, startedAt: null, finishedAt: null, events };
}

/**
 * One attempt at running a job's task on a node. `driverRef` is what the driver knows it by (a
 * process id, a Slurm job id); `executionDir` holds its working directory and its logs.
 */
@Entity({ name: 'job_executions' })
@Index('job_executions_job_status_idx', ['jobId', 'status'])
@Index('job_executions_node_created_idx', ['nodeId', 'created', 'id'])
@Index('job_executions_namespace_created_idx', ['namespaceId', 'created', 'id'])
@Index('job_executions_owner_created_idx', ['ownerId', 'created', 'id'])
@Index('job_executions_status_created_idx', ['status', 'created', 'id'])
@Index('job_executions_modified_idx', ['modified', 'id'])
@Index('job_executions_created_idx', ['created', 'id'])
@Index('job_executions_pending_idx', { synchronize: false })
@Index('job_executions_active_node_idx', { synchronize: false })
@Index('job_executions_active_hub_idx', { synchronize: false })
@Index('job_executions_held_by_idx', { synchronize: false })
export class JobExecution {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'job_id', type: 'uuid' })
  jobId!: string;

  @ManyToOne(() => ClusterJob, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'job_id', foreignKeyConstraintName: 'job_executions_job_id_fkey' })
  job?: ClusterJob;

  @Column({ name: 'node_id', type: 'uuid', nullable: true })
  nodeId!: string | null;

  /** Its job's namespace, set from the job by a trigger on insert: lists narrow executions by it through an index. */
  @Column({ name: 'namespace_id', type: 'uuid', insert: false, update: false })
  namespaceId!: string;

  /** Its job's owner, set likewise; null once that user is deleted. */
  @Column({ name: 'owner_id', type: 'uuid', nullable: true, insert: false, update: false })
  ownerId!: string | null;

  @ManyToOne('User', { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'owner_id', foreignKeyConstraintName: 'job_executions_owner_id_fkey' })
  owner?: unknown;

  @ManyToOne(() => ClusterNode, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'node_id', foreignKeyConstraintName: 'job_executions_node_id_fkey' })
  node?: ClusterNode;

  @Column({ type: 'text' })
  status!: ExecutionStatus;

  @Column({ name: 'task_name', type: 'text' })
  taskName!: string;

  @Column({ name: 'task_state', type: 'jsonb' })
  taskState!: TaskState;

  @Column({ name: 'reserved_cpu', type: 'integer' })
  reservedCpu!: number;

  /** MiB. */
  @Column({ name: 'reserved_memory', type: 'integer' })
  reservedMemory!: number;

  /** Its job's, fixed at submission: the queue's order is read from one index of executions. */
  @Column({ type: 'integer', default: 50 })
  priority!: number;

  /** The number of the hub that claimed it: that hub alone starts, follows and settles it (until another adopts it). */
  @Column({ type: 'integer', nullable: true })
  hub!: number | null;

  /** Claimed with its launch prepared ahead of a slot (see ClusterDriver.prepare): it takes none of its node's CPUs until released into one. */
  @Column({ type: 'boolean', default: false })
  prepared!: boolean;

  /** The job it waits on (docs/cluster.md "Dependent jobs"): it is placed only once an execution of that job completed with exit code 0. */
  @Column({ name: 'held_by', type: 'uuid', nullable: true })
  heldBy!: string | null;

  @Column({ name: 'driver_ref', type: 'text', nullable: true })
  driverRef!: string | null;

  @Column({ name: 'exit_code', type: 'integer', nullable: true })
  exitCode!: number | null;

  @Column({ name: 'execution_dir', type: 'text' })
  executionDir!: string;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz', precision: 3 })
  modified!: Date;
}

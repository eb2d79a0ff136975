import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

export const NODE_STATUSES = ['initializing', 'ready', 'down', 'unknown'] as const;
export type NodeStatus = (typeof NODE_STATUSES)[number];

/**
 * A node of the cluster as the driver last reported it (hub-interface §2.10), kept so that lists
 * filter and sort in SQL and a drain outlives a restart. Names are unique.
 */
@Entity({ name: 'cluster_nodes' })
@Index('cluster_nodes_name_key', ['name'], { unique: true })
export class ClusterNode {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text' })
  hostname!: string;

  @Column({ type: 'text' })
  address!: string;

  @Column({ type: 'text' })
  type!: string;

  @Column({ name: 'is_worker', type: 'boolean' })
  isWorker!: boolean;

  @Column({ name: 'is_server', type: 'boolean' })
  isServer!: boolean;

  @Column({ type: 'text' })
  status!: NodeStatus;

  /** Taking no new work (an administrator's drain), whatever the driver reports. */
  @Column({ type: 'boolean', default: false })
  draining!: boolean;

  @Column({ type: 'text', array: true, default: () => "'{}'" })
  labels!: string[];

  @Column({ type: 'text' })
  os!: string;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  attributes!: Record<string, string>;

  @Column({ type: 'integer' })
  cpu!: number;

  /** MiB. */
  @Column({ type: 'integer' })
  memory!: number;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz', precision: 3 })
  modified!: Date;
}

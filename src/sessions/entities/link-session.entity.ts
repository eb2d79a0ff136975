import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { Readiness } from '../../cluster/service-endpoints.js';
import type { SessionStatus } from '../dto/link-session.dto.js';

/**
 * A link session (see the LinkSessions migration): this entity serves the administrator's list; the
 * rest of the area reads and writes the table with its own SQL (link-sessions.repository.ts).
 */
@Entity({ name: 'link_sessions' })
@Index('link_sessions_start_time_idx', ['startTime', 'id'])
@Index('link_sessions_owner_start_time_idx', ['ownerId', 'startTime', 'id'])
@Index('link_sessions_configuration_start_time_idx', ['configurationName', 'startTime', 'id'])
@Index('link_sessions_configuration_idx', ['configurationName', 'id'])
@Index('link_sessions_status_start_time_idx', ['status', 'startTime', 'id'])
@Index('link_sessions_death_clock_idx', ['deathClock', 'id'])
@Index('link_sessions_job_key', { synchronize: false })
@Index('link_sessions_heartbeat_due_idx', { synchronize: false })
@Index('link_sessions_live_death_clock_idx', { synchronize: false })
@Index('link_sessions_start_deadline_idx', { synchronize: false })
@Index('link_sessions_finished_idx', { synchronize: false })
export class LinkSession {
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'link_sessions_pkey' })
  id!: string;

  @Column({ name: 'owner_id', type: 'uuid' })
  ownerId!: string;

  @Column({ name: 'owner_name', type: 'text' })
  ownerName!: string;

  @Column({ name: 'configuration_name', type: 'text' })
  configurationName!: string;

  @Column({ name: 'client_session_id', type: 'text', nullable: true })
  clientSessionId!: string | null;

  @Column({ name: 'client_description', type: 'text', nullable: true })
  clientDescription!: string | null;

  @Column({ type: 'text', default: 'Pending' })
  status!: SessionStatus;

  @Column({ name: 'job_id', type: 'uuid', nullable: true })
  jobId!: string | null;

  /** Where it listens; null until its launch says (Slurm), set whenever it is Ready. */
  @Column({ type: 'text', nullable: true })
  host!: string | null;

  @Column({ type: 'integer', nullable: true })
  port!: number | null;

  @Column({ type: 'text' })
  secret!: string;

  @Column({ name: 'access_token', type: 'text' })
  accessToken!: string;

  @Column({ type: 'jsonb' })
  readiness!: Readiness;

  @Column({ name: 'start_timeout_seconds', type: 'integer' })
  startTimeoutSeconds!: number;

  @Column({ name: 'start_time', type: 'timestamptz', precision: 3 })
  startTime!: Date;

  @Column({ name: 'ready_time', type: 'timestamptz', precision: 3, nullable: true })
  readyTime!: Date | null;

  @Column({ name: 'finished_time', type: 'timestamptz', precision: 3, nullable: true })
  finishedTime!: Date | null;

  @Column({ name: 'death_clock', type: 'timestamptz', precision: 3 })
  deathClock!: Date;

  @Column({ name: 'start_deadline', type: 'timestamptz', precision: 3, nullable: true })
  startDeadline!: Date | null;

  @Column({ name: 'last_heartbeat_time', type: 'timestamptz', precision: 3, nullable: true })
  lastHeartbeatTime!: Date | null;

  @Column({ name: 'next_expected_heartbeat', type: 'timestamptz', precision: 3 })
  nextExpectedHeartbeat!: Date;

  @Column({ type: 'jsonb', default: () => `'[]'` })
  events!: unknown[];
}

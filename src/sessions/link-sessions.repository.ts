import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import type { Readiness } from '../cluster/service-endpoints.js';
import { fetchListPage, isoTime, whereFilters, type ListPage } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import { LinkSession } from './entities/link-session.entity.js';
import { LIVE_STATUSES, type SessionStatus } from './dto/link-session.dto.js';

export interface SessionEvent {
  readonly type: string;
  readonly when: string;
  readonly details: Record<string, string>;
}

/** A session as stored, its times as ISO strings. */
export interface SessionRow {
  readonly id: string;
  readonly ownerId: string;
  readonly ownerName: string;
  readonly configurationName: string;
  readonly clientSessionId: string | null;
  readonly clientDescription: string | null;
  readonly status: SessionStatus;
  readonly jobId: string | null;
  /** Where it listens: null until its launch says (Slurm); set whenever it is Ready. */
  readonly host: string | null;
  readonly port: number | null;
  readonly secret: string;
  readonly accessToken: string;
  readonly readiness: Readiness;
  readonly startTimeoutSeconds: number;
  readonly startTime: string;
  readonly readyTime: string | null;
  readonly finishedTime: string | null;
  readonly deathClock: string;
  readonly startDeadline: string | null;
  readonly lastHeartbeatTime: string | null;
  readonly nextExpectedHeartbeat: string;
  readonly events: SessionEvent[];
}

export type NewSession = Omit<SessionRow, 'status' | 'readyTime' | 'finishedTime' | 'lastHeartbeatTime'>;

/** What a transition changes. */
export interface SessionChanges {
  readonly status?: SessionStatus;
  readonly readyTime?: Date;
  readonly finishedTime?: Date;
  readonly startDeadline?: Date | null;
  readonly lastHeartbeatTime?: Date;
  readonly nextExpectedHeartbeat?: Date;
  /** Where it listens, when its launch picked that (with Ready). */
  readonly endpoint?: { readonly host: string; readonly port: number };
  /** Appended to its events. */
  readonly event?: SessionEvent;
}

export const SESSION_COLUMNS = `s.id, s.owner_id AS "ownerId", s.owner_name AS "ownerName", s.configuration_name AS "configurationName",
  s.client_session_id AS "clientSessionId", s.client_description AS "clientDescription", s.status, s.job_id AS "jobId", s.host, s.port, s.secret,
  s.access_token AS "accessToken", s.readiness, s.start_timeout_seconds AS "startTimeoutSeconds", ${isoTime('s.start_time')} AS "startTime",
  ${isoTime('s.ready_time')} AS "readyTime", ${isoTime('s.finished_time')} AS "finishedTime", ${isoTime('s.death_clock')} AS "deathClock",
  ${isoTime('s.start_deadline')} AS "startDeadline", ${isoTime('s.last_heartbeat_time')} AS "lastHeartbeatTime",
  ${isoTime('s.next_expected_heartbeat')} AS "nextExpectedHeartbeat", s.events`;

/** What a list item reads of the entity's columns, and its times as ISO strings. */
const LIST_COLUMNS = [
  'id',
  'ownerId',
  'ownerName',
  'configurationName',
  'clientSessionId',
  'clientDescription',
  'status',
  'jobId',
  'host',
  'port',
  'secret',
  'accessToken',
  'readiness',
  'startTimeoutSeconds',
  'events',
];
const LIST_EXTRA = {
  startTime: isoTime('session.start_time'),
  readyTime: isoTime('session.ready_time'),
  finishedTime: isoTime('session.finished_time'),
  deathClock: isoTime('session.death_clock'),
  startDeadline: isoTime('session.start_deadline'),
  lastHeartbeatTime: isoTime('session.last_heartbeat_time'),
  nextExpectedHeartbeat: isoTime('session.next_expected_heartbeat'),
};

const LIVE = `s.status IN (${LIVE_STATUSES.map((status) => `'${status}'`).join(', ')})`;

@Injectable()
export class LinkSessionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async insert(session: NewSession, jobId: string): Promise<SessionRow> {
    const rows: SessionRow[] = await this.dataSource.query(
      `WITH s AS (
         INSERT INTO link_sessions (id, owner_id, owner_name, configuration_name, client_session_id, client_description, job_id, host, port, secret, access_token,
           readiness, start_timeout_seconds, start_time, death_clock, start_deadline, next_expected_heartbeat, events)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) RETURNING *)
       SELECT ${SESSION_COLUMNS} FROM s`,
      [
        session.id,
        session.ownerId,
        session.ownerName,
        session.configurationName,
        session.clientSessionId,
        session.clientDescription,
        jobId,
        session.host,
        session.port,
        session.secret,
        session.accessToken,
        JSON.stringify(session.readiness),
        session.startTimeoutSeconds,
        session.startTime,
        session.deathClock,
        session.startDeadline,
        session.nextExpectedHeartbeat,
        JSON.stringify(session.events),
      ],
    );
    return rows[0];
  }

  async find(id: string, manager: EntityManager = this.dataSource.manager): Promise<SessionRow | undefined> {
    const rows: SessionRow[] = await manager.query(`SELECT ${SESSION_COLUMNS} FROM link_sessions s WHERE s.id = $1`, [id]);
    return rows[0];
  }

  async findByJob(jobId: string): Promise<SessionRow | undefined> {
    const rows: SessionRow[] = await this.dataSource.query(`SELECT ${SESSION_COLUMNS} FROM link_sessions s WHERE s.job_id = $1`, [jobId]);
    return rows[0];
  }

  /** Every live session (Pending, Ready, Blocked): what a hub reconciles at start. */
  live(): Promise<SessionRow[]> {
    return this.dataSource.query(`SELECT ${SESSION_COLUMNS} FROM link_sessions s WHERE ${LIVE}`);
  }

  /** The administrator's list: every session, filtered, sorted and paged as `query` says. */
  list(query: ListQuery): Promise<ListPage<SessionRow>> {
    return fetchListPage<LinkSession, SessionRow>(this.dataSource.getRepository(LinkSession).createQueryBuilder('session'), query, {
      columns: LIST_COLUMNS,
      extra: LIST_EXTRA,
    });
  }

  /** The ids of the sessions `query`'s filters match (delete by filter), at most `limit`. */
  async matching(query: ListQuery, limit: number): Promise<string[]> {
    const qb = whereFilters(this.dataSource.getRepository(LinkSession).createQueryBuilder('session').select('session.id', 'id'), query.filters);
    const rows = await qb.orderBy('session.id').limit(limit).getRawMany<{ id: string }>();
    return rows.map((row) => row.id);
  }

  /**
   * A heartbeat in one statement (it is the hottest write of the area): the owner's live session
   * takes it and answers its next expected heartbeat; undefined when it is not the owner's or has
   * ended (the caller then reads why).
   */
  async heartbeat(id: string, ownerId: string, at: Date, next: Date): Promise<string | undefined> {
    const rows: { next: string }[] = await this.dataSource.query(
      `WITH s AS (UPDATE link_sessions s SET last_heartbeat_time = $3, next_expected_heartbeat = $4 WHERE s.id = $1 AND s.owner_id = $2 AND ${LIVE} RETURNING s.next_expected_heartbeat)
       SELECT ${isoTime('s.next_expected_heartbeat')} AS next FROM s`,
      [id, ownerId, at, next],
    );
    return rows[0]?.next;
  }

  /** The caller's sessions, newest first. */
  async ofOwner(ownerId: string): Promise<SessionRow[]> {
    return this.dataSource.query(`SELECT ${SESSION_COLUMNS} FROM link_sessions s WHERE s.owner_id = $1 ORDER BY s.start_time DESC, s.id DESC`, [ownerId]);
  }

  /**
   * Changes a session under its row lock as `decide` says (undefined: nothing), in one
   * transaction; answers the row as it stands after, and whether it changed.
   */
  async transition(
    id: string,
    decide: (current: SessionRow, manager: EntityManager) => SessionChanges | undefined | Promise<SessionChanges | undefined>,
  ): Promise<{ row?: SessionRow; changed: boolean }> {
    return this.dataSource.transaction(async (manager) => {
      const rows: SessionRow[] = await manager.query(`SELECT ${SESSION_COLUMNS} FROM link_sessions s WHERE s.id = $1 FOR UPDATE`, [id]);
      const current = rows[0];
      if (!current) return { changed: false };
      const changes = await decide(current, manager);
      if (!changes) return { row: current, changed: false };
      return { row: await this.apply(manager, id, changes), changed: true };
    });
  }

  /**
   * The live sessions due for the reaper at `now`, locked (others' hubs skip them) for `settle`
   * to end in the same transaction: heartbeat overdue past `graceSeconds`, death clock reached,
   * or start deadline passed while Pending. At most `limit` at a time.
   */
  async reapDue(
    now: Date,
    graceSeconds: number,
    limit: number,
    settle: (row: SessionRow) => SessionChanges | undefined,
  ): Promise<{ row: SessionRow; changes: SessionChanges }[]> {
    return this.dataSource.transaction(async (manager) => {
      const rows: SessionRow[] = await manager.query(
        `SELECT ${SESSION_COLUMNS} FROM link_sessions s
         WHERE ${LIVE} AND (s.next_expected_heartbeat < $1::timestamptz - make_interval(secs => $2) OR s.death_clock <= $1
           OR (s.status = 'Pending' AND s.start_deadline <= $1))
         ORDER BY s.id LIMIT $3 FOR UPDATE SKIP LOCKED`,
        [now, graceSeconds, limit],
      );
      const settled: { row: SessionRow; changes: SessionChanges }[] = [];
      for (const row of rows) {
        const changes = settle(row);
        if (changes) settled.push({ row: await this.apply(manager, row.id, changes), changes });
      }
      return settled;
    });
  }

  /** Deletes the ended sessions that finished before `before`; answers how many. */
  async prune(before: Date): Promise<number> {
    const rows: { count: number }[] = await this.dataSource.query(
      `WITH d AS (DELETE FROM link_sessions WHERE finished_time < $1 RETURNING 1) SELECT count(*)::int AS count FROM d`,
      [before],
    );
    return rows[0].count;
  }

  async delete(id: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(`WITH d AS (DELETE FROM link_sessions WHERE id = $1 RETURNING id) SELECT id FROM d`, [id]);
    return rows.length > 0;
  }

  private async apply(manager: EntityManager, id: string, changes: SessionChanges): Promise<SessionRow> {
    const sets: string[] = [];
    const values: unknown[] = [id];
    const set = (column: string, value: unknown) => {
      values.push(value);
      sets.push(`${column} = $${values.length}`);
    };
    if (changes.status !== undefined) set('status', changes.status);
    if (changes.readyTime !== undefined) set('ready_time', changes.readyTime);
    if (changes.finishedTime !== undefined) set('finished_time', changes.finishedTime);
    if (changes.startDeadline !== undefined) set('start_deadline', changes.startDeadline);
    if (changes.lastHeartbeatTime !== undefined) set('last_heartbeat_time', changes.lastHeartbeatTime);
    if (changes.nextExpectedHeartbeat !== undefined) set('next_expected_heartbeat', changes.nextExpectedHeartbeat);
    if (changes.endpoint !== undefined) {
      set('host', changes.endpoint.host);
      set('port', changes.endpoint.port);
    }
    if (changes.event !== undefined) {
      values.push(JSON.stringify([changes.event]));
      sets.push(`events = events || $${values.length}::jsonb`);
    }
    const rows: SessionRow[] = await manager.query(
      `WITH s AS (UPDATE link_sessions SET ${sets.join(', ')} WHERE id = $1 RETURNING *) SELECT ${SESSION_COLUMNS} FROM s`,
      values,
    );
    return rows[0];
  }
}

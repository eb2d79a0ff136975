import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { isoTime } from '../common/query/list-page.js';
import type { OperationState } from './dto/published-library.dto.js';

export interface OperationEvent {
  readonly type: OperationState;
  readonly time: string;
}

/** An asynchronous operation as stored (its result is read on its own). */
export interface OperationRow {
  readonly id: string;
  readonly libraryId: string;
  readonly state: OperationState;
  readonly method: string;
  readonly parameters: Record<string, unknown>;
  readonly error: { status: number; msg: string } | null;
  readonly events: OperationEvent[];
  readonly startTime: string;
  readonly reapTime: string | null;
}

const COLUMNS = `o.id, o.published_library_id AS "libraryId", o.state, o.method, o.parameters, o.error, o.events,
  ${isoTime('o.start_time')} AS "startTime", ${isoTime('o.reap_time')} AS "reapTime"`;

/** The most operations one library lists (they live until their reap time, 10 minutes after they finish). */
const MAX_LISTED = 1000;

/**
 * Asynchronous operations (api-map §5), kept in the database with their results so that any hub
 * answers for them. Each change is one statement conditional on the state it moves from: an
 * operation deleted (cancelled) while its query ran is not brought back by its end.
 */
@Injectable()
export class LibraryOperationsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async insert(operation: {
    id: string;
    libraryId: string;
    method: string;
    parameters: Record<string, unknown>;
    startTime: Date;
    events: OperationEvent[];
  }): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO library_operations (id, published_library_id, state, method, parameters, events, start_time) VALUES ($1, $2, 'running', $3, $4, $5, $6)`,
      [operation.id, operation.libraryId, operation.method, JSON.stringify(operation.parameters), JSON.stringify(operation.events), operation.startTime],
    );
  }

  /** A running operation's end: its result (JSON text, stored as it is) or its error, and when it is to be reaped; false when it is no longer running. */
  async finish(
    id: string,
    end: { state: 'completed'; result: string } | { state: 'failed'; error: { status: number; msg: string } },
    at: Date,
    reapTime: Date,
  ): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(
      `UPDATE library_operations SET state = $2, result = $3::jsonb, error = $4::jsonb, reap_time = $5, events = events || $6::jsonb
       WHERE id = $1 AND state = 'running' RETURNING id`,
      [
        id,
        end.state,
        end.state === 'completed' ? end.result : null,
        end.state === 'failed' ? JSON.stringify(end.error) : null,
        reapTime,
        JSON.stringify([{ type: end.state, time: at.toISOString() }]),
      ],
    );
    return rows.length > 0;
  }

  async find(libraryId: string, id: string): Promise<OperationRow | null> {
    const rows: OperationRow[] = await this.dataSource.query(`SELECT ${COLUMNS} FROM library_operations o WHERE o.id = $1 AND o.published_library_id = $2`, [
      id,
      libraryId,
    ]);
    return rows[0] ?? null;
  }

  /** A library's operations, oldest first. */
  list(libraryId: string): Promise<OperationRow[]> {
    return this.dataSource.query(
      `SELECT ${COLUMNS} FROM library_operations o WHERE o.published_library_id = $1 ORDER BY o.start_time, o.id LIMIT ${MAX_LISTED}`,
      [libraryId],
    );
  }

  /** A completed operation's result as JSON text; null when there is none (yet). */
  async result(libraryId: string, id: string): Promise<string | null> {
    const rows: { result: string | null }[] = await this.dataSource.query(
      `SELECT o.result::text AS result FROM library_operations o WHERE o.id = $1 AND o.published_library_id = $2 AND o.state = 'completed'`,
      [id, libraryId],
    );
    return rows[0]?.result ?? null;
  }

  /** Deletes an operation, whatever its state; answers it as it was, or null. */
  async delete(libraryId: string, id: string): Promise<OperationRow | null> {
    const rows: OperationRow[] = await this.dataSource.query(
      `WITH o AS (DELETE FROM library_operations o WHERE o.id = $1 AND o.published_library_id = $2 RETURNING o.*) SELECT ${COLUMNS} FROM o`,
      [id, libraryId],
    );
    return rows[0] ?? null;
  }

  /** Deletes the operations whose reap time has come; one statement, so hubs reaping at once each delete what is left. */
  async reap(now: Date): Promise<number> {
    const rows: { count: number }[] = await this.dataSource.query(
      `WITH d AS (DELETE FROM library_operations WHERE reap_time <= $1 RETURNING 1) SELECT count(*)::int AS count FROM d`,
      [now],
    );
    return rows[0].count;
  }
}

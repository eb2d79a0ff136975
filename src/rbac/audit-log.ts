import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import type { Logger } from 'pino';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import type { Caller } from '../common/http/caller.js';
import { fetchListSlice } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { Effect } from './access-evaluator.js';
import { toAuditRecordResponse, type AuditRecordDto } from './dto/audit.dto.js';
import { AuditRecord } from './entities/audit-record.entity.js';

/** One decision to record (hub-interface §2.7b "Audit record"). */
export interface AuditEntry {
  readonly object: string;
  /** The namespace's name, or `*`. */
  readonly namespace: string;
  readonly action: string;
  readonly userId: string;
  readonly groups: readonly string[];
  readonly decision: Effect;
  readonly purpose: 'Request' | 'Filter';
}

const FLUSH_INTERVAL_MS = 200;
const MAX_BATCH = 1000;
/** Past this many waiting entries (the database is down or slow), new ones are dropped and counted. */
const MAX_PENDING = 100_000;
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;
const PRUNE_BATCH = 10_000;

const INSERT_SQL = `
  INSERT INTO audit_records ("when", object, namespace, action, user_id, groups, decision, purpose)
  SELECT "when", object, namespace, action, "userId", groups, decision, purpose
  FROM jsonb_to_recordset($1::jsonb)
    AS entry("when" timestamptz, object text, namespace text, action text, "userId" uuid, groups uuid[], decision text, purpose text)`;

/**
 * Records access decisions without holding up requests: entries are queued in memory and
 * written in batches (one statement per batch) every 200 ms, and on shutdown. A failed write is
 * logged and its batch dropped; requests never wait for, or fail because of, the audit.
 */
@Injectable()
export class AuditLog implements OnApplicationShutdown {
  private pending: (AuditEntry & { when: string })[] = [];
  private flushing?: Promise<void>;
  private dropped = 0;
  private readonly logger: Logger;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly config: HubConfig,
    logger: HubLogger,
  ) {
    this.logger = logger.for('audit');
    this.timer = setInterval(() => void this.flush(), FLUSH_INTERVAL_MS);
    this.timer.unref();
  }

  record(entry: AuditEntry): void {
    if (this.pending.length >= MAX_PENDING) {
      this.dropped += 1;
      return;
    }
    this.pending.push({ ...entry, when: this.clock.now().toISOString() });
    if (this.pending.length >= MAX_BATCH) void this.flush();
  }

  /** Writes what is queued; resolves once it is in the database (or has failed and been logged). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.pending.length === 0) return;
    const batch = this.pending.splice(0, MAX_BATCH);
    this.flushing = this.write(batch).finally(() => (this.flushing = undefined));
    await this.flushing;
    if (this.pending.length >= MAX_BATCH) await this.flush();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    while (this.pending.length > 0 || this.flushing) await this.flush();
  }

  /** A page of records, newest first unless sorted otherwise; first writes what this process has queued. */
  async query(_caller: Caller, query: ListQuery): Promise<AuditRecordDto[]> {
    await this.flush();
    const rows = await fetchListSlice(this.dataSource.getRepository(AuditRecord).createQueryBuilder('audit'), query);
    return rows.map(toAuditRecordResponse);
  }

  /** Deletes records older than the retention period, a batch at a time so as not to hold long locks. */
  @Interval('audit-prune', PRUNE_INTERVAL_MS)
  async prune(): Promise<number> {
    const cutoff = new Date(this.clock.now().getTime() - this.config.auditRetentionDays * 24 * 3600 * 1000);
    let total = 0;
    for (;;) {
      const [, count]: [unknown, number] = await this.dataSource.query(
        'DELETE FROM audit_records WHERE id IN (SELECT id FROM audit_records WHERE "when" < $1 ORDER BY "when" LIMIT $2)',
        [cutoff, PRUNE_BATCH],
      );
      total += count;
      if (count < PRUNE_BATCH) return total;
    }
  }

  private async write(batch: readonly AuditEntry[]): Promise<void> {
    try {
      await this.dataSource.query(INSERT_SQL, [JSON.stringify(batch)]);
      if (this.dropped > 0) {
        this.logger.error(`${this.dropped} audit records were dropped while the database did not keep up`);
        this.dropped = 0;
      }
    } catch (error) {
      this.logger.error({ err: error, records: batch.length }, 'Writing audit records failed; they are lost');
    }
  }
}

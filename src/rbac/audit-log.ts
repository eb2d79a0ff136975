import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import type { Logger } from 'pino';
import { Counter, Gauge } from 'prom-client';
import { Clock } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import { MetricsService } from '../common/metrics/metrics.service.js';
import type { Caller } from '../common/http/caller.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { Effect } from './access-evaluator.js';
import { toAuditRecordResponse, type AuditRecordDto } from './dto/audit.dto.js';
import { AuditRepository, type NewAuditRecord } from './audit.repository.js';

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
/** How long shutdown and an audit query wait for queued records to be written. */
const FLUSH_DEADLINE_MS = 5000;

/**
 * Records access decisions without holding up requests: entries are queued in memory and
 * written in batches (one statement per batch) every 200 ms, and on shutdown. A failed write is
 * logged and its batch dropped; requests never wait for, or fail because of, the audit.
 */
@Injectable()
export class AuditLog implements OnApplicationShutdown {
  private pending: NewAuditRecord[] = [];
  private flushing?: Promise<void>;
  private dropped = 0;
  private readonly logger: Logger;
  private readonly timer: NodeJS.Timeout;

  private readonly decisions: Counter<'decision' | 'purpose'>;
  private readonly lost: Counter;

  constructor(
    private readonly records: AuditRepository,
    private readonly clock: Clock,
    private readonly config: HubConfig,
    logger: HubLogger,
    metrics: MetricsService,
  ) {
    this.logger = logger.for('audit');
    const registers = [metrics.registry];
    this.decisions = new Counter({
      name: 'hub_access_decisions_total',
      help: 'Access decisions recorded, by decision and purpose',
      labelNames: ['decision', 'purpose'] as const,
      registers,
    });
    this.lost = new Counter({ name: 'hub_audit_records_lost_total', help: 'Audit records never written: the queue was full or a write failed', registers });
    const pending = () => this.pending.length;
    new Gauge({
      name: 'hub_audit_records_pending',
      help: 'Audit records decided but not yet written',
      registers,
      collect() {
        this.set(pending());
      },
    });
    this.timer = setInterval(() => void this.flush(), FLUSH_INTERVAL_MS);
    this.timer.unref();
  }

  record(entry: AuditEntry): void {
    this.decisions.inc({ decision: entry.decision, purpose: entry.purpose });
    if (this.pending.length >= MAX_PENDING) {
      this.dropped += 1;
      this.lost.inc();
      return;
    }
    this.pending.push({ ...entry, groups: [...entry.groups], when: this.clock.now().toISOString() });
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
    await this.flushWithin(FLUSH_DEADLINE_MS);
    if (this.pending.length > 0) this.logger.error(`${this.pending.length} audit records were not written before shutdown`);
  }

  /** A page of records, newest first unless sorted otherwise; first writes what this process has queued (waiting 5 s at most). */
  async query(_caller: Caller, query: ListQuery): Promise<AuditRecordDto[]> {
    await this.flushWithin(FLUSH_DEADLINE_MS);
    return (await this.records.list(query)).map(toAuditRecordResponse);
  }

  /** Deletes records older than the retention period. */
  @Interval('audit-prune', PRUNE_INTERVAL_MS)
  prune(): Promise<number> {
    return this.records.deleteBefore(new Date(this.clock.now().getTime() - this.config.auditRetentionDays * 24 * 3600 * 1000));
  }

  /** Flushes everything queued, but gives up waiting (the writes go on) after `deadlineMs`: a stuck database must not hang callers. */
  private async flushWithin(deadlineMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, deadlineMs)));
    const drain = (async () => {
      while (this.pending.length > 0 || this.flushing) await this.flush();
    })();
    await Promise.race([drain, deadline]);
    clearTimeout(timer);
  }

  private async write(batch: readonly NewAuditRecord[]): Promise<void> {
    try {
      await this.records.insert(batch);
      if (this.dropped > 0) {
        this.logger.error(`${this.dropped} audit records were dropped while the database did not keep up`);
        this.dropped = 0;
      }
    } catch (error) {
      this.lost.inc(batch.length);
      this.logger.error({ err: error, records: batch.length }, 'Writing audit records failed; they are lost');
    }
  }
}

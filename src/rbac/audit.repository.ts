import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { fetchListSlice } from '../common/query/list-page.js';
import type { ListQuery } from '../common/query/list-query.js';
import { AuditRecord } from './entities/audit-record.entity.js';

/** A record as queued for writing (`when` as an ISO date-time). */
export type NewAuditRecord = Omit<AuditRecord, 'id' | 'when'> & { readonly when: string };

const INSERT_SQL = `
  INSERT INTO audit_records ("when", object, namespace, action, user_id, groups, decision, purpose)
  SELECT "when", object, namespace, action, "userId", groups, decision, purpose
  FROM jsonb_to_recordset($1::jsonb)
    AS entry("when" timestamptz, object text, namespace text, action text, "userId" uuid, groups uuid[], decision text, purpose text)`;

const PRUNE_BATCH = 10_000;

@Injectable()
export class AuditRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Writes a batch of records in one statement. */
  async insert(records: readonly NewAuditRecord[]): Promise<void> {
    await this.dataSource.query(INSERT_SQL, [JSON.stringify(records)]);
  }

  list(query: ListQuery): Promise<AuditRecord[]> {
    return fetchListSlice(this.dataSource.getRepository(AuditRecord).createQueryBuilder('audit'), query);
  }

  /** Deletes the records from before `cutoff`, a batch at a time so as not to hold long locks; returns how many. */
  async deleteBefore(cutoff: Date): Promise<number> {
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
}

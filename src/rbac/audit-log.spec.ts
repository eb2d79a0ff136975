import { describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { Clock } from '../common/clock/clock.js';
import { loadHubConfig } from '../common/config/hub-config.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import { MetricsService } from '../common/metrics/metrics.service.js';
import type { AuditEntry } from './audit-log.js';
import { AuditLog } from './audit-log.js';
import type { AuditRepository, NewAuditRecord } from './audit.repository.js';

const ENTRY: AuditEntry = { object: '/Users', namespace: '*', action: 'Read', userId: 'u', groups: ['g'], decision: 'Allow', purpose: 'Request' };

/** An audit log over a repository that keeps batches in memory, or whose writes fail or never end. */
function auditLog(write: 'ok' | 'fail' | 'hang' = 'ok') {
  const batches: NewAuditRecord[][] = [];
  const repository = {
    insert: (batch: readonly NewAuditRecord[]) => {
      if (write === 'fail') return Promise.reject(new Error('database down'));
      if (write === 'hang') return new Promise<void>(() => undefined);
      batches.push([...batch]);
      return Promise.resolve();
    },
  } as unknown as AuditRepository;
  const metrics = new MetricsService();
  const log = new AuditLog(repository, new Clock(), loadHubConfig({}, '/'), new HubLogger(pino({ level: 'silent' })), metrics);
  return { log, batches, metrics };
}

describe('AuditLog', () => {
  it('queues records and writes them in one batch on flush, stamped with the time', async () => {
    const { log, batches } = auditLog();
    log.record(ENTRY);
    log.record({ ...ENTRY, decision: 'Deny' });
    expect(batches).toEqual([]);
    await log.flush();
    expect(batches).toHaveLength(1);
    expect(batches[0].map((record) => record.decision)).toEqual(['Allow', 'Deny']);
    expect(batches[0][0].when).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    await log.onApplicationShutdown();
  });

  it('writes batches of at most 1,000 records', async () => {
    const { log, batches } = auditLog();
    for (let i = 0; i < 2500; i += 1) log.record(ENTRY);
    await log.flush();
    await log.onApplicationShutdown();
    expect(batches.map((batch) => batch.length)).toEqual([1000, 1000, 500]);
  });

  it('counts decisions, and records lost when a write fails, without failing the caller', async () => {
    const { log, metrics } = auditLog('fail');
    log.record(ENTRY);
    log.record({ ...ENTRY, decision: 'Deny' });
    await expect(log.flush()).resolves.toBeUndefined();
    const text = await metrics.render();
    expect(text).toMatch(/^hub_access_decisions_total\{decision="Allow",purpose="Request"\} 1$/m);
    expect(text).toMatch(/^hub_audit_records_lost_total 2$/m);
    await log.onApplicationShutdown();
  });

  it('gives up waiting for a write that never ends at shutdown, and says how many records were left', async () => {
    const { log, metrics } = auditLog('hang');
    log.record(ENTRY);
    void log.flush();
    log.record(ENTRY);
    // Were shutdown to wait for the write, this would run into the test's timeout.
    await log.onApplicationShutdown();
    expect(await metrics.render()).toMatch(/^hub_audit_records_pending 1$/m);
  }, 15_000);
});

import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { freezeClock } from '../support/test-clock.js';
import { bearer, startTestHub, type TestHub } from '../support/test-hub.js';

const SECOND = 1000;
const HOUR = 3600 * SECOND;
const START = Date.parse('2026-08-01T00:00:00.000Z');

/**
 * Exactly once across replicas (api-map §7): three hubs on one database, their clocks one fake
 * clock whose timers of one instant fire together (so that the hubs race for each due time), one
 * cron trigger due every second for a simulated hour: each due time is fired once, by one hub,
 * and started one run.
 */
describe('trigger firings across three hubs on one database', () => {
  const hubs: TestHub[] = [];

  beforeAll(async () => {
    // The runs' nodes wait for the owner's quota (one active job): the quota never fails a firing, and the hour is not spent running processes.
    const env = { HUB_MAX_ACTIVE_JOBS_PER_USER: '1', HUB_DB_POOL_SIZE: '6' };
    hubs.push(await startTestHub({ env }));
    hubs.push(await startTestHub({ env, databaseUrl: hubs[0].databaseUrl }));
    hubs.push(await startTestHub({ env, databaseUrl: hubs[0].databaseUrl }));
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    for (const hub of hubs.slice(1)) await hub.close();
    await hubs[0]?.close();
  });

  it('fires each due time of a one-second cron exactly once in a simulated hour', async () => {
    const [first, second] = hubs;
    const auth = bearer(first.adminToken);
    const profiles = await first.inject({ method: 'GET', url: '/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard', headers: auth });
    const profileId: string = profiles.json().data[0]._id;
    const entry = await first.inject({
      method: 'POST',
      url: '/api/v2/pipelines/entries',
      headers: auth,
      payload: { name: 'every-second', namespace: 'default', spec: { nodes: [{ name: 'only', task: { type: 'rawexec', command: 'true' } }] } },
    });
    const pipelineId: string = entry.json()._id;
    const clock = freezeClock(hubs, new Date(START));
    // Created through the second hub: the others hear of it through the change feed.
    const created = await second.inject({
      method: 'POST',
      url: `/api/v2/pipelines/entries/${pipelineId}/triggers`,
      headers: bearer(second.adminToken),
      payload: { pipelineId, disabled: false, trigger: { type: 'Cron', cronExpression: '* * * * * *' }, executionProfileId: profileId },
    });
    expect([created.statusCode, created.body]).toEqual([201, expect.any(String)]);
    const triggerId: string = created.json().id;
    // Every hub has its timer set before time moves.
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (let elapsed = 0; elapsed < HOUR; elapsed += SECOND) await clock.tick(SECOND);

    const firings = await first.app
      .get(DataSource)
      .query<{ time: Date; state: string; run: string | null }[]>(
        'SELECT trigger_time AS time, state, run_id AS run FROM pipeline_trigger_firings WHERE trigger_id = $1 ORDER BY trigger_time',
        [triggerId],
      );
    expect(firings).toHaveLength(3600);
    expect(firings.map((firing) => firing.time.getTime())).toEqual(Array.from({ length: 3600 }, (_, index) => START + (index + 1) * SECOND));
    expect(firings.every((firing) => firing.state === 'Success' && firing.run !== null)).toBe(true);
    const runs = await first.app
      .get(DataSource)
      .query<{ count: number }[]>('SELECT count(*)::int AS count FROM pipeline_runs WHERE pipeline_id = $1', [pipelineId]);
    expect(runs[0].count).toBe(3600);
    const trigger = await first.inject({ method: 'GET', url: `/api/v2/pipelines/triggers/${triggerId}`, headers: auth });
    expect(trigger.json().lastTriggered).toBe(new Date(START + HOUR).toISOString());
    await second.inject({
      method: 'PATCH',
      url: `/api/v2/pipelines/triggers/${triggerId}`,
      headers: auth,
      payload: [{ op: 'replace', path: '/disabled', value: true }],
    });
  }, 600_000);
});

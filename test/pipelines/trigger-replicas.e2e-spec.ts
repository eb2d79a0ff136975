import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { freezeClock } from '../support/test-clock.js';
import { bearer, startTestHub, type TestHub } from '../support/test-hub.js';

const SECOND = 1000;
/** A simulated hour (HUB_TEST_TRIGGER_SECONDS shortens it, to measure). */
const DUE_TIMES = Number(process.env.HUB_TEST_TRIGGER_SECONDS ?? 3600);
const HOUR = DUE_TIMES * SECOND;
/** Due times whose firings start runs; then the pipeline is made invalid, and the rest fail (a firing without a run costs a fifth of one with). */
const WITH_RUNS = Math.min(60, DUE_TIMES);
const START = Date.parse('2026-08-01T00:00:00.000Z');

/**
 * Exactly once across replicas (api-map §7): three hubs on one database, their clocks one fake
 * clock whose timers of one instant fire together (so that the hubs race for each due time), one
 * cron trigger due every second for a simulated hour: each due time is fired once, by one hub.
 * The first minute's firings start runs (one each); then the pipeline is saved invalid and the
 * rest are Failed firings, which race for their claim keys alike at a fifth of the cost.
 */
describe('trigger firings across three hubs on one database', () => {
  const hubs: TestHub[] = [];

  beforeAll(async () => {
    // The first run's node sleeps through the hour and takes the owner's quota (one active job): the later runs' nodes wait for it (the quota never
    // fails a firing), so that the hour is not spent running processes.
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
      payload: { name: 'every-second', namespace: 'default', spec: { nodes: [{ name: 'only', task: { type: 'rawexec', command: 'sleep', args: ['7200'] } }] } },
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
    const began = performance.now();
    for (let elapsed = 0; elapsed < WITH_RUNS * SECOND; elapsed += SECOND) await clock.tick(SECOND);
    const invalid = await first.inject({
      method: 'PATCH',
      url: `/api/v2/pipelines/entries/${pipelineId}`,
      headers: auth,
      payload: [{ op: 'replace', path: '/spec/nodes/0/task/command', value: '' }],
    });
    expect(invalid.statusCode).toBe(200);
    for (let elapsed = WITH_RUNS * SECOND; elapsed < HOUR; elapsed += SECOND) await clock.tick(SECOND);
    process.stdout.write(`${DUE_TIMES} due times on three hubs: ${((performance.now() - began) / 1000).toFixed(1)} s\n`);

    const firings = await first.app
      .get(DataSource)
      .query<{ time: Date; state: string; run: string | null }[]>(
        'SELECT trigger_time AS time, state, run_id AS run FROM pipeline_trigger_firings WHERE trigger_id = $1 ORDER BY trigger_time',
        [triggerId],
      );
    expect(firings).toHaveLength(DUE_TIMES);
    expect(firings.map((firing) => firing.time.getTime())).toEqual(Array.from({ length: DUE_TIMES }, (_, index) => START + (index + 1) * SECOND));
    expect(firings.slice(0, WITH_RUNS).every((firing) => firing.state === 'Success' && firing.run !== null)).toBe(true);
    expect(firings.slice(WITH_RUNS).every((firing) => firing.state === 'Failed' && firing.run === null)).toBe(true);
    const runs = await first.app
      .get(DataSource)
      .query<{ count: number }[]>('SELECT count(*)::int AS count FROM pipeline_runs WHERE pipeline_id = $1', [pipelineId]);
    expect(runs[0].count).toBe(WITH_RUNS);
    const trigger = await first.inject({ method: 'GET', url: `/api/v2/pipelines/triggers/${triggerId}`, headers: auth });
    expect(trigger.json().lastTriggered).toBe(new Date(START + HOUR).toISOString());
    await second.inject({
      method: 'PATCH',
      url: `/api/v2/pipelines/triggers/${triggerId}`,
      headers: auth,
      payload: [{ op: 'replace', path: '/disabled', value: true }],
    });
    // The sleeping node, and the waiting ones.
    for (const firing of firings.slice(0, 1)) await first.inject({ method: 'POST', url: `/api/v2/pipelines/runs/${firing.run}/cancel`, headers: auth });
  }, 1_200_000);
});

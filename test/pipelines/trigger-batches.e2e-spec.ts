import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { PipelineEntriesRepository } from '../../src/pipelines/pipeline-entries.repository.js';
import { AccessService } from '../../src/rbac/access.service.js';
import { poll } from '../support/poll.js';
import { freezeClock } from '../support/test-clock.js';
import { bearer, startTestHub, type TestHub } from '../support/test-hub.js';

type Headers = Record<string, string>;

interface Firing {
  triggerId: string;
  triggerTime: string;
  state: string;
  runId?: string;
  error?: string;
}

const ENTRIES = '/api/v2/pipelines/entries';
const TRIGGERS = '/api/v2/pipelines/triggers';
const RUNS = '/api/v2/pipelines/runs';
const PASSWORD = 'a-batch-owner-password';
const SECOND = 1000;

/**
 * Firings in batches (trigger-firing-loop.ts): the triggers due at one instant are claimed
 * together, their runs built with one check per distinct (pipeline, owner, profile), and their
 * firings, runs and nodes written set-based. Each firing must still be recorded as one fired alone
 * would be: a run for an owner with rights, a Failed firing with its reason for an owner without,
 * an invalid pipeline or one deleted meanwhile, and a run whose node waits for an owner whose quota
 * is full. Decisions are kept for one batch only: rights lost before the next due time fail it.
 */
describe('trigger firings in batches', () => {
  let hub: TestHub;
  let auth: Headers;
  let profileId: string;

  const get = (url: string, headers: Headers = auth) => hub.inject({ method: 'GET', url, headers });
  const post = (url: string, payload: unknown, headers: Headers = auth) => hub.inject({ method: 'POST', url, headers, payload: payload as object });
  const patch = (url: string, payload: unknown, headers: Headers = auth) => hub.inject({ method: 'PATCH', url, headers, payload: payload as object });
  const pipeline = async (name: string, command: string, args: string[] = []): Promise<string> => {
    const created = await post(ENTRIES, { name, namespace: 'default', spec: { nodes: [{ name: 'only', task: { type: 'rawexec', command, args } }] } });
    expect([created.statusCode, created.body]).toEqual([201, expect.any(String)]);
    return created.json()._id;
  };
  const developer = async (userName: string): Promise<{ id: string; as: Headers }> => {
    const created = await post('/api/v2/auth/users', { userName, password: PASSWORD });
    expect(created.statusCode).toBe(201);
    const id: string = created.json()._id;
    const role = (await get('/api/v2/rbac/roles?filter[name][EQ]=PipelineDeveloper')).json().data[0].id;
    expect((await post('/api/v2/rbac/rolebindings', { role, principal: id, namespace: 'default' })).statusCode).toBe(201);
    return { id, as: bearer(await hub.login(userName, PASSWORD)) };
  };
  const revoke = async (userId: string) =>
    expect((await hub.inject({ method: 'DELETE', url: `/api/v2/rbac/rolebindings?filter[principal][EQ]=${userId}`, headers: auth })).statusCode).toBe(200);
  const everySecond = async (pipelineId: string, headers: Headers = auth): Promise<string> => {
    const created = await post(
      `${ENTRIES}/${pipelineId}/triggers`,
      { pipelineId, disabled: false, trigger: { type: 'Cron', cronExpression: '* * * * * *' }, executionProfileId: profileId },
      headers,
    );
    expect([created.statusCode, created.body]).toEqual([201, expect.any(String)]);
    return created.json().id;
  };
  const firingsOf = async (id: string): Promise<Firing[]> => {
    const listed = await get(`${TRIGGERS}/${id}/firings?sort=triggerTime`);
    expect(listed.statusCode).toBe(200);
    return listed.json().data;
  };
  const runOf = async (firing: Firing) => (await get(`${RUNS}/${firing.runId}`)).json();

  beforeAll(async () => {
    // One active job per owner: an owner with a job running has a full quota.
    hub = await startTestHub({ env: { HUB_MAX_ACTIVE_JOBS_PER_USER: '1' } });
    auth = bearer(hub.adminToken);
    profileId = (await get('/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard')).json().data[0]._id;
  });
  afterEach(() => {
    jest.restoreAllMocks();
  });
  afterAll(async () => {
    await hub?.close();
  });

  it('records each firing of a mixed batch as alone: runs for owners with rights (one check each), Failed firings with their reasons, waiting nodes for a full quota', async () => {
    const good = await pipeline('batch-good', 'true');
    const sleeper = await pipeline('batch-sleeper', 'sleep', ['600']);
    const invalid = await pipeline('batch-invalid', 'true');
    const gone = await pipeline('batch-gone', 'true');
    const alice = await developer('batch-alice');
    const bob = await developer('batch-bob');
    const carol = await developer('batch-carol');

    // Carol's quota is full: a run of hers holds her one active job.
    const holding = await post(`${ENTRIES}/${sleeper}/submit`, { executionProfileId: profileId }, carol.as);
    expect(holding.statusCode).toBe(201);
    const holdingRun: string = holding.json().pipelineRunId;
    await poll(
      async () => (await get(`${RUNS}/${holdingRun}/status`)).json().state,
      (state) => state === 'Executing',
      `carol's holding run ${holdingRun}`,
      20_000,
    );

    const clock = freezeClock(hub, new Date('2026-09-01T00:00:00.400Z'));
    const alices = [await everySecond(good, alice.as), await everySecond(good, alice.as), await everySecond(good, alice.as)];
    const bobs = await everySecond(good, bob.as);
    const carols = await everySecond(good, carol.as);
    const invalids = await everySecond(invalid);
    const gones = await everySecond(gone);
    // Bob loses his rights after creating his trigger; one pipeline is saved invalid; another is deleted while its batch is checked.
    await revoke(bob.id);
    expect((await patch(`${ENTRIES}/${invalid}`, [{ op: 'replace', path: '/spec/nodes/0/task/command', value: '' }])).statusCode).toBe(200);
    const entries = hub.app.get(PipelineEntriesRepository);
    const findById = entries.findById.bind(entries);
    jest.spyOn(entries, 'findById').mockImplementation((id: string) => (id === gone ? Promise.resolve(null) : findById(id)));
    const access = hub.app.get(AccessService);
    const require = jest.spyOn(access, 'require');

    await clock.tick(SECOND);
    const due = '2026-09-01T00:00:01.000Z';

    for (const id of alices) {
      const [firing] = await firingsOf(id);
      expect(firing).toEqual({ triggerId: id, triggerTime: due, state: 'Success', runId: expect.any(String) });
      const run = await runOf(firing);
      expect([run.pipelineId, run.ownerPrincipal]).toEqual([good, alice.id]);
    }
    // Alice's three triggers share one (pipeline, owner, profile): one decision for the batch.
    const executes = (owner: string, pipelineId: string) =>
      require.mock.calls.filter(([caller, object, action]) => caller.userId === owner && object === `/Pipelines/${pipelineId}` && action === 'Execute');
    expect(executes(alice.id, good)).toHaveLength(1);

    expect(await firingsOf(bobs)).toEqual([
      { triggerId: bobs, triggerTime: due, state: 'Failed', error: expect.stringContaining(`Not allowed: Execute on /Pipelines/${good}`) },
    ]);
    expect(await firingsOf(invalids)).toEqual([{ triggerId: invalids, triggerTime: due, state: 'Failed', error: expect.stringContaining("'only'") }]);
    expect(await firingsOf(gones)).toEqual([{ triggerId: gones, triggerTime: due, state: 'Failed', error: `pipeline ${gone} no longer exists` }]);

    // The quota never fails a firing: Carol's run exists, its node waiting for room.
    const [carolsFiring] = await firingsOf(carols);
    expect(carolsFiring).toEqual({ triggerId: carols, triggerTime: due, state: 'Success', runId: expect.any(String) });
    expect([(await runOf(carolsFiring)).ownerPrincipal]).toEqual([carol.id]);
    await poll(
      async () => (await get(`${RUNS}/${carolsFiring.runId}/status`)).json(),
      (status) =>
        status.nodeStatus.only.state === 'Waiting' &&
        status.nodeStatus.only.events.some((event: { type: string; details: { message?: string } }) => event.details.message?.includes("owner's quota")),
      `carol's run ${carolsFiring.runId} waiting for her quota`,
      20_000,
    );

    // Every trigger moved on and says when it last fired, failed firings included.
    for (const id of [...alices, bobs, carols, invalids, gones]) expect((await get(`${TRIGGERS}/${id}`)).json().lastTriggered).toBe(due);

    // Decisions are kept for one batch: Alice loses her rights, and her next firings fail.
    await revoke(alice.id);
    await clock.tick(SECOND);
    for (const id of alices)
      expect((await firingsOf(id))[1]).toEqual({
        triggerId: id,
        triggerTime: '2026-09-01T00:00:02.000Z',
        state: 'Failed',
        error: expect.stringContaining(`Not allowed: Execute on /Pipelines/${good}`),
      });
    expect(executes(alice.id, good)).toHaveLength(2);

    for (const id of [...alices, bobs, carols, invalids, gones]) await patch(`${TRIGGERS}/${id}`, [{ op: 'replace', path: '/disabled', value: true }]);
    await post(`${RUNS}/${holdingRun}/cancel`, {});
  }, 90_000);

  it('writes no run for a firing whose claim key was recorded already (a due time fires once), and fires the rest of its batch', async () => {
    const good = await pipeline('batch-keyed', 'true');
    const clock = freezeClock(hub, new Date('2026-09-02T00:00:00.400Z'));
    const fired = await everySecond(good);
    const other = await everySecond(good);
    const due = '2026-09-02T00:00:01.000Z';
    // As if another hub had fired this due time (never under the row lock, but the key is what guarantees it).
    await hub.app
      .get(DataSource)
      .query(`INSERT INTO pipeline_trigger_firings (trigger_id, trigger_time, kind, state, error) VALUES ($1, $2, 'Cron', 'Failed', 'fired elsewhere')`, [
        fired,
        due,
      ]);
    await clock.tick(SECOND);
    expect(await firingsOf(fired)).toEqual([{ triggerId: fired, triggerTime: due, state: 'Failed', error: 'fired elsewhere' }]);
    const [firing] = await firingsOf(other);
    expect(firing).toEqual({ triggerId: other, triggerTime: due, state: 'Success', runId: expect.any(String) });
    const runs = await hub.app.get(DataSource).query<{ id: string }[]>('SELECT id FROM pipeline_runs WHERE pipeline_id = $1', [good]);
    expect(runs.map((run) => run.id)).toEqual([firing.runId]);
    expect((await get(`${TRIGGERS}/${fired}`)).json().lastTriggered).toBe(due);
    for (const id of [fired, other]) await patch(`${TRIGGERS}/${id}`, [{ op: 'replace', path: '/disabled', value: true }]);
  }, 60_000);
});

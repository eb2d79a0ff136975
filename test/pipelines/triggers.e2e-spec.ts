import { mkdirSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { PipelineTriggersRepository } from '../../src/pipelines/pipeline-triggers.repository.js';
import { TriggerFiringLoop } from '../../src/pipelines/trigger-firing-loop.js';
import { poll } from '../support/poll.js';
import { freezeClock } from '../support/test-clock.js';
import { bearer, claimsOf, enterableTempDir, problemPaths, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';

type Headers = Record<string, string>;

interface Trigger {
  id: string;
  pipelineId: string;
  created: string;
  modified: string;
  disabled: boolean;
  trigger: Record<string, unknown>;
  executionProfileId: string;
  ownerPrincipal: string;
  lastTriggered?: string;
}

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
const UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-000000000000';
const PASSWORD = 'a-trigger-user-password';
const SECOND = 1000;
const MINUTE = 60 * SECOND;

/**
 * Triggers (api-map §7 "Trigger semantics"): their CRUD, checks and access, and their firings on
 * the harness's fake clock: cron schedules with seconds, windows, time zones and DST days, the
 * catch-up after downtime, and File triggers' arrivals and existence, across a restart.
 */
describe('pipeline triggers', () => {
  let hub: TestHub;
  let auth: Headers;
  let profileId: string;
  let adminId: string;
  let inbox: string;
  const logs: Record<string, unknown>[] = [];

  const get = (url: string, headers: Headers = auth) => hub.inject({ method: 'GET', url, headers });
  const post = (url: string, payload: unknown, headers: Headers = auth) => hub.inject({ method: 'POST', url, headers, payload: payload as object });
  const put = (url: string, payload: unknown, headers: Headers = auth) => hub.inject({ method: 'PUT', url, headers, payload: payload as object });
  const patch = (url: string, payload: unknown, headers: Headers = auth) => hub.inject({ method: 'PATCH', url, headers, payload: payload as object });
  const del = (url: string, headers: Headers = auth) => hub.inject({ method: 'DELETE', url, headers });
  const expectProblem = (response: InjectResponse, status: number, detail?: string) => {
    expect([response.statusCode, response.headers['content-type']]).toEqual([status, expect.stringContaining('application/problem+json')]);
    if (detail) expect(response.json().detail).toContain(detail);
  };
  let pipelineCount = 0;
  const pipeline = async (script = 'true', namespace = 'default'): Promise<string> => {
    pipelineCount += 1;
    const created = await post(ENTRIES, {
      name: `triggered-${pipelineCount}`,
      namespace,
      spec: { nodes: [{ name: 'only', connections: {}, task: { type: 'rawexec', command: 'sh', args: ['-c', script] } }] },
    });
    expect([created.statusCode, created.body]).toEqual([201, expect.any(String)]);
    return created.json()._id;
  };
  const cron = (cronExpression: string, extra: Record<string, unknown> = {}) => ({ type: 'Cron', cronExpression, ...extra });
  const body = (pipelineId: string, trigger: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    pipelineId,
    disabled: false,
    trigger,
    executionProfileId: profileId,
    ...extra,
  });
  const create = async (
    pipelineId: string,
    trigger: Record<string, unknown>,
    extra: Record<string, unknown> = {},
    headers: Headers = auth,
  ): Promise<Trigger> => {
    const created = await post(`${ENTRIES}/${pipelineId}/triggers`, body(pipelineId, trigger, extra), headers);
    expect([created.statusCode, created.body]).toEqual([201, expect.any(String)]);
    return created.json();
  };
  const firingsOf = async (id: string, query = ''): Promise<Firing[]> => {
    const listed = await get(`${TRIGGERS}/${id}/firings?page[limit]=1000&sort=triggerTime${query}`);
    expect([listed.statusCode, listed.body]).toEqual([200, expect.any(String)]);
    return listed.json().data;
  };
  const times = (firings: readonly Firing[]) => firings.map((firing) => firing.triggerTime);
  const disable = (id: string) => patch(`${TRIGGERS}/${id}`, [{ op: 'replace', path: '/disabled', value: true }]);

  beforeAll(async () => {
    inbox = enterableTempDir('hub-trigger-inbox-');
    hub = await startTestHub({ env: { HUB_MAX_RUNNING_JOBS_PER_USER: '0', HUB_TRIGGER_FILE_ROOTS: inbox }, logs });
    auth = bearer(hub.adminToken);
    const profiles = await get('/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard');
    profileId = profiles.json().data[0]._id;
    adminId = claimsOf(hub.adminToken).sub as string;
  });
  afterEach(() => {
    jest.restoreAllMocks();
  });
  afterAll(async () => {
    await hub?.close();
    rmSync(inbox, { recursive: true, force: true });
  });

  describe('create, read, list, replace, patch, delete', () => {
    it('creates a Cron trigger owned by the caller, shown as sent, without lastTriggered until it fires', async () => {
      const pipelineId = await pipeline();
      const created = await post(`${ENTRIES}/${pipelineId}/triggers`, body(pipelineId, cron('0 0 * * *', { timezone: 'Europe/Berlin' })));
      expect(created.statusCode).toBe(201);
      expect(created.headers.etag).toBeDefined();
      const trigger: Trigger = created.json();
      expect(trigger).toEqual({
        id: expect.any(String),
        pipelineId,
        created: expect.any(String),
        modified: expect.any(String),
        disabled: false,
        trigger: { type: 'Cron', cronExpression: '0 0 * * *', timezone: 'Europe/Berlin' },
        executionProfileId: profileId,
        ownerPrincipal: adminId,
      });
      expect((await get(`${TRIGGERS}/${trigger.id}`)).json()).toEqual(trigger);
    });

    it('lists a pipeline’s triggers oldest first with `modifed`, filtered by type, disabled, created and modified, sorted both ways', async () => {
      const pipelineId = await pipeline();
      const a = await create(pipelineId, cron('* * * * *'));
      const b = await create(pipelineId, cron('*/5 * * * *'), { disabled: true });
      mkdirSync(join(inbox, 'listed'), { recursive: true });
      const c = await create(pipelineId, { type: 'File', path: join(inbox, 'listed'), pattern: '*.csv', event: 'Arrival' });
      const listed = await get(`${ENTRIES}/${pipelineId}/triggers`);
      expect(listed.statusCode).toBe(200);
      expect(listed.json().totalCount).toBe(3);
      expect(listed.json().data.map((item: Trigger) => item.id)).toEqual([a.id, b.id, c.id]);
      const item = listed.json().data[0];
      expect(item).toEqual({ ...a, modifed: a.modified, modified: undefined });
      expect(Object.keys(item)).not.toContain('modified');
      const ids = async (query: string) => (await get(`${ENTRIES}/${pipelineId}/triggers?${query}`)).json().data.map((each: Trigger) => each.id);
      expect(await ids('filter[type][EQ]=File')).toEqual([c.id]);
      expect(await ids('filter[disabled][EQ]=true')).toEqual([b.id]);
      expect(await ids('filter[disabled][EQ]=false&sort=-created')).toEqual([c.id, a.id]);
      expect(await ids(`filter[created][GT]=${a.created}`)).toEqual([b.id, c.id]);
      expect(await ids(`filter[created][LT]=${b.created}`)).toEqual([a.id]);
      expect(await ids(`filter[modified][LT]=${c.modified}&sort=-modified`)).toEqual([b.id, a.id]);
      expect(await ids(`filter[modified][GT]=${a.modified}&sort=modified`)).toEqual([b.id, c.id]);
      expect(await ids('page[offset]=1&page[limit]=1')).toEqual([b.id]);
      expectProblem(await get(`${ENTRIES}/${pipelineId}/triggers?filter[type][EQ]=Hourly`), 400);
      expectProblem(await get(`${ENTRIES}/${pipelineId}/triggers?sort=name`), 400);
      expectProblem(await get(`${ENTRIES}/${UNKNOWN_ID}/triggers`), 404);
    });

    it('replaces a trigger: created and modified ignored, a body id other than the path’s refused, the owner kept', async () => {
      const pipelineId = await pipeline();
      const trigger = await create(pipelineId, cron('0 * * * *'));
      const replaced = await put(`${TRIGGERS}/${trigger.id}`, {
        ...trigger,
        created: '2000-01-01T00:00:00.000Z',
        modified: '2000-01-01T00:00:00.000Z',
        trigger: cron('30 4 * * 1', { timezone: 'America/New_York', startTime: '2026-01-01T00:00:00Z', endTime: '2027-01-01T00:00:00Z' }),
      });
      expect([replaced.statusCode, replaced.body]).toEqual([200, expect.any(String)]);
      expect(replaced.json()).toEqual({
        ...trigger,
        modified: expect.any(String),
        trigger: {
          type: 'Cron',
          cronExpression: '30 4 * * 1',
          timezone: 'America/New_York',
          startTime: '2026-01-01T00:00:00Z',
          endTime: '2027-01-01T00:00:00Z',
        },
      });
      expect(replaced.json().created).toBe(trigger.created);
      const mismatch = await put(`${TRIGGERS}/${trigger.id}`, { ...trigger, id: UNKNOWN_ID });
      expectProblem(mismatch, 400);
      expect(problemPaths(mismatch)).toEqual(['/id']);
      expectProblem(await put(`${TRIGGERS}/${UNKNOWN_ID}`, body(pipelineId, cron('* * * * *'))), 404);
    });

    it('writes a change or a delete only at the version it read: one that raced another changes nothing', async () => {
      const pipelineId = await pipeline();
      const trigger = await create(pipelineId, cron('0 * * * *'));
      const triggers = hub.app.get(PipelineTriggersRepository);
      const row = (await triggers.find(trigger.id)) as NonNullable<Awaited<ReturnType<PipelineTriggersRepository['find']>>>;
      const changes = {
        pipelineId,
        owner: { id: row.ownerId, name: row.ownerName },
        disabled: true,
        spec: row.spec,
        executionProfileId: row.executionProfileId,
        enabledAt: new Date(row.enabledAt),
        nextDue: null,
      };
      expect(await triggers.update(trigger.id, row.version + 1, changes)).toBe(false);
      expect(await triggers.delete(trigger.id, row.version + 1)).toBe(false);
      expect((await get(`${TRIGGERS}/${trigger.id}`)).json().disabled).toBe(false);
      expect(await triggers.update(trigger.id, row.version, changes)).toBe(true);
      expect(await triggers.delete(trigger.id, row.version)).toBe(false);
      expect(await triggers.delete(trigger.id, row.version + 1)).toBe(true);
      expect((await get(`${TRIGGERS}/${trigger.id}`)).statusCode).toBe(404);
    });

    it('patches a trigger (validated like a replace) and honours If-Match', async () => {
      const pipelineId = await pipeline();
      const trigger = await create(pipelineId, cron('0 * * * *'));
      const etag = (await get(`${TRIGGERS}/${trigger.id}`)).headers.etag as string;
      const patched = await hub.inject({
        method: 'PATCH',
        url: `${TRIGGERS}/${trigger.id}`,
        headers: { ...auth, 'if-match': etag },
        payload: [
          { op: 'replace', path: '/disabled', value: true },
          { op: 'replace', path: '/id', value: UNKNOWN_ID },
        ],
      });
      expect([patched.statusCode, patched.json().disabled, patched.json().id]).toEqual([200, true, trigger.id]);
      expectProblem(
        await hub.inject({
          method: 'PATCH',
          url: `${TRIGGERS}/${trigger.id}`,
          headers: { ...auth, 'if-match': etag },
          payload: [{ op: 'replace', path: '/disabled', value: false }],
        }),
        412,
      );
      const invalid = await patch(`${TRIGGERS}/${trigger.id}`, [{ op: 'replace', path: '/trigger/cronExpression', value: 'sometimes' }]);
      expectProblem(invalid, 400);
      expect(problemPaths(invalid)).toEqual(['/trigger/cronExpression']);
    });

    it('deletes a trigger with its firings; deleting a pipeline deletes its triggers', async () => {
      const pipelineId = await pipeline();
      const first = await create(pipelineId, cron('0 * * * *'));
      const second = await create(pipelineId, cron('0 * * * *'));
      const deleted = await del(`${TRIGGERS}/${first.id}`);
      expect([deleted.statusCode, deleted.json()]).toEqual([200, { msg: `Trigger ${first.id} deleted` }]);
      expectProblem(await get(`${TRIGGERS}/${first.id}`), 404);
      expectProblem(await del(`${TRIGGERS}/${first.id}`), 404);
      expect((await del(`${ENTRIES}/${pipelineId}`)).statusCode).toBe(200);
      expectProblem(await get(`${TRIGGERS}/${second.id}`), 404);
    });
  });

  describe('validation', () => {
    let pipelineId: string;
    beforeAll(async () => {
      pipelineId = await pipeline();
    });
    const refused = async (payload: unknown, path: string, detail?: string) => {
      const response = await post(`${ENTRIES}/${pipelineId}/triggers`, payload);
      expectProblem(response, 400, detail);
      expect(problemPaths(response)).toEqual([path]);
    };

    it('refuses a bad cron expression or time zone, naming the field', async () => {
      await refused(body(pipelineId, cron('* * * *')), '/trigger/cronExpression', '5 fields, or 6');
      await refused(body(pipelineId, cron('61 * * * *')), '/trigger/cronExpression');
      await refused(body(pipelineId, cron('* * * * *', { timezone: 'Mars/Olympus' })), '/trigger/timezone', "'Mars/Olympus'");
      await refused(body(pipelineId, cron('* * * * *', { timezone: '' })), '/trigger/timezone');
      await refused(body(pipelineId, cron('* * * * *', { startTime: '2026-02-01T00:00:00Z', endTime: '2026-01-01T00:00:00Z' })), '/trigger/endTime');
      await refused(body(pipelineId, cron('* * * * *', { startTime: 'yesterday' })), '/trigger/startTime');
      await refused(body(pipelineId, { type: 'Cron' }), '/trigger/cronExpression');
      await refused(body(pipelineId, cron('* * * * *', { pattern: '*' })), '/trigger/pattern');
      await refused(body(pipelineId, { type: 'Hourly' }), '/trigger/type');
    });

    it('refuses a body without what it needs, a pipelineId other than the path’s, and an unusable profile', async () => {
      await refused({ pipelineId, trigger: cron('* * * * *'), executionProfileId: profileId }, '/disabled');
      await refused({ pipelineId, disabled: false, executionProfileId: profileId }, '/trigger');
      await refused(body(UNKNOWN_ID, cron('* * * * *')), '/pipelineId');
      await refused(body(pipelineId, cron('* * * * *'), { executionProfileId: UNKNOWN_ID }), '/executionProfileId');
      await refused(body(pipelineId, cron('* * * * *'), { disabled: null }), '/disabled');
      const elsewhere = await post('/api/v2/namespaces', { name: 'triggers-elsewhere' });
      expect(elsewhere.statusCode).toBe(201);
      const unbound = await pipeline('true', 'triggers-elsewhere');
      const response = await post(`${ENTRIES}/${unbound}/triggers`, body(unbound, cron('* * * * *')));
      expectProblem(response, 400, "bound to namespace 'triggers-elsewhere'");
      expectProblem(await post(`${ENTRIES}/${UNKNOWN_ID}/triggers`, body(UNKNOWN_ID, cron('* * * * *'))), 404);
    });

    it('refuses a File trigger whose path is outside HUB_TRIGGER_FILE_ROOTS or not a directory, or whose fields are wrong', async () => {
      const file = (extra: Record<string, unknown>) => body(pipelineId, { type: 'File', path: inbox, pattern: '*.csv', event: 'Arrival', ...extra });
      await refused(file({ path: '/etc' }), '/trigger/path', 'HUB_TRIGGER_FILE_ROOTS');
      await refused(file({ path: `${inbox}/../` }), '/trigger/path');
      await refused(file({ path: 'relative/dir' }), '/trigger/path');
      await refused(file({ path: join(inbox, 'missing') }), '/trigger/path', 'not an existing directory');
      // The inbox itself may be entered but not listed by others (0711): the owner's jobs (an allocated uid) could not read it.
      await refused(file({}), '/trigger/path', "not readable by the owner's job identity");
      await refused(file({ pattern: 'a/*.csv' }), '/trigger/pattern');
      await refused(file({ pollSeconds: 0 }), '/trigger/pollSeconds');
      await refused(file({ event: 'Deletion' }), '/trigger/event');
      await refused(file({ cronExpression: '* * * * *' }), '/trigger/cronExpression');
      await refused(body(pipelineId, { type: 'File', path: inbox, pattern: '*' }), '/trigger/event');
    });
  });

  describe('access', () => {
    let pipelineId: string;
    let trigger: Trigger;
    const userIn = async (userName: string, roleName?: string) => {
      const created = await post('/api/v2/auth/users', { userName, password: PASSWORD });
      expect(created.statusCode).toBe(201);
      const id: string = created.json()._id;
      if (roleName) {
        const roles = await get(`/api/v2/rbac/roles?filter[name][EQ]=${roleName}`);
        expect((await post('/api/v2/rbac/rolebindings', { role: roles.json().data[0].id, principal: id, namespace: 'default' })).statusCode).toBe(201);
      }
      return { id, as: bearer(await hub.login(userName, PASSWORD)) };
    };

    beforeAll(async () => {
      pipelineId = await pipeline();
      trigger = await create(pipelineId, cron('0 0 1 1 *'));
    });

    it('hides triggers and firings from a caller without Read on the pipeline (404), and all firings (403)', async () => {
      const outsider = await userIn('triggers-outsider');
      expectProblem(await get(`${TRIGGERS}/${trigger.id}`, outsider.as), 404);
      expectProblem(await get(`${TRIGGERS}/${trigger.id}/firings`, outsider.as), 404);
      expectProblem(await get(`${ENTRIES}/${pipelineId}/triggers`, outsider.as), 404);
      expectProblem(await put(`${TRIGGERS}/${trigger.id}`, body(pipelineId, cron('* * * * *')), outsider.as), 404);
      expectProblem(await del(`${TRIGGERS}/${trigger.id}`, outsider.as), 404);
      expectProblem(await post(`${TRIGGERS}/${trigger.id}/run-as-me`, {}, outsider.as), 404);
      expectProblem(await post(`${ENTRIES}/${pipelineId}/triggers`, body(pipelineId, cron('* * * * *')), outsider.as), 404);
      expectProblem(await get('/api/v2/pipelines/firings', outsider.as), 403);
    });

    it('lets a reader of the pipeline see its triggers but not change or own them (403)', async () => {
      const reader = await userIn('triggers-reader', 'NamespaceUser');
      const viewer = await post('/api/v2/rbac/roles', {
        name: 'triggers-viewer',
        permissions: [{ objectMatcher: 'glob', object: '/Pipelines/**', actions: ['Read'], effect: 'Allow' }],
      });
      expect(viewer.statusCode).toBe(201);
      await post('/api/v2/rbac/rolebindings', { role: viewer.json().id, principal: reader.id, namespace: 'default' });
      expect((await get(`${TRIGGERS}/${trigger.id}`, reader.as)).statusCode).toBe(200);
      expect((await get(`${ENTRIES}/${pipelineId}/triggers`, reader.as)).json().totalCount).toBe(1);
      expect((await get(`/api/v2/pipelines/firings`, reader.as)).statusCode).toBe(200);
      expectProblem(await patch(`${TRIGGERS}/${trigger.id}`, [{ op: 'replace', path: '/disabled', value: true }], reader.as), 403);
      expectProblem(await post(`${TRIGGERS}/${trigger.id}/run-as-me`, {}, reader.as), 403);
      expectProblem(await post(`${ENTRIES}/${pipelineId}/triggers`, body(pipelineId, cron('* * * * *')), reader.as), 403);
    });

    it('lets a PipelineDeveloper create triggers and take one over with run-as-me', async () => {
      const developer = await userIn('triggers-developer', 'PipelineDeveloper');
      const own = await create(pipelineId, cron('0 0 1 1 *'), {}, developer.as);
      expect(own.ownerPrincipal).toBe(developer.id);
      const taken = await post(`${TRIGGERS}/${trigger.id}/run-as-me`, {}, developer.as);
      expect([taken.statusCode, taken.json().ownerPrincipal]).toEqual([200, developer.id]);
      const back = await post(`${TRIGGERS}/${trigger.id}/run-as-me`, {});
      expect(back.json().ownerPrincipal).toBe(adminId);
    });
  });

  describe('firing on the clock', () => {
    it('fires a 6-field cron at each due time, aligned to the schedule, starting runs of the pipeline owned by the owner', async () => {
      const clock = freezeClock(hub, new Date('2026-05-04T10:00:00.400Z'));
      const pipelineId = await pipeline();
      const trigger = await create(pipelineId, cron('*/2 * * * * *'));
      for (let step = 0; step < 7; step += 1) await clock.tick(SECOND);
      await disable(trigger.id);
      const firings = await firingsOf(trigger.id);
      expect(times(firings)).toEqual(['2026-05-04T10:00:02.000Z', '2026-05-04T10:00:04.000Z', '2026-05-04T10:00:06.000Z']);
      for (const firing of firings) {
        expect(firing).toEqual({ triggerId: trigger.id, triggerTime: firing.triggerTime, state: 'Success', runId: expect.any(String) });
        const run = (await get(`${RUNS}/${firing.runId}`)).json();
        expect([run.pipelineId, run.ownerPrincipal]).toEqual([pipelineId, adminId]);
      }
      expect((await get(`${TRIGGERS}/${trigger.id}`)).json().lastTriggered).toBe('2026-05-04T10:00:06.000Z');
      expect((await get(`${ENTRIES}/${pipelineId}/triggers`)).json().data[0].lastTriggered).toBe('2026-05-04T10:00:06.000Z');
      const runs = firings.map((firing) => firing.runId as string);
      for (const runId of runs)
        await poll(
          async () => (await get(`${RUNS}/${runId}/status`)).json().state,
          (state) => state === 'Succeeded',
          `run ${runId}`,
          20_000,
        );
      // The lists of firings: per trigger and of all triggers, filtered and sorted.
      expect(times(await firingsOf(trigger.id, '&filter[triggerTime][GT]=2026-05-04T10:00:02.000Z'))).toEqual([
        '2026-05-04T10:00:04.000Z',
        '2026-05-04T10:00:06.000Z',
      ]);
      const newest = (await get(`${TRIGGERS}/${trigger.id}/firings`)).json();
      expect([newest.totalCount, times(newest.data)[0]]).toEqual([3, '2026-05-04T10:00:06.000Z']);
      const all = await get(`/api/v2/pipelines/firings?filter[triggerId][EQ]=${trigger.id}&filter[triggerTime][LT]=2026-05-04T10:00:06.000Z&sort=-triggerTime`);
      expect(times(all.json().data)).toEqual(['2026-05-04T10:00:04.000Z', '2026-05-04T10:00:02.000Z']);
      expect((await get('/api/v2/pipelines/firings?sort=triggerId')).statusCode).toBe(200);
      expectProblem(await get(`${TRIGGERS}/${trigger.id}/firings?filter[triggerId][EQ]=${trigger.id}`), 400);
      expectProblem(await get('/api/v2/pipelines/firings?filter[triggerTime][EQ]=2026-05-04T10:00:04.000Z'), 400);
    }, 60_000);

    it('does not fire while disabled, nor catch up when enabled again; bounds firings by startTime and endTime', async () => {
      const clock = freezeClock(hub, new Date('2026-05-05T00:00:00.000Z'));
      const pipelineId = await pipeline();
      const off = await create(pipelineId, cron('* * * * * *'), { disabled: true });
      await clock.tick(3 * SECOND);
      expect(await firingsOf(off.id)).toEqual([]);
      await patch(`${TRIGGERS}/${off.id}`, [{ op: 'replace', path: '/disabled', value: false }]);
      await clock.tick(SECOND);
      await disable(off.id);
      expect(times(await firingsOf(off.id))).toEqual(['2026-05-05T00:00:04.000Z']);
      const windowed = await create(pipelineId, cron('* * * * * *', { startTime: '2026-05-05T00:00:06.000Z', endTime: '2026-05-05T00:00:08.000Z' }));
      await clock.tick(10 * SECOND);
      expect(times(await firingsOf(windowed.id))).toEqual(['2026-05-05T00:00:06.000Z', '2026-05-05T00:00:07.000Z', '2026-05-05T00:00:08.000Z']);
    }, 60_000);

    it('reads the schedule in its time zone, and fires once on DST days (Europe/Berlin): spring forward at the first valid instant, fall back at the first occurrence', async () => {
      const spring = freezeClock(hub, new Date('2026-03-28T23:00:00.000Z'));
      const pipelineId = await pipeline();
      const daily = await create(pipelineId, cron('0 30 2 * * *', { timezone: 'Europe/Berlin' }));
      for (let hour = 0; hour < 4; hour += 1) await spring.tick(60 * MINUTE);
      await disable(daily.id);
      // 02:30 does not exist on 29 March: fired once at 03:00 CEST (01:00 UTC).
      expect(times(await firingsOf(daily.id))).toEqual(['2026-03-29T01:00:00.000Z']);
      jest.restoreAllMocks();
      const autumn = freezeClock(hub, new Date('2026-10-24T23:00:00.000Z'));
      const twice = await create(pipelineId, cron('0 30 2 * * *', { timezone: 'Europe/Berlin' }));
      const hourly = await create(pipelineId, cron('0 0 * * * *', { timezone: 'Europe/Berlin' }));
      for (let hour = 0; hour < 4; hour += 1) await autumn.tick(60 * MINUTE);
      await disable(twice.id);
      await disable(hourly.id);
      // 02:30 occurs at 00:30 UTC (CEST) and 01:30 UTC (CET): fired once, at the first.
      expect(times(await firingsOf(twice.id))).toEqual(['2026-10-25T00:30:00.000Z']);
      // Created at 01:00 CEST: 02:00 CEST, then 03:00 and 04:00 CET; the repeated 02:00 (CET, 01:00 UTC) is not fired again.
      expect(times(await firingsOf(hourly.id))).toEqual(['2026-10-25T00:00:00.000Z', '2026-10-25T02:00:00.000Z', '2026-10-25T03:00:00.000Z']);
    }, 90_000);

    it('fires a trigger missed while no hub ran once on start, for the latest missed due time, and logs it', async () => {
      const clock = freezeClock(hub, new Date('2026-06-01T12:00:00.000Z'));
      const pipelineId = await pipeline();
      const trigger = await create(pipelineId, cron('* * * * *'));
      await clock.tick(MINUTE);
      expect(times(await firingsOf(trigger.id))).toEqual(['2026-06-01T12:01:00.000Z']);
      // No hub fires anything for ten minutes and a half; then one starts.
      clock.advance(10 * MINUTE + 30 * SECOND);
      await hub.app.get(TriggerFiringLoop).wake();
      await disable(trigger.id);
      const firings = await firingsOf(trigger.id);
      expect(times(firings)).toEqual(['2026-06-01T12:01:00.000Z', '2026-06-01T12:11:00.000Z']);
      expect(firings[1]).toEqual({ triggerId: trigger.id, triggerTime: '2026-06-01T12:11:00.000Z', state: 'Success', runId: expect.any(String) });
      expect(logs.some((line) => String(line.msg).includes(`Trigger ${trigger.id} missed its due times`))).toBe(true);
    }, 60_000);

    it('records a Failed firing with its error when no run can be started (the pipeline invalid), no runId', async () => {
      const clock = freezeClock(hub, new Date('2026-06-02T00:00:00.000Z'));
      const pipelineId = await pipeline();
      const trigger = await create(pipelineId, cron('* * * * * *'));
      expect((await patch(`${ENTRIES}/${pipelineId}`, [{ op: 'replace', path: '/spec/nodes/0/task/command', value: '' }])).statusCode).toBe(200);
      await clock.tick(SECOND);
      await disable(trigger.id);
      const [firing] = await firingsOf(trigger.id);
      expect(firing).toEqual({ triggerId: trigger.id, triggerTime: '2026-06-02T00:00:01.000Z', state: 'Failed', error: expect.stringContaining('only') });
      expect((await get(`${TRIGGERS}/${trigger.id}`)).json().lastTriggered).toBe('2026-06-02T00:00:01.000Z');
    }, 30_000);

    it('prunes firings whose triggerTime is more than HUB_RUN_RETENTION_DAYS old, and keeps the others', async () => {
      const clock = freezeClock(hub, new Date('2026-06-03T00:00:00.000Z'));
      const pipelineId = await pipeline();
      const trigger = await create(pipelineId, cron('* * * * * *'));
      await clock.tick(2 * SECOND);
      await disable(trigger.id);
      const loop = hub.app.get(TriggerFiringLoop);
      expect(await loop.prune(Date.parse('2026-07-03T00:00:00.000Z'))).toBeGreaterThanOrEqual(0);
      expect(times(await firingsOf(trigger.id))).toEqual(['2026-06-03T00:00:01.000Z', '2026-06-03T00:00:02.000Z']);
      // Firings of the specs before this one (all older) may go too; this trigger's first one does.
      expect(await loop.prune(Date.parse('2026-07-03T00:00:01.500Z'))).toBeGreaterThanOrEqual(1);
      expect(times(await firingsOf(trigger.id))).toEqual(['2026-06-03T00:00:02.000Z']);
    }, 30_000);
  });

  describe('File triggers', () => {
    it('fires Arrival once per new or changed file, passing HUB_TRIGGER_FILE; takes files already there as seen; never repeats an arrival after a restart', async () => {
      const directory = join(inbox, 'arrivals');
      mkdirSync(join(directory, 'deeper'), { recursive: true });
      writeFileSync(join(directory, 'before.csv'), 'x');
      const pipelineId = await pipeline('case "$HUB_TRIGGER_FILE" in /*.csv) test -r "$HUB_TRIGGER_FILE";; *) exit 3;; esac');
      let clock = freezeClock(hub, new Date('2026-07-01T00:00:00.000Z'));
      const trigger = await create(pipelineId, { type: 'File', path: directory, pattern: '*.c?v', event: 'Arrival', recursive: true, pollSeconds: 5 });
      await clock.tick(5 * SECOND);
      expect(await firingsOf(trigger.id)).toEqual([]);
      writeFileSync(join(directory, 'a.csv'), 'a');
      writeFileSync(join(directory, 'deeper', 'b.csv'), 'b');
      writeFileSync(join(directory, 'ignored.txt'), 'c');
      await clock.tick(5 * SECOND);
      let firings = await firingsOf(trigger.id);
      expect(firings.map((firing) => [firing.triggerTime, firing.state])).toEqual([
        ['2026-07-01T00:00:10.000Z', 'Success'],
        ['2026-07-01T00:00:10.000Z', 'Success'],
      ]);
      for (const firing of firings)
        expect(
          await poll(
            async () => (await get(`${RUNS}/${firing.runId}/status`)).json().state,
            (state) => ['Succeeded', 'Failed'].includes(state),
            'the run',
            20_000,
          ),
        ).toBe('Succeeded');
      // A change of size or mtime is a new arrival; an untouched file is not.
      writeFileSync(join(directory, 'a.csv'), 'aa');
      await clock.tick(5 * SECOND);
      expect((await firingsOf(trigger.id)).length).toBe(3);
      await hub.restart();
      // The new hub polls on start, on its real clock (awaited here): the fake one goes on from the poll instant that set.
      await hub.app.get(TriggerFiringLoop).wake();
      const [{ due }] = await hub.app.get(DataSource).query<{ due: Date }[]>('SELECT next_due AS due FROM pipeline_triggers WHERE id = $1', [trigger.id]);
      clock = freezeClock(hub, new Date(due.getTime() - 1));
      await hub.app.get(TriggerFiringLoop).wake();
      await clock.tick(10 * SECOND);
      expect((await firingsOf(trigger.id)).length).toBe(3);
      utimesSync(join(directory, 'deeper', 'b.csv'), new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T00:00:00Z'));
      await clock.tick(5 * SECOND);
      await disable(trigger.id);
      firings = await firingsOf(trigger.id);
      expect(firings.length).toBe(4);
    }, 90_000);

    it('reads nothing once a symbolic link in its path leads outside HUB_TRIGGER_FILE_ROOTS: the poll is a Failed firing', async () => {
      const real = join(inbox, 'linked-real');
      const outside = enterableTempDir('hub-trigger-outside-');
      mkdirSync(real, { recursive: true });
      writeFileSync(join(outside, 'secret.dat'), 's');
      const link = join(inbox, 'linked');
      symlinkSync(real, link);
      const clock = freezeClock(hub, new Date('2026-07-03T00:00:00.000Z'));
      const pipelineId = await pipeline();
      const missing = await post(
        `${ENTRIES}/${pipelineId}/triggers`,
        body(pipelineId, { type: 'File', path: join(inbox, 'nowhere'), pattern: '*', event: 'Existence' }),
      );
      expectProblem(missing, 400);
      const trigger = await create(pipelineId, { type: 'File', path: link, pattern: '*.dat', event: 'Existence', pollSeconds: 1 });
      unlinkSync(link);
      symlinkSync(outside, link);
      await clock.tick(SECOND);
      await disable(trigger.id);
      const [firing] = await firingsOf(trigger.id);
      expect(firing).toEqual({
        triggerId: trigger.id,
        triggerTime: '2026-07-03T00:00:01.000Z',
        state: 'Failed',
        error: expect.stringContaining('outside HUB_TRIGGER_FILE_ROOTS'),
      });
      rmSync(outside, { recursive: true, force: true });
    }, 30_000);

    it('fires Existence at each poll for each matching file', async () => {
      const directory = join(inbox, 'existence');
      mkdirSync(directory, { recursive: true });
      writeFileSync(join(directory, 'one.dat'), '1');
      const clock = freezeClock(hub, new Date('2026-07-02T00:00:00.000Z'));
      const pipelineId = await pipeline();
      const trigger = await create(pipelineId, { type: 'File', path: directory, pattern: '*.dat', event: 'Existence', pollSeconds: 2 });
      await clock.tick(2 * SECOND);
      writeFileSync(join(directory, 'two.dat'), '2');
      await clock.tick(2 * SECOND);
      rmSync(join(directory, 'one.dat'));
      rmSync(join(directory, 'two.dat'));
      await clock.tick(2 * SECOND);
      await disable(trigger.id);
      expect(times(await firingsOf(trigger.id))).toEqual(['2026-07-02T00:00:02.000Z', '2026-07-02T00:00:04.000Z', '2026-07-02T00:00:04.000Z']);
    }, 60_000);
  });
});

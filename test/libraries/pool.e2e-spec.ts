import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { ExecutionAnnouncements } from '../../src/cluster/execution-announcements.js';
import { HubConfig } from '../../src/common/config/hub-config.js';
import { PublishedLibrariesRepository } from '../../src/libraries/published-libraries.repository.js';
import { poll } from '../support/poll.js';
import { Heard, workloadsOn } from '../support/workloads.js';
import { freezeClock } from '../support/test-clock.js';
import { bearer, enterableTempDir, startTestHub, type TestHub } from '../support/test-hub.js';
import { DEFINITIONS, expectProblem, libraryClient, ordersCsv, PUBLISHED, untilStatus, workerPid, workerRows, writeData, type Headers } from './support.js';

/** Sets the quota of active jobs per user on a running hub (the cluster reads it at each submission). */
function setQuota(hubs: readonly TestHub[], quota: number): void {
  for (const hub of hubs) hub.app.get<HubConfig, { maxActiveJobsPerUser: number }>(HubConfig).maxActiveJobsPerUser = quota;
}

jest.setTimeout(60_000);

describe('library pools on two hubs sharing one database', () => {
  let first: TestHub;
  let second: TestHub;
  let admin: Headers;
  let standardId: string;
  let definition: string;
  let library: string;

  const workerJobs = async (): Promise<{ id: string; status: string }[]> =>
    first.app.get(DataSource).query(`SELECT id, status FROM cluster_jobs WHERE properties->>'publishedLibraryId' = $1 ORDER BY created`, [library]);

  beforeAll(async () => {
    const root = enterableTempDir('hub-library-pool-');
    writeData(join(root, 'sales'), 'orders.csv', ordersCsv());
    const env = {
      HUB_LIBRARY_ROOTS: root,
      HUB_MAX_RUNNING_JOBS_PER_USER: '0',
      HUB_MAX_ACTIVE_JOBS_PER_USER: '3',
      HUB_LIBRARY_ASYNC_AFTER_MS: '0',
      HUB_LOCAL_SLOTS: '16',
    };
    first = await startTestHub({ env });
    second = await startTestHub({ env, databaseUrl: first.databaseUrl });
    admin = bearer(first.adminToken);
    const api = libraryClient(first);
    standardId = (await api.get('/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard', admin)).json<{ data: { _id: string }[] }>().data[0]._id;
    definition = (await api.post(DEFINITIONS, { name: 'sales', namespace: 'default', engine: 'csv', path: join(root, 'sales') }, admin)).json<{ _id: string }>()
      ._id;
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await second?.close();
    await first?.close();
  });

  it('refuses more workers than the quota leaves room for with 429, publishing nothing', async () => {
    const refused = await libraryClient(first).post(PUBLISHED, { libraryDefinitionId: definition, executionProfileId: standardId, workers: 4 }, admin);
    expectProblem(refused, 429);
    expect((await first.app.get(DataSource).query('SELECT count(*)::int AS n FROM published_libraries'))[0].n).toBe(0);
    const active: { n: number }[] = await first.app.get(DataSource).query(`SELECT count(*)::int AS n FROM cluster_jobs WHERE status <> 'dead'`);
    expect(active[0].n).toBe(0);
  });

  it('serves a library published through one hub from the other, async operations included', async () => {
    const published = await libraryClient(first).post(PUBLISHED, { libraryDefinitionId: definition, executionProfileId: standardId, workers: 2 }, admin);
    expect(published.statusCode).toBe(201);
    library = published.json<{ id: string }>().id;
    await untilStatus(second, library, admin);
    const api = libraryClient(second);
    const page = await api.get(`${PUBLISHED}/${library}/datasets/orders/records?fields=id&orderby=-id&limit=2`, admin);
    expect(page.json<{ values: unknown[] }>().values).toEqual([[1000], [999]]);
    const accepted = await libraryClient(first).get(`${PUBLISHED}/${library}/datasets/orders/records?fields=id&limit=5&allowAsync=true`, admin);
    expect(accepted.statusCode).toBe(202);
    const { operationId } = accepted.json<{ operationId: string }>();
    await poll(
      async () => (await api.get(`${PUBLISHED}/${library}/operations/${operationId}`, admin)).json<{ state: string }>(),
      (status) => status.state === 'completed',
      'the operation, seen from the other hub',
    );
    expect((await api.get(`${PUBLISHED}/${library}/operations/${operationId}/result`, admin)).json<{ values: unknown[] }>().values).toHaveLength(5);
    // Deleted through the hub that does not run it: gone for both.
    const another = await libraryClient(first).get(`${PUBLISHED}/${library}/datasets/orders/records?orderby=-amount&limit=100000&allowAsync=true`, admin);
    const other = another.json<{ operationId: string }>().operationId;
    const deleted = await api.del(`${PUBLISHED}/${library}/operations/${other}`, admin);
    expect(deleted.json()).toEqual({ msg: expect.any(String), id: other, data: expect.objectContaining({ method: 'getRecords' }) });
    expectProblem(await libraryClient(first).get(`${PUBLISHED}/${library}/operations/${other}`, admin), 404);
  });

  it('replaces a killed worker once, whichever hub hears it', async () => {
    const [worker] = await workerRows(first, library);
    process.kill(workerPid(worker.secret as string) as number, 'SIGKILL');
    const status = await untilStatus(
      second,
      library,
      admin,
      (current) => current.failedWorkerCount === 1 && current.workers['0'].state === 'ready',
      'worker 0 replaced',
    );
    expect(status.failedWorkerCount).toBe(1);
    // Both hubs heard the end: still one replacement.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const jobs = await workerJobs();
    expect(jobs.map((job) => job.status).sort()).toEqual(['dead', 'running', 'running']);
  });

  it('looks for no refused worker at the end of a job of a publisher who has none', async () => {
    const claims = [first, second].map((hub) => jest.spyOn(hub.app.get(PublishedLibrariesRepository), 'claimRetries'));
    const heard = [first, second].map((hub) => new Heard(hub.app.get(ExecutionAnnouncements)));
    try {
      const job = await (await workloadsOn(first)).run('true');
      // Each hub's pool hears an end before a listener subscribed after it, and would claim at once.
      await Promise.all(heard.map((listener) => listener.untilKind(job.id, 'ended')));
      for (const claim of claims) expect(claim).not.toHaveBeenCalled();
    } finally {
      for (const listener of heard) listener.unsubscribe();
      for (const claim of claims) claim.mockRestore();
    }
  });

  it('leaves a replacement the quota refuses failed, and tries it again within 60 s', async () => {
    const clock = freezeClock([first, second]);
    setQuota([first, second], 1);
    const [, worker] = await workerRows(first, library);
    process.kill(workerPid(worker.secret as string) as number, 'SIGKILL');
    const failed = await untilStatus(first, library, admin, (current) => current.workers['1'].state === 'failed', 'worker 1 failed');
    expect(failed.failedWorkerCount).toBe(2);
    expect(
      (await libraryClient(first).get(`${PUBLISHED}/${library}/status`, admin)).json<{ workers: Record<string, { message?: string }> }>().workers['1'].message,
    ).toContain('active jobs');
    // Work goes on at the worker left.
    expect((await libraryClient(second).get(`${PUBLISHED}/${library}/datasets/orders/records?fields=id&limit=1&orderby=id`, admin)).statusCode).toBe(200);
    setQuota([first, second], 3);
    await clock.tick(60_000);
    jest.restoreAllMocks();
    const ready = await untilStatus(second, library, admin, (current) => current.workers['1'].state === 'ready', 'worker 1 retried');
    expect(ready.failedWorkerCount).toBe(2);
  });

  it('tries a refused replacement again as soon as one of the publisher’s jobs ends', async () => {
    // It runs until stopped, so that the refusal is seen however slow the machine: its end is the spec's to choose.
    const batch = await (await workloadsOn(first)).run('sleep 300');
    setQuota([first, second], 2);
    const [, worker] = await workerRows(first, library);
    process.kill(workerPid(worker.secret as string) as number, 'SIGKILL');
    await untilStatus(first, library, admin, (current) => current.workers['1'].state === 'failed', 'worker 1 failed');
    expect((await libraryClient(first).post(`/api/v2/cluster/jobs/${batch.id}/stop`, {}, admin)).statusCode).toBe(200);
    // No clock moves: the batch job's end makes the room, and its announcement the retry.
    const ready = await untilStatus(
      second,
      library,
      admin,
      (current) => current.workers['1'].state === 'ready',
      'worker 1 retried after the batch job',
      20_000,
    );
    expect(ready.failedWorkerCount).toBe(3);
    expect((await first.app.get(DataSource).query('SELECT status FROM cluster_jobs WHERE id = $1', [batch.id]))[0].status).toBe('dead');
    setQuota([first, second], 3);
  });

  it('goes on serving after a hub restarts, and unpublishes from either', async () => {
    await second.restart();
    const status = await untilStatus(second, library, admin);
    expect(Object.keys(status.workers)).toEqual(['0', '1']);
    expect(
      (await libraryClient(second).get(`${PUBLISHED}/${library}/datasets/orders/records?fields=id&limit=1&orderby=id`, admin)).json<{ values: unknown[] }>()
        .values,
    ).toEqual([[1]]);
    const response = await libraryClient(second).del(`${PUBLISHED}/${library}`, admin);
    expect(response.statusCode).toBe(200);
    expectProblem(await libraryClient(first).get(`${PUBLISHED}/${library}`, admin), 404);
    expect((await workerJobs()).every((job) => job.status === 'dead')).toBe(true);
  });
});

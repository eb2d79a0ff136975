import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmdirSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { DiskReserve } from '../../src/cluster/disk-reserve.js';
import { freezeClock } from '../support/test-clock.js';
import { poll } from '../support/poll.js';
import { bearer, enterableTempDir, startTestHub, type TestHub } from '../support/test-hub.js';

/**
 * A full disk is survivable (local driver): a hub keeps a free-space reserve on the filesystem of
 * its executions' directories (here a tmpfs of 600 MiB mounted for the spec, as root): a job that
 * fills it is ended `LimitExceeded` (`disk`) and its space given back, while the hub answers
 * stops and lists and another user's job then completes; below the reserve nothing starts, and
 * when no running job grew the longest-ended executions' directories go first; a profile's
 * `maxDiskMiB` is kept the same way; two hubs on one filesystem evict once. Looks are driven on
 * the hub's fake clock: it stands still, and each spec moves it and looks.
 */
const asRoot = process.getuid?.() === 0 ? describe : describe.skip;

const API = '/api/v2/cluster';
const MIB = 1024 * 1024;
const PASSWORD = 'a-long-enough-password';

interface Execution {
  id: string;
  status: string;
  taskStates: { main: { events: { type: string; message: string; details?: Record<string, string> }[] } };
}
type Headers = Record<string, string>;

/** A tmpfs of `sizeMiB` mounted on a fresh directory jobs' users may enter. */
function mountTmpfs(sizeMiB: number): string {
  const dir = enterableTempDir('hub-disk-');
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0711`, 'tmpfs', dir]);
  return dir;
}

function unmount(dir: string): void {
  try {
    execFileSync('umount', [dir]);
  } catch {
    // A process of a job not yet gone: detached now, freed once it ends.
    execFileSync('umount', ['-l', dir]);
  }
  rmdirSync(dir);
}

function freeBytes(dir: string): number {
  const { bavail, bsize } = statfsSync(dir);
  return bavail * bsize;
}

/** A hub and what its specs do through it, as the administrator and as two users who may submit jobs. */
async function clientOf(hub: TestHub) {
  const admin = bearer(hub.adminToken);
  const call = (method: 'GET' | 'POST', url: string, payload?: object, headers: Headers = admin) => hub.inject({ method, url, headers, payload });
  const created = async <T>(url: string, payload: object): Promise<T> => {
    const response = await call('POST', url, payload);
    expect(response.statusCode).toBe(201);
    return response.json<T>();
  };
  const profiles = await call('GET', '/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard');
  const standard = profiles.json<{ data: { _id: string }[] }>().data[0]._id;
  const namespaceId = (await call('GET', '/api/v2/namespaces?filter[name][EQ]=default')).json<{ data: { _id: string }[] }>().data[0]._id;
  const user = async (userName: string): Promise<Headers> => {
    const { _id } = await created<{ _id: string }>('/api/v2/auth/users', { userName, password: PASSWORD });
    const role = await created<{ id: string }>('/api/v2/rbac/roles', {
      name: `${userName}-submits`,
      permissions: [
        { object: '/ClusterJobs', actions: ['Create'], objectMatcher: 'simple', effect: 'Allow' },
        { object: '/ExecutionProfiles/*', actions: ['Use'], objectMatcher: 'simple', effect: 'Allow' },
      ],
    });
    await created('/api/v2/rbac/rolebindings', { role: role.id, principal: _id, namespace: 'default' });
    return bearer(await hub.login(userName, PASSWORD));
  };
  const execution = async (jobId: string): Promise<Execution> => {
    const list = await call('GET', `${API}/executions?filter[jobId][EQ]=${jobId}`);
    const id = list.json<{ data: { id: string }[] }>().data[0].id;
    return (await call('GET', `${API}/executions/${id}`)).json<Execution>();
  };
  return {
    call,
    user,
    execution,
    submit: async (as: Headers, script: string, executionProfileId = standard): Promise<string> => {
      const response = await call(
        'POST',
        `${API}/jobs`,
        { name: 'disk', namespace: 'default', executionProfileId, task: { command: 'sh', args: ['-c', script] } },
        as,
      );
      expect(response.statusCode).toBe(201);
      return response.json<{ id: string }>().id;
    },
    until: (jobId: string, status: string, timeoutMs = 20_000) =>
      poll(
        () => execution(jobId),
        (current) => current.status === status,
        `job ${jobId} ${status}`,
        timeoutMs,
      ),
    profileWith: async (name: string, properties: Record<string, number>): Promise<string> => {
      const { _id } = await created<{ _id: string }>('/api/v2/execution-profiles/execprofiles', { name, properties });
      await created('/api/v2/execution-profiles/bindings', { executionProfileId: _id, namespaceId });
      return _id;
    },
  };
}

const lastEvent = (execution: Execution) => execution.taskStates.main.events.at(-1);

asRoot('the disk reserve (a tmpfs data directory, the local driver as root)', () => {
  const cleanUps: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    jest.restoreAllMocks();
    for (const cleanUp of cleanUps.splice(0).reverse()) await cleanUp();
  });

  /** A hub whose data directory (and so its executions' directories) is a fresh tmpfs of 600 MiB, its clock standing still. */
  const hubOnTmpfs = async (env: Record<string, string> = {}) => {
    const dataDir = mountTmpfs(600);
    cleanUps.push(() => unmount(dataDir));
    const hub = await startTestHub({ env: { HUB_DATA_DIR: dataDir, HUB_LOCAL_SLOTS: '3', ...env } });
    cleanUps.push(() => hub.close());
    const clock = freezeClock(hub);
    const reserve = hub.app.get(DiskReserve);
    // Each look the spec asks for is one the hub would have made a second later.
    const look = () => {
      clock.advance(1000);
      return reserve.look();
    };
    return { hub, dataDir, look, c: await clientOf(hub), workDir: (executionId: string) => join(dataDir, 'work', 'executions', executionId, 'work') };
  };

  it('ends the job that fills the disk LimitExceeded (disk), gives its space back, answers meanwhile, and runs the next user’s job', async () => {
    const { dataDir, look, c, workDir } = await hubOnTmpfs();
    const [alice, bob] = [await c.user('alice'), await c.user('bob')];
    const bobsSleep = await c.submit(bob, 'sleep 1000');
    await c.until(bobsSleep, 'running');
    // Three MiB of log, then everything the disk has.
    const filler = await c.submit(
      alice,
      'head -c 3145728 /dev/zero | tr "\\0" x; dd if=/dev/zero of=fill bs=1M count=1000 2>/dev/null; touch filled; sleep 1000',
    );
    const filling = await c.until(filler, 'running');
    await poll(() => existsSync(join(workDir(filling.id), 'filled')), Boolean, 'the disk to be filled', 30_000);
    expect(freeBytes(dataDir)).toBeLessThan(MIB);

    // The hub answers on a full disk: lists, and a stop.
    for (const url of [`${API}/jobs`, `${API}/executions`, `${API}/nodes`]) expect((await c.call('GET', url)).statusCode).toBe(200);
    const stop = await c.call('POST', `${API}/jobs/${bobsSleep}/stop`);
    expect([stop.statusCode, stop.json<{ status: string }>().status]).toEqual([200, 'dead']);
    expect(lastEvent(await c.execution(bobsSleep))?.type).toBe('Killed');

    await look();
    const evicted = await c.execution(filler);
    expect([evicted.status, lastEvent(evicted)?.type, lastEvent(evicted)?.details?.limit]).toEqual(['failed', 'LimitExceeded', 'disk']);
    expect(lastEvent(evicted)?.message).toMatch(/^Ended for filling the disk: .* below the hub's reserve of 60 MiB, and this execution grew most/);
    // Its working directory emptied, its log cut to its last MiB: the space is back.
    expect(readdirSync(workDir(evicted.id))).toEqual([]);
    expect(statSync(join(workDir(evicted.id), '..', 'logs', 'stdout')).size).toBe(MIB);
    expect(freeBytes(dataDir)).toBeGreaterThan(500 * MIB);

    const next = await c.submit(bob, 'echo after');
    expect((await c.until(next, 'completed')).status).toBe('completed');
  }, 90_000);

  it('starts nothing below the reserve, evicts no running job that did not grow, and reclaims the longest-ended directories first', async () => {
    const { dataDir, look, c, workDir } = await hubOnTmpfs({ HUB_MIN_FREE_DISK_MIB: '100' });
    const [alice, bob] = [await c.user('alice'), await c.user('bob')];
    const sleeper = await c.submit(bob, 'sleep 1000');
    const sleeping = await c.until(sleeper, 'running');
    const ballast = join(dataDir, 'ballast');
    /** Leaves `freeMiB` free, with a file of the administrator's (no job's). */
    const fillTo = (freeMiB: number) => {
      rmSync(ballast, { force: true });
      writeFileSync(ballast, Buffer.alloc(freeBytes(dataDir) - freeMiB * MIB));
    };

    fillTo(70);
    await look();
    const waiting = await c.submit(alice, 'echo waited');
    // Placement rounds run on the submission and on the scheduler's tick each second: none starts it.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const held = await c.execution(waiting);
    expect([held.status, held.taskStates.main.events.map((event) => event.type)]).toEqual(['pending', ['Received']]);
    expect((await c.execution(sleeper)).status).toBe('running');
    rmSync(ballast);
    await look();
    expect((await c.until(waiting, 'completed')).status).toBe('completed');

    // Three results of 100 MiB, ended one after the other; then the disk below the reserve by 30 MiB.
    const ended: Execution[] = [];
    for (let i = 0; i < 3; i++) ended.push(await c.until(await c.submit(alice, 'head -c 104857600 /dev/zero > result'), 'completed'));
    fillTo(70);
    await look();
    expect(ended.map((execution) => existsSync(join(workDir(execution.id), '..')))).toEqual([false, true, true]);
    expect(freeBytes(dataDir)).toBeGreaterThanOrEqual(100 * MIB);
    // The running job was not touched.
    expect((await c.execution(sleeper)).status).toBe('running');
    expect(existsSync(workDir(sleeping.id))).toBe(true);
    await c.call('POST', `${API}/jobs/${sleeper}/stop`);
  }, 90_000);

  it("ends an execution past its profile's maxDiskMiB, whatever the disk's free space", async () => {
    const { look, c, workDir } = await hubOnTmpfs();
    const alice = await c.user('alice');
    const profile = await c.profileWith('LittleDisk', { maxDiskMiB: 20 });
    const within = await c.submit(alice, 'head -c 10485760 /dev/zero > ten; touch written; sleep 1000', profile);
    const beyond = await c.submit(alice, 'head -c 31457280 /dev/zero > thirty; touch written; sleep 1000', profile);
    const [small, large] = [await c.until(within, 'running'), await c.until(beyond, 'running')];
    for (const execution of [small, large]) await poll(() => existsSync(join(workDir(execution.id), 'written')), Boolean, 'its file to be written');
    await look();
    const ended = await c.execution(beyond);
    expect([ended.status, lastEvent(ended)?.type, lastEvent(ended)?.details?.limit]).toEqual(['failed', 'LimitExceeded', 'maxDiskMiB']);
    expect(lastEvent(ended)?.message).toBe("Ended for running past its execution profile's maxDiskMiB (20 MiB): its working directory and logs held 30 MiB");
    expect(readdirSync(workDir(large.id))).toEqual([]);
    expect((await c.execution(within)).status).toBe('running');
    await c.call('POST', `${API}/jobs/${within}/stop`);
  }, 60_000);

  it('evicts once when two hubs on one database share the filesystem and both look', async () => {
    const shared = mountTmpfs(600);
    cleanUps.push(() => unmount(shared));
    const sharedDir = join(shared, 'work');
    const first = await startTestHub({ env: { HUB_LOCAL_SLOTS: '2', HUB_SHARED_DIR: sharedDir, HUB_MAX_RUNNING_JOBS_PER_USER: '0' } });
    cleanUps.push(() => first.close());
    const second = await startTestHub({
      databaseUrl: first.databaseUrl,
      env: { HUB_LOCAL_SLOTS: '2', HUB_SHARED_DIR: sharedDir, HUB_MAX_RUNNING_JOBS_PER_USER: '0' },
    });
    cleanUps.push(() => second.close());
    const clocks = [freezeClock(first), freezeClock(second)];
    const c = await clientOf(first);
    const alice = await c.user('alice');
    // A slow writer and one that fills the disk: both grow, the filler most.
    const slow = await c.submit(alice, 'while true; do head -c 2097152 /dev/zero >> slow 2>/dev/null; sleep 0.2; done');
    await c.until(slow, 'running');
    const filler = await c.submit(alice, 'dd if=/dev/zero of=fill bs=1M count=1000 2>/dev/null; touch filled; sleep 1000');
    const filling = await c.until(filler, 'running');
    await poll(() => existsSync(join(sharedDir, 'executions', filling.id, 'work', 'filled')), Boolean, 'the disk to be filled', 30_000);
    for (const clock of clocks) clock.advance(1000);
    await Promise.all([first.app.get(DiskReserve).look(), second.app.get(DiskReserve).look()]);
    expect([(await c.execution(filler)).status, (await c.execution(slow)).status]).toEqual(['failed', 'running']);
    await c.call('POST', `${API}/jobs/${slow}/stop`);
  }, 60_000);
});

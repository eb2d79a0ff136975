import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { SchedulerRegistry } from '@nestjs/schedule';
import { ClusterScheduler } from '../../src/cluster/cluster-scheduler.js';
import { CLUSTER_DRIVER } from '../../src/cluster/drivers/cluster-driver.js';
import { freezeClock } from '../support/test-clock.js';
import { poll } from '../support/poll.js';
import { bearer, startTestHub, type TestHub } from '../support/test-hub.js';

/**
 * What the job path's speed must not break (api-map §9; timing is bench/cluster.ts's): every
 * execution starts exactly once, whether submissions come at once to one hub or to three hubs on
 * one database sharing the local node; a hub that dies leaves what it started to one sharing its
 * node; a freed CPU is refilled on the process's end, not on a tick; a launch prepared ahead of
 * its slot runs nothing of its task until released into one, yields to one ahead of it in line,
 * and is let go of when stopped or when its hub shuts down; finished jobs leave nothing behind in
 * the hub's memory.
 */

interface Job {
  id: string;
}
interface Execution {
  id: string;
  status: string;
  taskStates: { main: { startedAt?: string; events: { type: string; message?: string }[] } };
}

const API = '/api/v2/cluster';

/** A directory every task may write in (tasks run as hub-jobs when the suite runs as root). */
function openDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o777);
  return dir;
}

/** A process's arguments, NUL-terminated; empty once it is gone. */
function commandLineOf(pid: number | string): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

/** The processes whose command line names `text`. */
function processesNaming(text: string): number[] {
  return readdirSync('/proc').flatMap((entry) => (/^\d+$/.test(entry) && commandLineOf(entry).includes(text) ? [Number(entry)] : []));
}

/** The task init of an execution's prepared launch, `sh -c <init> ../task <id> gated`: the monitor and the isolation name its arguments too, among more. */
function gatedInits(executionId: string): number[] {
  return processesNaming(`\0${executionId}\0gated\0`).filter((pid) => commandLineOf(pid).split('\0').length === 7);
}

/** Kills whatever still runs from a directory (the suite's own jobs). */
function killAllUnder(dir: string): void {
  for (const pid of processesNaming(dir)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Gone, or not a group leader.
    }
  }
}

function clientOf(hub: TestHub) {
  const headers = { ...bearer(hub.adminToken), 'content-type': 'application/json' };
  const get = async <T>(url: string): Promise<T> => {
    const response = await hub.inject({ method: 'GET', url, headers });
    expect([url, response.statusCode]).toEqual([url, 200]);
    return response.json<T>();
  };
  const client = {
    profileId: async () => (await get<{ data: { _id: string }[] }>('/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard')).data[0]._id,
    /**
     * Submits as a client should: a 503 (no pooled connection within the hub's 30 s wait, as when one owner's
     * 200 submissions take turns at their count's row on a loaded machine) changed nothing, and is
     * sent again after its Retry-After. A job submitted twice would show as one too many below.
     */
    submit: async (name: string, profileId: string, script: string): Promise<Job> => {
      const payload = JSON.stringify({ name, namespace: 'default', executionProfileId: profileId, task: { command: 'sh', args: ['-c', script] } });
      for (let attempt = 1; ; attempt++) {
        const response = await hub.inject({ method: 'POST', url: `${API}/jobs`, headers, payload });
        if (response.statusCode === 503 && attempt < 5) {
          await new Promise((resolve) => setTimeout(resolve, Number(response.headers['retry-after']) * 1000));
          continue;
        }
        expect([response.statusCode, response.body]).toEqual([201, response.body]);
        return response.json<Job>();
      }
    },
    executionOf: async (jobId: string): Promise<Execution> => {
      const page = await get<{ data: { id: string }[] }>(`${API}/executions?filter[jobId][EQ]=${jobId}`);
      return get<Execution>(`${API}/executions/${page.data[0].id}`);
    },
    until: (jobId: string, status: string) =>
      poll(
        () => client.executionOf(jobId),
        (execution) => execution.status === status,
        `job ${jobId} to be ${status}`,
      ),
    /** Waits until no job is pending or running; then how many executions ended in each status. */
    allDone: async (timeoutMs = 120_000): Promise<Record<string, number>> => {
      await poll(
        () => get<{ total: number }>(`${API}/jobs?filter[status][IN]=pending,running&page[limit]=1`),
        (page) => page.total === 0,
        'every job to end',
        timeoutMs,
      );
      const counts: Record<string, number> = {};
      for (const status of ['completed', 'failed', 'lost'])
        counts[status] = (await get<{ total: number }>(`${API}/executions?filter[status][EQ]=${status}&page[limit]=1`)).total;
      return counts;
    },
    workDir: (sharedDir: string, executionId: string) => join(sharedDir, 'executions', executionId, 'work'),
  };
  return client;
}

/** Each task appends its execution's id to `file`: an id written twice is an execution started twice. */
const recordingScript = (file: string) => `echo "$HUB_EXECUTION_ID" >> ${file}`;

function linesOf(file: string): string[] {
  return readFileSync(file, 'utf8').split('\n').filter(Boolean);
}

describe('the job path', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) {
      killAllUnder(dir);
      rmSync(dir, { recursive: true, force: true });
    }
  });
  const dir = (prefix: string) => {
    const made = openDir(prefix);
    dirs.push(made);
    return made;
  };

  it('starts every job once when 200 are submitted at once to one hub', async () => {
    const sharedDir = dir('hub-path-one-');
    const record = join(dir('hub-path-record-'), 'started');
    writeFileSync(record, '');
    chmodSync(record, 0o666);
    const hub = await startTestHub({
      env: { HUB_LOCAL_SLOTS: '2', HUB_MAX_ACTIVE_JOBS_PER_USER: '1000', HUB_MAX_RUNNING_JOBS_PER_USER: '0', HUB_SHARED_DIR: sharedDir },
    });
    try {
      const c = clientOf(hub);
      const profileId = await c.profileId();
      const jobs = await Promise.all(Array.from({ length: 200 }, (_, index) => c.submit(`once-${index}`, profileId, recordingScript(record))));
      expect(new Set(jobs.map((job) => job.id)).size).toBe(200);
      expect(await c.allDone()).toEqual({ completed: 200, failed: 0, lost: 0 });
      const lines = linesOf(record);
      expect(lines).toHaveLength(200);
      expect(new Set(lines).size).toBe(200);
    } finally {
      await hub.close();
    }
  }, 180_000);

  it('starts every job once with three hubs on one database sharing the local node, each submitted to in turn', async () => {
    const record = join(dir('hub-path-record-'), 'started');
    writeFileSync(record, '');
    chmodSync(record, 0o666);
    const first = await startTestHub({
      env: { HUB_LOCAL_SLOTS: '2', HUB_MAX_ACTIVE_JOBS_PER_USER: '1000', HUB_MAX_RUNNING_JOBS_PER_USER: '0', HUB_SHARED_DIR: dir('hub-path-a-') },
    });
    const others = [
      await startTestHub({
        databaseUrl: first.databaseUrl,
        env: { HUB_LOCAL_SLOTS: '2', HUB_MAX_ACTIVE_JOBS_PER_USER: '1000', HUB_MAX_RUNNING_JOBS_PER_USER: '0', HUB_SHARED_DIR: dir('hub-path-b-') },
      }),
      await startTestHub({
        databaseUrl: first.databaseUrl,
        env: { HUB_LOCAL_SLOTS: '2', HUB_MAX_ACTIVE_JOBS_PER_USER: '1000', HUB_MAX_RUNNING_JOBS_PER_USER: '0', HUB_SHARED_DIR: dir('hub-path-c-') },
      }),
    ];
    const hubs = [first, ...others];
    try {
      const clients = hubs.map(clientOf);
      const profileId = await clients[0].profileId();
      const script = `${recordingScript(record)}; sleep 0.02`;
      const jobs = await Promise.all(Array.from({ length: 300 }, (_, index) => clients[index % 3].submit(`replicas-${index}`, profileId, script)));
      expect(new Set(jobs.map((job) => job.id)).size).toBe(300);
      expect(await clients[1].allDone()).toEqual({ completed: 300, failed: 0, lost: 0 });
      const lines = linesOf(record);
      expect(lines).toHaveLength(300);
      expect(new Set(lines).size).toBe(300);
      // Each was started by one hub and recorded started once.
      for (const job of jobs.slice(0, 30)) {
        const execution = await clients[2].executionOf(job.id);
        expect(execution.taskStates.main.events.filter((event) => event.type === 'Started')).toHaveLength(1);
      }
    } finally {
      for (const hub of others) await hub.close();
      await first.close();
    }
  }, 240_000);

  it('leaves what a hub started to a live hub sharing its node when it dies, which settles it once', async () => {
    const sharedDir = dir('hub-path-takeover-');
    const primary = await startTestHub({
      env: { HUB_LOCAL_SLOTS: '2', HUB_MAX_ACTIVE_JOBS_PER_USER: '1000', HUB_MAX_RUNNING_JOBS_PER_USER: '0', HUB_SHARED_DIR: sharedDir },
    });
    const dying = await startTestHub({
      databaseUrl: primary.databaseUrl,
      env: { HUB_LOCAL_SLOTS: '2', HUB_MAX_ACTIVE_JOBS_PER_USER: '1000', HUB_MAX_RUNNING_JOBS_PER_USER: '0', HUB_SHARED_DIR: sharedDir },
    });
    try {
      const c = clientOf(primary);
      const profileId = await c.profileId();
      const job = await clientOf(dying).submit('orphan', profileId, 'until [ -e go ]; do sleep 0.05; done');
      const running = await c.until(job.id, 'running');
      // While the hub that started it lives, the other leaves it alone, whatever its ticks find.
      const survivor = primary.app.get(ClusterScheduler);
      for (let tick = 0; tick < 5; tick += 1) await survivor.tickOnSchedule();
      expect((await c.executionOf(job.id)).status).toBe('running');
      await dying.close();
      // The survivor adopts it at its next look for dead hubs' work, and settles it when it ends.
      for (let tick = 0; tick < 5; tick += 1) await survivor.tickOnSchedule();
      writeFileSync(join(c.workDir(sharedDir, running.id), 'go'), '');
      const done = await poll(
        async () => {
          await survivor.tickOnSchedule();
          return c.executionOf(job.id);
        },
        (execution) => execution.status !== 'running',
        'the adopted execution to end',
        20_000,
      );
      expect(done.status).toBe('completed');
      expect(done.taskStates.main.events.map((event) => event.type)).toEqual(['Received', 'Started', 'Terminated']);
    } finally {
      await dying.close().catch(() => undefined);
      await primary.close();
    }
  }, 60_000);

  it('refills a freed CPU when its process ends, with no tick running (the clock stands still), and counts it in /metrics', async () => {
    const sharedDir = dir('hub-path-refill-');
    const hub = await startTestHub({ env: { HUB_LOCAL_SLOTS: '1', HUB_SHARED_DIR: sharedDir } });
    try {
      hub.app.get(SchedulerRegistry).deleteInterval('cluster-tick');
      freezeClock(hub);
      const c = clientOf(hub);
      const profileId = await c.profileId();
      // Started in its request's own turn: no tick is left to start it.
      const first = await c.submit('first', profileId, 'until [ -e go ]; do sleep 0.05; done');
      const running = await c.until(first.id, 'running');
      const second = await c.submit('second', profileId, 'true');
      await poll(
        () => c.executionOf(second.id),
        (execution) => execution.taskStates.main.events.some((event) => event.type === 'Queued'),
        'the second job to wait for a CPU',
      );
      const metrics = async () => (await hub.inject({ method: 'GET', url: '/metrics', headers: bearer(hub.adminToken) })).body;
      // The job path's own figures, as the database has them (gauges) and as this hub did (counters).
      const busy = await metrics();
      expect(busy).toMatch(new RegExp(`^hub_cluster_executions\\{status="running",node="${hostname()}"\\} 1$`, 'm'));
      // The second waits prepared on the node (see below), as a pending execution there.
      expect(busy).toMatch(new RegExp(`^hub_cluster_executions\\{status="pending",node="${hostname()}"\\} 1$`, 'm'));
      expect(busy).toMatch(new RegExp(`^hub_cluster_free_slots\\{node="${hostname()}"\\} 0$`, 'm'));
      writeFileSync(join(c.workDir(sharedDir, running.id), 'go'), '');
      const done = await c.until(second.id, 'completed');
      expect(done.taskStates.main.events.map((event) => event.type)).toEqual(['Received', 'Queued', 'Started', 'Terminated']);
      expect((await c.executionOf(first.id)).status).toBe('completed');
      const idle = await metrics();
      expect(idle).toMatch(/^hub_cluster_submissions_total 2$/m);
      expect(idle).toMatch(new RegExp(`^hub_cluster_execution_starts_total\\{node="${hostname()}"\\} 2$`, 'm'));
      expect(idle).toMatch(/^hub_cluster_execution_ends_total\{outcome="completed"\} 2$/m);
      expect(idle).toMatch(/^hub_cluster_start_latency_seconds_count 2$/m);
      expect(idle).toMatch(new RegExp(`^hub_cluster_free_slots\\{node="${hostname()}"\\} 1$`, 'm'));
      expect(idle).not.toMatch(/^hub_cluster_executions\{/m);
    } finally {
      await hub.close();
    }
  }, 60_000);

  it('writes the start of a task that ended before its launch was answered with its end, at once', async () => {
    const sharedDir = dir('hub-path-early-end-');
    const hub = await startTestHub({ env: { HUB_LOCAL_SLOTS: '1', HUB_SHARED_DIR: sharedDir } });
    try {
      // The order a task that exits at once often takes (its start and its end come in one read of
      // the launcher): the end is heard before the start is recorded, every time here.
      type Recording = (...args: unknown[]) => Promise<void>;
      const scheduler = hub.app.get<unknown, { recordStart: Recording; recordEnd: Recording; writeStart: Recording }>(ClusterScheduler);
      let endHeard: () => void = () => undefined;
      const heard = new Promise<void>((resolve) => (endHeard = resolve));
      const [recordStart, recordEnd, writeStart] = [scheduler.recordStart, scheduler.recordEnd, scheduler.writeStart].map((method) => method.bind(scheduler));
      scheduler.recordEnd = (...args) => {
        endHeard();
        return recordEnd(...args);
      };
      scheduler.recordStart = async (...args) => {
        await heard;
        return recordStart(...args);
      };
      const startsWrittenAlone: unknown[] = [];
      scheduler.writeStart = (...args) => {
        startsWrittenAlone.push(args[0]);
        return writeStart(...args);
      };
      const c = clientOf(hub);
      const job = await c.submit('ends-at-once', await c.profileId(), 'true');
      const done = await c.until(job.id, 'completed');
      expect(done.taskStates.main.events.map((event) => event.type)).toEqual(['Received', 'Started', 'Terminated']);
      expect(done.taskStates.main.startedAt).toEqual(expect.any(String));
      // Its end took its start (one statement), rather than waiting out the start's deferral and
      // having it written on its own first (a linear pipeline's node waited 50 ms so).
      expect(startsWrittenAlone).toEqual([]);
    } finally {
      await hub.close();
    }
  }, 60_000);

  it('prepares the next in line up to its gate without running any of its task, and releases it into the slot its predecessor frees', async () => {
    const sharedDir = dir('hub-path-prepared-');
    const hub = await startTestHub({ env: { HUB_LOCAL_SLOTS: '1', HUB_LOCAL_PREPARED_LAUNCHES: '1', HUB_SHARED_DIR: sharedDir } });
    try {
      hub.app.get(SchedulerRegistry).deleteInterval('cluster-tick');
      freezeClock(hub);
      const c = clientOf(hub);
      const profileId = await c.profileId();
      const holderJob = await c.submit('holder', profileId, 'until [ -e go ]; do sleep 0.05; done');
      const holder = await c.until(holderJob.id, 'running');
      const marks = dir('hub-path-marks-');
      const next = await c.submit('next', profileId, `touch ${marks}/next-ran`);
      const prepared = await poll(
        () => c.executionOf(next.id),
        (execution) => execution.taskStates.main.events.some((event) => event.type === 'Queued'),
        'the next one to be prepared',
      );
      expect([prepared.status, prepared.taskStates.main.events.at(-1)?.message]).toEqual([
        'pending',
        `Waiting for a free CPU on ${hostname()}, its launch prepared`,
      ]);
      // Its launch waits at its gate: its processes run, its task does not.
      await poll(
        () => Promise.resolve(gatedInits(prepared.id)),
        (pids) => pids.length === 1,
        'the launch to wait at its gate',
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(readdirSync(marks)).toEqual([]);
      writeFileSync(join(c.workDir(sharedDir, holder.id), 'go'), '');
      const done = await c.until(next.id, 'completed');
      expect(readdirSync(marks)).toEqual(['next-ran']);
      expect(done.taskStates.main.events.map((event) => event.type)).toEqual(['Received', 'Queued', 'Started', 'Terminated']);
      // It started after the holder ended, never beside it.
      const ended = (await c.executionOf(holderJob.id)) as Execution & { taskStates: { main: { finishedAt: string } } };
      expect(Date.parse(done.taskStates.main.startedAt as string)).toBeGreaterThanOrEqual(Date.parse(ended.taskStates.main.finishedAt));
    } finally {
      await hub.close();
    }
  }, 60_000);

  it('puts a prepared launch back in line behind one of better priority, and lets go of one that is stopped', async () => {
    const sharedDir = dir('hub-path-displaced-');
    const hub = await startTestHub({ env: { HUB_LOCAL_SLOTS: '1', HUB_LOCAL_PREPARED_LAUNCHES: '1', HUB_SHARED_DIR: sharedDir } });
    try {
      const c = clientOf(hub);
      const profileId = await c.profileId();
      const headers = { ...bearer(hub.adminToken), 'content-type': 'application/json' };
      const holder = await c.until((await c.submit('holder', profileId, 'until [ -e go ]; do sleep 0.05; done')).id, 'running');
      const marks = dir('hub-path-order-');
      const low = await c.submit('low', profileId, `echo low >> ${marks}/order`);
      const isPrepared = (execution: Execution & { nodeId?: string | null }) => execution.status === 'pending' && Boolean(execution.nodeId);
      await poll(() => c.executionOf(low.id), isPrepared, 'the low one to be prepared');
      const urgent = await hub.inject({
        method: 'POST',
        url: `${API}/jobs`,
        headers,
        payload: JSON.stringify({
          name: 'urgent',
          namespace: 'default',
          executionProfileId: profileId,
          priority: 90,
          task: { command: 'sh', args: ['-c', `echo urgent >> ${marks}/order`] },
        }),
      });
      expect(urgent.statusCode).toBe(201);
      const urgentId = urgent.json<Job>().id;
      // The urgent one takes the prepared place; the low one goes back in line, with nothing of it left running.
      await poll(() => c.executionOf(urgentId), isPrepared, 'the urgent one to be prepared');
      const back = await poll(
        () => c.executionOf(low.id) as Promise<Execution & { nodeId?: string | null }>,
        (execution) => execution.status === 'pending' && !execution.nodeId,
        'the low one to go back in line',
      );
      const stopped = await c.submit('stopped', profileId, `echo stopped >> ${marks}/order`);
      const stop = await hub.inject({ method: 'POST', url: `${API}/jobs/${urgentId}/stop`, headers: bearer(hub.adminToken) });
      expect(stop.statusCode).toBe(200);
      // The stopped one's place is taken by the next in line (the low one, older than the other).
      await poll(() => c.executionOf(low.id), isPrepared, 'the low one to be prepared again');
      const stopTwo = await hub.inject({ method: 'POST', url: `${API}/jobs/${stopped.id}/stop`, headers: bearer(hub.adminToken) });
      expect(stopTwo.statusCode).toBe(200);
      writeFileSync(join(c.workDir(sharedDir, holder.id), 'go'), '');
      expect(await c.allDone()).toEqual({ completed: 2, failed: 2, lost: 0 });
      expect(linesOf(join(marks, 'order'))).toEqual(['low']);
      const urgentDone = await c.executionOf(urgentId);
      expect(urgentDone.taskStates.main.events.map((event) => event.type)).toEqual(['Received', 'Queued', 'Killed']);
      expect(back.taskStates.main.events.map((event) => event.type)).toEqual(['Received', ...back.taskStates.main.events.slice(1).map(() => 'Queued')]);
      // No launch of the stopped one waits on: nothing runs that names its execution.
      expect(processesNaming(urgentDone.id)).toEqual([]);
    } finally {
      await hub.close();
    }
  }, 60_000);

  it('puts what it prepared back in line when it shuts down, for a hub that stays to run', async () => {
    const sharedDir = dir('hub-path-handback-');
    const staying = await startTestHub({ env: { HUB_LOCAL_SLOTS: '1', HUB_LOCAL_PREPARED_LAUNCHES: '0', HUB_SHARED_DIR: sharedDir } });
    const leaving = await startTestHub({
      databaseUrl: staying.databaseUrl,
      env: { HUB_LOCAL_SLOTS: '1', HUB_LOCAL_PREPARED_LAUNCHES: '2', HUB_SHARED_DIR: sharedDir },
    });
    try {
      const c = clientOf(leaving);
      const profileId = await c.profileId();
      const holder = await c.until((await c.submit('holder', profileId, 'until [ -e go ]; do sleep 0.05; done')).id, 'running');
      const waiting = [await c.submit('first', profileId, 'true'), await c.submit('second', profileId, 'true')];
      const isPrepared = (execution: Execution & { nodeId?: string | null }) => execution.status === 'pending' && Boolean(execution.nodeId);
      for (const job of waiting) await poll(() => c.executionOf(job.id), isPrepared, 'the waiting ones to be prepared');
      await leaving.close();
      const after = clientOf(staying);
      for (const job of waiting) {
        const execution = (await after.executionOf(job.id)) as Execution & { nodeId?: string };
        expect([execution.status, execution.nodeId]).toEqual(['pending', undefined]);
      }
      // The holder is adopted by the hub that stays, which runs the others once it ends.
      const survivor = staying.app.get(ClusterScheduler);
      for (let tick = 0; tick < 5; tick += 1) await survivor.tickOnSchedule();
      writeFileSync(join(after.workDir(sharedDir, holder.id), 'go'), '');
      expect(await after.allDone(30_000)).toEqual({ completed: 3, failed: 0, lost: 0 });
      for (const job of waiting) {
        const types = (await after.executionOf(job.id)).taskStates.main.events.map((event) => event.type);
        expect([types.filter((type) => type === 'Started').length, types.slice(-2)]).toEqual([1, ['Started', 'Terminated']]);
      }
    } finally {
      await leaving.close().catch(() => undefined);
      await staying.close();
    }
  }, 60_000);

  it("keeps each user's count of active jobs exact: concurrent submissions past HUB_MAX_ACTIVE_JOBS_PER_USER get 429, ended jobs make room", async () => {
    const sharedDir = dir('hub-path-quota-');
    const hub = await startTestHub({ env: { HUB_LOCAL_SLOTS: '1', HUB_MAX_ACTIVE_JOBS_PER_USER: '3', HUB_SHARED_DIR: sharedDir } });
    try {
      const c = clientOf(hub);
      const profileId = await c.profileId();
      const gate = join(dir('hub-path-gate-'), 'go');
      const body = (name: string) =>
        JSON.stringify({
          name,
          namespace: 'default',
          executionProfileId: profileId,
          task: { command: 'sh', args: ['-c', `until [ -e ${gate} ]; do sleep 0.05; done`] },
        });
      const headers = { ...bearer(hub.adminToken), 'content-type': 'application/json' };
      const replies = await Promise.all(
        Array.from({ length: 10 }, (_, index) => hub.inject({ method: 'POST', url: `${API}/jobs`, headers, payload: body(`quota-${index}`) })),
      );
      expect(replies.map((reply) => reply.statusCode).sort()).toEqual([201, 201, 201, 429, 429, 429, 429, 429, 429, 429]);
      // Once they have ended, their places are given back.
      writeFileSync(gate, '');
      expect(await c.allDone()).toEqual({ completed: 3, failed: 0, lost: 0 });
      const again = await Promise.all(
        Array.from({ length: 4 }, (_, index) => hub.inject({ method: 'POST', url: `${API}/jobs`, headers, payload: body(`again-${index}`) })),
      );
      expect(again.map((reply) => reply.statusCode).sort()).toEqual([201, 201, 201, 429]);
    } finally {
      await hub.close();
    }
  }, 60_000);

  it('starts another launcher when its launcher is killed, and what it had launched runs on and is settled', async () => {
    const sharedDir = dir('hub-path-launcher-');
    const hub = await startTestHub({ env: { HUB_LOCAL_SLOTS: '2', HUB_MAX_RUNNING_JOBS_PER_USER: '0', HUB_SHARED_DIR: sharedDir } });
    try {
      const c = clientOf(hub);
      const profileId = await c.profileId();
      const driver = hub.app.get<unknown, { launcher: { process?: { pid: number } } }>(CLUSTER_DRIVER);
      // Killed once it has launched the job: a launch it had taken but not yet spawned fails by design (it never runs twice).
      await c.until((await c.submit('outlives-its-launcher', profileId, 'sleep 0.5; echo done')).id, 'running');
      const first = driver.launcher.process?.pid as number;
      process.kill(first, 'SIGKILL');
      await c.submit('after-the-launcher-died', profileId, 'echo again');
      expect(await c.allDone()).toEqual({ completed: 2, failed: 0, lost: 0 });
      expect(driver.launcher.process?.pid).not.toBe(first);
    } finally {
      await hub.close();
    }
  }, 60_000);

  it('keeps nothing of finished jobs in memory: no start under way, no process handle, no listener per job', async () => {
    const sharedDir = dir('hub-path-memory-');
    const hub = await startTestHub({
      env: { HUB_LOCAL_SLOTS: '2', HUB_MAX_ACTIVE_JOBS_PER_USER: '1000', HUB_MAX_RUNNING_JOBS_PER_USER: '0', HUB_SHARED_DIR: sharedDir },
    });
    try {
      const c = clientOf(hub);
      const profileId = await c.profileId();
      const scheduler = hub.app.get<ClusterScheduler, { starting: Set<unknown>; prepared: Map<string, unknown[]>; followed: Map<string, unknown> }>(
        ClusterScheduler,
      );
      const driver = hub.app.get<
        unknown,
        {
          listeners: unknown[];
          watched: Map<string, unknown>;
          monitors: Map<string, number>;
          gates: Map<string, number>;
          abandoned: Map<string, unknown>;
          exitedAt: Map<string, unknown>;
          launcher: { pending: Map<string, unknown> };
        }
      >(CLUSTER_DRIVER);
      const handles = () => process.getActiveResourcesInfo().filter((kind) => kind === 'ProcessWrap').length;
      const listenersBefore = driver.listeners.length;
      const handlesBefore = handles();
      await Promise.all(Array.from({ length: 100 }, (_, index) => c.submit(`memory-${index}`, profileId, 'true')));
      expect(await c.allDone()).toEqual({ completed: 100, failed: 0, lost: 0 });
      // One with limits, stopped: the hub never reads its end, and keeps nothing of it either.
      const headers = { ...bearer(hub.adminToken), 'content-type': 'application/json' };
      const limited = await hub.inject({
        method: 'POST',
        url: '/api/v2/execution-profiles/execprofiles',
        headers,
        payload: JSON.stringify({ name: 'Limited', properties: { maxRunSeconds: 60 } }),
      });
      const limitedId = limited.json<{ _id: string }>()._id;
      const namespaceId = (await hub.inject({ method: 'GET', url: '/api/v2/namespaces?filter[name][EQ]=default', headers })).json<{
        data: { _id: string }[];
      }>().data[0]._id;
      await hub.inject({
        method: 'POST',
        url: '/api/v2/execution-profiles/bindings',
        headers,
        payload: JSON.stringify({ executionProfileId: limitedId, namespaceId }),
      });
      const stopped = await c.submit('limited', limitedId, 'sleep 30');
      const stoppedExecution = await c.until(stopped.id, 'running');
      expect((await hub.inject({ method: 'POST', url: `${API}/jobs/${stopped.id}/stop`, headers: bearer(hub.adminToken) })).statusCode).toBeLessThan(300);
      await poll(
        () => Promise.resolve(processesNaming(stoppedExecution.id).length + driver.monitors.size + driver.watched.size),
        (left) => left === 0,
        'the stopped one to be forgotten',
      );
      await poll(
        () => Promise.resolve(scheduler.starting.size),
        (size) => size === 0,
        'the starts to be forgotten',
      );
      expect(driver.listeners.length).toBe(listenersBefore);
      expect([driver.watched.size, driver.monitors.size, driver.gates.size, driver.abandoned.size, driver.exitedAt.size, driver.launcher.pending.size]).toEqual(
        [0, 0, 0, 0, 0, 0],
      );
      expect([[...scheduler.prepared.values()].flat().length, scheduler.followed.size]).toEqual([0, 0]);
      expect(handles()).toBeLessThanOrEqual(handlesBefore);
    } finally {
      await hub.close();
    }
  }, 120_000);
});

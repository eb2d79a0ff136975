import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from '@jest/globals';
import { DataSource } from 'typeorm';
import { poll } from '../support/poll.js';
import { bearer, type InjectResponse, type TestHub } from '../support/test-hub.js';

export const DEFINITIONS = '/api/v2/libraries/definitions';
export const PUBLISHED = '/api/v2/libraries/published';
export const PASSWORD = 'a-library-user-password';

export type Headers = Record<string, string>;

/** Writes a file job users can read (the directories above are made 0755). */
export function writeData(directory: string, name: string, content: string): void {
  mkdirSync(directory, { recursive: true, mode: 0o755 });
  chmodSync(directory, 0o755);
  writeFileSync(join(directory, name), content, { mode: 0o644 });
  chmodSync(join(directory, name), 0o644);
}

/** 1,000 orders as CSV: id 1..1000, region by id mod 4, amount id * 1.5, day in January 2020 by id mod 31, paid when even. */
export function ordersCsv(): string {
  const regions = ['north', 'south', 'east', "o'west"];
  const lines = ['id,region,amount,day,paid'];
  for (let id = 1; id <= 1000; id += 1) {
    const day = String((id % 31) + 1).padStart(2, '0');
    lines.push(`${id},${regions[id % 4]},${id * 1.5},2020-01-${day},${id % 2 === 0}`);
  }
  return `${lines.join('\n')}\n`;
}

/** A few people as JSON lines, one of them with a missing age. */
export function peopleJsonl(): string {
  return [
    { name: 'Ann', age: 31 },
    { name: 'Bob', age: 25 },
    { name: 'Cid', age: null },
  ]
    .map((row) => JSON.stringify(row))
    .join('\n');
}

/** Every library call goes through the hub with real auth; `version` sets Accept-Version. */
export function libraryClient(hub: TestHub) {
  const call = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, headers: Headers, payload?: unknown, extra: Headers = {}) =>
    hub.inject({ method, url, headers: { ...headers, ...extra }, ...(payload !== undefined && { payload: payload as object }) });
  return {
    get: (url: string, headers: Headers, extra: Headers = {}) => call('GET', url, headers, undefined, extra),
    post: (url: string, payload: unknown, headers: Headers, extra: Headers = {}) => call('POST', url, headers, payload, extra),
    put: (url: string, payload: unknown, headers: Headers) => call('PUT', url, headers, payload),
    patch: (url: string, payload: unknown, headers: Headers) => call('PATCH', url, headers, payload, { 'content-type': 'application/json-patch+json' }),
    del: (url: string, headers: Headers, extra: Headers = {}) => call('DELETE', url, headers, undefined, extra),
    /** POSTs a text/plain body. */
    text: (url: string, body: string, headers: Headers, extra: Headers = {}) =>
      hub.inject({ method: 'POST', url, headers: { ...headers, 'content-type': 'text/plain', ...extra }, payload: body }),
  };
}

export function expectProblem(response: InjectResponse, status: number, detail?: string): void {
  expect([response.statusCode, response.headers['content-type']]).toEqual([status, expect.stringContaining('application/problem+json')]);
  if (detail) expect(response.json<{ detail: string }>().detail).toContain(detail);
}

/** Users with roles bound in a namespace. */
export async function makeUser(
  hub: TestHub,
  admin: Headers,
  userName: string,
  roles: { role: string; namespace: string }[],
): Promise<{ id: string; headers: Headers }> {
  const created = await hub.inject({ method: 'POST', url: '/api/v2/auth/users', headers: admin, payload: { userName, password: PASSWORD } });
  const id = created.json<{ _id: string }>()._id;
  for (const { role, namespace } of roles) {
    const roleId = (await hub.inject({ method: 'GET', url: `/api/v2/rbac/roles?filter[name][EQ]=${role}`, headers: admin })).json<{ data: { id: string }[] }>()
      .data[0].id;
    const bound = await hub.inject({ method: 'POST', url: '/api/v2/rbac/rolebindings', headers: admin, payload: { role: roleId, principal: id, namespace } });
    if (bound.statusCode !== 201) throw new Error(`Binding ${role} failed: ${bound.body}`);
  }
  return { id, headers: bearer(await hub.login(userName, PASSWORD)) };
}

interface Status {
  poolSize?: number;
  workerPoolSize?: number;
  failedWorkerCount: number;
  startTime: string;
  workers: Record<string, { state: string; startTime?: string; node?: string; requestsServed: number }>;
  description: { name: string; engine: string; path?: string };
}

/** Waits until the library's status satisfies `done` (every worker ready, by default). */
export function untilStatus(
  hub: TestHub,
  id: string,
  headers: Headers,
  done: (status: Status) => boolean = allReady,
  what = 'every worker ready',
  timeoutMs = 30_000,
): Promise<Status> {
  return poll(
    async () => (await hub.inject({ method: 'GET', url: `${PUBLISHED}/${id}/status`, headers })).json<Status>(),
    done,
    `library ${id}: ${what}`,
    timeoutMs,
  );
}

export function allReady(status: Status): boolean {
  return Object.values(status.workers ?? {}).length > 0 && Object.values(status.workers).every((worker) => worker.state === 'ready');
}

/** The workers of a library as the hub keeps them. */
export async function workerRows(hub: TestHub, id: string): Promise<{ index: number; jobId: string | null; secret: string | null; state: string }[]> {
  return hub.app
    .get(DataSource)
    .query('SELECT worker_index AS index, job_id AS "jobId", secret, state FROM library_workers WHERE published_library_id = $1 ORDER BY worker_index', [id]);
}

/** The pid of the worker process that holds `secret` in its environment (found in /proc), or undefined. */
export function workerPid(secret: string): number | undefined {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`HUB_WORKER_SECRET=${secret}`)) return Number(pid);
    } catch {
      // Gone, or not ours to read.
    }
  }
  return undefined;
}

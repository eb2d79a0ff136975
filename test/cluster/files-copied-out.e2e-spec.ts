import { tmpdir } from 'node:os';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ClusterScheduler } from '../../src/cluster/cluster-scheduler.js';
import { ClusterService } from '../../src/cluster/cluster.service.js';
import { FilesCopiedOut, StoreKeyError, type CopiedFile } from '../../src/cluster/files-copied-out.js';
import { HubConfig } from '../../src/common/config/hub-config.js';
import { InvalidInputError, NotFoundError } from '../../src/common/errors/hub-errors.js';
import { poll } from '../support/poll.js';
import { bearer, startTestHub, type TestHub } from '../support/test-hub.js';

/**
 * The cluster's "files that outlive the job" (api-map §9): files of an ended execution's working
 * directory and its logs copied into the hub's store of results, confined as GET .../files reads,
 * each at most HUB_RESULT_MAX_BYTES (4096 here), then read back, streamed and deleted.
 */

const MAX = 4096;
const UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-00000000f11e';
/** A job's working directory as a hostile job might leave it. */
const SCRIPT = [
  "printf 'hello, results\\n' > text.txt",
  'mkdir -p out sub',
  'head -c 3000 /dev/urandom > out/data.bin',
  `head -c ${MAX + 1} /dev/zero > big.bin`,
  `head -c ${MAX} /dev/zero > exact.bin`,
  ': > empty',
  'ln -s text.txt inner',
  'ln -s /etc/passwd leak',
  'ln -s /etc outdir',
  'ln -s .. up',
  'mkfifo pipe',
  'seq 1 2000',
  'echo oops >&2',
].join(' && ');

async function bytesOf(stream: NodeJS.ReadableStream | Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream as Readable) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
}

describe('files copied out of an execution', () => {
  let hub: TestHub;
  let files: FilesCopiedOut;
  let store: string;
  let executionId: string;
  let work: string;
  let standardId: string;

  /** The job of each execution runToEnd ran. */
  const jobOf = new Map<string, string>();

  /** Runs `script` as a batch job of the administrator's and waits for its execution to end; its id. */
  async function runToEnd(name: string, script: string): Promise<string> {
    const submitted = await hub.inject({
      method: 'POST',
      url: '/api/v2/cluster/jobs',
      headers: bearer(hub.adminToken),
      payload: { name, namespace: 'default', executionProfileId: standardId, task: { command: 'sh', args: ['-c', script] } },
    });
    expect(submitted.statusCode).toBe(201);
    const cluster = hub.app.get(ClusterService);
    const [execution] = await poll(
      () => cluster.executionsOfJob(submitted.json<{ id: string }>().id),
      (executions) => ['completed', 'failed'].includes(executions[0]?.status),
      `job ${name} to end`,
      20_000,
    );
    expect(execution.status).toBe('completed');
    jobOf.set(execution.id, submitted.json<{ id: string }>().id);
    return execution.id;
  }

  beforeAll(async () => {
    hub = await startTestHub({ env: { HUB_RESULT_MAX_BYTES: String(MAX) } });
    files = hub.app.get(FilesCopiedOut);
    store = join(hub.app.get(HubConfig).sharedDir, 'results');
    const profiles = await hub.inject({
      method: 'GET',
      url: '/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard',
      headers: bearer(hub.adminToken),
    });
    standardId = profiles.json<{ data: { _id: string }[] }>().data[0]._id;
    executionId = await runToEnd('results', SCRIPT);
    work = join(hub.app.get(ClusterScheduler).executionDir(executionId), 'work');
  });
  afterAll(() => hub?.close());

  it('makes the store at start, the hub’s alone', () => {
    expect(statSync(store).mode & 0o777).toBe(0o700);
    expect(statSync(store).uid).toBe(process.getuid?.());
  });

  it('copies regular files with their exact bytes, following links that stay inside, and refuses the rest, each saying why', async () => {
    if (process.getuid?.() === 0) writeFileSync(join(work, 'planted'), 'not the job’s'); // root's, in the job's directory: as a hard link would be
    const named = (name: string, path = name) => ({ name, path });
    const copied = await files.copyOut(
      executionId,
      [
        named('text', 'text.txt'),
        named('data', 'out/data.bin'),
        named('exact', 'exact.bin'),
        named('empty'),
        named('a result/ü', 'inner'),
        named('missing'),
        named('missing-in-dir', 'sub/none'),
        named('up', '../x'),
        named('dotdot', 'sub/../text.txt'),
        named('absolute', '/etc/passwd'),
        named('leak'),
        named('through-link', 'outdir/passwd'),
        named('link-to-dir', 'outdir'),
        named('up-link', 'up/logs/stdout'),
        named('pipe'),
        named('dir', 'sub'),
        named('itself', '.'),
        named('big', 'big.bin'),
        named('too-long', `${'a'.repeat(300)}/x`),
        named('', 'text.txt'),
        ...(process.getuid?.() === 0 ? [named('planted')] : []),
      ],
      'runs/r1/node-a',
    );
    const stored = (name: string) => copied.find((file) => file.name === name) as Extract<CopiedFile, { stored: true }>;
    const reason = (name: string) => (copied.find((file) => file.name === name) as Extract<CopiedFile, { stored: false }>).reason;

    expect(copied.filter((file) => file.stored).map((file) => file.name)).toEqual(['text', 'data', 'exact', 'empty', 'a result/ü']);
    expect(stored('text')).toEqual({ name: 'text', path: 'text.txt', stored: true, size: 15, key: 'runs/r1/node-a/files/text' });
    expect(stored('a result/ü')).toEqual({ name: 'a result/ü', path: 'inner', stored: true, size: 15, key: 'runs/r1/node-a/files/a%20result%2F%C3%BC' });
    expect(stored('data').size).toBe(3000);
    expect(stored('exact').size).toBe(MAX);
    expect(stored('empty').size).toBe(0);
    expect(readFileSync(join(store, stored('data').key))).toEqual(readFileSync(join(work, 'out/data.bin')));
    expect(readFileSync(join(store, stored('text').key), 'utf8')).toBe('hello, results\n');
    expect(statSync(join(store, stored('data').key)).mode & 0o777).toBe(0o600);

    expect(reason('missing')).toBe("'missing' is missing from the working directory");
    expect(reason('missing-in-dir')).toContain('missing');
    for (const name of ['up', 'dotdot', 'absolute']) expect([name, reason(name)]).toEqual([name, expect.stringContaining('outside the working directory')]);
    for (const name of ['leak', 'through-link', 'link-to-dir', 'up-link'])
      expect([name, reason(name)]).toEqual([name, expect.stringContaining('a link leading out of the working directory')]);
    expect(reason('leak')).toBe("'leak' is a link leading out of the working directory");
    for (const name of ['pipe', 'dir', 'itself']) expect([name, reason(name)]).toEqual([name, expect.stringContaining('not a regular file')]);
    expect(reason('big')).toBe(`'big.bin' is larger than HUB_RESULT_MAX_BYTES (${MAX} bytes): not stored`);
    expect(reason('too-long')).toMatch(/could not be copied \(ENAMETOOLONG\)$/);
    expect(reason('')).toContain('empty or too long');
    if (process.getuid?.() === 0) expect(reason('planted')).toContain("not the job's own file");
    // Only what was stored is there: no temporary files, nothing of what was refused.
    expect(readdirSync(join(store, 'runs/r1/node-a/files')).sort()).toEqual(['a%20result%2F%C3%BC', 'data', 'empty', 'exact', 'text']);
  });

  it('keeps the last HUB_RESULT_MAX_BYTES of a longer log and says it is truncated', async () => {
    const logs = await files.copyLogs(executionId, 'runs/r1/node-a');
    const stdout = readFileSync(join(work, '..', 'logs', 'stdout'));
    expect(stdout.length).toBeGreaterThan(MAX);
    expect(logs).toEqual([
      { name: 'stdout', size: MAX, key: 'runs/r1/node-a/logs/stdout', truncated: true },
      { name: 'stderr', size: 5, key: 'runs/r1/node-a/logs/stderr', truncated: false },
    ]);
    expect(readFileSync(join(store, 'runs/r1/node-a/logs/stdout'))).toEqual(stdout.subarray(stdout.length - MAX));
    expect(readFileSync(join(store, 'runs/r1/node-a/logs/stderr'), 'utf8')).toBe('oops\n');
  });

  it('copies from the directory a latest attempt carries, as from the execution’s id', async () => {
    const said = await runToEnd('said', 'echo said');
    const cluster = hub.app.get(ClusterService);
    const jobId = jobOf.get(said) as string;
    const attempt = (await cluster.latestAttempts([jobId])).get(jobId);
    expect(attempt).toMatchObject({ executionId: said, executionDir: hub.app.get(ClusterScheduler).executionDir(said) });
    expect(await files.copyLogs(attempt as NonNullable<typeof attempt>, 'runs/r1/said')).toEqual([
      { name: 'stdout', size: 5, key: 'runs/r1/said/logs/stdout', truncated: false },
      { name: 'stderr', size: 0, key: 'runs/r1/said/logs/stderr', truncated: false },
    ]);
    expect(readFileSync(join(store, 'runs/r1/said/logs/stdout'), 'utf8')).toBe('said\n');
  });

  it('keeps a log never written, or empty, as nothing stored (read as empty), and drops an earlier copy of it', async () => {
    const quiet = await runToEnd('quiet', 'true');
    const logsDir = join(hub.app.get(ClusterScheduler).executionDir(quiet), 'logs');
    expect(await files.copyLogs(quiet, 'runs/r1/quiet')).toEqual([
      { name: 'stdout', size: 0, key: 'runs/r1/quiet/logs/stdout', truncated: false },
      { name: 'stderr', size: 0, key: 'runs/r1/quiet/logs/stderr', truncated: false },
    ]);
    // Two empty logs leave nothing in the store, not even a directory.
    expect(existsSync(join(store, 'runs/r1/quiet'))).toBe(false);
    writeFileSync(join(logsDir, 'stdout'), 'said\n');
    rmSync(join(logsDir, 'stderr'));
    expect(await files.copyLogs(quiet, 'runs/r1/quiet')).toEqual([
      { name: 'stdout', size: 5, key: 'runs/r1/quiet/logs/stdout', truncated: false },
      { name: 'stderr', size: 0, key: 'runs/r1/quiet/logs/stderr', truncated: false },
    ]);
    expect(readFileSync(join(store, 'runs/r1/quiet/logs/stdout'), 'utf8')).toBe('said\n');
    expect(existsSync(join(store, 'runs/r1/quiet/logs/stderr'))).toBe(false);
    rmSync(logsDir, { recursive: true });
    expect((await files.copyLogs(quiet, 'runs/r1/quiet')).map(({ size }) => size)).toEqual([0, 0]);
    expect(existsSync(join(store, 'runs/r1/quiet/logs/stdout'))).toBe(false);
  });

  it('reads nothing through a log the job made a link out of its directory, or a log directory it replaced by a link', async () => {
    const hostile = await runToEnd('hostile', 'echo mine');
    const logsDir = join(hub.app.get(ClusterScheduler).executionDir(hostile), 'logs');
    rmSync(join(logsDir, 'stdout'));
    symlinkSync('/etc/passwd', join(logsDir, 'stdout'));
    writeFileSync(join(logsDir, 'stderr'), 'own\n');
    expect(await files.copyLogs(hostile, 'runs/r1/hostile')).toEqual([
      { name: 'stdout', size: 0, key: 'runs/r1/hostile/logs/stdout', truncated: false },
      { name: 'stderr', size: 4, key: 'runs/r1/hostile/logs/stderr', truncated: false },
    ]);
    expect(existsSync(join(store, 'runs/r1/hostile/logs/stdout'))).toBe(false);
    // The whole log directory a link to another directory the hub can read, holding a log of someone else's.
    const elsewhere = mkdtempSync(join(tmpdir(), 'hub-elsewhere-'));
    writeFileSync(join(elsewhere, 'stderr'), 'not the job’s\n');
    rmSync(logsDir, { recursive: true });
    symlinkSync(elsewhere, logsDir);
    expect((await files.copyLogs(hostile, 'runs/r1/hostile')).map(({ size }) => size)).toEqual([0, 0]);
    expect(existsSync(join(store, 'runs/r1/hostile/logs/stderr'))).toBe(false);
    rmSync(elsewhere, { recursive: true });
  });

  it('reads windows of a stored file, from the start and from the end, as text or bytes', async () => {
    const key = 'runs/r1/node-a/logs/stdout';
    const whole = readFileSync(join(store, key));
    const window = async (query: { origin?: unknown; offset?: unknown; limit?: unknown }) => bytesOf((await files.readStored(key, query, 'log')).bytes());
    expect(await window({})).toEqual(whole);
    expect(await window({ origin: 'start', offset: '10', limit: '20' })).toEqual(whole.subarray(10, 30));
    expect(await window({ offset: String(MAX - 3) })).toEqual(whole.subarray(MAX - 3));
    expect(await window({ origin: 'end', limit: '10' })).toEqual(whole.subarray(MAX - 10));
    expect(await window({ origin: 'end', offset: '5', limit: '4' })).toEqual(whole.subarray(MAX - 9, MAX - 5));
    expect(await window({ offset: '99999' })).toEqual(Buffer.alloc(0));
    const text = await bytesOf((await files.readStored('runs/r1/node-a/files/text', {}, 'result')).message());
    expect(JSON.parse(text.toString('utf8'))).toEqual({ msg: 'hello, results\n' });
    await expect(files.readStored(key, { origin: 'middle' }, 'log')).rejects.toBeInstanceOf(InvalidInputError);
    await expect(files.readStored(key, { limit: '0' }, 'log')).rejects.toBeInstanceOf(InvalidInputError);
    await expect(files.readStored('runs/r1/node-a/files/none', {}, "result 'none'")).rejects.toThrow(new NotFoundError("No result 'none'"));
    await expect(files.readStored('runs/r1/node-a/files', {}, 'result')).rejects.toBeInstanceOf(NotFoundError);
    await expect(files.readStored('runs/r1/node-a/files/text/x', {}, 'result')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('streams a whole stored file with its size', async () => {
    const { stream, size } = await files.openStored('runs/r1/node-a/files/data');
    expect(size).toBe(3000);
    expect(await bytesOf(stream)).toEqual(readFileSync(join(work, 'out/data.bin')));
    await expect(files.openStored('runs/r1/node-a/files/none')).rejects.toBeInstanceOf(NotFoundError);
    await expect(files.openStored('runs/r1/node-a/files')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('removes everything under a prefix and nothing else', async () => {
    await files.copyOut(executionId, [{ name: 'text', path: 'text.txt' }], 'runs/r2/node-a');
    await files.remove('runs/r1');
    expect(readdirSync(join(store, 'runs'))).toEqual(['r2']);
    await expect(files.openStored('runs/r1/node-a/files/text')).rejects.toBeInstanceOf(NotFoundError);
    const kept = await files.openStored('runs/r2/node-a/files/text');
    expect(kept.size).toBe(15);
    // Read to its end, which closes the file (an unread stream would leave it for the garbage collector).
    expect(await bytesOf(kept.stream)).toHaveLength(15);
    await files.remove('runs/r1'); // Gone already: no error.
    await files.remove('runs');
    expect(readdirSync(store)).toEqual([]);
  });

  it('refuses a key that could leave the store, and an execution that does not exist', async () => {
    for (const key of ['', '../x', 'runs/../..', '/etc', 'a//b', 'a/', './a', 'a/.tmp-1', 'a b', 'a\0b', 'x'.repeat(256)]) {
      await expect(files.copyOut(executionId, [{ name: 'text', path: 'text.txt' }], key)).rejects.toBeInstanceOf(StoreKeyError);
      await expect(files.copyLogs(executionId, key)).rejects.toBeInstanceOf(StoreKeyError);
      await expect(files.readStored(key, {}, 'result')).rejects.toBeInstanceOf(StoreKeyError);
      await expect(files.openStored(key)).rejects.toBeInstanceOf(StoreKeyError);
      await expect(files.remove(key)).rejects.toBeInstanceOf(StoreKeyError);
    }
    expect(readdirSync(store)).toEqual([]);
    await expect(files.copyOut(UNKNOWN_ID, [], 'runs/r3')).rejects.toBeInstanceOf(NotFoundError);
    await expect(files.copyLogs(UNKNOWN_ID, 'runs/r3')).rejects.toBeInstanceOf(NotFoundError);
  });
});

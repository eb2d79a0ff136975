import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { HubConfig } from '../common/config/hub-config.js';
import { ShippedPrograms } from './shipped-programs.js';
import { startLibraryWorker } from '../libraries/worker-process.js';

/**
 * The library worker is placed under HUB_SHARED_DIR with the packages it imports, whole, once, and
 * readable by every job user: a hub running as root proves it by running the placed worker as the
 * unprivileged user jobs run as (65534), one running as anyone else by running it as itself.
 */
const asRoot = process.getuid?.() === 0;
const JOB_USER = 65534;

let shared: string;
let library: string;
const stops: (() => void)[] = [];

beforeAll(() => {
  shared = mkdtempSync(join(tmpdir(), 'hub-shipped-'));
  chmodSync(shared, 0o755);
  library = join(shared, 'libraries', 'people');
  mkdirSync(library, { recursive: true, mode: 0o755 });
  chmodSync(join(shared, 'libraries'), 0o755);
  writeFileSync(join(library, 'people.csv'), 'id,name\n1,ann\n2,bob\n', { mode: 0o644 });
});

afterAll(() => {
  for (const stop of stops) stop();
  rmSync(shared, { recursive: true, force: true });
});

function walk(root: string, visit: (path: string) => void): void {
  visit(root);
  if (statSync(root).isDirectory()) for (const name of readdirSync(root)) walk(join(root, name), visit);
}

describe('ShippedPrograms.libraryWorker', () => {
  it('places the worker with its packages once, whole, readable by job users, and it runs from there', async () => {
    const programs = new ShippedPrograms({ sharedDir: shared } as HubConfig);
    const placed = await programs.libraryWorker();
    expect(placed.entry.startsWith(join(shared, 'programs', 'library-worker-'))).toBe(true);
    expect(placed.entry.endsWith(join('library-worker', 'libraries', 'worker', 'main.js'))).toBe(true);
    const bundle = join(placed.entry, '..', '..', '..');
    for (const needed of [
      'node_modules/@duckdb/node-api',
      'node_modules/sas7bdat',
      'node_modules/fs-ext',
      'node_modules/peggy',
      'node_modules/pg',
      'libraries/where-filter-grammar.js',
    ]) {
      expect(existsSync(join(bundle, needed))).toBe(true);
    }
    walk(bundle, (path) => {
      const info = statSync(path);
      expect(info.mode & 0o004).toBe(0o004);
      expect(info.mode & 0o022).toBe(0);
      if (info.isDirectory()) expect(info.mode & 0o001).toBe(0o001);
    });
    // Placed once: another hub (another instance) finds the same directory, and no temporary one is left behind.
    expect((await new ShippedPrograms({ sharedDir: shared } as HubConfig).libraryWorker()).entry).toBe(placed.entry);
    expect(readdirSync(join(bundle, '..')).filter((name) => name.endsWith('.tmp'))).toEqual([]);

    const worker = await startLibraryWorker(
      placed,
      { HUB_LIBRARY_ENGINE: 'csv', HUB_LIBRARY_PATH: library },
      asRoot ? { uid: JOB_USER, gid: JOB_USER } : undefined,
    );
    stops.push(() => worker.stop());
    expect((await worker.request('/health', undefined, null)).status).toBe(403);
    const reply = await worker.request('/records', { name: 'people', filter: "name = 'bob'" });
    expect(reply.status).toBe(200);
    expect(await reply.json()).toEqual({
      fields: [
        { name: 'id', type: 'number', label: '', length: 8, format: '' },
        { name: 'name', type: 'string', label: '', length: 3, format: '' },
      ],
      values: [[2, 'bob']],
    });
  });
});

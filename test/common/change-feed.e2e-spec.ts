import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { pino } from 'pino';
import { ChangeFeed, RowCache, type RowChange } from '../../src/common/database/change-feed.js';
import { createDatabaseFromTemplate, databaseUrl, dropDatabase, SERVER_URL_VARIABLE, TEMPLATE_VARIABLE } from '../support/test-database.js';

async function until(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('change feed', () => {
  const serverUrl = process.env[SERVER_URL_VARIABLE] ?? '';
  let database: string;
  let url: string;
  let client: pg.Client;
  let feed: ChangeFeed;
  let userId: string;

  beforeAll(async () => {
    database = await createDatabaseFromTemplate(serverUrl, process.env[TEMPLATE_VARIABLE] ?? '');
    url = databaseUrl(serverUrl, database);
    client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query<{ id: string }>(`INSERT INTO users (user_name, version) VALUES ('feed-user', 1) RETURNING id`);
    userId = rows[0].id;
    feed = new ChangeFeed(url, pino({ level: 'silent' }));
    await feed.start();
  });
  afterAll(async () => {
    await feed.close();
    await client.end();
    await dropDatabase(serverUrl, database);
  });

  it('announces updates and deletes of users, whoever makes them', async () => {
    const changes: (RowChange | 'reset')[] = [];
    feed.subscribe('users', (change) => changes.push(change));
    expect(feed.live).toBe(true);
    await client.query(`UPDATE users SET display_name = 'x' WHERE id = $1`, [userId]);
    await until(() => changes.length === 1);
    expect(changes).toEqual([{ table: 'users', id: userId }]);
    await client.query(`INSERT INTO users (user_name, version) VALUES ('another', 1)`);
    await client.query(`DELETE FROM users WHERE user_name = 'another'`);
    await until(() => changes.length === 2);
    expect((changes[1] as RowChange).table).toBe('users');
  });

  it('keeps a row cache exact: a change drops the row, the next read loads it again', async () => {
    const cache = new RowCache<string>(feed, 'users');
    let loads = 0;
    const load = async (id: string) => {
      loads += 1;
      const { rows } = await client.query<{ display_name: string }>('SELECT display_name FROM users WHERE id = $1', [id]);
      return rows[0]?.display_name ?? null;
    };
    await client.query(`UPDATE users SET display_name = 'first' WHERE id = $1`, [userId]);
    await new Promise((resolve) => setTimeout(resolve, 100)); // Let that change's notification pass.
    expect(await cache.get(userId, load)).toBe('first');
    expect(await cache.get(userId, load)).toBe('first');
    expect(loads).toBe(1);
    await client.query(`UPDATE users SET display_name = 'second' WHERE id = $1`, [userId]);
    // Each read is its own event-loop turn, as requests are: cache hits alone would never let the
    // notification be read from its socket.
    const read = async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return cache.get(userId, load);
    };
    let value = await read();
    for (const deadline = Date.now() + 3000; value !== 'second' && Date.now() < deadline;) value = await read();
    expect(value).toBe('second');
    expect(loads).toBe(2);
  });

  it('does not store a value loaded before an invalidation that arrived while it loaded', async () => {
    const cache = new RowCache<string>(feed, 'users');
    let loads = 0;
    const slowLoad = async () => {
      loads += 1;
      const stale = `value-${loads}`;
      await client.query(`UPDATE users SET display_name = $2 WHERE id = $1`, [userId, stale]);
      await new Promise((resolve) => setTimeout(resolve, 200)); // The change's notification arrives meanwhile.
      return stale;
    };
    await cache.get(userId, slowLoad);
    await cache.get(userId, slowLoad);
    expect(loads).toBe(2);
  });

  it('lets entries expire, in case notifications are lost without the connection dropping', async () => {
    const cache = new RowCache<string>(feed, 'users', 100);
    let loads = 0;
    const load = () => {
      loads += 1;
      return Promise.resolve('value');
    };
    await cache.get(userId, load);
    await cache.get(userId, load);
    expect(loads).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await cache.get(userId, load);
    expect(loads).toBe(2);
  });

  it('goes down with its connection, resets its caches, and comes back', async () => {
    const resets: string[] = [];
    feed.subscribe('users', (change) => change === 'reset' && resets.push('reset'));
    const cache = new RowCache<string>(feed, 'users');
    let loads = 0;
    const load = () => {
      loads += 1;
      return Promise.resolve('cached');
    };
    await cache.get(userId, load);
    await client.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'hub-change-feed' AND datname = $1`, [database]);
    await until(() => !feed.live);
    expect(resets.length).toBeGreaterThanOrEqual(1);
    await cache.get(userId, load);
    await cache.get(userId, load);
    expect(loads).toBe(3); // Nothing is served from the cache while the feed is down.
    await until(() => feed.live, 5000);
    await cache.get(userId, load);
    await cache.get(userId, load);
    expect(loads).toBe(4);
  });
});

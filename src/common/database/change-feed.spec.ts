import { describe, expect, it } from '@jest/globals';
import type { ChangeFeed, RowChange } from './change-feed.js';
import { RowCache } from './change-feed.js';

type Listener = (change: RowChange | 'reset') => void;

/** A change feed that is live and delivers what the test tells it to. */
function fakeFeed(): { feed: ChangeFeed; notify: (table: string, change: RowChange | 'reset') => void } {
  const listeners = new Map<string, Listener[]>();
  const feed = {
    live: true,
    subscribe: (table: string, listener: Listener) => listeners.set(table, [...(listeners.get(table) ?? []), listener]),
  } as unknown as ChangeFeed;
  return { feed, notify: (table, change) => listeners.get(table)?.forEach((listener) => listener(change)) };
}

/** A cache over `users` that also clears on `memberships`, and a counter of loads per id. */
function cacheWithLoads() {
  const { feed, notify } = fakeFeed();
  const cache = new RowCache<string>(feed, 'users').clearOn('memberships');
  const loads: string[] = [];
  const get = (id: string) => cache.get(id, (key) => (loads.push(key), Promise.resolve(`value of ${key}`)));
  return { cache, notify, loads, get };
}

describe('RowCache', () => {
  it('loads a row once, then serves it from the cache', async () => {
    const { loads, get } = cacheWithLoads();
    expect(await get('a')).toBe('value of a');
    expect(await get('a')).toBe('value of a');
    expect(loads).toEqual(['a']);
  });

  it('drops only the changed row on a row change of its table', async () => {
    const { notify, loads, get } = cacheWithLoads();
    await get('a');
    await get('b');
    notify('users', { table: 'users', id: 'a' });
    await get('a');
    await get('b');
    expect(loads).toEqual(['a', 'b', 'a']);
  });

  it('drops everything on a change of its table without an id, on a change of a table it clears on, and on a reset', async () => {
    for (const [table, change] of [
      ['users', { table: 'users' }],
      ['memberships', { table: 'memberships' }],
      ['users', 'reset'],
    ] as const) {
      const { notify, loads, get } = cacheWithLoads();
      await get('a');
      notify(table, change);
      await get('a');
      expect(loads).toEqual(['a', 'a']);
    }
  });

  it('forgets one entry, or all of them, when told to by this process', async () => {
    const { cache, loads, get } = cacheWithLoads();
    await get('a');
    await get('b');
    cache.forget('a');
    await get('a');
    await get('b');
    cache.clear();
    await get('b');
    expect(loads).toEqual(['a', 'b', 'a', 'b']);
  });

  it('does not store a value whose load began before an invalidation', async () => {
    const { feed } = fakeFeed();
    const cache = new RowCache<string>(feed, 'users');
    let release: (value: string) => void = () => undefined;
    const slow = cache.get('a', () => new Promise<string>((resolve) => (release = resolve)));
    cache.forget('a');
    release('stale');
    expect(await slow).toBe('stale');
    expect(await cache.get('a', () => Promise.resolve('fresh'))).toBe('fresh');
  });
});

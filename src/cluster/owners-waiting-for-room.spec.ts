import { describe, expect, it } from '@jest/globals';
import type { ChangeFeed } from '../common/database/change-feed.js';
import { OwnersWaitingForRoom } from './owners-waiting-for-room.js';

type Listener = (change: { id?: string } | 'reset') => void;

/** A change feed whose liveness and notices the test sets. */
function feed(live: boolean) {
  const listeners: Listener[] = [];
  const fake = {
    live,
    subscribe: (_table: string, listener: Listener) => listeners.push(listener),
  };
  return { changes: fake as unknown as ChangeFeed, notify: (change: { id?: string } | 'reset') => listeners.forEach((listener) => listener(change)) };
}

describe('owners waiting for room in their quota', () => {
  it('sends every end to look while unknown: before the first read, and with the feed down', async () => {
    const down = new OwnersWaitingForRoom(feed(false).changes, 't');
    expect(down.mayWait('a')).toBe(true);
    await down.reload(() => Promise.resolve([]));
    expect(down.mayWait('a')).toBe(true);
  });

  it('knows those read and those noticed, even while the read was under way, and forgets them on a reset', async () => {
    const { changes, notify } = feed(true);
    const owners = new OwnersWaitingForRoom(changes, 't');
    owners.listen();
    await owners.reload(() => {
      notify({ id: 'during' });
      return Promise.resolve(['read']);
    });
    expect(['read', 'during', 'other'].map((id) => owners.mayWait(id))).toEqual([true, true, false]);
    notify({ id: 'other' });
    expect(owners.mayWait('other')).toBe(true);
    notify('reset');
    expect(owners.mayWait('anyone')).toBe(true);
  });

  it('drops an owner whose lookup found nothing, unless a notice came while it looked', async () => {
    const { changes, notify } = feed(true);
    const owners = new OwnersWaitingForRoom(changes, 't');
    owners.listen();
    await owners.reload(() => Promise.resolve(['a', 'b']));
    expect(await owners.lookFor('a', () => Promise.resolve(['run']))).toEqual({ found: ['run'], dropped: false });
    expect(owners.mayWait('a')).toBe(true);
    expect(await owners.lookFor('a', () => Promise.resolve([]))).toEqual({ found: [], dropped: true });
    expect(owners.mayWait('a')).toBe(false);
    const raced = await owners.lookFor('b', () => {
      notify({ id: 'b' });
      return Promise.resolve([]);
    });
    expect(raced.dropped).toBe(false);
    expect(owners.mayWait('b')).toBe(true);
  });
});

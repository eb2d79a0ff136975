import type { ChangeFeed } from '../common/database/change-feed.js';

/**
 * The owners some of whose work an area holds back for their quota (a pipeline's nodes, a
 * library's workers), as far as this hub knows: read when the area reconciles, added to by every
 * hub's notice on the change feed (`table`, id: the owner) when one holds work back, dropped when
 * a lookup of theirs finds none. Every job of the cluster ends, and few owners have work waiting:
 * only their jobs' ends send the area to look (api-map §9, workloads started for a user).
 * Unknown — every end looks — while the change feed is down, and before the first read.
 */
export class OwnersWaitingForRoom {
  private owners?: Set<string>;
  /** Owners noticed while a read is under way: the read may not see them yet. */
  private noticedWhileReading?: Set<string>;
  /** Raised by every notice: a lookup that found nothing drops its owner only if none came meanwhile. */
  private notices = 0;

  constructor(
    private readonly changes: ChangeFeed,
    private readonly table: string,
  ) {}

  /** Follows every hub's notices; once, at start. */
  listen(): void {
    this.changes.subscribe(this.table, (change) => {
      if (change === 'reset') this.owners = undefined;
      else if (change.id) this.noticed(change.id);
    });
  }

  /** Reads the owners afresh with `read` (at start, when the feed reconnects); answers what it read. */
  async reload(read: () => Promise<string[]>): Promise<string[]> {
    this.noticedWhileReading = new Set();
    try {
      const owners = await read();
      this.owners = this.changes.live ? new Set([...owners, ...this.noticedWhileReading]) : undefined;
      return owners;
    } finally {
      this.noticedWhileReading = undefined;
    }
  }

  /** Work of `ownerId` was held back (known here at once; the other hubs hear the area's notice). */
  noticed(ownerId: string): void {
    this.notices += 1;
    this.owners?.add(ownerId);
    this.noticedWhileReading?.add(ownerId);
  }

  /** Whether an end of one of `ownerId`'s jobs should send this hub to look for their held-back work. */
  mayWait(ownerId: string): boolean {
    return this.owners === undefined || this.owners.has(ownerId);
  }

  /**
   * Looks for `ownerId`'s held-back work with `lookup` and answers what it found, and whether the
   * owner was dropped (nothing found, and no notice came meanwhile).
   */
  async lookFor<T>(ownerId: string, lookup: () => Promise<T[]>): Promise<{ found: T[]; dropped: boolean }> {
    const notices = this.notices;
    const found = await lookup();
    const dropped = found.length === 0 && notices === this.notices;
    if (dropped) this.owners?.delete(ownerId);
    return { found, dropped };
  }
}

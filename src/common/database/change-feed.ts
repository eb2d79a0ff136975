import pg from 'pg';
import type { Logger } from 'pino';

/**
 * A row of `table` was updated or deleted, or, without `id`, rows of `table` changed in any way
 * (see the ChangeNotifications and Groups migrations).
 */
export interface RowChange {
  readonly table: string;
  readonly id?: string;
}

/**
 * Announces `change` to every hub's feed (this one's included), at the commit of the transaction
 * `runner` is in, or at once outside one: for changes no trigger announces.
 */
export async function announceChange(runner: { query(sql: string, parameters: unknown[]): Promise<unknown> }, change: RowChange): Promise<void> {
  await runner.query(`SELECT pg_notify('${CHANNEL}', $1)`, [JSON.stringify(change)]);
}

/** A row change, or `reset`: the feed was interrupted and changes may have been missed. */
type Listener = (change: RowChange | 'reset') => void;

const CHANNEL = 'hub_changes';
const RETRY_MS = 1000;

/**
 * Row changes pushed by PostgreSQL to this process over a dedicated LISTEN connection, so that
 * caches stay correct whoever changes the database. While the connection is down the feed is not
 * `live`, and nothing may be served from a cache.
 */
export class ChangeFeed {
  private client?: pg.Client;
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly reconnectListeners = new Set<() => void>();
  /** A connection was lost, or an attempt failed, since the feed last connected: the next connection is a reconnection. */
  private interrupted = false;
  private retry?: NodeJS.Timeout;
  private closed = false;
  private isLive = false;

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
  ) {}

  get live(): boolean {
    return this.isLive;
  }

  subscribe(table: string, listener: Listener): void {
    const listeners = this.listeners.get(table) ?? new Set();
    listeners.add(listener);
    this.listeners.set(table, listeners);
  }

  /**
   * Calls `listener` each time the feed is live again after an interruption (a lost connection, or
   * a first attempt that failed): what was announced meanwhile was missed, so that those who act
   * on announcements, not on caches, read the database again.
   */
  onReconnect(listener: () => void): () => void {
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  /** Connects and listens; on failure the feed stays down (caches off) and retries in the background. */
  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, application_name: 'hub-change-feed' });
    client.on('notification', (message) => this.dispatch(message.payload));
    client.on('error', (error) => this.logger.warn({ err: error }, 'Change feed connection failed'));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      this.client = client;
      this.isLive = true;
      if (this.interrupted) this.reconnected();
    } catch (error) {
      this.interrupted = true;
      this.logger.warn({ err: error }, `Change feed unavailable; caches are off until it reconnects`);
      await client.end().catch(() => undefined);
      this.scheduleRetry();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    this.isLive = false;
    await this.client?.end().catch(() => undefined);
  }

  private dispatch(payload: string | undefined): void {
    try {
      const change = JSON.parse(payload ?? '') as RowChange;
      for (const listener of this.listeners.get(change.table) ?? []) listener(change);
    } catch (error) {
      this.logger.error({ err: error, payload }, 'Malformed change notification');
      this.reset();
    }
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.isLive = false;
    this.interrupted = true;
    this.reset();
    if (!this.closed) {
      this.logger.warn('Change feed disconnected; caches are off until it reconnects');
      this.scheduleRetry();
    }
  }

  private reconnected(): void {
    this.interrupted = false;
    for (const listener of this.reconnectListeners)
      try {
        listener();
      } catch (error) {
        this.logger.error({ err: error }, 'A listener to the change feed’s reconnection failed');
      }
  }

  private reset(): void {
    for (const listeners of this.listeners.values()) for (const listener of listeners) listener('reset');
  }

  private scheduleRetry(): void {
    if (this.closed) return;
    this.retry = setTimeout(() => void this.start(), RETRY_MS);
    this.retry.unref();
  }
}

/**
 * A per-process cache of rows of one table, kept exact by the change feed: a change drops the
 * row, an interruption drops everything, and nothing is cached while the feed is down. Entries
 * also expire, in case notifications are lost without the connection dropping (a pooler in
 * transaction mode delivers none). Misses are not cached (ids are UUIDs, never reused).
 */
export class RowCache<V> {
  private readonly entries = new Map<string, { readonly value: V; readonly expires: number }>();
  // Bumped by every invalidation, so that a load that began before one is not stored after it.
  private generation = 0;

  constructor(
    private readonly feed: ChangeFeed,
    table: string,
    private readonly ttlMs = 60_000,
    private readonly maxEntries = 10_000,
  ) {
    feed.subscribe(table, (change) => {
      if (change === 'reset' || change.id === undefined) this.clear();
      else this.forget(change.id);
    });
  }

  /** Also drops every entry when `table` changes: for values built from rows of other tables too. */
  clearOn(table: string): this {
    this.feed.subscribe(table, () => this.clear());
    return this;
  }

  /** Drops one entry now; for this process's own writes, which must show on its next request. */
  forget(id: string): void {
    this.generation += 1;
    this.entries.delete(id);
  }

  clear(): void {
    this.generation += 1;
    this.entries.clear();
  }

  async get(id: string, load: (id: string) => Promise<V | null>): Promise<V | null> {
    if (!this.feed.live) return load(id);
    const cached = this.entries.get(id);
    if (cached && cached.expires > Date.now()) return cached.value;
    const generation = this.generation;
    const value = await load(id);
    if (value !== null && generation === this.generation && this.feed.live) {
      if (this.entries.size >= this.maxEntries) this.entries.clear();
      this.entries.set(id, { value, expires: Date.now() + this.ttlMs });
    }
    return value;
  }
}

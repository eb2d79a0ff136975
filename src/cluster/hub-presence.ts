import pg from 'pg';
import type { Logger } from 'pino';
import { HUB_LOCK_CLASS } from './cluster.repository.js';

const RETRY_MS = 1000;

/**
 * A hub's claim to be alive: a session of its own holding the advisory lock on its number, for as
 * long as the hub runs. When the hub dies, or loses its database, PostgreSQL drops the lock with
 * the session, and hubs sharing its nodes take over what it followed. Its writes stay guarded by
 * its number, so a hub that lost its lock meanwhile never records what another now follows.
 */
export class HubPresence {
  private client?: pg.Client;
  private retry?: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly url: string,
    readonly hub: number,
    private readonly logger: Logger,
  ) {}

  async hold(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, application_name: `hub-presence-${this.hub}` });
    client.on('error', (error) => this.logger.warn({ err: error, hub: this.hub }, 'The hub presence connection failed'));
    client.on('end', () => this.lost(client));
    await client.connect();
    await client.query('SELECT pg_advisory_lock($1, $2)', [HUB_LOCK_CLASS, this.hub]);
    this.client = client;
  }

  async release(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    await this.client?.end().catch(() => undefined);
  }

  private lost(client: pg.Client): void {
    if (this.client !== client || this.closed) return;
    this.client = undefined;
    this.logger.error({ hub: this.hub }, 'The hub lost its presence in the database: other hubs sharing its nodes may take over what it follows');
    this.reconnect();
  }

  private reconnect(): void {
    if (this.closed) return;
    this.retry = setTimeout(() => void this.hold().catch(() => this.reconnect()), RETRY_MS);
    this.retry.unref();
  }
}

import type { OnApplicationShutdown } from '@nestjs/common';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import { DataSource, type DataSourceOptions, type EntitySchema, type MixedList } from 'typeorm';
import { MIGRATIONS } from '../../../migrations/index.js';
import type { HubConfig } from '../config/hub-config.js';
import { StartupError } from '../errors/startup-error.js';
import { ChangeFeed } from './change-feed.js';
import { warnIfPasswordless } from './passwordless-access.js';
import { EmbeddedPostgres } from './embedded-postgres.js';

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- TypeORM's own entity list type
type EntityList = MixedList<Function | string | EntitySchema>;

const MIGRATION_NAMES = MIGRATIONS.map((Migration) => new Migration().name ?? Migration.name);

/** Held while migrating, so that hubs starting together on one database migrate it once. */
const MIGRATION_LOCK = 7_236_267_218_633_830_400n;

/** Options shared by the hub, the test harness and the migration CLI. */
export function dataSourceOptions(url: string, entities: EntityList = [], poolSize = 10): DataSourceOptions {
  return {
    type: 'postgres',
    // The hub's own pg, not one TypeORM loads by name at run time: in the bundle (dist/hub.js) that
    // was a second copy, loaded and set up again at every start, from node_modules.
    driver: pg,
    url,
    entities,
    migrations: MIGRATIONS,
    synchronize: false,
    migrationsRun: false,
    uuidExtension: 'pgcrypto',
    installExtensions: false,
    applicationName: 'hub',
    // A request waits up to 30 s for a connection (a burst of hundreds on a busy host queues for
    // seconds), then is answered 503 with Retry-After (problem.filter.ts), never 500.
    extra: { max: poolSize, connectionTimeoutMillis: POOL_WAIT_MS, idleTimeoutMillis: 30_000 },
  };
}

/** How long a request waits for a connection of the pool. */
export const POOL_WAIT_MS = 30_000;

/** How many of this release's migrations the database records: one cheap query, which fails when there is no migrations table yet. */
async function appliedMigrations(dataSource: DataSource): Promise<number> {
  const [row] = await dataSource.query<{ applied: number }[]>('SELECT count(*)::int AS applied FROM migrations WHERE name = ANY($1)', [MIGRATION_NAMES]);
  return row.applied;
}

/**
 * Applies pending migrations, one hub at a time. A database that already has them all (nearly
 * every start) is told by one query, without the lock and TypeORM's own reading of the table.
 */
export async function migrate(dataSource: DataSource, logger?: Logger): Promise<void> {
  if ((await appliedMigrations(dataSource).catch(() => 0)) === MIGRATION_NAMES.length) return;
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK.toString()]);
    const applied = await dataSource.runMigrations({ transaction: 'all' });
    for (const migration of applied) logger?.info(`Applied migration ${migration.name}`);
  } finally {
    await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK.toString()]).catch(() => undefined);
    await runner.release();
  }
}

/** Where a URL points, without its password, for messages. */
function describeDatabaseUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`;
}

export interface DatabaseReadiness {
  readonly reachable: boolean;
  readonly migrationsApplied: boolean;
}

/**
 * The hub's database: an external PostgreSQL when `DATABASE_URL` is set, otherwise an embedded
 * server on the data directory, behind one TypeORM data source, migrated at start. Closed after
 * the HTTP server has finished its requests.
 */
export class HubDatabase implements OnApplicationShutdown {
  /**
   * The databases being opened or open in this process and not closed. Nest shuts down only an
   * application it finished making, and a provider that fails (a shared directory the hub cannot
   * use) fails the making while the database may still be opening: createHubApp closes those opened
   * meanwhile (closeOpenedSince), whose change feed would otherwise retry its connection for as
   * long as the process lives.
   */
  private static readonly unclosed = new Set<Promise<HubDatabase>>();
  private opening?: Promise<HubDatabase>;
  private closing?: Promise<void>;

  private constructor(
    readonly dataSource: DataSource,
    /** Row changes announced by the database, for the caches of the areas. */
    readonly changes: ChangeFeed,
    private readonly embedded: EmbeddedPostgres | undefined,
    private readonly logger: Logger,
    /** The check for a database that takes the hub's role without a password: run beside the start, which it must not slow (a connection each, about a second on a loaded host). */
    private readonly passwordCheck: Promise<unknown>,
  ) {}

  static open(config: HubConfig, logger: Logger, entities: EntityList): Promise<HubDatabase> {
    const opening = HubDatabase.openNow(config, logger, entities);
    HubDatabase.unclosed.add(opening);
    opening.then(
      (database) => (database.opening = opening),
      () => HubDatabase.unclosed.delete(opening),
    );
    return opening;
  }

  /** What is being opened or open now, to close what is opened after (closeOpenedSince). */
  static openings(): ReadonlySet<Promise<HubDatabase>> {
    return new Set(HubDatabase.unclosed);
  }

  /** Closes the databases opened, or still opening, since `before` (openings). */
  static async closeOpenedSince(before: ReadonlySet<Promise<HubDatabase>>): Promise<void> {
    for (const opening of [...HubDatabase.unclosed].filter((candidate) => !before.has(candidate)))
      await (await opening.catch(() => undefined))?.close().catch(() => undefined);
  }

  private static async openNow(config: HubConfig, logger: Logger, entities: EntityList): Promise<HubDatabase> {
    const embedded = config.databaseUrl ? undefined : await EmbeddedPostgres.start({ dataDir: config.dataDir, stateRoot: config.stateDir, logger });
    const url = config.databaseUrl ?? embedded!.url;
    const dataSource = new DataSource(dataSourceOptions(url, entities, config.databasePoolSize));
    try {
      await dataSource.initialize().catch((error: Error) => {
        throw new StartupError(`Cannot connect to PostgreSQL at ${describeDatabaseUrl(url)}: ${error.message}`);
      });
    } catch (error) {
      await embedded?.stop();
      throw error;
    }
    // The feed's LISTEN needs no migration: it connects while they are checked.
    const changes = new ChangeFeed(url, logger);
    const [migrated] = await Promise.allSettled([migrate(dataSource, logger), changes.start()]);
    if (migrated.status === 'rejected') {
      await changes.close();
      await dataSource.destroy();
      await embedded?.stop();
      throw migrated.reason;
    }
    // Where everything is, in one line: with root's data directory closed to others, not all of it is there.
    const database = embedded ? `${join(embedded.location.openDir, 'postgres')} (embedded PostgreSQL)` : `PostgreSQL at ${describeDatabaseUrl(url)}`;
    logger.info(
      { dataDir: config.dataDir, database, sharedDir: config.sharedDir },
      `Data: settings and secrets in ${config.dataDir}, the database in ${database}, executions' directories in ${config.sharedDir}`,
    );
    return new HubDatabase(
      dataSource,
      changes,
      embedded,
      logger,
      warnIfPasswordless(url, logger).catch(() => undefined),
    );
  }

  /** One query, cheap enough for frequent probes: it reaches the database and counts this release's migrations there. */
  async readiness(): Promise<DatabaseReadiness> {
    try {
      return { reachable: true, migrationsApplied: (await appliedMigrations(this.dataSource)) === MIGRATION_NAMES.length };
    } catch {
      return { reachable: false, migrationsApplied: false };
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.opening) HubDatabase.unclosed.delete(this.opening);
      await this.passwordCheck;
      await this.changes.close();
      if (this.dataSource.isInitialized) await this.dataSource.destroy();
      await this.embedded?.stop();
      this.logger.debug('Database closed');
    })();
    return this.closing;
  }

  onApplicationShutdown(): Promise<void> {
    return this.close();
  }
}

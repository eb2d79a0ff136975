import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { DataSource } from 'typeorm';
import { loadHubConfig } from '../../src/common/config/hub-config.js';
import { EmbeddedPostgres } from '../../src/common/database/embedded-postgres.js';
import { dataSourceOptions, migrate } from '../../src/common/database/hub-database.js';

/** Where the suite's databases live: set by the global setup for every worker. */
export const SERVER_URL_VARIABLE = 'HUB_TEST_SERVER_URL';
export const TEMPLATE_VARIABLE = 'HUB_TEST_TEMPLATE';

export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

async function withClient<T>(serverUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * The PostgreSQL server of a test run: the one of TEST_DATABASE_URL, or an embedded server in a
 * temporary directory, started with the hub's own code and tuned for speed over durability.
 */
export class TestDatabaseServer {
  private constructor(
    readonly url: string,
    private readonly embedded?: EmbeddedPostgres,
    private readonly directory?: string,
  ) {}

  static async start(): Promise<TestDatabaseServer> {
    const external = process.env.TEST_DATABASE_URL;
    if (external) return new TestDatabaseServer(external);
    const directory = mkdtempSync(join(tmpdir(), 'hub-test-pg-'));
    // The run's own directory: the server's user (when the run is root's) may pass through it, so
    // that its files stay here rather than under the state directory.
    chmodSync(directory, 0o711);
    const embedded = await EmbeddedPostgres.start({
      dataDir: directory,
      stateRoot: loadHubConfig(process.env).stateDir,
      logger: pino({ level: 'warn' }),
      settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '300' },
    });
    return new TestDatabaseServer(embedded.urlFor('postgres'), embedded, directory);
  }

  /** A migrated database for the run, from which each test file's database is copied. */
  async createTemplate(): Promise<string> {
    const name = `hub_template_${randomBytes(4).toString('hex')}`;
    await withClient(this.url, (client) => client.query(`CREATE DATABASE ${name}`));
    const dataSource = new DataSource(dataSourceOptions(databaseUrl(this.url, name), [], 2));
    await dataSource.initialize();
    try {
      await migrate(dataSource);
    } finally {
      await dataSource.destroy();
    }
    return name;
  }

  async stop(template: string | undefined): Promise<void> {
    if (template) await dropDatabase(this.url, template);
    await this.embedded?.stop();
    for (const directory of [this.directory, this.embedded?.location.stateDir]) if (directory) rmSync(directory, { recursive: true, force: true });
  }
}

/** A fresh copy of the template; copies made at the same moment are retried, as PostgreSQL serialises them. */
export async function createDatabaseFromTemplate(serverUrl: string, template: string): Promise<string> {
  const name = `hub_test_${randomBytes(6).toString('hex')}`;
  for (let attempt = 1; ; attempt += 1) {
    try {
      await withClient(serverUrl, (client) => client.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
      return name;
    } catch (error) {
      if (attempt >= 20 || !/is being accessed by other users/.test((error as Error).message)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }
}

export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  await withClient(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

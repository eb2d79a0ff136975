import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';

/** Where PostgreSQL's unix sockets usually are: a process on this host reaches the server there too. */
const SOCKET_DIRECTORIES = ['/var/run/postgresql', '/run/postgresql', '/tmp'];
const PROBE_TIMEOUT_MS = 3000;

const isLoopback = (host: string) => host === 'localhost' || (isIP(host) === 4 ? host.startsWith('127.') : host === '::1' || host === '[::1]');

/** Whether PostgreSQL lets `user` into `database` at `host` (an address, or a socket's directory) with no password. */
async function acceptsWithoutPassword(host: string, port: number, user: string, database: string): Promise<boolean> {
  // A password function that gives none: a server that asks for one refuses this connection.
  const client = new pg.Client({ host, port, user, database, password: () => '', connectionTimeoutMillis: PROBE_TIMEOUT_MS });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Warns when the hub's database lets the hub's role in without a password from this host (pg_hba
 * `trust`, or `peer` for a matching unix user): every process on the host, the jobs the hub runs
 * included, could then connect as the hub and read or change everything (docs/security.md).
 * Returns the places it got in through.
 */
export async function warnIfPasswordless(url: string, logger: Logger): Promise<string[]> {
  const parsed = new URL(url);
  const host = parsed.hostname || 'localhost';
  const port = Number(parsed.port || 5432);
  const user = decodeURIComponent(parsed.username || 'postgres');
  const database = decodeURIComponent(parsed.pathname.slice(1)) || user;
  const places = [host, ...(isLoopback(host) ? SOCKET_DIRECTORIES.filter((directory) => existsSync(join(directory, `.s.PGSQL.${port}`))) : [])];
  const accepted = await Promise.all(places.map((place) => acceptsWithoutPassword(place, port, user, database)));
  const open = places.filter((_, index) => accepted[index]).map((place) => (place.startsWith('/') ? `the socket in ${place}` : `${place}:${port}`));
  if (open.length > 0)
    logger.warn(
      { places: open },
      `PostgreSQL lets the hub's role '${user}' into '${database}' without a password from this host (${open.join(', ')}): any process here, every job the hub runs included, can connect as the hub and read or change all of its data. Fix: in pg_hba.conf, use scram-sha-256 (not trust or peer) for this role on the host and local lines that match, give the role a password and put it in DATABASE_URL`,
    );
  return open;
}

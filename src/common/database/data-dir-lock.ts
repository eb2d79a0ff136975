import { linkSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { StartupError } from '../errors/startup-error.js';
import { isRunning, processInfo } from './processes.js';

interface LockRecord {
  readonly pid: number;
  readonly startTime?: string;
  readonly host?: string;
}

function ownRecord(): LockRecord {
  return { pid: process.pid, startTime: processInfo(process.pid)?.startTime, host: hostname() };
}

/**
 * A lock is stale when its hub is gone: no such process, or the id now names another process (or
 * this one). Only the pid is judged, not the host: a container re-created with a new host name on
 * the same volume must not find its data directory locked for good. (A data directory is never
 * shared between hosts; PostgreSQL does not support that either.)
 */
function isStale(record: LockRecord): boolean {
  if (record.pid === process.pid || !isRunning(record.pid)) return true;
  const info = processInfo(record.pid);
  return record.startTime !== undefined && info !== undefined && info.startTime !== record.startTime;
}

function readRecord(file: string): LockRecord | undefined {
  try {
    const record = JSON.parse(readFileSync(file, 'utf8')) as LockRecord;
    return typeof record.pid === 'number' ? record : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Marks a data directory as used by this hub process, so that a second hub on the same directory
 * refuses to start. The lock file appears whole or not at all (hard-linked from a file written
 * first), so no other hub can read it half-written; a lock left by a hub that died is taken over.
 */
export class DataDirLock {
  private readonly releaseOnExit = () => this.release();

  private constructor(private readonly file: string) {
    // Held until released, or until the process exits, however it exits short of SIGKILL.
    process.once('exit', this.releaseOnExit);
  }

  static acquire(dataDir: string): DataDirLock {
    const file = join(dataDir, 'hub.lock');
    const draft = `${file}.${process.pid}`;
    writeFileSync(draft, JSON.stringify(ownRecord()), { mode: 0o644 });
    try {
      for (let attempt = 0; attempt < 3; attempt += 1) {
        try {
          linkSync(draft, file);
          return new DataDirLock(file);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
        const holder = readRecord(file);
        if (holder && !isStale(holder)) {
          const where = holder.host && holder.host !== hostname() ? `pid ${holder.pid} on ${holder.host}` : `pid ${holder.pid}`;
          throw new StartupError(
            `Another hub (${where}) is using the data directory ${dataDir}. Stop it first, or give this hub its own ` +
              `HUB_DATA_DIR, or a DATABASE_URL. If no such hub runs, delete ${file}.`,
          );
        }
        rmSync(file, { force: true });
      }
      throw new StartupError(`Could not lock the data directory ${dataDir}: another hub is starting on it`);
    } finally {
      rmSync(draft, { force: true });
    }
  }

  /** Gives the directory up, unless another process has taken the lock over meanwhile. */
  release(): void {
    process.removeListener('exit', this.releaseOnExit);
    if (readRecord(this.file)?.pid !== process.pid) return;
    try {
      unlinkSync(this.file);
    } catch {
      // Already gone: nothing to give up.
    }
  }
}

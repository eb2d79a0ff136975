import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { StartupError } from '../errors/startup-error.js';
import { isRunning, processInfo } from './processes.js';

interface LockRecord {
  readonly pid: number;
  readonly startTime?: string;
  readonly host: string;
}

function ownRecord(): LockRecord {
  return { pid: process.pid, startTime: processInfo(process.pid)?.startTime, host: hostname() };
}

/** A lock is stale when its hub is gone: no such process, or the id now names another process. */
function isStale(record: LockRecord): boolean {
  if (record.host !== hostname()) return false;
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
 * refuses to start. A lock left by a hub that crashed is taken over.
 */
export class DataDirLock {
  private constructor(private readonly file: string) {}

  static acquire(dataDir: string): DataDirLock {
    const file = join(dataDir, 'hub.lock');
    for (let attempt = 0; attempt < 3; attempt += 1) {
      try {
        const fd = openSync(file, 'wx', 0o644);
        writeSync(fd, JSON.stringify(ownRecord()));
        closeSync(fd);
        return new DataDirLock(file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = readRecord(file);
      if (holder && !isStale(holder)) {
        const where = holder.host === hostname() ? `pid ${holder.pid}` : `pid ${holder.pid} on ${holder.host}`;
        throw new StartupError(
          `Another hub (${where}) is using the data directory ${dataDir}. Stop it first, or give this hub its own ` +
            `HUB_DATA_DIR, or a DATABASE_URL. If no such hub runs, delete ${file}.`,
        );
      }
      try {
        unlinkSync(file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
    throw new StartupError(`Could not lock the data directory ${dataDir}: another hub is starting on it`);
  }

  /** Gives the directory up, unless another process has taken the lock over meanwhile. */
  release(): void {
    if (readRecord(this.file)?.pid !== process.pid) return;
    try {
      unlinkSync(this.file);
    } catch {
      // Already gone: nothing to give up.
    }
  }
}

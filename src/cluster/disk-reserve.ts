import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { stat, statfs } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join, sep } from 'node:path';
import { promisify } from 'node:util';
import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import type { Logger } from 'pino';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { locateData } from '../common/data-location.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import { ClusterScheduler } from './cluster-scheduler.js';
import { ClusterRepository, taskEvent } from './cluster.repository.js';
import { CLUSTER_DRIVER, type ClusterDriver } from './drivers/cluster-driver.js';
import { emptyWorkDir, keepLogTails, removeExecutionDir } from './drivers/execution-dir.js';
import { PRIVILEGED_ENV, systemProgram } from './drivers/host-tools.js';

const run = promisify(execFile);
const MIB = 1024 * 1024;
/** How often the hub looks at the disk: one statfs; the sizes of running executions only near the reserve, or for maxDiskMiB. */
const LOOK_MS = 1000;
/** How often the timer asks whether a look is due, by the hub's clock (which a test stands still and moves). */
const CHECK_MS = 250;
/** The default reserve: this share of the filesystem, at most DEFAULT_RESERVE_MAX_MIB. */
const DEFAULT_RESERVE_SHARE = 0.1;
const DEFAULT_RESERVE_MAX_MIB = 1024;
/** Running executions are measured (each look) once free space is below this many reserves, so that their growth is known when it falls below one. */
const WATCH_ZONE = 2;
/** Growth below this between two looks is no one's filling the disk (a task's first files, a log line), and evicts no one. */
const MIN_GROWTH = MIB;
/** What an evicted execution keeps of each log. */
const KEPT_LOG_BYTES = MIB;
const RECLAIM_BATCH = 200;
/** A `du` over a job's million files may take a while; it never holds a look longer than this. */
const MEASURE_TIMEOUT_MS = 60_000;

/** The filesystem of the executions' directories as one look sees it, in bytes. */
interface DiskState {
  readonly free: number;
  readonly total: number;
  readonly reserve: number;
}

/** A running execution as a look sees it. */
interface Watched {
  readonly id: string;
  readonly executionDir: string;
  readonly maxDiskMiB: number | null;
  readonly size: number;
  /** Bytes since the last look that measured it (since its start, when none did). */
  readonly growth: number;
}

function mib(bytes: number): number {
  return Math.round(bytes / MIB);
}

/** Runs `du` and resolves with what it printed, also when it complained of a directory gone meanwhile. */
async function du(program: string, dirs: readonly string[]): Promise<string> {
  try {
    // -l: a file linked into two directories counts in both, so that no execution hides its size behind another's.
    return (await run(program, ['-s', '-l', '-x', '-B1', '--', ...dirs], { env: PRIVILEGED_ENV, timeout: MEASURE_TIMEOUT_MS, maxBuffer: 16 * MIB })).stdout;
  } catch (error) {
    const { stdout } = error as { stdout?: string };
    if (stdout) return stdout;
    throw error;
  }
}

/**
 * The free-space reserve on the filesystem of the executions' directories (local driver), as
 * Kubernetes' kubelet evicts a pod past its ephemeral storage. Each look (each second) reads the
 * filesystem's free space; near the reserve, and for executions whose profile sets `maxDiskMiB`,
 * it measures each running execution (its working directory and its logs). Below the reserve it
 * ends the running execution that grew most since the last look (by a MiB or more) `failed` with `LimitExceeded`
 * (`details.limit` `disk`), empties its working directory and cuts its logs to their last MiB, so
 * that the space returns; when no running execution grew (ended executions and other files hold
 * the disk), it reclaims the directories of the longest-ended executions instead, never a running
 * one's. An execution past its profile's `maxDiskMiB` is ended the same way (`details.limit`
 * `maxDiskMiB`). While free space is below the reserve the scheduler starts nothing.
 *
 * Hubs on one database may share the filesystem (one host): a look that would evict or reclaim
 * holds a transaction-scoped advisory lock named after the host and the filesystem, so that one
 * breach costs one eviction, and each execution is ended under its row lock (see
 * ExecutionStops.stopExecution), only if it still runs.
 */
@Injectable()
export class DiskReserve implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly enabled: boolean;
  private readonly executionsDir: string;
  private readonly du = systemProgram('du');
  private nodeIds: string[] = [];
  /** Each running execution's size at the last look that measured it. */
  private readonly sizes = new Map<string, number>();
  private lastLook = -Infinity;
  private looking?: Promise<void>;
  /** The last ended execution the reclaim went past: those before it have no directory left. */
  private reclaimedUpTo?: { modified: string; id: string };
  private below = false;
  private stopped = false;
  private readonly logger: Logger;

  constructor(
    private readonly config: HubConfig,
    private readonly cluster: ClusterRepository,
    private readonly scheduler: ClusterScheduler,
    @Inject(CLUSTER_DRIVER) private readonly driver: ClusterDriver,
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    logger: HubLogger,
  ) {
    this.logger = logger.for('disk-reserve');
    this.enabled = config.clusterDriver === 'local';
    this.executionsDir = join(config.sharedDir, 'executions');
    if (this.enabled && !this.du) this.logger.warn('du is missing: the disk reserve sees free space but not what each execution holds, and evicts none');
  }

  /**
   * Says at start what the reserve covers: the embedded PostgreSQL (in the data directory's
   * `postgres/`) shares the executions' filesystem unless HUB_SHARED_DIR moves them; the reserve is
   * then its room, which jobs cannot take for longer than a look.
   */
  async onApplicationBootstrap(): Promise<void> {
    if (!this.enabled) return;
    const disk = await this.disk();
    const fields = { reserveMiB: mib(disk.reserve), filesystemMiB: mib(disk.total), dir: this.existingDir() };
    const database = this.config.databaseUrl ? undefined : join(locateData(this.config.dataDir, this.config.stateDir).openDir, 'postgres');
    const shared = database !== undefined && existsSync(database) && (await stat(database)).dev === (await stat(this.existingDir())).dev;
    if (shared && disk.reserve === 0)
      this.logger.warn(fields, "HUB_MIN_FREE_DISK_MIB is 0: jobs may fill the filesystem the embedded PostgreSQL shares with the executions' directories");
    else
      this.logger.info(
        fields,
        `Disk reserve: ${fields.reserveMiB} MiB kept free on the executions' filesystem${shared ? ', which the embedded PostgreSQL shares' : ''}`,
      );
  }

  /** A look under way ends before the database goes. */
  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.looking?.catch(() => undefined);
  }

  @Interval('disk-reserve', CHECK_MS)
  async onSchedule(): Promise<void> {
    if (!this.enabled || this.stopped || this.clock.now().getTime() - this.lastLook < LOOK_MS) return;
    try {
      await this.look();
    } catch (error) {
      this.logger.error({ err: error }, 'The disk reserve could not look at the disk; looking again shortly');
    }
  }

  /** One look (see the class); a caller while one is under way shares it. */
  look(): Promise<void> {
    this.looking ??= this.lookOnce().finally(() => (this.looking = undefined));
    return this.looking;
  }

  private async lookOnce(): Promise<void> {
    this.lastLook = this.clock.now().getTime();
    if (this.nodeIds.length === 0) this.nodeIds = (await this.cluster.nodesNamed((await this.driver.nodes()).map((node) => node.name))).map((node) => node.id);
    let disk = await this.disk();
    const running = await this.watched(disk);
    for (const execution of running)
      if (execution.maxDiskMiB !== null && execution.size > execution.maxDiskMiB * MIB)
        await this.evict(
          execution,
          'maxDiskMiB',
          `Ended for running past its execution profile's maxDiskMiB (${execution.maxDiskMiB} MiB): its working directory and logs held ${mib(execution.size)} MiB`,
        );
    disk = await this.disk();
    if (disk.free < disk.reserve) disk = await this.relieve(running);
    this.hold(disk);
  }

  /** The running executions on this hub's node, measured when free space is near the reserve or their profile sets maxDiskMiB. */
  private async watched(disk: DiskState): Promise<Watched[]> {
    const running = await this.cluster.runningIn(this.nodeIds, this.executionsDir + sep);
    const ids = new Set(running.map((execution) => execution.id));
    for (const id of this.sizes.keys()) if (!ids.has(id)) this.sizes.delete(id);
    const near = disk.free < WATCH_ZONE * disk.reserve;
    const measured = running.filter((execution) => near || execution.maxDiskMiB !== null);
    const sizes = await this.measure(measured.map((execution) => execution.executionDir));
    return measured.flatMap((execution) => {
      const size = sizes.get(execution.executionDir);
      if (size === undefined) return [];
      const growth = size - (this.sizes.get(execution.id) ?? 0);
      this.sizes.set(execution.id, size);
      return [{ ...execution, size, growth }];
    });
  }

  /** The bytes each directory takes on the disk (blocks, not apparent sizes: a sparse file takes little). */
  private async measure(dirs: readonly string[]): Promise<Map<string, number>> {
    const sizes = new Map<string, number>();
    if (dirs.length === 0 || !this.du) return sizes;
    for (const line of (await du(this.du, dirs)).split('\n')) {
      const tab = line.indexOf('\t');
      if (tab > 0) sizes.set(line.slice(tab + 1), Number(line.slice(0, tab)));
    }
    return sizes;
  }

  /**
   * Below the reserve, under the filesystem's lock: evicts the running execution that grew most,
   * or, when none grew, reclaims the longest-ended executions' directories. Resolves with the disk
   * as it is then.
   */
  private async relieve(running: readonly Watched[]): Promise<DiskState> {
    const { dev } = await stat(this.existingDir());
    return this.dataSource.transaction(async (manager) => {
      const [{ locked }]: { locked: boolean }[] = await manager.query('SELECT pg_try_advisory_xact_lock(hashtext($1)) AS locked', [
        `hub-disk-reserve:${hostname()}:${dev}`,
      ]);
      let disk = await this.disk();
      // Another hub on this filesystem is at it: what it frees shows at the next look.
      if (!locked || disk.free >= disk.reserve) return disk;
      const grown = running.filter((execution) => execution.growth >= MIN_GROWTH && this.sizes.has(execution.id)).sort((a, b) => b.growth - a.growth);
      const [top] = grown;
      if (top)
        await this.evict(
          top,
          'disk',
          `Ended for filling the disk: the filesystem of the executions' directories had ${mib(disk.free)} MiB free, below the hub's reserve of ${mib(disk.reserve)} MiB, and this execution grew most (${mib(top.growth)} MiB since the last look; it held ${mib(top.size)} MiB)`,
        );
      else await this.reclaim(disk.reserve);
      disk = await this.disk();
      return disk;
    });
  }

  /** Ends a running execution for a disk limit, and gives back what it took: its working directory, and its logs but their last MiB. */
  private async evict(execution: Watched, limit: 'disk' | 'maxDiskMiB', message: string): Promise<void> {
    this.sizes.delete(execution.id);
    // Only if it still runs (under its row lock): another hub may have ended it meanwhile.
    if (!(await this.scheduler.stopExecution(execution, taskEvent('LimitExceeded', message, { limit }), 'running'))) return;
    try {
      await emptyWorkDir(execution.executionDir);
      await keepLogTails(execution.executionDir, KEPT_LOG_BYTES);
    } catch (error) {
      this.logger.warn({ err: error, executionId: execution.id }, 'Could not empty all of an evicted execution’s directory');
    }
    this.logger.warn({ executionId: execution.id, limit, heldMiB: mib(execution.size) }, 'Ended an execution for the disk');
  }

  /** Deletes the directories of the longest-ended executions, oldest first, until free space is back above `reserve` or none is left. */
  private async reclaim(reserve: number): Promise<void> {
    let reclaimed = 0;
    try {
      for (;;) {
        const batch = await this.cluster.endedIn(this.executionsDir + sep, this.reclaimedUpTo, RECLAIM_BATCH);
        if (batch.length === 0) return;
        for (const ended of batch) {
          this.reclaimedUpTo = { modified: ended.modified, id: ended.id };
          if (!existsSync(ended.executionDir)) continue;
          const failure = await removeExecutionDir(ended.executionDir);
          if (failure) this.logger.warn({ err: failure, dir: ended.executionDir }, 'Could not delete all of a reclaimed execution’s directory');
          reclaimed += 1;
          if ((await this.disk()).free >= reserve) return;
        }
      }
    } finally {
      if (reclaimed > 0) this.logger.warn({ executions: reclaimed }, "Reclaimed ended executions' directories, oldest first, for the disk reserve");
    }
  }

  /** Starts nothing while free space is below the reserve; says so when that changes. */
  private hold(disk: DiskState): void {
    const below = disk.free < disk.reserve;
    if (below === this.below) return;
    this.below = below;
    const fields = { freeMiB: mib(disk.free), reserveMiB: mib(disk.reserve) };
    if (below) this.logger.warn(fields, "Free space is below the reserve on the executions' filesystem: no execution starts until it is back");
    else this.logger.info(fields, "Free space is back above the reserve on the executions' filesystem: executions start again");
    this.scheduler.holdStarts(below ? `free disk space below the reserve (${fields.freeMiB} of ${fields.reserveMiB} MiB)` : undefined);
  }

  /** The executions' directory, or the nearest directory above it that exists (there are none before the first launch). */
  private existingDir(): string {
    let dir = this.executionsDir;
    while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
    return dir;
  }

  private async disk(): Promise<DiskState> {
    // What an unprivileged user may still write (blocks reserved for root aside): jobs and PostgreSQL are such users.
    const { bavail, blocks, bsize } = await statfs(this.existingDir());
    const total = blocks * bsize;
    const reserve =
      this.config.minFreeDiskMiB !== undefined ? this.config.minFreeDiskMiB * MIB : Math.min(total * DEFAULT_RESERVE_SHARE, DEFAULT_RESERVE_MAX_MIB * MIB);
    return { free: bavail * bsize, total, reserve };
  }
}

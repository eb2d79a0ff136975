import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { DataSource, type EntityManager } from 'typeorm';
import { GroupsService } from '../auth/groups.service.js';
import { ClusterService } from '../cluster/cluster.service.js';
import { Clock, type CancelTimer } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { ChangeFeed } from '../common/database/change-feed.js';
import { HubError, RefusedError } from '../common/errors/hub-errors.js';
import type { Caller } from '../common/http/caller.js';
import { PipelineRunsService } from './pipeline-runs.service.js';
import { PipelineTriggersRepository, type NewFiring, type SeenFile, type TriggerRow } from './pipeline-triggers.repository.js';
import { matchingFiles, resolvedWatchedPath } from './trigger-files.js';
import { dueAfter, dueToFire } from './trigger-schedule.js';

/** Triggers claimed per transaction: their row locks are held while their runs are created. */
const CLAIM_BATCH = 20;
/**
 * Claim transactions a hub runs at once when many triggers are due together: a firing waits on the
 * database and on other services more than it computes, so two halve the time a minute's firings
 * take; each holds a pooled connection, and its firings borrow others.
 */
const PARALLEL_PASSES = 2;
/** How soon a hub looks again at a due trigger that another hub holds (it is firing it). */
const HELD_RETRY_MS = 250;
const PRUNE_INTERVAL_MS = 3600_000;
const PRUNE_BATCH = 1000;

/** Why a firing could not start a run, as its `error` says it. */
function errorOf(error: unknown): string {
  if (error instanceof RefusedError && error.problems.length > 0) return error.problems.join('; ');
  return (error as Error).message || 'The run could not be created';
}

/** The user a trigger's runs are owned by, as a caller (its groups as they are now). */
export async function ownerOf(groups: GroupsService, trigger: { readonly ownerId: string; readonly ownerName: string }): Promise<Caller> {
  return { userId: trigger.ownerId, userName: trigger.ownerName, groups: await groups.effectiveGroupIds(trigger.ownerId) };
}

/** What one claimed trigger fires: the due instant and, for a File trigger, one firing per file. */
interface Firing {
  readonly kind: NewFiring['kind'];
  readonly triggerTime: Date;
  readonly file?: SeenFile;
  /** Known refused before any run is tried. */
  readonly refused?: string;
}

/**
 * Fires due triggers, exactly once per due time whatever the number of hubs (api-map §7): a hub
 * claims due triggers with `FOR UPDATE SKIP LOCKED` (another hub's claims are skipped, not waited
 * for), records each firing under its unique claim key with the run it started in the same
 * transaction, and moves the trigger's `next_due` on before it commits. Between due times it
 * sleeps on one timer, set for the earliest `next_due` in the database, re-read whenever the
 * change feed announces a change of the triggers (made by any hub). A due time found passed with
 * later ones passed too (no hub ran) fires once, for the latest of them, and is logged.
 */
@Injectable()
export class TriggerFiringLoop implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('TriggerFirings');
  private timer?: CancelTimer;
  private running?: Promise<void>;
  private again = false;
  private rearming = false;
  private stopped = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly triggers: PipelineTriggersRepository,
    private readonly groups: GroupsService,
    private readonly runs: PipelineRunsService,
    private readonly cluster: ClusterService,
    private readonly clock: Clock,
    private readonly config: HubConfig,
    changes: ChangeFeed,
  ) {
    // A change of a trigger (by this hub or another) may set an earlier due time: read it again. After an interruption, look for due work.
    changes.subscribe('pipeline_triggers', (change) => (change === 'reset' ? void this.wake() : this.rearmSoon()));
    changes.onReconnect(() => void this.wake());
  }

  /** Fires what came due while no hub ran (the catch-up), then sleeps until the next due time. */
  onApplicationBootstrap(): void {
    void this.wake();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    this.timer?.();
    await this.running;
  }

  /** Fires whatever is due now, then sleeps until the next due time; resolves when that is done (a pass already running runs once more). */
  wake(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.loop().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /**
   * Called after this hub changed a trigger: sets the timer before the request answers (other hubs
   * learn of it through the change feed).
   */
  async changed(): Promise<void> {
    if (this.running) this.again = true;
    else await this.rearm();
  }

  @Interval('trigger-firing-prune', PRUNE_INTERVAL_MS)
  async prune(now = this.clock.now().getTime()): Promise<number> {
    const pruned = await this.triggers.pruneFirings(new Date(now - this.config.runRetentionDays * 24 * 3600 * 1000), PRUNE_BATCH);
    if (pruned > 0) this.logger.log(`Pruned ${pruned} trigger firings past their retention`);
    return pruned;
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.again = false;
        // Passes side by side, each claiming its own batch (SKIP LOCKED), while batches come back full.
        while (!this.stopped && (await Promise.all(Array.from({ length: PARALLEL_PASSES }, () => this.pass()))).some((claimed) => claimed === CLAIM_BATCH));
      } while (this.again && !this.stopped);
    } catch (error) {
      this.logger.error({ err: error }, 'Firing due triggers failed; trying again shortly');
      this.arm(new Date(this.clock.now().getTime() + 1000));
      return;
    }
    await this.rearm();
  }

  private rearmSoon(): void {
    if (this.running || this.rearming || this.stopped) return;
    this.rearming = true;
    void this.rearm().finally(() => {
      this.rearming = false;
    });
  }

  /** Sets the one timer for the earliest due time the database holds. */
  private async rearm(): Promise<void> {
    try {
      const earliest = await this.triggers.earliestDue();
      if (!earliest) return this.arm(undefined);
      const now = this.clock.now().getTime();
      // Due already, yet not fired by this pass: another hub holds it, and is firing it.
      this.arm(earliest.getTime() <= now ? new Date(now + HELD_RETRY_MS) : earliest);
    } catch (error) {
      this.logger.warn({ err: error }, 'Could not read the next due time of the triggers; trying again shortly');
      this.arm(new Date(this.clock.now().getTime() + 1000));
    }
  }

  private arm(at: Date | undefined): void {
    this.timer?.();
    this.timer = undefined;
    if (at && !this.stopped) this.timer = this.clock.setTimer(at, () => this.wake());
  }

  /** One transaction: claims up to a batch of due triggers and fires them; how many it claimed. */
  private async pass(): Promise<number> {
    const started: string[] = [];
    const claimed = await this.dataSource.transaction(async (manager) => {
      const now = this.clock.now();
      const due = await this.triggers.claimDue(manager, now, CLAIM_BATCH);
      for (const trigger of due) started.push(...(await this.fire(manager, trigger, now.getTime())));
      return due.length;
    });
    this.runs.advanceStarted(started);
    return claimed;
  }

  /** Fires one claimed trigger at its due time (or the latest one passed) and moves it on; the runs it started. */
  private async fire(manager: EntityManager, trigger: TriggerRow, now: number): Promise<string[]> {
    const anchor = Date.parse(trigger.enabledAt);
    const due = Date.parse(trigger.nextDue as string);
    const at = dueToFire(trigger.spec, anchor, due, now);
    if (at > due && trigger.type === 'Cron')
      this.logger.log(
        `Trigger ${trigger.id} missed its due times from ${new Date(due).toISOString()} on (no hub fired them): catching up once, for the latest, ${new Date(at).toISOString()}`,
      );
    const firings = await this.firingsOf(manager, trigger, new Date(at));
    const started: string[] = [];
    let owner: Caller | undefined;
    for (const firing of firings) {
      owner ??= await ownerOf(this.groups, trigger);
      const runId = await this.startRun(manager, trigger, owner, firing);
      if (runId) started.push(runId);
    }
    const next = dueAfter(trigger.spec, anchor, Math.max(now, at));
    await this.triggers.advance(manager, trigger.id, next === null ? null : new Date(next), firings.length > 0 ? new Date(at) : null);
    return started;
  }

  /** What a claimed trigger fires at `at`: the due time (Cron), the files that arrived (Arrival) or are there (Existence). */
  private async firingsOf(manager: EntityManager, trigger: TriggerRow, at: Date): Promise<Firing[]> {
    if (trigger.spec.type === 'Cron') return [{ kind: 'Cron', triggerTime: at }];
    const { path, pattern, recursive, event } = trigger.spec;
    let files: SeenFile[];
    try {
      const identity = await this.cluster.jobIdentityOf({ id: trigger.ownerId, name: trigger.ownerName });
      const directory = await resolvedWatchedPath(path as string, this.config.triggerFileRoots);
      if (directory === 'outside')
        return [
          {
            kind: 'Existence',
            triggerTime: at,
            file: { path: path as string, size: 0, mtime: at },
            refused: `path '${path}' now leads outside HUB_TRIGGER_FILE_ROOTS (a symbolic link changed): nothing there is read`,
          },
        ];
      files = directory === null ? [] : await matchingFiles(directory.real, pattern as string, recursive ?? false, identity);
    } catch (error) {
      if (!(error instanceof HubError)) throw error;
      // The owner's job identity is refused now: one failed firing per poll, keyed by the directory, says so.
      return [{ kind: 'Existence', triggerTime: at, file: { path: path as string, size: 0, mtime: at }, refused: errorOf(error) }];
    }
    if (event === 'Existence') return files.map((file) => ({ kind: 'Existence', triggerTime: at, file }));
    return (await this.triggers.arrivals(manager, trigger.id, files)).map((file) => ({ kind: 'Arrival', triggerTime: at, file }));
  }

  /**
   * Starts the run of one firing and records the firing, in a savepoint of the claim's transaction:
   * a refusal records a Failed firing instead; a claim key fired already (never under the row
   * lock, but the key is what guarantees it) undoes the run.
   */
  private async startRun(manager: EntityManager, trigger: TriggerRow, owner: Caller, firing: Firing): Promise<string | null> {
    const record = (runId: string | null, error: string | null) =>
      this.triggers.insertFiring(manager, { triggerId: trigger.id, triggerTime: firing.triggerTime, kind: firing.kind, file: firing.file, runId, error });
    if (firing.refused) {
      await record(null, firing.refused);
      return null;
    }
    await manager.query('SAVEPOINT firing');
    try {
      const runId = await this.runs.startForTrigger(
        owner,
        {
          pipelineId: trigger.pipelineId,
          executionProfileId: trigger.executionProfileId,
          environment: firing.file ? [{ name: 'HUB_TRIGGER_FILE', value: firing.file.path }] : [],
        },
        manager,
      );
      if (await record(runId, null)) {
        await manager.query('RELEASE SAVEPOINT firing');
        return runId;
      }
      await manager.query('ROLLBACK TO SAVEPOINT firing');
      return null;
    } catch (error) {
      if (!(error instanceof HubError)) throw error;
      await manager.query('ROLLBACK TO SAVEPOINT firing');
      await record(null, errorOf(error));
      this.logger.warn(`Trigger ${trigger.id} fired at ${firing.triggerTime.toISOString()} but started no run: ${errorOf(error)}`);
      return null;
    }
  }
}

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
import type { IdentifiedRun } from './pipeline-runs.repository.js';
import { PipelineRunsService, type TriggerRunRequest } from './pipeline-runs.service.js';
import { PipelineTriggersRepository, type NewFiring, type SeenFile, type TriggerAdvance, type TriggerRow } from './pipeline-triggers.repository.js';
import { matchingFiles, resolvedWatchedPath } from './trigger-files.js';
import { dueAfter, dueToFire } from './trigger-schedule.js';

/**
 * Triggers claimed per transaction: their row locks are held while their runs are built, and all
 * their firings, runs and nodes are written in two statements. The cost of a batch is mostly its
 * round trips to the database and the checks of its distinct (pipeline, owner, profile), not its
 * size: 1000 make 10,000 triggers due together ten batches.
 */
const CLAIM_BATCH = 1000;
/**
 * Claim transactions a hub runs at once when many triggers are due together: one batch's checks and
 * statements wait on the database while the other's are built; each holds a pooled connection, and
 * its checks borrow others.
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

/** A claimed trigger, planned: what it fires, and where it goes on. */
interface Planned {
  readonly trigger: TriggerRow;
  readonly firings: readonly Firing[];
  readonly advance: TriggerAdvance;
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

  /**
   * Fires until nothing is due. The runs created wait to be fed to the engine until everything due
   * has fired (PipelineRunsService.holdStarts): each is a pass of the engine and a job, which,
   * started while thousands of firings remain, would take the database and the event loop from them.
   */
  private async loop(): Promise<void> {
    // Passes side by side, each claiming its own batches (SKIP LOCKED) while they come back full; neither waits for the other's.
    const passes = async () => {
      while (!this.stopped) {
        const pass = await this.pass();
        this.runs.advanceStarted(pass.started);
        if (pass.claimed < CLAIM_BATCH) return;
      }
    };
    this.runs.holdStarts(true);
    try {
      do {
        this.again = false;
        // A pass that failed rolled back; the runs of one that committed beside it start all the same.
        const failed = (await Promise.allSettled(Array.from({ length: PARALLEL_PASSES }, passes))).find((pass) => pass.status === 'rejected');
        if (failed) throw failed.reason;
      } while (this.again && !this.stopped);
    } catch (error) {
      this.logger.error({ err: error }, 'Firing due triggers failed; trying again shortly');
      this.arm(new Date(this.clock.now().getTime() + 1000));
      return;
    } finally {
      this.runs.holdStarts(false);
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

  /**
   * One transaction: claims up to a batch of due triggers and fires them together. Their runs are
   * built with one check per distinct (pipeline, owner, profile); then every firing is recorded and
   * every trigger moved on in one statement, and the runs whose firings were recorded are written
   * in one more. A due time is never recorded without its run, nor its run created twice; a
   * refusal is a Failed firing. How many it claimed, and the runs it created (to start after the
   * commit).
   */
  private async pass(): Promise<{ claimed: number; started: string[] }> {
    return this.dataSource.transaction(async (manager) => {
      const now = this.clock.now();
      const due = await this.triggers.claimDue(manager, now, CLAIM_BATCH);
      if (due.length === 0) return { claimed: 0, started: [] };
      const planned: Planned[] = [];
      for (const trigger of due) planned.push(await this.plan(manager, trigger, now.getTime()));
      const asked = planned.flatMap(({ trigger, firings }) => firings.filter((firing) => !firing.refused).map((firing) => ({ trigger, firing })));
      const owners = await this.ownersOf(asked.map(({ trigger }) => trigger));
      const built = await this.runs.buildForTriggers(
        asked.map(({ trigger, firing }): TriggerRunRequest => ({
          owner: owners.get(trigger.ownerId) as Caller,
          pipelineId: trigger.pipelineId,
          executionProfileId: trigger.executionProfileId,
          environment: firing.file ? [{ name: 'HUB_TRIGGER_FILE', value: firing.file.path }] : [],
        })),
      );
      const runOf = new Map(asked.map(({ firing }, index) => [firing, built[index]]));
      const records: NewFiring[] = [];
      const runs: IdentifiedRun[] = [];
      for (const { trigger, firing } of planned.flatMap(({ trigger, firings }) => firings.map((firing) => ({ trigger, firing })))) {
        const run = runOf.get(firing);
        const record = { triggerId: trigger.id, triggerTime: firing.triggerTime, kind: firing.kind, file: firing.file };
        if (run === undefined || run instanceof HubError) {
          const error = run ? errorOf(run) : (firing.refused as string);
          records.push({ ...record, runId: null, error });
          if (run) this.logger.warn(`Trigger ${trigger.id} fired at ${firing.triggerTime.toISOString()} but started no run: ${error}`);
        } else {
          records.push({ ...record, runId: run.id, error: null });
          runs.push(run);
        }
      }
      const recorded = await this.triggers.recordFirings(
        manager,
        records,
        planned.map(({ advance }) => advance),
      );
      // A claim key fired already (never under the row lock, but the key is what guarantees it): its run is not written.
      const written = runs.filter((run) => recorded.has(run.id));
      await this.runs.insertForTriggers(manager, written);
      return { claimed: due.length, started: written.map((run) => run.id) };
    });
  }

  /** The owners of a batch's triggers, as callers (their groups as they are now), each read once. */
  private async ownersOf(triggers: readonly TriggerRow[]): Promise<Map<string, Caller>> {
    const distinct = new Map(triggers.map((trigger) => [trigger.ownerId, trigger]));
    return new Map(await Promise.all([...distinct.values()].map(async (trigger) => [trigger.ownerId, await ownerOf(this.groups, trigger)] as const)));
  }

  /** What one claimed trigger fires at its due time (or the latest one passed), and its next due time. */
  private async plan(manager: EntityManager, trigger: TriggerRow, now: number): Promise<Planned> {
    const anchor = Date.parse(trigger.enabledAt);
    const due = Date.parse(trigger.nextDue as string);
    const at = dueToFire(trigger.spec, anchor, due, now);
    if (at > due && trigger.type === 'Cron')
      this.logger.log(
        `Trigger ${trigger.id} missed its due times from ${new Date(due).toISOString()} on (no hub fired them): catching up once, for the latest, ${new Date(at).toISOString()}`,
      );
    const firings = await this.firingsOf(manager, trigger, new Date(at));
    const next = dueAfter(trigger.spec, anchor, Math.max(now, at));
    return {
      trigger,
      firings,
      advance: { id: trigger.id, nextDue: next === null ? null : new Date(next), lastTriggered: firings.length > 0 ? new Date(at) : null },
    };
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
}

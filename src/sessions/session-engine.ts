import { Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { ClusterService, type LatestAttempt } from '../cluster/cluster.service.js';
import { ExecutionAnnouncements, type ExecutionChange } from '../cluster/execution-announcements.js';
import { ServiceEndpoints } from '../cluster/service-endpoints.js';
import { Clock } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import { LIVE_STATUSES, type EndReason, type SessionStatus } from './dto/link-session.dto.js';
import { LinkSessionsRepository, type SessionChanges, type SessionEvent, type SessionRow } from './link-sessions.repository.js';

/** The reaper's period: a session is ended within this of its time (a start timeout's too, besides its own timer). */
const REAP_INTERVAL_MS = 1000;
/** Sessions one reaper pass ends in one transaction. */
const REAP_BATCH = 100;
/** The cluster's event of a job stopped through its API (or by an area): the session then ends Terminated. */
const STOPPED_EVENT = 'Killed';

export function isLive(status: SessionStatus): boolean {
  return LIVE_STATUSES.includes(status);
}

function event(type: SessionStatus, when: Date, details: Record<string, string> = {}): SessionEvent {
  return { type, when: when.toISOString(), details };
}

/** The changes that end a session: status, finish time, and the event saying why. */
export function ending(status: 'Failed' | 'Terminated', reason: EndReason, when: Date, details: Record<string, string> = {}): SessionChanges {
  return { status, finishedTime: when, startDeadline: null, event: event(status, when, { reason, ...details }) };
}

/**
 * Moves link sessions on (api-map §8): each session's readiness probe, from its launch; what the
 * cluster announces of its job (blocked, placeable, ended); and the reaper, a periodic pass that
 * reads the clock and ends sessions whose heartbeat is overdue, whose death clock has come or that
 * were not ready in time, and deletes ended sessions past their retention. Every change is made
 * under the session's row lock, and the reaper claims what it ends with SKIP LOCKED, so several
 * hubs on one database each end a session once.
 */
@Injectable()
export class SessionEngine implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger: Logger;
  /** This hub's readiness probes, by session id. */
  private readonly probes = new Map<string, AbortController>();
  /** The start timeouts of the sessions followed here (see follow). */
  private readonly startTimeouts = new Set<NodeJS.Timeout>();
  private unsubscribe?: () => void;
  private timer?: NodeJS.Timeout;
  private reaping?: Promise<number>;
  /** The pass waiting for the one under way. */
  private reapingNext?: Promise<number>;

  constructor(
    private readonly sessions: LinkSessionsRepository,
    private readonly cluster: ClusterService,
    private readonly endpoints: ServiceEndpoints,
    private readonly announcements: ExecutionAnnouncements,
    private readonly clock: Clock,
    private readonly config: HubConfig,
    logger: HubLogger,
  ) {
    this.logger = logger.for('sessions');
  }

  async onApplicationBootstrap(): Promise<void> {
    this.unsubscribe = this.announcements.subscribe((change) => void this.heard(change));
    await this.reconcile();
    this.timer = setInterval(() => void this.reap(), REAP_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.unsubscribe?.();
    clearInterval(this.timer);
    for (const timeout of this.startTimeouts) clearTimeout(timeout);
    this.startTimeouts.clear();
    for (const probe of this.probes.values()) probe.abort();
    this.probes.clear();
    await this.reaping;
  }

  /**
   * Follows a session just started, or found Pending: probes its readiness from now (not from its
   * start's announcement), and looks once at its job, which may have ended before anyone listened.
   */
  follow(session: SessionRow): void {
    if (session.status !== 'Pending' || !session.jobId || this.probes.has(session.id)) return;
    const probe = new AbortController();
    this.probes.set(session.id, probe);
    const jobId = session.jobId;
    void this.endpoints
      .ready(jobId, { host: session.host, port: session.port, secret: session.secret }, session.readiness, probe.signal)
      .then(async (seen) => {
        if (!seen) return;
        const { at, endpoint } = seen;
        await this.transition(session.id, (current) =>
          current.status === 'Pending'
            ? { status: 'Ready', readyTime: at, startDeadline: null, endpoint: { host: endpoint.host, port: endpoint.port }, event: event('Ready', at) }
            : undefined,
        );
      })
      .catch((error: unknown) => this.logger.error({ err: error, sessionId: session.id }, 'A session readiness probe failed'))
      .finally(() => {
        if (this.probes.get(session.id) === probe) this.probes.delete(session.id);
      });
    // Its start timeout, in this hub's time too (the reaper's pass is the net). Kept until it fires
    // or the hub shuts down: a reap after that would find the database closed.
    const timeout = setTimeout(
      () => {
        this.startTimeouts.delete(timeout);
        void this.reap();
      },
      session.startTimeoutSeconds * 1000 + 50,
    );
    timeout.unref();
    this.startTimeouts.add(timeout);
    probe.signal.addEventListener('abort', () => {
      clearTimeout(timeout);
      this.startTimeouts.delete(timeout);
    });
    void this.settle([session]);
  }

  /**
   * Ends a live session as `changes` say (nothing when it has ended already) and stops its job;
   * resolves once the job is dead. Answers whether this call ended it.
   */
  async end(id: string, changes: SessionChanges): Promise<boolean> {
    const { row, changed } = await this.transition(id, (current) => (isLive(current.status) ? changes : undefined));
    if (changed && row) await this.stopJob(row, String(changes.event?.details.reason ?? 'terminated'));
    return changed;
  }

  /** One pass of the reaper at the clock's now; answers how many sessions it ended. Exposed for tests on the fake clock. */
  async reap(): Promise<number> {
    // After the pass under way, if any (that one read the clock before this call, and a session
    // due since would wait for the next second's pass); one pass waits at the most, for every caller.
    if (this.reapingNext) return this.reapingNext;
    const pass = (this.reaping ?? Promise.resolve(0)).then(() => {
      if (this.reapingNext === pass) this.reapingNext = undefined;
      return this.reapOnce();
    });
    if (this.reaping) this.reapingNext = pass;
    this.reaping = pass;
    void pass.finally(() => {
      if (this.reaping === pass) this.reaping = undefined;
    });
    return pass;
  }

  private async reapOnce(): Promise<number> {
    let ended = 0;
    try {
      const now = this.clock.now();
      for (;;) {
        const settled = await this.sessions.reapDue(now, this.config.sessionHeartbeatGrace, REAP_BATCH, (row) => this.dueChanges(row, now));
        for (const { row, changes } of settled) await this.stopJob(row, String(changes.event?.details.reason));
        ended += settled.length;
        if (settled.length < REAP_BATCH) break;
      }
      await this.sessions.prune(new Date(now.getTime() - this.config.sessionRetentionHours * 3600_000));
    } catch (error) {
      this.logger.error({ err: error }, 'The session reaper failed; it tries again at its next pass');
    }
    return ended;
  }

  /** Why the reaper ends a session at `now`, if it does: the death clock first, then the start timeout, then the heartbeat. */
  private dueChanges(row: SessionRow, now: Date): SessionChanges | undefined {
    if (Date.parse(row.deathClock) <= now.getTime())
      return ending('Terminated', 'deathClock', now, {
        message: `Its death clock (${row.deathClock}) has come: it lived its configuration's maxLifetimeSeconds`,
      });
    if (row.status === 'Pending' && row.startDeadline !== null && Date.parse(row.startDeadline) <= now.getTime())
      return ending('Failed', 'startTimeout', now, { message: `Not ready within ${row.startTimeoutSeconds} s of its start` });
    const overdue = Date.parse(row.nextExpectedHeartbeat) + this.config.sessionHeartbeatGrace * 1000;
    if (overdue < now.getTime())
      return ending('Terminated', 'heartbeat', now, {
        message: `No heartbeat since ${row.lastHeartbeatTime ?? row.startTime}: ${row.nextExpectedHeartbeat} was expected, with ${this.config.sessionHeartbeatGrace} s of grace`,
      });
    return undefined;
  }

  private async stopJob(row: SessionRow, reason: string): Promise<void> {
    this.probes.get(row.id)?.abort();
    if (!row.jobId) return;
    try {
      await this.cluster.stopWorkload(row.jobId, `Link session ${row.id} ended (${reason})`);
    } catch (error) {
      this.logger.error({ err: error, sessionId: row.id }, 'Could not stop the job of an ended session');
    }
  }

  private async transition(id: string, decide: Parameters<LinkSessionsRepository['transition']>[1]): Promise<{ row?: SessionRow; changed: boolean }> {
    const result = await this.sessions.transition(id, decide);
    if (result.changed && result.row && !isLive(result.row.status)) this.probes.get(id)?.abort();
    return result;
  }

  /** What the cluster announced of a session's job. */
  private async heard(change: ExecutionChange | 'reconnected'): Promise<void> {
    try {
      if (change === 'reconnected') return await this.reconcile();
      if (!change.workloadKey?.startsWith(SESSION_KEY_PREFIX)) return;
      const id = change.workloadKey.slice(SESSION_KEY_PREFIX.length);
      const now = this.clock.now();
      if (change.kind === 'placementFailed') await this.transition(id, (current) => blockedChanges(current, change.message ?? '', now));
      else if (change.kind === 'placeable') await this.transition(id, (current) => placeableChanges(current, now));
      else if (change.kind === 'ended') await this.transition(id, (current) => this.endedChanges(current, change, now));
    } catch (error) {
      this.logger.error({ err: error, change }, 'Could not follow a change of a session’s job');
    }
  }

  /** How a live session ends when its job's execution ended: Terminated when stopped through the cluster, else Failed (exited). */
  private endedChanges(current: SessionRow, change: Pick<ExecutionChange, 'eventType' | 'exitCode' | 'message'>, now: Date): SessionChanges | undefined {
    if (!isLive(current.status)) return undefined;
    const details: Record<string, string> = {
      ...(change.exitCode !== undefined && change.exitCode !== null && { exitCode: String(change.exitCode) }),
      ...(change.message && { message: change.message }),
    };
    return change.eventType === STOPPED_EVENT ? ending('Terminated', 'terminated', now, details) : ending('Failed', 'exited', now, details);
  }

  /** Reads every live session again: those whose job ended meanwhile are settled, Pending ones probed. */
  private async reconcile(): Promise<void> {
    const live = await this.sessions.live();
    await this.settle(live);
    for (const session of live) this.follow(session);
  }

  /**
   * Settles the sessions among `rows` by what their jobs' latest executions say: ended, or waiting
   * with no node to take them (Blocked), or placeable again: what was announced before the session
   * was recorded (its job is submitted first), or while this hub did not listen. A first read,
   * without locks, finds those that may change; each of them is read again under its session's
   * lock, so that no announcement handled meanwhile is undone by an older read (and the others
   * stay free for the reaper, which skips locked sessions).
   */
  private async settle(rows: readonly SessionRow[]): Promise<void> {
    const attempts = await this.cluster.latestAttempts(rows.flatMap((row) => (row.jobId ? [row.jobId] : [])));
    for (const row of rows) {
      const jobId = row.jobId;
      const seen = jobId ? attempts.get(jobId) : undefined;
      if (!jobId || !seen || (!hasEnded(seen) && seen.placementFailure === undefined && row.status !== 'Blocked')) continue;
      await this.transition(row.id, async (current, manager) => {
        const attempt = (await this.cluster.latestAttempts([jobId], manager)).get(jobId);
        const now = this.clock.now();
        if (!attempt) return undefined;
        if (hasEnded(attempt))
          return this.endedChanges(current, { eventType: attempt.endEvent?.type, exitCode: attempt.exitCode, message: attempt.endEvent?.message }, now);
        if (attempt.placementFailure !== undefined) return blockedChanges(current, attempt.placementFailure, now);
        return attempt.status === 'pending' ? placeableChanges(current, now) : undefined;
      });
    }
  }
}

function hasEnded(attempt: LatestAttempt): boolean {
  return attempt.finishedAt !== undefined || ['completed', 'failed', 'lost'].includes(attempt.status);
}

/** A Pending session whose job no node takes now: Blocked (nothing for one in another state). */
function blockedChanges(current: SessionRow, message: string, now: Date): SessionChanges | undefined {
  return current.status === 'Pending' ? { status: 'Blocked', startDeadline: null, event: event('Blocked', now, { message }) } : undefined;
}

/** A Blocked session whose job is placeable again: Pending, its start timeout counted from now. */
function placeableChanges(current: SessionRow, now: Date): SessionChanges | undefined {
  return current.status === 'Blocked'
    ? { status: 'Pending', startDeadline: new Date(now.getTime() + current.startTimeoutSeconds * 1000), event: event('Pending', now) }
    : undefined;
}

/** The workload key of a session's job: its announcements name the session. */
export const SESSION_KEY_PREFIX = 'linksession:';

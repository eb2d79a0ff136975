/**
 * Fair share between users (docs/cluster.md "Fair share"): what waits goes to the user holding the
 * fewest slots (their executions claimed to start or running, `batch` and `service`, on every node)
 * first, `priority` ordering within a user and between equal shares; and one user's `batch`
 * executions hold at most `cap` slots of a node (HUB_MAX_RUNNING_JOBS_PER_USER; by default all of
 * its slots but one, none on a one-slot node; 0: no cap). The placement round reads the line in
 * this order and decides with {@link FairShare}; the hand-off of a freed slot to a prepared launch
 * asks `cluster_may_take_slot` (migration FairShare). Where a cap is in force both count under the
 * owner's advisory lock, so that hubs deciding at once never pass it together. A queueing cluster
 * (Slurm) applies its own fair share: the hub adds nothing there but the owner's being active.
 */

import { NOT_HELD } from './dependent-jobs.js';

/** The class of the advisory lock on a user under which their slots are counted and taken (also in the FairShare migration's function). */
export const USER_LOCK_CLASS = 0x4855_5553;

/** Whether an execution's task ran into no node at the last look: such ones go after the others. */
const PLACEMENT_FAILED = `coalesce(e.task_state->'events'->-1->>'type' = 'PlacementFailed', false)`;

/** Executions that hold a slot: claimed to start (not prepared) or running (job_executions_holding_idx). */
const HOLDING = `e.status IN ('pending', 'running') AND e.node_id IS NOT NULL AND NOT e.prepared`;

/** Whether the owner of execution `e` may have work started: an active user (a deleted one's executions have none). */
export const OWNER_ACTIVE = `EXISTS (SELECT 1 FROM users u WHERE u.id = e.owner_id AND u.active)`;

/** The columns of a pending execution the placement round reads (PendingExecution), from `e` and its job `j`. */
export const PENDING_COLUMNS = `e.id, e.job_id AS "jobId", j.task->'constraints' AS constraints, e.reserved_cpu AS "reservedCpu", e.reserved_memory AS "reservedMemory",
  e.execution_dir AS "executionDir", e.task_state->'events'->-1 AS "lastEvent", e.priority, e.created, e.owner_id AS "ownerId", j.type,
  j.workload_key AS "workloadKey"`;

/** The cap the setting gives, as the hand-off's function takes it: null for the default (a node's slots but one). */
export function capSetting(maxRunningJobsPerUser: number | undefined): number | null {
  return maxRunningJobsPerUser ?? null;
}

/** A node's cap on one user's batch executions; 0: none. */
export function capOn(cpu: number, setting: number | null): number {
  if (setting !== null) return setting;
  return cpu >= 2 ? cpu - 1 : 0;
}

/** Whether any node may cap a user: then slots are counted and taken under the owners' locks. */
export function capInForce(setting: number | null): boolean {
  return setting !== 0;
}

/**
 * Takes, in a fixed order, the locks of the owners whose work a round may start: those with work
 * waiting in line, and those of this hub's prepared launches (`$1`, a uuid[]: one text whichever
 * owners they are, so that a round's plan is kept). Answers the owners locked: a round starts
 * nothing of another's (one who submitted meanwhile waits for the next).
 */
export const LOCK_OWNERS_STATEMENT = `SELECT o.owner_id AS "ownerId", pg_advisory_xact_lock(${USER_LOCK_CLASS}, hashtext(o.owner_id::text)) AS locked FROM (
    SELECT a.owner_id FROM cluster_active_jobs a
    WHERE a.active > 0 AND (EXISTS (SELECT 1 FROM job_executions e WHERE e.owner_id = a.owner_id AND e.status = 'pending' AND e.driver_ref IS NULL AND e.node_id IS NULL)
      OR a.owner_id = ANY($1::uuid[]))
    ORDER BY 1) AS o`;

/**
 * The slots each owner holds on each node, and how many of them their batch executions hold. Each
 * holding execution's job is read by its key: as a join, PostgreSQL hashed every job (the
 * holding index's estimate is far above the few slots there are).
 */
export const HOLDINGS_STATEMENT = `SELECT e.owner_id AS "ownerId", e.node_id AS "nodeId", count(*)::int AS held,
    (count(*) FILTER (WHERE (SELECT j.type FROM cluster_jobs j WHERE j.id = e.job_id) = 'batch'))::int AS batch
  FROM job_executions e WHERE ${HOLDING} AND e.owner_id IS NOT NULL GROUP BY 1, 2`;

/**
 * The first `limit` executions in line that no other hub is placing, locked: those no node could
 * run at the last look after the others; then, with `fair`, the owner's share (the slots they hold,
 * and one more for each of their own ahead of it), then priority, then age. Each active owner's
 * line is read from job_executions_owner_line_idx, `limit` at most: the cost grows with the owners
 * waiting, not with the queue. The line's rows are then read by their keys: joined on the line
 * alone, every pending execution was scanned (12.9 against 1.4 ms with 10,000 waiting; 35 ms a
 * round in the job-path benchmark). Executions held on a job that has not succeeded are not in
 * line (dependent-jobs.ts). Without `fair` (a queueing cluster), the line as it was:
 * priority, then age, of active owners' executions.
 */
export function lineStatement(limit: number, fair: boolean): string {
  if (!fair)
    return `SELECT ${PENDING_COLUMNS} FROM job_executions e JOIN cluster_jobs j ON j.id = e.job_id
      WHERE e.status = 'pending' AND e.node_id IS NULL AND ${OWNER_ACTIVE} AND ${NOT_HELD}
      ORDER BY ${PLACEMENT_FAILED}, e.priority DESC, e.created, e.id
      LIMIT ${limit} FOR UPDATE OF e SKIP LOCKED`;
  return `WITH held AS (
      SELECT e.owner_id, count(*)::int AS n FROM job_executions e WHERE ${HOLDING} AND e.owner_id IS NOT NULL GROUP BY 1
    ), line AS (
      SELECT w.id, w.failed, w.priority, w.created,
             coalesce(h.n, 0) + row_number() OVER (PARTITION BY a.owner_id ORDER BY w.failed, w.priority DESC, w.created, w.id) - 1 AS share
      FROM cluster_active_jobs a JOIN users u ON u.id = a.owner_id AND u.active
      CROSS JOIN LATERAL (
        SELECT e.id, ${PLACEMENT_FAILED} AS failed, e.priority, e.created FROM job_executions e
        WHERE e.owner_id = a.owner_id AND e.status = 'pending' AND e.driver_ref IS NULL AND e.node_id IS NULL AND ${NOT_HELD}
        ORDER BY ${PLACEMENT_FAILED}, e.priority DESC, e.created, e.id LIMIT ${limit}
      ) AS w
      LEFT JOIN held h ON h.owner_id = a.owner_id
      WHERE a.active > 0
    )
    SELECT ${PENDING_COLUMNS} FROM line l JOIN job_executions e ON e.id = l.id JOIN cluster_jobs j ON j.id = e.job_id
    WHERE e.id = ANY(ARRAY(SELECT id FROM line)) AND e.status = 'pending' AND e.node_id IS NULL
    ORDER BY l.failed, l.share, l.priority DESC, l.created, l.id
    LIMIT ${limit} FOR UPDATE OF e SKIP LOCKED`;
}

/** What an owner holds on a node (HOLDINGS_STATEMENT). */
export interface Holding {
  readonly ownerId: string;
  readonly nodeId: string;
  readonly held: number;
  readonly batch: number;
}

/** An execution as fair share orders it. */
export interface InLine {
  readonly id: string;
  readonly ownerId: string | null;
  readonly type: string;
  readonly priority: number;
  readonly created: Date;
}

/**
 * One placement round's view of who holds what, kept as it claims: which of two goes first, and
 * whether one may take a slot of a node.
 */
export class FairShare {
  private readonly held = new Map<string, number>();
  private readonly batch = new Map<string, number>();
  /** The owners holding slots on each node. */
  private readonly holders = new Map<string, Set<string>>();

  /**
   * `locked`: the owners whose locks the round holds, when a cap is in force (others' work is left
   * for the next round); `cpu`: each node's slots.
   */
  constructor(
    holdings: readonly Holding[],
    private readonly cpu: ReadonlyMap<string, number>,
    private readonly setting: number | null,
    private readonly locked?: ReadonlySet<string>,
  ) {
    for (const holding of holdings) {
      this.held.set(holding.ownerId, (this.held.get(holding.ownerId) ?? 0) + holding.held);
      this.batch.set(`${holding.ownerId}/${holding.nodeId}`, holding.batch);
      this.holdersOf(holding.nodeId).add(holding.ownerId);
    }
  }

  /** The one owner of what waits for these nodes (in line, and prepared on them) and of the slots held on them, if there is just one. */
  soleOwnerOn(
    nodes: readonly { readonly id: string }[],
    inLine: readonly InLine[],
    prepared: ReadonlyMap<string, readonly { readonly execution: InLine }[]>,
  ): string | undefined {
    return soleOwner([
      ...inLine.map((execution) => execution.ownerId),
      ...nodes.flatMap((node) => (prepared.get(node.id) ?? []).map((launch) => launch.execution.ownerId)),
      ...this.holdersOn(nodes.map((node) => node.id)),
    ]);
  }

  /** The owners holding slots on these nodes. */
  private holdersOn(nodeIds: readonly string[]): string[] {
    return [...new Set(nodeIds.flatMap((nodeId) => [...(this.holders.get(nodeId) ?? [])]))];
  }

  private holdersOf(nodeId: string): Set<string> {
    const holders = this.holders.get(nodeId) ?? new Set<string>();
    this.holders.set(nodeId, holders);
    return holders;
  }

  /** Slots an owner holds, on every node. */
  shareOf(ownerId: string | null): number {
    return ownerId === null ? 0 : (this.held.get(ownerId) ?? 0);
  }

  /** Line order: the smaller share first, then higher priority, then the older, then by id. */
  compare(a: InLine, b: InLine): number {
    return (
      this.shareOf(a.ownerId) - this.shareOf(b.ownerId) ||
      b.priority - a.priority ||
      new Date(a.created).getTime() - new Date(b.created).getTime() ||
      (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
    );
  }

  /** Whether an execution may take a slot on a node: its owner's lock is held, and a batch one stays within the cap there. */
  mayTake(execution: InLine, nodeId: string): boolean {
    if (execution.ownerId === null || (this.locked && !this.locked.has(execution.ownerId))) return false;
    const cap = capOn(this.cpu.get(nodeId) ?? 0, this.setting);
    return execution.type !== 'batch' || cap === 0 || (this.batch.get(`${execution.ownerId}/${nodeId}`) ?? 0) < cap;
  }

  /** Notes that an execution takes a slot on a node. */
  take(execution: InLine, nodeId: string): void {
    if (execution.ownerId === null) return;
    this.held.set(execution.ownerId, this.shareOf(execution.ownerId) + 1);
    this.holdersOf(nodeId).add(execution.ownerId);
    if (execution.type === 'batch') {
      const key = `${execution.ownerId}/${nodeId}`;
      this.batch.set(key, (this.batch.get(key) ?? 0) + 1);
    }
  }
}

/**
 * Fair share's part of a placement round: each free CPU goes, one at a time, to whichever of the
 * hub's prepared launches on its node (`prepared`, from which those released are taken) and the
 * executions in line goes first and may take it.
 */
export function shareOut<
  N extends { readonly id: string },
  E extends InLine & { readonly reservedCpu: number },
  L extends { readonly execution: InLine & { readonly reservedCpu: number } },
>(
  fair: FairShare,
  nodes: readonly N[],
  prepared: ReadonlyMap<string, L[]>,
  inLine: readonly E[],
  fittingOf: (execution: E) => readonly N[],
  room: (node: N, cpu: number) => boolean,
  release: (launch: L, node: N) => void,
  start: (execution: E, node: N) => void,
): void {
  const waiting = [...inLine];
  for (;;) {
    let best: { launch?: L; execution?: E; node: N; in: InLine } | undefined;
    for (const node of nodes)
      for (const launch of prepared.get(node.id) ?? [])
        if (room(node, launch.execution.reservedCpu) && fair.mayTake(launch.execution, node.id) && (!best || fair.compare(launch.execution, best.in) < 0))
          best = { launch, node, in: launch.execution };
    for (const execution of waiting) {
      const node = fittingOf(execution).find((candidate) => room(candidate, execution.reservedCpu) && fair.mayTake(execution, candidate.id));
      if (node && (!best || fair.compare(execution, best.in) < 0)) best = { execution, node, in: execution };
    }
    if (!best) return;
    fair.take(best.in, best.node.id);
    if (best.launch) {
      const launches = prepared.get(best.node.id) as L[];
      launches.splice(launches.indexOf(best.launch), 1);
      release(best.launch, best.node);
    } else {
      waiting.splice(waiting.indexOf(best.execution as E), 1);
      start(best.execution as E, best.node);
    }
  }
}

/** The one owner among these, if there is just one (and it is a user). */
export function soleOwner(owners: Iterable<string | null>): string | undefined {
  const distinct = new Set(owners);
  const [owner] = distinct;
  return distinct.size === 1 && owner !== null ? owner : undefined;
}

/** How a placement round reads the line (lineStatement), and whose locks it takes (LOCK_OWNERS_STATEMENT). */
export interface LineOrder {
  readonly fair: boolean;
  readonly lockOwners?: readonly string[];
}

/**
 * Fair share as a hub's scheduler applies it: on its own nodes, where it places, with the cap it was
 * given (which the hand-off of a freed slot checks too); not at all where the cluster queues
 * (`fair` false), which applies its own.
 */
export class HubFairShare {
  readonly cap: number | null;

  constructor(
    maxRunningJobsPerUser: number | undefined,
    readonly fair: boolean,
  ) {
    this.cap = capSetting(maxRunningJobsPerUser);
  }

  /**
   * How a round reads the line: with a cap in force, it locks the owners of this hub's prepared
   * launches (`prepared`, by node) too, since it may release those.
   */
  line(prepared: Iterable<readonly { readonly execution: { readonly ownerId: string | null } }[]>): LineOrder {
    if (!this.fair || !capInForce(this.cap)) return { fair: this.fair };
    return { fair: true, lockOwners: [...new Set([...prepared].flatMap((launches) => launches.flatMap((launch) => launch.execution.ownerId ?? [])))] };
  }

  /** A round's view of who holds what, from the holdings it read (with the owners it locked); none without fair share. */
  forRound(nodes: readonly { readonly id: string; readonly cpu: number }[], holdings: readonly Holding[], locked?: ReadonlySet<string>): FairShare | undefined {
    return this.fair ? new FairShare(holdings, new Map(nodes.map((node) => [node.id, node.cpu])), this.cap, locked) : undefined;
  }
}

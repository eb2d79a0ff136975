import { PROFILE_LIMITS } from '../../execution-profiles/dto/execution-profile.dto.js';
import type { NodeConstraint } from '../../execution-profiles/node-constraints.js';

/** A node as a driver reports it. */
export interface DriverNode {
  readonly name: string;
  readonly hostname: string;
  readonly address: string;
  readonly type: string;
  readonly isWorker: boolean;
  readonly isServer: boolean;
  readonly status: 'initializing' | 'ready' | 'down' | 'unknown';
  readonly labels: readonly string[];
  readonly os: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly cpu: number;
  /** MiB. */
  readonly memory: number;
}

/**
 * The unix identity an execution runs as (api-map §9, docs/security.md): the account of the hub
 * user who submitted it, or a uid the hub allocated to that user. Never root, never the hub's own
 * user, never shared by two hub users.
 */
export interface JobIdentity {
  readonly uid: number;
  readonly gid: number;
  /** The account's name, when the uid is an account's (Slurm submits under it); absent for an allocated uid. */
  readonly account?: string;
  /** The account's groups (its primary one included) as they were judged: the job gets these, not what the host says at launch. */
  readonly groups?: readonly number[];
}

/** A profile's limits on one execution (its `properties`); absent: no limit. */
export interface ExecutionLimits {
  readonly maxProcesses?: number;
  readonly maxMemoryMiB?: number;
  readonly maxRunSeconds?: number;
  /** What its working directory and logs may hold (the local driver's DiskReserve keeps it). */
  readonly maxDiskMiB?: number;
}

export const LIMIT_NAMES = PROFILE_LIMITS satisfies readonly (keyof ExecutionLimits)[];

/** Everything a driver needs to start one execution. */
export interface Launch {
  readonly executionId: string;
  readonly nodeName: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Who it runs as; null: as the hub's own user (a local hub that is not root, where only administrators submit). */
  readonly identity: JobIdentity | null;
  readonly limits: ExecutionLimits;
  /** The execution's directory: `work/` is its working directory, `logs/<name>` its logs. */
  readonly executionDir: string;
  readonly cpu: number;
  /** MiB; 0: no reservation. */
  readonly memory: number;
  /** The execution profile's constraints, for drivers that pass them on (Slurm features). */
  readonly constraints: readonly NodeConstraint[];
  /** Nodes of the driver it must not run on: those that do not meet the constraints, or are drained. */
  readonly excludedNodes: readonly string[];
}

/** A started (or submitted) execution, as the cluster service asks a driver about it. */
export interface Tracked {
  readonly executionId: string;
  readonly driverRef: string;
  readonly executionDir: string;
}

/** What became of a tracked execution. */
export type Outcome =
  | { readonly state: 'queued' }
  | { readonly state: 'running'; readonly node?: string }
  | {
      readonly state: 'completed' | 'failed';
      readonly exitCode: number;
      readonly message: string;
      readonly node?: string;
      /** When it ended, if the driver knows (it may have been while the hub was down). */
      readonly finishedAt?: string;
      /** The limit it was ended for running past, if that is why it ended. */
      readonly limit?: keyof ExecutionLimits;
    }
  | { readonly state: 'lost'; readonly message: string; readonly node?: string };

/** How an execution ended with an exit code. */
export type Ended = Extract<Outcome, { state: 'completed' | 'failed' }>;

/**
 * How the cluster service reaches a cluster (api-map §9): the nodes, starting, watching and
 * stopping executions. The service keeps every state in the database; a driver keeps none that
 * a restart would need.
 */
export interface ClusterDriver {
  readonly name: string;
  /**
   * The cluster queues what it is given and places it itself (Slurm): the hub submits whatever a
   * node could run and learns when it starts. Otherwise the hub starts an execution only where a
   * CPU is free, on the node it chose.
   */
  readonly queues: boolean;
  /** The nodes now. */
  nodes(): Promise<DriverNode[]>;
  /** Starts an execution on a node the service chose; resolves with the driver's reference for it. */
  start(launch: Launch): Promise<string>;
  /** Where each of these executions stands now. */
  outcomes(tracked: readonly Tracked[]): Promise<Map<string, Outcome>>;
  /** Kills an execution and everything it started. */
  stop(tracked: Tracked): Promise<void>;
  /** Called whenever an execution may have ended, so that the service looks at once rather than at its next poll. */
  onChange(listener: () => void): void;
  /**
   * Called as soon as an execution the driver started has ended (drivers that know: the local one),
   * so that its CPUs go to the next at once: with how it ended when that is all there is to know of
   * its end (nothing left to check, such as its limits), so that the service records it then and
   * there; without, when `outcomes` reads its end (the driver also calls `onChange`).
   */
  onExit?(listener: (executionId: string, ended?: Ended) => void): void;
  /**
   * How many launches per node the driver keeps prepared ahead of their slot (0 or absent: it
   * prepares none, and has no `prepare`, `release` or `abandon`). A prepared launch has done all
   * but start the task; it waits, holding no slot, until it is released into one.
   */
  readonly preparesPerNode?: number;
  /** Prepares an execution's launch on the node the service chose; resolves with the driver's reference for it. */
  prepare?(launch: Launch): Promise<string>;
  /** Starts a prepared launch's task; resolves once its process has started, with when if the driver knows (or the launch has ended without it). */
  release?(executionId: string): Promise<Date | undefined>;
  /** Lets go of a prepared launch without starting its task; resolves once nothing of it runs. */
  abandon?(executionId: string): Promise<void>;
  /** Lets go of what the driver holds (what it started runs on); at the hub's shutdown, once no start is under way. */
  close?(): Promise<void>;
}

/** The injection token of the configured driver. */
export const CLUSTER_DRIVER = Symbol('ClusterDriver');

/** The log names every execution has, under `logs/` of its directory. */
export const LOG_NAMES = ['stdout', 'stderr'] as const;

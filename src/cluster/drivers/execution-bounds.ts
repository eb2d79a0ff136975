import type { ExecutionLimits } from './cluster-driver.js';

/** The bounds every execution of the local driver gets when its profile sets none (HUB_JOB_DEFAULT_MAX_*). */
export interface DefaultBounds {
  readonly maxProcesses: number;
  readonly maxMemoryMiB: number;
}

/** The limits the defaults stand in for. */
export const BOUNDED_LIMITS = ['maxProcesses', 'maxMemoryMiB'] as const satisfies readonly (keyof ExecutionLimits)[];
export type BoundedLimit = (typeof BOUNDED_LIMITS)[number];

export const DEFAULT_MAX_PROCESSES = 4096;
/** What the hub and PostgreSQL keep out of the jobs' memory: 10 % of it, at least 1 GiB. */
const RESERVED_SHARE = 0.1;
const RESERVED_AT_LEAST_MIB = 1024;
/** Below this a default bound would fail every job at its first program; a host or cgroup that small gets this, and its operator the warning. */
export const SMALLEST_DEFAULT_MEMORY_MIB = 64;

/**
 * The default `maxMemoryMiB` of each execution: the memory the hub may use (the host's, or its
 * own control group's limit when lower), less what the hub and PostgreSQL keep (10 %, at least
 * 1 GiB), shared between the slots, so that full slots of jobs at their bound leave the hub room.
 */
export function defaultMaxMemoryMiB(hostMiB: number, hubCgroupLimitMiB: number | undefined, slots: number): number {
  const usable = Math.min(hostMiB, hubCgroupLimitMiB ?? Infinity);
  const reserved = Math.max(RESERVED_AT_LEAST_MIB, Math.ceil(usable * RESERVED_SHARE));
  return Math.max(SMALLEST_DEFAULT_MEMORY_MIB, Math.floor((usable - reserved) / Math.max(1, slots)));
}

/** An execution's limits in force: its profile's, each bound the profile leaves unset from the defaults; and which came from them. */
export function boundsOf(profile: ExecutionLimits, defaults: DefaultBounds): { limits: ExecutionLimits; defaulted: BoundedLimit[] } {
  const defaulted = BOUNDED_LIMITS.filter((name) => profile[name] === undefined);
  const limits: ExecutionLimits = { ...profile, ...Object.fromEntries(defaulted.map((name) => [name, defaults[name]])) };
  return { limits, defaulted };
}

const UNITS: Record<keyof ExecutionLimits, string> = { maxProcesses: ' processes', maxMemoryMiB: ' MiB', maxRunSeconds: ' s', maxDiskMiB: ' MiB' };
const SETTINGS: Record<BoundedLimit, string> = { maxProcesses: 'HUB_JOB_DEFAULT_MAX_PROCESSES', maxMemoryMiB: 'HUB_JOB_DEFAULT_MAX_MEMORY_MIB' };

/** What a limit's event says: the profile's limit, or the hub's default and the setting it comes from. */
export function limitMessage(limit: keyof ExecutionLimits, limits: ExecutionLimits, defaulted: readonly BoundedLimit[] = []): string {
  const value = `${limits[limit]}${UNITS[limit]}`;
  if ((defaulted as readonly string[]).includes(limit))
    return `Ended for running past the hub's default ${limit} (${value}, ${SETTINGS[limit as BoundedLimit]})`;
  return `Ended for running past its execution profile's ${limit} (${value})`;
}

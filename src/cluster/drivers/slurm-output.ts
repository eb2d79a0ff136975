import type { NodeConstraint } from '../../execution-profiles/node-constraints.js';
import type { DriverNode } from './cluster-driver.js';

/** What the `--json` output of Slurm's commands carries besides its data (22.05 reports failures here, exiting 0). */
interface SlurmReply {
  readonly errors?: readonly { readonly error?: string; readonly errno?: number }[];
}

interface SlurmNode {
  readonly name: string;
  readonly hostname: string;
  readonly address: string;
  readonly state: string;
  readonly state_flags?: readonly string[];
  readonly cpus: number;
  readonly real_memory: number;
  readonly features?: string;
  readonly active_features?: string;
  readonly operating_system?: string;
  readonly architecture?: string;
  readonly partitions?: readonly string[];
  readonly reason?: string;
}

interface SlurmJob {
  readonly job_id: number;
  readonly job_state: string;
  readonly state_reason?: string;
  readonly nodes?: string;
  readonly batch_host?: string;
  readonly exit_code?: number;
}

/** A Slurm job as the driver follows it. */
export interface SlurmJobState {
  readonly state: string;
  readonly reason: string;
  /** The node its batch script runs on, once it runs. */
  readonly node: string | undefined;
  /** The raw wait status Slurm reports: exit code in the high byte, signal in the low. */
  readonly waitStatus: number;
}

/** A feature name Slurm reads as one (its constraint syntax gives `&|[]*` and others a meaning). */
const SLURM_FEATURE = /^[A-Za-z0-9_.-]+$/;

export class SlurmCommandError extends Error {
  override readonly name = 'SlurmCommandError';
}

function parseReply<T extends SlurmReply>(text: string, command: string): T {
  let reply: T;
  try {
    reply = JSON.parse(text) as T;
  } catch {
    throw new SlurmCommandError(`${command} did not print JSON`);
  }
  const errors = (reply.errors ?? []).filter((error) => error.errno !== 0);
  if (errors.length > 0) throw new SlurmCommandError(`${command}: ${errors.map((error) => error.error ?? `errno ${error.errno}`).join('; ')}`);
  return reply;
}

/** `Linux 6.1.0 #1 SMP …` → `linux`. */
function operatingSystem(uname: string | undefined): string {
  const kernel = uname?.split(' ')[0]?.toLowerCase() ?? '';
  return kernel === 'darwin' ? 'macos' : kernel || 'unknown';
}

/** A node's status from Slurm's state and flags: one not responding is down, whatever its last state. */
function statusOf(node: SlurmNode): DriverNode['status'] {
  if (node.state_flags?.includes('NOT_RESPONDING')) return 'down';
  switch (node.state) {
    case 'idle':
    case 'mixed':
    case 'allocated':
    case 'completing':
      return 'ready';
    case 'down':
    case 'error':
    case 'drained':
      return 'down';
    case 'future':
      return 'initializing';
    default:
      return 'unknown';
  }
}

/** The nodes of `sinfo --json`: features are labels; Slurm's drain and reason are attributes. */
export function parseNodes(text: string): DriverNode[] {
  const reply = parseReply<SlurmReply & { nodes?: SlurmNode[] }>(text, 'sinfo --json');
  return (reply.nodes ?? []).map((node) => ({
    name: node.name,
    hostname: node.hostname,
    address: node.address,
    type: 'worker',
    isWorker: true,
    isServer: false,
    status: statusOf(node),
    labels: (node.active_features || node.features || '').split(',').filter(Boolean),
    os: operatingSystem(node.operating_system),
    attributes: {
      ...(node.architecture && { arch: node.architecture }),
      slurmState: [node.state, ...(node.state_flags ?? [])].join('+'),
      ...(node.reason && { slurmReason: node.reason }),
      ...(node.partitions?.length && { partitions: node.partitions.join(',') }),
    },
    cpu: node.cpus,
    memory: node.real_memory,
  }));
}

/** The jobs of `squeue --json` (22.05 lists every job still in the controller's memory, finished ones included), by id. */
export function parseJobs(text: string): Map<string, SlurmJobState> {
  const reply = parseReply<SlurmReply & { jobs?: SlurmJob[] }>(text, 'squeue --json');
  return new Map(
    (reply.jobs ?? []).map((job) => [
      String(job.job_id),
      { state: job.job_state, reason: job.state_reason ?? '', node: job.batch_host || job.nodes || undefined, waitStatus: job.exit_code ?? 0 },
    ]),
  );
}

/**
 * The `--constraint` of a profile's constraints: its `node.label =` ones, which are Slurm features,
 * all required. Other constraints cannot be said to Slurm as features; the hub keeps the nodes that
 * do not meet them out of the job (`--exclude`).
 */
export function featureExpression(constraints: readonly NodeConstraint[]): string | undefined {
  const features = constraints
    .filter((constraint) => constraint.attribute === 'node.label' && constraint.operator === '=' && SLURM_FEATURE.test(constraint.value))
    .map((constraint) => constraint.value);
  return features.length > 0 ? features.join('&') : undefined;
}

import { execFile, execFileSync } from 'node:child_process';
import { chmod, chown, mkdir, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { StartupError } from '../../common/errors/startup-error.js';
import type { ClusterDriver, DriverNode, ExecutionLimits, Launch, Outcome, Tracked } from './cluster-driver.js';
import { environmentFile } from './environment-file.js';
import { EXIT_CODE_FILE, outcomeFromExitCode } from './exit-code.js';
import { shellProgram } from './shell-program.js';
import { featureExpression, parseJobs, parseNodes, SlurmCommandError, type SlurmJobState } from './slurm-output.js';

const run = promisify(execFile);
const COMMAND_TIMEOUT_MS = 30_000;
/** The batch script, which reads the execution's environment from a file and writes its exit code: sh/slurm-job.sh. */
const JOB_SCRIPT = shellProgram('slurm-job.sh');

/** Slurm job states that have not ended: queued, or running. */
const QUEUED = new Set(['PENDING', 'CONFIGURING', 'REQUEUED', 'SUSPENDED', 'PREEMPTED', 'RESIZING']);
const RUNNING = new Set(['RUNNING', 'COMPLETING', 'SIGNALING', 'STAGE_OUT']);
/** Ended by Slurm for a limit the profile set (`--time`, `--mem`). */
const LIMITS: Partial<Record<string, keyof ExecutionLimits>> = { TIMEOUT: 'maxRunSeconds', OUT_OF_MEMORY: 'maxMemoryMiB' };
/** Ended without the job's own doing: the node or Slurm failed it. */
const LOST = new Set(['NODE_FAIL', 'BOOT_FAIL']);

/** Runs one of Slurm's commands with the hub's own environment, never a job's. */
async function slurm(command: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await run(command, args, { timeout: COMMAND_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const failure = error as Error & { stderr?: string; code?: string | number };
    const detail = failure.stderr?.trim() || failure.message;
    throw new SlurmCommandError(
      failure.code === 'ENOENT' ? `${command} is not installed (the slurm driver needs Slurm's commands on PATH)` : `${command}: ${detail}`,
    );
  }
}

/** Slurm's own user (`SlurmUser`), which may submit jobs as others as root may; undefined when `scontrol` does not say. */
function slurmUser(): string | undefined {
  try {
    const config = execFileSync('scontrol', ['show', 'config'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: COMMAND_TIMEOUT_MS });
    return /^SlurmUser\s*=\s*([^(\s]+)/m.exec(config)?.[1];
  } catch {
    return undefined;
  }
}

export interface SlurmDriverOptions {
  /** Whether the hub runs as root. */
  readonly root: boolean;
}

/**
 * A Slurm cluster through its command-line tools (api-map §9): nodes from `sinfo --json`,
 * executions submitted with `sbatch` (constraints as `--constraint` features, nodes that do not
 * meet the others excluded), followed with `squeue --json`, stopped with `scancel`. Working
 * directories and logs are under HUB_SHARED_DIR, which the nodes must share; the batch script
 * writes the task's exit code there too, so that an execution's end is known even after Slurm
 * has forgotten the job.
 */
export class SlurmDriver implements ClusterDriver {
  readonly name = 'slurm';
  readonly queues = true;

  /** Refuses to run a hub that cannot submit jobs under their users' accounts (`sbatch --uid` needs root or SlurmUser). */
  constructor(options: SlurmDriverOptions) {
    if (options.root) return;
    const user = userInfo().username;
    if (slurmUser() !== user)
      throw new StartupError(
        `The slurm driver submits each job under its user's account (sbatch --uid), which only root or Slurm's own user (SlurmUser) may do; the hub runs as '${user}'. Run it as root.`,
      );
  }

  async nodes(): Promise<DriverNode[]> {
    return parseNodes(await slurm('sinfo', ['--json']));
  }

  /**
   * Submits under the job's user's account, never as root: its execution's directory, working
   * directory, logs and environment belong to that account alone (the batch script runs as it
   * and writes its logs and exit code there).
   */
  async start(launch: Launch): Promise<string> {
    const identity = launch.identity;
    if (!identity?.account || identity.uid === 0) throw new SlurmCommandError('A job runs on Slurm only under its user’s own account');
    const workDir = join(launch.executionDir, 'work');
    const logs = join(launch.executionDir, 'logs');
    await mkdir(workDir, { recursive: true, mode: 0o700 });
    await mkdir(logs, { recursive: true, mode: 0o700 });
    const script = join(launch.executionDir, 'job.sh');
    const envFile = join(launch.executionDir, 'environment');
    await writeFile(script, JOB_SCRIPT);
    await chmod(script, 0o755);
    await writeFile(envFile, environmentFile(launch.env), { mode: 0o600 });
    await chmod(dirname(launch.executionDir), 0o711);
    await chmod(launch.executionDir, 0o700);
    for (const path of [launch.executionDir, workDir, logs, envFile]) await chown(path, identity.uid, identity.gid);
    const features = featureExpression(launch.constraints);
    const { maxRunSeconds, maxMemoryMiB } = launch.limits;
    const memory = Math.max(launch.memory, maxMemoryMiB ?? 0);
    const args = [
      '--parsable',
      `--uid=${identity.uid}`,
      `--gid=${identity.gid}`,
      `--job-name=hub-${launch.executionId}`,
      `--chdir=${workDir}`,
      `--output=${join(logs, 'stdout')}`,
      `--error=${join(logs, 'stderr')}`,
      `--cpus-per-task=${launch.cpu}`,
      ...(memory > 0 ? [`--mem=${memory}`] : []),
      // Slurm counts time in minutes.
      ...(maxRunSeconds !== undefined ? [`--time=${Math.ceil(maxRunSeconds / 60)}`] : []),
      ...(features ? [`--constraint=${features}`] : []),
      ...(launch.excludedNodes.length > 0 ? [`--exclude=${launch.excludedNodes.join(',')}`] : []),
      // The job starts from nothing but Slurm's own variables; its script reads the rest from the file.
      '--export=NONE',
      script,
      envFile,
      join(launch.executionDir, EXIT_CODE_FILE),
      launch.command,
      ...launch.args,
    ];
    const jobId = (await slurm('sbatch', args)).trim().split(';')[0];
    if (!/^\d+$/.test(jobId)) throw new SlurmCommandError(`sbatch printed no job id (${JSON.stringify(jobId)})`);
    return jobId;
  }

  async outcomes(tracked: readonly Tracked[]): Promise<Map<string, Outcome>> {
    const jobs = parseJobs(await slurm('squeue', ['--json']));
    const outcomes = new Map<string, Outcome>();
    for (const execution of tracked) outcomes.set(execution.executionId, await this.outcomeOf(execution, jobs.get(execution.driverRef)));
    return outcomes;
  }

  async stop(tracked: Tracked): Promise<void> {
    await slurm('scancel', [tracked.driverRef]);
  }

  onChange(): void {
    // Slurm tells nothing: the scheduler's poll is how its news arrives.
  }

  /** An ended outcome names the node it ran on, which the hub may not have seen it running on. */
  private async outcomeOf(execution: Tracked, job: SlurmJobState | undefined): Promise<Outcome> {
    const outcome = await this.stateOf(execution, job);
    return outcome.state === 'queued' || outcome.state === 'running' || !job?.node ? outcome : { ...outcome, node: job.node };
  }

  private async stateOf(execution: Tracked, job: SlurmJobState | undefined): Promise<Outcome> {
    if (job && QUEUED.has(job.state)) return { state: 'queued' };
    if (job && RUNNING.has(job.state)) return { state: 'running', node: job.node };
    if (job && LOST.has(job.state)) return { state: 'lost', message: `Slurm ended job ${execution.driverRef}: ${job.state} (${job.reason})` };
    const ended = await outcomeFromExitCode(execution.executionDir);
    const limit = job && LIMITS[job.state];
    // Ended by Slurm for a profile's limit, whatever its script could still write.
    if (job && limit)
      return {
        state: 'failed',
        exitCode: ended?.exitCode ?? (job.waitStatus >> 8 || 1),
        message: `Slurm job ${execution.driverRef} ended for running past its execution profile's ${limit}`,
        limit,
      };
    if (ended) return ended;
    if (!job) return { state: 'lost', message: `Slurm no longer knows job ${execution.driverRef} and it left no exit code` };
    // Its exit code may not be visible on this host yet (a shared directory's caching): Slurm's word is enough.
    if (job.state === 'COMPLETED') return { state: 'completed', exitCode: 0, message: 'Exited with code 0' };
    // Killed before its script could write one: cancelled, or out of time.
    return {
      state: 'failed',
      exitCode: job.waitStatus >> 8 || 1,
      message: `Slurm job ${execution.driverRef} ended: ${job.state === 'CANCELLED' ? 'cancelled' : job.state}`,
    };
  }
}

import { execFile } from 'node:child_process';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ClusterDriver, DriverNode, Launch, Outcome, Tracked } from './cluster-driver.js';
import { EXIT_CODE_FILE, outcomeFromExitCode } from './exit-code.js';
import { featureExpression, parseJobs, parseNodes, SlurmCommandError, type SlurmJobState } from './slurm-output.js';

const run = promisify(execFile);
const COMMAND_TIMEOUT_MS = 30_000;
/**
 * The batch script: takes the execution's environment from a file (so that none of it reaches
 * `sbatch` itself), runs the task given as its other arguments, then writes its exit code next
 * to its logs.
 */
const JOB_SCRIPT = [
  '#!/bin/sh',
  'env_file=$1; exit_file=$2; shift 2',
  'set -a; . "$env_file"; set +a',
  '"$@"; code=$?',
  'printf %s "$code" > "$exit_file.tmp" && mv "$exit_file.tmp" "$exit_file"',
  'exit "$code"',
  '',
].join('\n');

/** `NAME='value'` lines a shell reads back exactly. */
function environmentFile(env: Readonly<Record<string, string>>): string {
  return Object.entries(env)
    .map(([name, value]) => `${name}='${value.replace(/'/g, `'\\''`)}'\n`)
    .join('');
}

/** Slurm job states that have not ended: queued, or running. */
const QUEUED = new Set(['PENDING', 'CONFIGURING', 'REQUEUED', 'SUSPENDED', 'PREEMPTED', 'RESIZING']);
const RUNNING = new Set(['RUNNING', 'COMPLETING', 'SIGNALING', 'STAGE_OUT']);
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

  async nodes(): Promise<DriverNode[]> {
    return parseNodes(await slurm('sinfo', ['--json']));
  }

  async start(launch: Launch): Promise<string> {
    const workDir = join(launch.executionDir, 'work');
    const logs = join(launch.executionDir, 'logs');
    await mkdir(workDir, { recursive: true });
    await mkdir(logs, { recursive: true });
    const script = join(launch.executionDir, 'job.sh');
    const envFile = join(launch.executionDir, 'environment');
    await writeFile(script, JOB_SCRIPT);
    await chmod(script, 0o755);
    await writeFile(envFile, environmentFile(launch.env), { mode: 0o600 });
    const features = featureExpression(launch.constraints);
    const args = [
      '--parsable',
      `--job-name=hub-${launch.executionId}`,
      `--chdir=${workDir}`,
      `--output=${join(logs, 'stdout')}`,
      `--error=${join(logs, 'stderr')}`,
      `--cpus-per-task=${launch.cpu}`,
      ...(launch.memory > 0 ? [`--mem=${launch.memory}`] : []),
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
    if (ended) return ended;
    if (!job) return { state: 'lost', message: `Slurm no longer knows job ${execution.driverRef} and it left no exit code` };
    // Its exit code may not be visible on this host yet (a shared directory's caching): Slurm's word is enough.
    if (job.state === 'COMPLETED') return { state: 'completed', exitCode: 0, message: 'Exited with code 0' };
    // Killed before its script could write one: cancelled, or out of time.
    const why = job.state === 'TIMEOUT' ? 'its time limit' : job.state === 'CANCELLED' ? 'cancelled' : job.state;
    return { state: 'failed', exitCode: job.waitStatus >> 8 || 1, message: `Slurm job ${execution.driverRef} ended: ${why}` };
  }
}

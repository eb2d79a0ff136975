import { spawn } from 'node:child_process';
import { chmod, chown, mkdir, open, readFile } from 'node:fs/promises';
import { availableParallelism, hostname, networkInterfaces, platform, release, totalmem, arch } from 'node:os';
import { dirname, join } from 'node:path';
import type { SystemAccount } from '../../common/system-account.js';
import type { ClusterDriver, DriverNode, Launch, Outcome, Tracked } from './cluster-driver.js';
import { EXIT_CODE_FILE, outcomeFromExitCode } from './exit-code.js';

/**
 * Runs the task and, once it has ended, writes its exit code where the hub finds it, even across
 * a hub restart (`$0` is that file). A stop signals the whole process group: the wrapper only
 * notes the signal (a caught one, which the task does not inherit) and keeps waiting while the
 * task cleans up.
 */
const WRAPPER = [
  "trap ':' TERM INT",
  '"$@" & child=$!',
  'wait "$child"; code=$?',
  'while kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done',
  'printf %s "$code" > "$0.tmp" && mv "$0.tmp" "$0"',
  'exit "$code"',
].join('\n');
const STOP_GRACE_MS = 5000;

export interface LocalDriverOptions {
  readonly labels: readonly string[];
  /** How many CPUs' worth of executions run at once; the rest wait (pending). */
  readonly slots: number;
  /**
   * The unprivileged account tasks run as (the hub runs as root); undefined: as the hub's own
   * user, which then shares everything the hub can read with every task.
   */
  readonly account: SystemAccount | undefined;
}

function operatingSystem(): string {
  return { linux: 'linux', darwin: 'macos', win32: 'windows' }[platform() as string] ?? platform();
}

function address(): string {
  for (const entries of Object.values(networkInterfaces())) {
    const found = entries?.find((entry) => entry.family === 'IPv4' && !entry.internal);
    if (found) return found.address;
  }
  return '127.0.0.1';
}

function exitFileOf(executionDir: string): string {
  return join(executionDir, EXIT_CODE_FILE);
}

/** Whether the process is alive and still the wrapper of this execution (a pid may be reused after a restart). */
async function runs(pid: number, exitFile: string): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').includes(exitFile);
  } catch {
    // No /proc (not Linux): the pid alone has to do.
    return true;
  }
}

/**
 * The hub's own host as the one node. An execution is `/bin/sh` running the task in its own
 * process group (so that stopping it kills all it started), with stdout and stderr in files and
 * its exit code written to a file, so that a restarted hub learns how an execution ended while it
 * was down, or adopts one still running.
 */
export class LocalDriver implements ClusterDriver {
  readonly name = 'local';
  readonly queues = false;
  private readonly listeners: (() => void)[] = [];

  constructor(private readonly options: LocalDriverOptions) {}

  nodes(): Promise<DriverNode[]> {
    return Promise.resolve([
      {
        name: hostname(),
        hostname: hostname(),
        address: address(),
        type: 'server',
        isWorker: true,
        isServer: true,
        status: 'ready',
        labels: this.options.labels,
        os: operatingSystem(),
        attributes: { arch: arch(), kernel: release(), cpus: String(availableParallelism()) },
        cpu: this.options.slots,
        memory: Math.floor(totalmem() / 1024 / 1024),
      },
    ]);
  }

  /**
   * The execution's directory belongs to the hub and its logs are opened by the hub; only `work/`
   * belongs to the task's account, so a task can neither rewrite its exit code nor swap its logs
   * or its working directory for links. Executions' directories cannot be listed by tasks.
   */
  async start(launch: Launch): Promise<string> {
    const workDir = join(launch.executionDir, 'work');
    const logs = join(launch.executionDir, 'logs');
    await mkdir(workDir, { recursive: true, mode: 0o755 });
    await mkdir(logs, { recursive: true, mode: 0o755 });
    const account = this.options.account;
    if (account) {
      await chmod(dirname(launch.executionDir), 0o711);
      await chown(workDir, account.uid, account.gid);
      await chmod(workDir, 0o700);
    }
    const [stdout, stderr] = await Promise.all([open(join(logs, 'stdout'), 'a', 0o644), open(join(logs, 'stderr'), 'a', 0o644)]);
    const task = account
      ? ['setpriv', `--reuid=${account.uid}`, `--regid=${account.gid}`, '--clear-groups', '--', launch.command, ...launch.args]
      : [launch.command, ...launch.args];
    try {
      const child = spawn('/bin/sh', ['-c', WRAPPER, exitFileOf(launch.executionDir), ...task], {
        cwd: workDir,
        env: { ...launch.env },
        detached: true,
        stdio: ['ignore', stdout.fd, stderr.fd],
      });
      const pid = await new Promise<number>((resolve, reject) => {
        child.once('spawn', () => resolve(child.pid as number));
        child.once('error', reject);
      });
      child.once('exit', () => {
        // What the task left running in the background ends with it (as a batch system's job does);
        // the group's id cannot have been reused while any of it runs.
        this.signal(child.pid as number, 'SIGKILL');
        this.changed();
      });
      child.unref();
      return String(pid);
    } finally {
      await Promise.all([stdout.close(), stderr.close()]);
    }
  }

  async outcomes(tracked: readonly Tracked[]): Promise<Map<string, Outcome>> {
    const outcomes = new Map<string, Outcome>();
    for (const execution of tracked) outcomes.set(execution.executionId, await this.outcomeOf(execution));
    return outcomes;
  }

  async stop(tracked: Tracked): Promise<void> {
    const pid = Number(tracked.driverRef);
    if (!(await runs(pid, exitFileOf(tracked.executionDir)))) return;
    this.signal(pid, 'SIGTERM');
    const deadline = Date.now() + STOP_GRACE_MS;
    while (Date.now() < deadline && (await runs(pid, exitFileOf(tracked.executionDir)))) await new Promise((resolve) => setTimeout(resolve, 50));
    this.signal(pid, 'SIGKILL');
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  private async outcomeOf(execution: Tracked): Promise<Outcome> {
    const exitFile = exitFileOf(execution.executionDir);
    if (await runs(Number(execution.driverRef), exitFile)) return { state: 'running' };
    // Its background leftovers end with it, as when the hub saw it exit.
    this.signal(Number(execution.driverRef), 'SIGKILL');
    return (
      (await outcomeFromExitCode(execution.executionDir)) ?? {
        state: 'lost',
        message: 'The process ended without leaving an exit code (killed, or the host restarted)',
      }
    );
  }

  /** Signals the whole process group: the wrapper and everything the task started. */
  private signal(pid: number, signal: NodeJS.Signals): void {
    try {
      process.kill(-pid, signal);
    } catch {
      // Already gone.
    }
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }
}

import { chmodSync, chownSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { readFile, readlink, stat } from 'node:fs/promises';
import { availableParallelism, hostname, networkInterfaces, platform, release, totalmem, arch } from 'node:os';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { StartupError } from '../../common/errors/startup-error.js';
import { processesOfGroup, type ExecutionCgroups } from './cgroups.js';
import {
  LIMIT_NAMES,
  type ClusterDriver,
  type Ended,
  type DriverNode,
  type ExecutionLimits,
  type Launch,
  type Outcome,
  type Tracked,
} from './cluster-driver.js';
import { boundsOf, limitMessage, type BoundedLimit, type DefaultBounds } from './execution-bounds.js';
import { endedWith, EXIT_CODE_FILE, outcomeFromExitCode } from './exit-code.js';
import { succeeds, systemProgram } from './host-tools.js';
import { commandLine, environmentFile } from './environment-file.js';
import { Launcher, type LauncherPrograms, type Spawned } from './launcher.js';
import { makeRuntimeDir, removeRuntimeDir, type RuntimeDir } from './runtime-dir.js';
import { shellProgram } from './shell-program.js';

/** The launch's first process, which waits for it and writes its exit code: sh/monitor.sh. */
const MONITOR = shellProgram('monitor.sh');

/** The task's side of the launch, its PID 1 as the job's user: sh/task-init.sh. */
const TASK_INIT = shellProgram('task-init.sh');

const STOP_GRACE_MS = 5000;
/** How long a stop waits for the monitor of a launch it killed to end (it outlives the launch by a write). */
const KILLED_WAIT_MS = 2000;
/** How long a start waits for the launch to say the task's process has started, before the hub records it started anyway. */
const STARTED_WAIT_MS = 10_000;
/** How long letting go of a prepared launch waits for it to end (it ends at once: its gate is closed). */
const ABANDON_WAIT_MS = 5000;
const LIMITS_FILE = 'limits.json';
const ENDED_BY_FILE = 'ended-by';

/** `unshare`'s option for a PID namespace of the launch's own: every isolation but the empty one has it (see isolation). */
const PID_NAMESPACE = '--pid';

export interface LocalDriverOptions {
  readonly labels: readonly string[];
  /** How many CPUs' worth of executions run at once; the rest wait (pending). */
  readonly slots: number;
  /** Whether the hub runs as root, and so runs each job as its user in its own namespaces. */
  readonly root: boolean;
  /** Control groups for the limits, where the machine allows. */
  readonly cgroups: ExecutionCgroups | undefined;
  /** The bounds of an execution whose profile sets none (HUB_JOB_DEFAULT_MAX_*). */
  readonly defaults: DefaultBounds;
  /** How many launches of the next in line are kept prepared, waiting for a slot (0: none). */
  readonly prepared: number;
}

/** The programs of the launch, by absolute path. */
interface LaunchPrograms extends LauncherPrograms {
  readonly unshare?: string;
  /** Whether `unshare` itself can take the job's uid and gid (`--setuid`, `--setgid`: util-linux 2.35 and later). */
  readonly unshareSetsIdentity?: boolean;
  /** As root without control groups: what sets RLIMIT_NPROC, the best a hub can do then. */
  readonly prlimit?: string;
}

/**
 * What the driver remembers of an execution with limits: those in force, which of them are the
 * hub's defaults, and whether control groups keep them. Read back from its directory after a
 * restart when its profile set any; else rebuilt from the defaults (see watchedOf).
 */
interface Watched {
  readonly limits: ExecutionLimits;
  readonly defaulted?: readonly BoundedLimit[];
  readonly startedAt: number;
  readonly cgroups: boolean;
}

/** Whether any of an execution's limits is its profile's (and so kept in its directory). */
function fromProfile(watched: Watched): boolean {
  return LIMIT_NAMES.some((name) => watched.limits[name] !== undefined && !watched.defaulted?.includes(name as BoundedLimit));
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

/** A prepared launch's gate: the hub's descriptor (open for writing until it is released or abandoned), its path, and its execution's directory. */
interface Gate {
  readonly fd: number;
  readonly path: string;
  readonly executionDir: string;
}

/** Closes a gate and removes it: the launch that waits there opened it long before anyone says a word at it. */
function shut(gate: Gate): void {
  closeSync(gate.fd);
  try {
    unlinkSync(gate.path);
  } catch {
    // Removed with the directory of gates already.
  }
}

function exitFileOf(executionDir: string): string {
  return join(executionDir, EXIT_CODE_FILE);
}

function required(name: string, why: string): string {
  const path = systemProgram(name);
  if (!path) throw new StartupError(`The local driver needs ${name} (${why}); install it (Debian: util-linux, coreutils, dash)`);
  return path;
}

/** Whether this host has /proc: elsewhere (not Linux) a pid alone has to do. */
const HAS_PROC = existsSync('/proc/self');

/**
 * Whether the process is alive and still the monitor of this execution (a pid may be reused after
 * a restart): the hub's user's, in the execution's working directory (a monitor is a fork of the
 * launcher, whose command line names no execution).
 */
async function runs(pid: number, executionDir: string): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  if (!HAS_PROC) return true;
  try {
    const [owner, cwd] = await Promise.all([stat(`/proc/${pid}`), readlink(`/proc/${pid}/cwd`)]);
    return owner.uid === process.getuid?.() && cwd === join(executionDir, 'work');
  } catch {
    // Another user's process (its directory not ours to read), or gone meanwhile.
    return false;
  }
}

/** The limit the hub noted it ended an execution for, if it did (see outcomeOf). */
function readNote(executionDir: string): keyof ExecutionLimits | undefined {
  let noted = '';
  try {
    noted = readFileSync(join(executionDir, ENDED_BY_FILE), 'utf8');
  } catch {
    // None: it was not ended for a limit by the hub.
  }
  return (LIMIT_NAMES as readonly string[]).includes(noted) ? (noted as keyof ExecutionLimits) : undefined;
}

const LOST: Outcome = { state: 'lost', message: 'The process ended without leaving an exit code (killed, or the host restarted)' };

/**
 * The hub's own host as the one node. An execution is a launch the hub starts detached, in its
 * own process group: a monitor that survives the hub and writes the task's exit code, and the
 * task run as its user (when the hub is root) in its own PID namespace, with stdout and stderr in
 * files. A restarted hub learns how an execution ended while it was down, or adopts one still
 * running. Profile limits are kept by control groups (processes, memory) and by the hub (time).
 */
export class LocalDriver implements ClusterDriver {
  readonly name = 'local';
  readonly queues = false;
  private readonly listeners: (() => void)[] = [];
  private readonly exitListeners: ((executionId: string, ended?: Ended) => void)[] = [];
  private readonly watched = new Map<string, Watched | null>();
  private readonly launcher: Launcher;
  /** The monitor of each execution this hub launched, and its directory, until it ends: its process group is what a stop or an end kills. */
  private readonly monitors = new Map<string, { readonly pid: number; readonly executionDir: string }>();
  /** The gate of each prepared launch, until it is released or abandoned. */
  private readonly gates = new Map<string, Gate>();
  /** Where the launcher makes gates and the hub writes task files (see RuntimeDir), removed at close. */
  private readonly runtime: RuntimeDir;
  /** Prepared launches let go of, until they have ended. */
  private readonly abandoned = new Map<string, () => void>();
  /** Directories of executions made traversable already. */
  private readonly madeParents = new Set<string>();
  /** When this hub heard each launch with limits end, until its end is read: a finer time than the exit-code file's (the kernel's clock tick). */
  private readonly exitedAt = new Map<string, { readonly at: string; readonly code?: number }>();
  readonly preparesPerNode: number;

  /**
   * A local driver, once the host has said what it allows: whether `unshare` can take a launch's
   * identity itself (as root), or give it a PID namespace inside a user namespace (without root).
   * Each is asked by running it; both at once, without holding the hub's thread, so that the rest
   * of the start (the database above all) goes on meanwhile.
   */
  static async create(options: LocalDriverOptions, logger?: Logger): Promise<LocalDriver> {
    const unshare = options.root ? required('unshare', 'a PID namespace per execution') : systemProgram('unshare');
    const sh = required('sh', 'the launch');
    const [unshareSetsIdentity, userNamespaces] = await Promise.all([
      options.root && unshare !== undefined && succeeds(unshare, ['--setuid', '65534', '--setgid', '65534', '--', sh, '-c', ':']),
      !options.root &&
        unshare !== undefined &&
        succeeds(unshare, ['--user', '--map-current-user', '--pid', '--fork', '--mount-proc', '--kill-child', '--', sh, '-c', ':']),
    ]);
    const programs: LaunchPrograms = {
      sh,
      setsid: required('setsid', 'the launch'),
      mkfifo: required('mkfifo', 'the launch'),
      unshare,
      setpriv: options.root ? required('setpriv', 'running each job as its user') : undefined,
      prlimit: options.root && !options.cgroups ? systemProgram('prlimit') : undefined,
      unshareSetsIdentity,
    };
    return new LocalDriver(options, programs, userNamespaces, logger);
  }

  private constructor(
    private readonly options: LocalDriverOptions,
    private readonly programs: LaunchPrograms,
    /** Without root: whether an unprivileged user namespace can still give each execution its own PID namespace. */
    private readonly userNamespaces: boolean,
    logger?: Logger,
  ) {
    this.runtime = makeRuntimeDir(options.root, logger);
    this.launcher = new Launcher(
      this.programs,
      { monitor: MONITOR, taskInit: TASK_INIT, tasks: this.runtime.tasks, gates: this.runtime.gates },
      { ended: (executionId, exitCode) => this.launchEnded(executionId, exitCode) },
      logger,
    );
    this.preparesPerNode = options.prepared;
  }

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
   * The execution's directory belongs to the hub (traversable, not listable); `work/` and the
   * environment file belong to the job's user alone, its logs to the hub alone (opened by the
   * hub), so a task can neither rewrite its exit code nor swap its logs or its working directory
   * for links, and no other job's user can read any of it. Resolves once the task's own process
   * has started, at the end of the launch (or the launch has ended without it).
   *
   * The directory's few calls are synchronous: each takes microseconds, where a trip through
   * libuv's thread pool costs a millisecond on a loaded host, on every job's path.
   */
  async start(launch: Launch): Promise<string> {
    // Waited for from before the spawn: the launch may say so before the launcher's answer is read.
    const started = this.launcher.started(launch.executionId);
    try {
      const pid = await this.launch(launch, false);
      await this.until(started);
      return String(pid);
    } finally {
      this.launcher.forget(launch.executionId);
    }
  }

  /**
   * Launches an execution as far as its task's init, which waits at its gate as the job's user in
   * its PID namespace, having read nothing of the job's: `release` lets it run in the time of a
   * write to a pipe, where a launch takes five programs' exec. Resolves with the driver's reference.
   */
  async prepare(launch: Launch): Promise<string> {
    return String(await this.launch(launch, true));
  }

  /** Opens a prepared launch's gate; resolves once its task's process has started, with when (or the launch has ended without it). */
  async release(executionId: string): Promise<Date | undefined> {
    const gate = this.gates.get(executionId);
    if (gate === undefined) throw new Error('no launch of it is prepared');
    this.gates.delete(executionId);
    const started = this.launcher.started(executionId);
    try {
      const watched = this.watched.get(executionId);
      if (watched && fromProfile(watched)) {
        // Its run time counts from now, not from when it was prepared (after a restart too).
        const now = { ...watched, startedAt: Date.now() };
        this.watched.set(executionId, now);
        writeFileSync(join(gate.executionDir, LIMITS_FILE), JSON.stringify(now), { mode: 0o600 });
      }
      return await this.through(gate, 'go', started);
    } finally {
      this.launcher.forget(executionId);
    }
  }

  /** Lets go of a prepared launch without running its task; resolves once it has ended (its directory is then free for another launch). */
  async abandon(executionId: string): Promise<void> {
    const gate = this.gates.get(executionId);
    if (gate === undefined) return;
    this.gates.delete(executionId);
    this.launcher.forget(executionId);
    const ended = new Promise<void>((resolve) => this.abandoned.set(executionId, resolve));
    await this.through(gate, 'no', ended, ABANDON_WAIT_MS);
    this.abandoned.delete(executionId);
    this.watched.delete(executionId);
    void this.options.cgroups?.remove(executionId);
  }

  /**
   * Says a word at a gate and keeps it open until the launch has heard it: a FIFO that nobody holds
   * open loses what was written to it, and the launch may not have opened it yet. Then the gate
   * goes.
   */
  private async through<T>(gate: Gate, word: 'go' | 'no', heard: Promise<T>, waitMs = STARTED_WAIT_MS): Promise<T | undefined> {
    try {
      writeSync(gate.fd, `${word}\n`);
      return await this.until(heard, waitMs);
    } finally {
      shut(gate);
    }
  }

  /** Sets up an execution's directory and files and has the launcher start it; resolves with its monitor's pid. */
  private async launch(launch: Launch, gated: boolean): Promise<number> {
    // A job settled to run as the hub's own user (submitted while the hub was not root) never runs as root.
    if (this.options.root && (!launch.identity || launch.identity.uid === 0))
      throw new Error('it would run as root: it was submitted while the hub did not run as root; submit it again');
    const workDir = join(launch.executionDir, 'work');
    const taskFile = this.taskFileOf(launch.executionId);
    const exitFile = exitFileOf(launch.executionDir);
    this.makeExecutionDir(launch.executionDir, [exitFile]);
    writeFileSync(taskFile, environmentFile(launch.env) + commandLine(launch.command, launch.args), { mode: 0o400 });
    const identity = launch.identity;
    if (identity) {
      chownSync(workDir, identity.uid, identity.gid);
      chownSync(taskFile, identity.uid, identity.gid);
    }
    const { cgroups, isolation } = await this.limit(launch);
    let spawned: Spawned;
    try {
      spawned = await this.launcher.spawn({
        executionId: launch.executionId,
        executionDir: launch.executionDir,
        exitFile,
        cgroups,
        // In its own PID namespace and group, the group lists the launch's processes: no setsid (sh/monitor.sh).
        members: isolation.includes(PID_NAMESPACE) && cgroups.length > 0 ? processesOfGroup(cgroups[0]) : undefined,
        gated,
        isolation,
      });
    } catch (error) {
      this.launcher.forget(launch.executionId);
      void this.options.cgroups?.remove(launch.executionId);
      throw error;
    }
    this.monitors.set(launch.executionId, { pid: spawned.pid, executionDir: launch.executionDir });
    // Read and write, so that opening never waits; the launch's own open (for reading) waits for this one.
    if (spawned.gate) this.gates.set(launch.executionId, { fd: openSync(spawned.gate, 'r+'), path: spawned.gate, executionDir: launch.executionDir });
    return spawned.pid;
  }

  /**
   * Makes an execution's directory (the hub's, traversable), its `work/` and its `logs/` (which the
   * launcher's appends create the logs in); an execution launched before (a prepared launch let go
   * of) keeps them, less the files its launch left (`stale`). The directory of all executions is
   * made traversable once.
   */
  private makeExecutionDir(executionDir: string, stale: readonly string[]): void {
    const parent = dirname(executionDir);
    if (!this.madeParents.has(parent)) {
      mkdirSync(parent, { recursive: true });
      chmodSync(parent, 0o711);
      this.madeParents.add(parent);
    }
    try {
      mkdirSync(executionDir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      for (const file of stale) rmSync(file, { force: true });
    }
    // Whatever the hub's umask: the job's user must traverse it.
    chmodSync(executionDir, 0o711);
    mkdirSync(join(executionDir, 'work'), { recursive: true, mode: 0o700 });
    mkdirSync(join(executionDir, 'logs'), { recursive: true, mode: 0o700 });
  }

  /** Until the launch says the task's process starts (when it did), or has ended without it, or it takes too long. */
  private async until<T>(started: Promise<T>, waitMs = STARTED_WAIT_MS): Promise<T | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const result = await Promise.race([started, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), waitMs)))]);
    clearTimeout(timer);
    return result;
  }

  /**
   * A launch ended, its exit code written, and what its task left running in the background with
   * it (see MONITOR). Its end is its code and, for an execution with limits, whether it ran past
   * one (the hub's note, its groups' counters: read at once, synchronously, so that no follow
   * reads the groups meanwhile): the listeners are told how it ended at once, and nothing is kept
   * of it. An end heard without a code is read by `outcomes`.
   */
  private launchEnded(executionId: string, exitCode?: number): void {
    const heardAt = new Date().toISOString();
    const monitor = this.monitors.get(executionId);
    this.monitors.delete(executionId);
    // Its task's environment (secrets, perhaps) is not kept.
    if (monitor !== undefined) rmSync(this.taskFileOf(executionId), { force: true });
    // A prepared launch that ended before it was released: its gate goes with it.
    const gate = this.gates.get(executionId);
    if (gate !== undefined) {
      shut(gate);
      this.gates.delete(executionId);
      this.launcher.forget(executionId);
    }
    const abandoned = this.abandoned.get(executionId);
    if (abandoned) return abandoned();
    // Stopped, or its end read already (see outcomeOf), before this was heard: nothing to tell, nothing to keep.
    if (!this.watched.has(executionId)) return;
    const watched = this.watched.get(executionId);
    if (monitor !== undefined && exitCode !== undefined && watched !== undefined) {
      this.watched.delete(executionId);
      const ended =
        watched === null ? endedWith(exitCode, heardAt) : this.endedWithin(executionId, monitor.executionDir, watched, endedWith(exitCode, heardAt));
      for (const listener of this.exitListeners) listener(executionId, ended);
      return;
    }
    this.exitedAt.set(executionId, { at: heardAt, code: exitCode });
    for (const listener of this.exitListeners) listener(executionId);
    this.changed();
  }

  close(): Promise<void> {
    for (const gate of this.gates.values()) shut(gate);
    this.gates.clear();
    removeRuntimeDir(this.runtime);
    this.launcher.close();
    return Promise.resolve();
  }

  async outcomes(tracked: readonly Tracked[]): Promise<Map<string, Outcome>> {
    const outcomes = new Map<string, Outcome>();
    for (const execution of tracked) outcomes.set(execution.executionId, await this.outcomeOf(execution));
    return outcomes;
  }

  async stop(tracked: Tracked): Promise<void> {
    const pid = Number(tracked.driverRef);
    if (await runs(pid, tracked.executionDir)) {
      this.signal(pid, 'SIGTERM');
      if (!(await this.monitorEnded(pid, tracked.executionDir, STOP_GRACE_MS))) {
        this.signal(pid, 'SIGKILL');
        // The monitor then writes the killed launch's exit code and ends: the stop is over once it has.
        await this.monitorEnded(pid, tracked.executionDir, KILLED_WAIT_MS);
      }
    }
    // Its end is recorded already (stopped): the hub never reads it, so nothing is kept of it, nor its task's file or groups.
    for (const kept of [this.watched, this.exitedAt, this.monitors]) kept.delete(tracked.executionId);
    rmSync(this.taskFileOf(tracked.executionId), { force: true });
    void this.options.cgroups?.remove(tracked.executionId);
  }

  /** Whether a launch's monitor has ended within `waitMs`. */
  private async monitorEnded(pid: number, executionDir: string, waitMs: number): Promise<boolean> {
    const deadline = Date.now() + waitMs;
    while (await runs(pid, executionDir)) {
      if (Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return true;
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  onExit(listener: (executionId: string, ended?: Ended) => void): void {
    this.exitListeners.push(listener);
  }

  /**
   * What runs the task's init after the monitor: as root, a new PID namespace (its `unshare` stays
   * root outside it) in which the job's uid and gid are taken, with no supplementary groups, before
   * anything of the job's is read: by `unshare` itself (one program fewer per launch), or by
   * `setpriv` for an account (its groups, `--init-groups`, come through NSS) or an `unshare` too old
   * to. The launch has `no_new_privs` from the launcher. Without root, the hub's own user, in a PID
   * namespace of an unprivileged user namespace where the machine allows it; else nothing.
   *
   * As root where no control group can be made, an allocated uid's launch first sets
   * RLIMIT_NPROC to its `maxProcesses`, which the kernel counts per uid: every execution of that
   * user together, not this one alone. An account's uid is left alone: its owner's own sessions
   * count against it too.
   */
  private isolation(launch: Launch, limits: ExecutionLimits): string[] {
    const { unshare, setpriv, unshareSetsIdentity, prlimit } = this.programs;
    const namespace = [PID_NAMESPACE, '--fork', '--mount-proc', '--kill-child'];
    const identity = launch.identity;
    if (identity && unshare && setpriv) {
      const nproc =
        prlimit && !identity.account && limits.maxProcesses !== undefined ? [prlimit, `--nproc=${limits.maxProcesses}:${limits.maxProcesses}`, '--'] : [];
      if (unshareSetsIdentity && !identity.account)
        return [...nproc, unshare, ...namespace, '--setuid', String(identity.uid), '--setgid', String(identity.gid), '--'];
      // The groups judged at submission (api-map §1); a task stored before they were kept takes the account's.
      const groups = identity.groups
        ? identity.groups.length > 0
          ? `--groups=${identity.groups.join(',')}`
          : '--clear-groups'
        : identity.account
          ? '--init-groups'
          : '--clear-groups';
      return [...nproc, unshare, ...namespace, '--', setpriv, `--reuid=${identity.uid}`, `--regid=${identity.gid}`, groups, '--no-new-privs', '--'];
    }
    if (this.userNamespaces && unshare) return [unshare, '--user', '--map-current-user', ...namespace, '--'];
    return [];
  }

  /**
   * Sets up what keeps an execution's limits (its profile's, the hub's defaults for those it
   * leaves unset): its control groups, which the launch joins (see ExecutionCgroups.create), and what the hub
   * checks; and the isolation that runs its task. Only a profile's limits are written to its
   * directory: the defaults are the hub's to know again after a restart.
   */
  private async limit(launch: Launch): Promise<{ cgroups: string[]; isolation: string[] }> {
    const { limits, defaulted } = boundsOf(launch.limits, this.options.defaults);
    const isolation = this.isolation(launch, limits);
    const cgroups = (await this.options.cgroups?.create(launch.executionId, limits)) ?? [];
    const watched: Watched = { limits, defaulted, startedAt: Date.now(), cgroups: cgroups.length > 0 };
    // Nothing for the hub to check: no group, no limit of the profile's.
    if (!watched.cgroups && !fromProfile(watched)) {
      this.watched.set(launch.executionId, null);
      return { cgroups, isolation };
    }
    if (fromProfile(watched)) writeFileSync(join(launch.executionDir, LIMITS_FILE), JSON.stringify(watched), { mode: 0o600 });
    this.watched.set(launch.executionId, watched);
    return { cgroups, isolation };
  }

  private async watchedOf(execution: Tracked): Promise<Watched | null> {
    let watched = this.watched.get(execution.executionId);
    if (watched === undefined) {
      // Started before a restart: its profile's limits are in its directory, if it has any; else it has the defaults, in groups where the hub makes them.
      const defaults: Watched | null = this.options.cgroups
        ? { limits: this.options.defaults, defaulted: ['maxProcesses', 'maxMemoryMiB'], startedAt: 0, cgroups: true }
        : null;
      watched = await readFile(join(execution.executionDir, LIMITS_FILE), 'utf8')
        .then((text) => JSON.parse(text) as Watched)
        .catch(() => defaults);
      this.watched.set(execution.executionId, watched);
    }
    return watched;
  }

  /** The limit a running execution has gone past, if any. */
  private exceeded(execution: Tracked, watched: Watched): keyof ExecutionLimits | undefined {
    const { maxRunSeconds } = watched.limits;
    if (maxRunSeconds !== undefined && Date.now() - watched.startedAt > maxRunSeconds * 1000) return 'maxRunSeconds';
    return watched.cgroups ? this.options.cgroups?.exceeded(execution.executionId, watched.limits) : undefined;
  }

  /**
   * How an execution with limits ended, from its exit code, when this hub heard its end: as its
   * limit's when the hub ended it for one (noted before it was signalled) or the kernel did (its
   * groups' counters); its groups go.
   */
  private endedWithin(executionId: string, executionDir: string, watched: Watched, ended: Ended): Ended {
    const noted = readNote(executionDir);
    const limit = noted ?? (watched.cgroups ? this.options.cgroups?.exceeded(executionId, watched.limits) : undefined);
    if (watched.cgroups) void this.options.cgroups?.remove(executionId);
    return limit ? { ...ended, state: 'failed', message: limitMessage(limit, watched.limits, watched.defaulted), limit } : ended;
  }

  private async outcomeOf(execution: Tracked): Promise<Outcome> {
    const pid = Number(execution.driverRef);
    const watched = await this.watchedOf(execution);
    if (await runs(pid, execution.executionDir)) {
      const limit = watched && this.exceeded(execution, watched);
      if (limit) {
        // Noted first, so that its end is told as the limit's even if the hub restarts meanwhile; a
        // full disk that refuses the note does not keep it from being ended.
        try {
          writeFileSync(join(execution.executionDir, ENDED_BY_FILE), limit);
        } catch {
          // Told as an ordinary end then.
        }
        this.signal(pid, limit === 'maxRunSeconds' ? 'SIGTERM' : 'SIGKILL');
        // Only to the monitor, if it is still this execution's: its pid may be another process's by then.
        const escalate = async () => {
          if (await runs(pid, execution.executionDir)) this.signal(pid, 'SIGKILL');
        };
        setTimeout(() => void escalate(), STOP_GRACE_MS).unref();
      }
      return { state: 'running' };
    }
    // Its task's file goes, if the hub did not hear its end (that of a launch by a hub that died goes
    // with its runtime directory, see RuntimeDir).
    rmSync(this.taskFileOf(execution.executionId), { force: true });
    const written = await outcomeFromExitCode(execution.executionDir);
    const exitedAt = this.exitedAt.get(execution.executionId);
    // The code as the launch told it, when its file could not be written (a full disk).
    const ended =
      written && exitedAt ? { ...written, finishedAt: exitedAt.at } : exitedAt?.code !== undefined ? endedWith(exitedAt.code, exitedAt.at) : written;
    // Nothing is kept of an execution that has ended.
    this.watched.delete(execution.executionId);
    this.monitors.delete(execution.executionId);
    this.exitedAt.delete(execution.executionId);
    if (!watched) return ended ?? LOST;
    // Ended by the hub for a limit, or by the limit itself (the kernel killed it for memory; it could not start a process, and gave up).
    const limit = readNote(execution.executionDir) ?? (watched.cgroups ? this.options.cgroups?.exceeded(execution.executionId, watched.limits) : undefined);
    if (watched.cgroups) void this.options.cgroups?.remove(execution.executionId);
    const message = limit && limitMessage(limit, watched.limits, watched.defaulted);
    // Killed for a limit with its whole group, the monitor may have had no time to write an exit code: the limit is still why it ended.
    if (!ended) return limit && message ? { state: 'failed', exitCode: 137, message, limit } : LOST;
    return limit && message ? { ...ended, state: 'failed', message, limit } : ended;
  }

  /** The file of an execution's task's environment and command, in this hub's runtime directory. */
  private taskFileOf(executionId: string): string {
    return join(this.runtime.tasks, executionId);
  }

  /**
   * Signals everything the launch started (a PID namespace's PID 1 included), through its monitor
   * (see MONITOR), which keeps waiting for it and writes its exit code: SIGTERM as it is, SIGKILL as
   * USR1, which the monitor turns into SIGKILL for the launch's process group.
   */
  private signal(monitorPid: number, signal: 'SIGTERM' | 'SIGKILL'): void {
    try {
      process.kill(monitorPid, signal === 'SIGKILL' ? 'SIGUSR1' : signal);
    } catch {
      // Already gone.
    }
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }
}

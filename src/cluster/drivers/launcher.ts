import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { Logger } from 'pino';
import { exitCodeOf } from './exit-code.js';
import { PRIVILEGED_ENV } from './host-tools.js';
import { shellProgram } from './shell-program.js';

/** The launcher: sh/launcher.sh, where it says what it does and what it is told. */
const LAUNCHER = shellProgram('launcher.sh');

/** What a launch request names: all of it the hub's, one line each. */
export interface LaunchRequest {
  readonly executionId: string;
  readonly executionDir: string;
  readonly exitFile: string;
  readonly cgroups: readonly string[];
  /**
   * The file that lists the launch's processes (a `cgroup.procs` of its own group) when it runs in
   * a PID namespace of its own: stops reach them through it, and the launch needs no `setsid`
   * (sh/monitor.sh). None: its process group holds them.
   */
  readonly members?: string;
  /** Whether the launch waits at a gate before its task (a prepared launch); else it goes straight on. */
  readonly gated?: boolean;
  /** The isolation's program and arguments, which run the task's init: none, when the launch has none. */
  readonly isolation: readonly string[];
}

/** A launch under way: its monitor's pid once spawned, and whether its task has started. */
interface Pending {
  spawned?: (spawned: Spawned) => void;
  failed?: (error: Error) => void;
  /** The request, the launcher it went to, whether that launcher said it took it, and how many more launchers it may go to. */
  request?: string;
  sentTo?: Writable;
  taken?: boolean;
  resends?: number;
  /** With when the launch said its task's process starts; with nothing when it ended (or failed) without. */
  started?: (at?: Date) => void;
}

/** A launch the launcher started: its monitor's pid (the leader of its process group), and the gate it waits at, if any. */
export interface Spawned {
  readonly pid: number;
  readonly gate?: string;
}

/** The programs the launcher runs, by absolute path. */
export interface LauncherPrograms {
  readonly sh: string;
  readonly setsid: string;
  readonly mkfifo: string;
  /**
   * When set (as root), the launcher is started through `setpriv --no-new-privs`: every launch
   * inherits `no_new_privs`, which no exec undoes, so no setuid program or file capability gives a
   * task anything, at no cost per launch (a `setpriv` of its own cost each launch a millisecond).
   */
  readonly setpriv?: string;
}

/**
 * The resident launcher and what it says. Started on first use and again after it ends; a launch
 * waiting on a launcher that ended goes to the next one or fails (see launcherEnded). Nothing is kept of a launch once its task has started, but the monitor's pid
 * until it ends.
 */
export class Launcher {
  private process?: ChildProcess;
  private requests?: Writable;
  private readonly pending = new Map<string, Pending>();
  private closed = false;

  constructor(
    private readonly programs: LauncherPrograms,
    /** The scripts of the launch's monitor and task init, the directory of task files (each named after its execution), and the directory of gates (root's alone). */
    private readonly scripts: { readonly monitor: string; readonly taskInit: string; readonly tasks: string; readonly gates: string },
    /** Called with each execution whose launch says it ended (its exit code written), and the code, when it said one. */
    private readonly events: { readonly ended: (executionId: string, exitCode?: number) => void },
    private readonly logger?: Logger,
  ) {}

  /** Starts a launch; resolves with its monitor's pid and its gate. */
  spawn(request: LaunchRequest): Promise<Spawned> {
    const lines = [
      request.executionId,
      request.executionDir,
      request.exitFile,
      request.cgroups.join(' '),
      request.members ?? '',
      request.gated ? 'gated' : '',
      String(request.isolation.length),
      ...request.isolation,
    ];
    // A line break would shift every line after it: none of these is the job's, but none may carry one anyway.
    const broken = lines.find((line) => /[\n\r\0]/.test(line));
    if (broken !== undefined) return Promise.reject(new Error(`a launch argument holds a line break or NUL: ${JSON.stringify(broken)}`));
    return new Promise<Spawned>((resolve, reject) => {
      const pending = this.entry(request.executionId);
      Object.assign(pending, { spawned: resolve, failed: reject, request: `${lines.join('\n')}\n`, resends: 1 });
      this.send(pending);
    });
  }

  private send(pending: Pending): void {
    const requests = this.running();
    Object.assign(pending, { sentTo: requests, taken: false });
    // A launcher that died takes its pipe with it: the write fails, and its end settles the request (see launcherEnded).
    requests.write(pending.request);
  }

  /**
   * A launcher ended (its answers closed, all read). A request it never said it took was read by
   * nobody, or only in part, and started nothing: it goes to the next launcher (the launcher may have
   * died before the hub heard of it). One it took may or may not have been acted on: it fails, and
   * never runs twice; a monitor it spawned runs on and is followed as any other.
   */
  private launcherEnded(requests: Writable): void {
    if (this.requests === requests) this.requests = undefined;
    for (const [executionId, pending] of this.pending) {
      if (!pending.failed || pending.sentTo !== requests) continue;
      if (!pending.taken && (pending.resends ?? 0) > 0 && !this.closed) {
        pending.resends = (pending.resends ?? 0) - 1;
        this.send(pending);
      } else this.fail(executionId, pending);
    }
  }

  private fail(executionId: string, pending: Pending): void {
    pending.failed?.(new Error('the launcher ended before it started the execution'));
    this.pending.delete(executionId);
  }

  /**
   * Resolves with the time the launch says its task's process starts (as this hub heard it), or
   * with nothing when it ended without; the caller bounds the wait.
   */
  started(executionId: string): Promise<Date | undefined> {
    return new Promise((resolve) => {
      this.entry(executionId).started = resolve;
    });
  }

  /** Forgets a launch the hub no longer waits on. */
  forget(executionId: string): void {
    this.pending.delete(executionId);
  }

  close(): void {
    this.closed = true;
    this.requests?.end();
  }

  private entry(executionId: string): Pending {
    let pending = this.pending.get(executionId);
    if (!pending) {
      pending = {};
      this.pending.set(executionId, pending);
    }
    return pending;
  }

  private running(): Writable {
    if (this.requests && !this.closed) return this.requests;
    this.closed = false;
    const { sh, setsid, mkfifo, setpriv } = this.programs;
    const { monitor, taskInit, tasks, gates } = this.scripts;
    const launcher = [sh, '-c', LAUNCHER, 'hub-launcher', monitor, taskInit, tasks, gates];
    const [program, ...args] = setpriv ? [setpriv, '--no-new-privs', '--', ...launcher] : launcher;
    const child = spawn(program, args, {
      env: { ...PRIVILEGED_ENV, SH: sh, SETSID: setsid, MKFIFO: mkfifo },
      // Its own process group, so that stopping an execution's group never reaches it, nor a signal to the hub's group its launches.
      detached: true,
      // 3: what launches say (they inherit it); 4: the launcher's own answers (a launch's gate takes its place).
      stdio: ['pipe', 'ignore', 'pipe', 'pipe', 'pipe'],
    });
    const requests = child.stdin as Writable;
    requests.on('error', () => undefined);
    createInterface({ input: child.stdio[3] as Readable }).on('line', (line) => this.heard(line));
    createInterface({ input: child.stdio[4] as Readable })
      .on('line', (line) => this.heard(line))
      .on('close', () => this.launcherEnded(requests));
    createInterface({ input: child.stderr as Readable }).on('line', (line) => this.logger?.warn({ line }, 'The launcher says'));
    child.once('exit', (code, signal) => {
      // No request goes to it any more; those it had are settled once its answers are all read.
      if (this.requests === requests) this.requests = undefined;
      if (!this.closed) this.logger?.warn({ code, signal }, 'The launcher ended; the next launch starts another');
    });
    child.unref();
    for (const stream of [child.stdin, child.stderr, child.stdio[3], child.stdio[4]]) (stream as unknown as { unref?: () => void } | null)?.unref?.();
    this.process = child;
    this.requests = requests;
    return requests;
  }

  private heard(line: string): void {
    const [what, executionId, ...rest] = line.split(' ');
    const pending = this.pending.get(executionId);
    switch (what) {
      case 'taken':
        if (pending) pending.taken = true;
        break;
      case 'spawned': {
        const [pid, gate] = rest;
        if (pending?.spawned) {
          pending.spawned({ pid: Number(pid), ...(gate && { gate }) });
          pending.spawned = pending.failed = pending.request = pending.sentTo = undefined;
        }
        break;
      }
      case 'failed':
        pending?.failed?.(new Error('its working directory could not be entered, or no gate could be made'));
        pending?.started?.();
        this.pending.delete(executionId);
        break;
      case 'started':
        pending?.started?.(new Date());
        if (pending) pending.started = undefined;
        break;
      case 'ended': {
        // The launcher's `spawned` and the launch's `ended` are written by two processes: a short
        // task's end may come first. The entry stays until the start lets go of it (forget), so
        // that `spawned` still finds it.
        pending?.started?.();
        if (pending) pending.started = undefined;
        const [code] = rest;
        this.events.ended(executionId, code === undefined ? undefined : exitCodeOf(code));
        break;
      }
      default:
        this.logger?.warn({ line }, 'The launcher said something unexpected');
    }
  }
}

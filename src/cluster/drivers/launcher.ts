import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { Logger } from 'pino';
import { exitCodeOf } from './exit-code.js';
import { PRIVILEGED_ENV } from './host-tools.js';

/** How many gates one `mkfifo` makes: the launcher keeps a few ready, each launch that waits at one takes one. */
const GATES_AT_ONCE = 16;

/**
 * The launcher: one small shell the hub starts once (as root, when it is) with the fixed
 * environment, which starts each execution's monitor for it. The hub's own process is large, and
 * forking it for every launch cost milliseconds of its event loop (the copy of its page tables
 * grows with its memory: 14 ms at 200 MiB); a shell forks in a fraction of one. The monitor is a
 * fork of the launcher that runs the monitor's script (`$1`) as a function: a shell of its own
 * cost each launch a program's exec, over a millisecond here.
 *
 * A request is lines the hub writes, never anything of the job's: the execution's id, directory,
 * exit-code file, control groups and whether it waits at a gate (empty: it does not), then the
 * number of arguments of the isolation (unshare, setpriv and theirs), one a line. The monitor is
 * started in the execution's working directory, its output appended to the execution's logs,
 * with the exit-code file, the control groups and the id; it runs the isolation, which runs the
 * task's init (`$2`) with the file that holds the task's environment and command (named after the
 * id in the directory of task files, `$3`), the id, and `gated` when it waits at a gate. The
 * launcher answers on descriptor 4, which is its alone (a launch's gate takes its place, so it
 * closes when the launcher ends):
 * `taken <id>` once it has read a whole request and before it acts on it, then
 * `spawned <id> <pid> [<gate>]`, or `failed <id>` when it cannot enter the working directory or
 * make gates. The launch says `started <id>` and `ended <id> <exit code>` on descriptor 3.
 * `jobs` reaps the monitors that ended since the last request, so that none stays a zombie for
 * long; they outlive the launcher.
 *
 * A gate is a FIFO in a directory that is root's alone (`$4`, the hub's), made with others ahead
 * of need (one `mkfifo` for GATES_AT_ONCE: an exec costs a millisecond) and named after the
 * launcher's pid and a count, so that no two launches share one. The launch holds it open for
 * reading on descriptor 4, down to the task's init: the init waits there, before anything of the
 * job's is read, for the hub's `go` (a prepared launch, see LocalDriver.prepare); at any other
 * word, or end of file (the hub died), it ends without running the task. Opening it waits for
 * the hub, which opens it as soon as the launch is spawned, and removes it once it is heard.
 */
const LAUNCHER = [
  'monitor=$1 task_init=$2 tasks=$3 gates=$4 made=0 taken=0',
  'umask 077',
  // The monitor; run in the background, it is the child whose pid the launcher reports.
  'eval "run_monitor() {',
  '$monitor',
  '}"',
  // Names are never tried twice: after a failure (some may have been made) the next try takes new ones.
  `make_gates() { set --; while [ $# -lt ${GATES_AT_ONCE} ]; do set -- "$@" "$gates/$$-$((made + $#))"; done; made=$((made + $#)); "$MKFIFO" -m 600 "$@" 4>&- || { taken=$made; return 1; }; }`,
  'while IFS= read -r id && IFS= read -r dir && IFS= read -r exit_file && IFS= read -r cgroups && IFS= read -r gated && IFS= read -r count; do',
  '  jobs >/dev/null',
  '  set --',
  '  while [ "$count" -gt 0 ] && IFS= read -r arg; do set -- "$@" "$arg"; count=$((count - 1)); done',
  `  printf 'taken %s\\n' "$id" >&4`,
  // Entered here, not in the child, so that a launch that cannot start is told before anything else of it.
  `  cd "$dir/work" 2>/dev/null || { printf 'failed %s\\n' "$id" >&4; continue; }`,
  '  gate=',
  `  if [ -n "$gated" ]; then [ "$taken" -lt "$made" ] || make_gates || { printf 'failed %s\\n' "$id" >&4; cd /; continue; }; gate="$gates/$$-$taken" taken=$((taken + 1)); fi`,
  '  run_monitor "$exit_file" "$cgroups" "$id" "$@" "$SH" -c "$task_init" "$tasks/$id" "$id" "${gated:+gated}" </dev/null >>"$dir/logs/stdout" 2>>"$dir/logs/stderr" 4<"${gate:-/dev/null}" &',
  `  printf 'spawned %s %s %s\\n' "$id" "$!" "$gate" >&4`,
  '  cd /',
  'done',
].join('\n');

/** What a launch request names: all of it the hub's, one line each. */
export interface LaunchRequest {
  readonly executionId: string;
  readonly executionDir: string;
  readonly exitFile: string;
  readonly cgroups: readonly string[];
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

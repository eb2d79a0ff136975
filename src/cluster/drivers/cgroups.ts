import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { rmdir } from 'node:fs/promises';
import { basename, dirname, join, posix } from 'node:path';
import type { ExecutionLimits } from './cluster-driver.js';

/** The controllers an execution's group needs. */
const CONTROLLERS = ['pids', 'memory'] as const;
/** Below the hub's own group in each hierarchy: the group of its executions' groups, each named after its execution. */
export const EXECUTIONS_GROUP = 'hub-executions';
/**
 * cgroup v2: the child of the hub's own group that the hub's processes move to. A group that
 * enables controllers for its children may hold no process itself, so the hub leaves its own
 * group to its children: this one and that of its executions.
 */
export const HUB_LEAF = 'hub';
/**
 * The hub's processes in an execution's group besides the task's: the namespace's `unshare` and
 * the unprivileged shell that waits for the task as its PID 1. `maxProcesses` counts the task's.
 */
const LAUNCH_PROCESSES = 2;
/**
 * How a launch joins its groups on cgroup v1: by writing 0 (itself) to `tasks`, which moves the
 * writing thread (a shell has one, and what it forks follows it). Writing to `cgroup.procs`
 * takes the kernel's lock on every thread group (cgroup_threadgroup_rwsem), and taking it waits
 * for an RCU grace period unless another write just did: 11 to 15 ms a launch when launches come
 * tens of milliseconds apart (strace of the job-path benchmark: the first of the two writes
 * took 12.3 ms), against 2.7 ms for the whole shell through `tasks`. A single thread moving
 * itself skips that lock. On v2 only `cgroup.procs` joins a domain group; the cgroup2 mount's
 * `favordynmods` option takes that wait away (docs/security.md).
 */
const JOIN_FILE_V1 = 'tasks';
/**
 * The file that lists the processes of the group a launch joins through `joinFile` (one of
 * ExecutionCgroups.create's): its `cgroup.procs`, in v1 as in v2, one process a line.
 */
export function processesOfGroup(joinFile: string): string {
  return join(dirname(joinFile), 'cgroup.procs');
}

/** A limit above this is no limit (the kernel's "max" in v1 is 2^63 less a page). */
const NO_LIMIT_BYTES = 2 ** 62;
/**
 * How often removing an execution's group is tried while its last processes are still ending, and
 * how far apart: from 100 ms, doubling up to 5 s (a minute and a quarter in all: thousands of
 * processes killed at once take the kernel seconds to end on a busy host).
 */
const REMOVE_TRIES = 20;
const REMOVE_RETRY_MS = 100;
const REMOVE_RETRY_MAX_MS = 5000;

/** What a hub running as root says at start where it can make no control group. */
export const NO_CGROUPS =
  "No control groups can be made here: executions' maxProcesses and maxMemoryMiB (their profile's, or HUB_JOB_DEFAULT_MAX_*) are not enforced (maxRunSeconds is); as a best effort, each launch as an allocated uid sets RLIMIT_NPROC to its maxProcesses, counted over all of that user's processes";

/** The few file operations the hub makes on cgroupfs, so that the cgroup v2 logic can be tested on a machine that has v1. */
export interface CgroupFs {
  /** Throws when the file is absent. */
  read(path: string): string;
  write(path: string, text: string): void;
  /** Makes a group; one that exists is fine. */
  mkdir(path: string): void;
  /**
   * Removes a group, off the event loop: the kernel takes up to a millisecond to remove a memory
   * group that has held a task's pages (cgroup v1), which every job would otherwise wait for.
   */
  rmdir(path: string): Promise<void>;
  exists(path: string): boolean;
}

const HOST_FS: CgroupFs = {
  read: (path) => readFileSync(path, 'utf8'),
  write: (path, text) => writeFileSync(path, text),
  mkdir: (path) => mkdirSync(path, { recursive: true }),
  rmdir: (path) => rmdir(path),
  exists: existsSync,
};

/** What the hub sees of its own process's control groups: `/proc/self/cgroup`, `/proc/self/mountinfo`, and cgroupfs. */
export interface CgroupView {
  readonly fs: CgroupFs;
  readonly procSelfCgroup: string;
  readonly mountinfo: string;
}

/** The view of this process on this host; undefined where there is no /proc (not Linux). */
function hostView(): CgroupView | undefined {
  try {
    return { fs: HOST_FS, procSelfCgroup: readFileSync('/proc/self/cgroup', 'utf8'), mountinfo: readFileSync('/proc/self/mountinfo', 'utf8') };
  } catch {
    return undefined;
  }
}

/** The process's group in each hierarchy, from /proc/self/cgroup: cgroup v1's by controller, v2's under ''. */
export function ownGroups(procSelfCgroup: string): Map<string, string> {
  const groups = new Map<string, string>();
  for (const line of procSelfCgroup.split('\n')) {
    const match = /^\d+:([^:]*):(\/.*)$/.exec(line);
    if (!match) continue;
    const [, controllers, group] = match;
    if (controllers === '') groups.set('', group);
    else for (const controller of controllers.split(',')) groups.set(controller, group);
  }
  return groups;
}

/** A mounted cgroup hierarchy: v1 with its controllers, or v2; which of its groups it shows (`root`), and where. */
export interface CgroupMount {
  readonly version: 1 | 2;
  readonly controllers: readonly string[];
  readonly root: string;
  readonly mountPoint: string;
}

/** The cgroup hierarchies of /proc/self/mountinfo, in its order. */
export function cgroupMounts(mountinfo: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [mount, filesystem] = line.split(' - ');
    if (filesystem === undefined) continue;
    const [, , , root, mountPoint] = mount.split(' ');
    const [type, , options = ''] = filesystem.split(' ');
    if (type === 'cgroup2') mounts.push({ version: 2, controllers: [], root, mountPoint });
    else if (type === 'cgroup') mounts.push({ version: 1, controllers: options.split(','), root, mountPoint });
  }
  return mounts;
}

/** The directory of a group in a mount; undefined when the mount does not show it (a container's may show part of the hierarchy). */
function directoryOf(mount: CgroupMount, group: string): string | undefined {
  const relative = posix.relative(mount.root, group);
  return relative.startsWith('..') ? undefined : join(mount.mountPoint, relative);
}

const words = (text: string) => text.split(/\s+/).filter(Boolean);

function enableControllers(fs: CgroupFs, group: string): void {
  fs.write(join(group, 'cgroup.subtree_control'), CONTROLLERS.map((name) => `+${name}`).join(' '));
}

/**
 * Makes the group of the executions' groups below the hub's own group of cgroup v2 (`own`) and
 * enables the controllers for them; returns it. A group may enable controllers for its children
 * only when no process is in it, so the hub first moves its group's processes (itself, its
 * launcher, and whatever shares its group: a service's other processes) into a child of their
 * own, `hub`, as a container's init does. A hub already in such a child (started there by its
 * service manager, systemd's `DelegateSubgroup=hub`, or by this process before) keeps it. The
 * root of the whole hierarchy may hold processes and enable controllers at once: nothing moves.
 */
export function prepareV2(fs: CgroupFs, own: string, mountPoint: string): string {
  const available = words(fs.read(join(own, 'cgroup.controllers')));
  const missing = CONTROLLERS.filter((name) => !available.includes(name));
  if (missing.length > 0)
    throw new Error(
      `its own control group (${own}) offers no ${missing.join(' or ')} controller to its children: give the hub a delegated group (systemd: Delegate=yes)`,
    );
  let base = own;
  if (basename(own) === HUB_LEAF && fs.exists(join(dirname(own), EXECUTIONS_GROUP))) base = dirname(own);
  else if (own !== mountPoint || fs.exists(join(own, 'cgroup.type'))) {
    const leaf = join(own, HUB_LEAF);
    fs.mkdir(leaf);
    // A process started meanwhile (a fork of the hub's) stays behind and refuses the controllers: moved in the next round.
    for (let round = 1; ; round++) {
      for (const pid of words(fs.read(join(own, 'cgroup.procs')))) {
        try {
          fs.write(join(leaf, 'cgroup.procs'), pid);
        } catch {
          // Ended meanwhile.
        }
      }
      try {
        enableControllers(fs, own);
        break;
      } catch (error) {
        if (round === 3) throw error;
      }
    }
  } else enableControllers(fs, own);
  const executions = join(base, EXECUTIONS_GROUP);
  fs.mkdir(executions);
  enableControllers(fs, executions);
  return executions;
}

/** The counter of a `key value` file (pids.events, memory.events, memory.oom_control); 0 when absent. */
function counter(text: string, key: string): number {
  const line = text.split('\n').find((entry) => entry.startsWith(`${key} `));
  return line ? Number(line.slice(key.length + 1)) || 0 : 0;
}

/**
 * A control group per execution with its limits, below the hub's own group in each hierarchy, so
 * that whatever bounds the hub (a service manager's limits) bounds its jobs too: cgroup v2 when
 * its pids and memory controllers can be enabled there, else cgroup v1's pids and memory
 * hierarchies. The launch moves itself into them before the task starts, so every process and
 * thread of the task counts; the hub reads whether a limit was hit.
 */
export class ExecutionCgroups {
  /** Removals under way or tried again later (see remove), by execution: a launch of the same execution made afterwards cancels its own. */
  private readonly removals = new Map<string, Removal>();

  private constructor(
    /** Where an execution's group goes in each hierarchy (the same for v2). */
    readonly pids: string,
    readonly memory: string,
    private readonly version: 1 | 2,
    private readonly fs: CgroupFs,
  ) {}

  /**
   * The cgroups this machine offers the hub, set up below its own groups; or why it offers none
   * (not Linux, no pids or memory controller there, cgroupfs not writable: the hub is not root or
   * runs in a container that mounts it read-only).
   */
  static detect(view = hostView()): { readonly cgroups: ExecutionCgroups } | { readonly problem: string } {
    if (!view) return { problem: 'this host has no /proc/self/cgroup' };
    const own = ownGroups(view.procSelfCgroup);
    const mounts = cgroupMounts(view.mountinfo);
    const { fs } = view;
    try {
      const unified = mounts.find((mount) => mount.version === 2);
      const group = own.get('');
      const dir = unified && group !== undefined ? directoryOf(unified, group) : undefined;
      // A hybrid host mounts v2 with no controllers (they are v1's): v1 it is.
      if (unified && dir && CONTROLLERS.every((name) => words(fs.read(join(unified.mountPoint, 'cgroup.controllers'))).includes(name))) {
        const executions = prepareV2(fs, dir, unified.mountPoint);
        return { cgroups: new ExecutionCgroups(executions, executions, 2, fs) };
      }
      const [pids, memory] = CONTROLLERS.map((controller) => {
        const mount = mounts.find((candidate) => candidate.version === 1 && candidate.controllers.includes(controller));
        const ownGroup = own.get(controller);
        const ownDir = mount && ownGroup !== undefined ? directoryOf(mount, ownGroup) : undefined;
        if (!ownDir || !fs.exists(join(ownDir, 'cgroup.procs'))) throw new Error(`no ${controller} hierarchy shows the hub's own group`);
        const executions = join(ownDir, EXECUTIONS_GROUP);
        fs.mkdir(executions);
        return executions;
      });
      return { cgroups: new ExecutionCgroups(pids, memory, 1, fs) };
    } catch (error) {
      return { problem: (error as Error).message };
    }
  }

  /**
   * The memory limit of the hub's own group, in MiB (its own or an enclosing group's, the
   * lowest); undefined when none is set or none can be read.
   */
  static ownMemoryLimitMiB(view = hostView()): number | undefined {
    if (!view) return undefined;
    const own = ownGroups(view.procSelfCgroup);
    const mounts = cgroupMounts(view.mountinfo);
    const limit = (bytes: number) => (Number.isFinite(bytes) && bytes > 0 && bytes < NO_LIMIT_BYTES ? Math.floor(bytes / 1024 / 1024) : undefined);
    const read = (path: string) => {
      try {
        return view.fs.read(path);
      } catch {
        return '';
      }
    };
    const unified = mounts.find((mount) => mount.version === 2);
    const v1 = mounts.find((mount) => mount.version === 1 && mount.controllers.includes('memory'));
    const v1Group = own.get('memory');
    if (v1 && v1Group !== undefined) {
      const dir = directoryOf(v1, v1Group);
      // The lowest limit of the group and those above it, as the kernel keeps it.
      return dir ? limit(counter(read(join(dir, 'memory.stat')), 'hierarchical_memory_limit')) : undefined;
    }
    const v2Group = own.get('');
    let dir = unified && v2Group !== undefined ? directoryOf(unified, v2Group) : undefined;
    let lowest: number | undefined;
    while (unified && dir && dir.startsWith(unified.mountPoint)) {
      const found = limit(Number(read(join(dir, 'memory.max')).trim()));
      if (found !== undefined) lowest = Math.min(lowest ?? found, found);
      if (dir === unified.mountPoint) break;
      dir = dirname(dir);
    }
    return lowest;
  }

  /**
   * Makes an execution's groups with its limits; the files its launch joins them by (none without
   * limits to keep; see JOIN_FILE_V1). A removal of its groups by an earlier launch of the same execution
   * is cancelled, once the attempt under way (if any) is done, so that it cannot take the new ones.
   */
  async create(executionId: string, limits: ExecutionLimits): Promise<string[]> {
    const removal = this.removals.get(executionId);
    if (removal) {
      removal.cancelled = true;
      clearTimeout(removal.retry);
      this.removals.delete(executionId);
      await removal.attempt;
    }
    const procs: string[] = [];
    const joined = (group: string) => join(group, this.version === 1 ? JOIN_FILE_V1 : 'cgroup.procs');
    try {
      if (limits.maxProcesses !== undefined) {
        const group = join(this.pids, executionId);
        this.fs.mkdir(group);
        this.fs.write(join(group, 'pids.max'), String(limits.maxProcesses + LAUNCH_PROCESSES));
        procs.push(joined(group));
      }
      if (limits.maxMemoryMiB !== undefined) {
        const group = join(this.memory, executionId);
        const bytes = String(limits.maxMemoryMiB * 1024 * 1024);
        this.fs.mkdir(group);
        // Swap would let it run past the limit rather than be ended (absent where there is no swap accounting).
        if (this.version === 2) {
          this.fs.write(join(group, 'memory.max'), bytes);
          this.optionally(join(group, 'memory.swap.max'), '0');
        } else {
          this.fs.write(join(group, 'memory.limit_in_bytes'), bytes);
          this.optionally(join(group, 'memory.memsw.limit_in_bytes'), bytes);
        }
        if (!procs.includes(joined(group))) procs.push(joined(group));
      }
    } catch (error) {
      void this.remove(executionId);
      throw error;
    }
    return procs;
  }

  private optionally(path: string, text: string): void {
    try {
      this.fs.write(path, text);
    } catch {
      // Not offered here.
    }
  }

  private readOr(path: string): string {
    try {
      return this.fs.read(path);
    } catch {
      return '';
    }
  }

  /** The limit an execution's task ran into, if any: it could not start a process, or the kernel killed one for memory. */
  exceeded(executionId: string, limits: ExecutionLimits): 'maxProcesses' | 'maxMemoryMiB' | undefined {
    if (limits.maxMemoryMiB !== undefined) {
      const events = this.readOr(join(this.memory, executionId, this.version === 2 ? 'memory.events' : 'memory.oom_control'));
      if (counter(events, 'oom_kill') > 0) return 'maxMemoryMiB';
    }
    if (limits.maxProcesses !== undefined && counter(this.readOr(join(this.pids, executionId, 'pids.events')), 'max') > 0) return 'maxProcesses';
    return undefined;
  }

  /**
   * Removes an execution's groups, once nothing runs in them: the last of a killed task's
   * processes may still be ending, so a busy group is tried again a little later. In the
   * background: resolves when the first attempt is done (for specs), never rejects.
   */
  remove(executionId: string, triesLeft = REMOVE_TRIES): Promise<void> {
    const previous = this.removals.get(executionId);
    // One under way retries by itself.
    if (previous?.attempt) return previous.attempt;
    clearTimeout(previous?.retry);
    const removal: Removal = { cancelled: false };
    const groups = [...new Set([join(this.pids, executionId), join(this.memory, executionId)])];
    removal.attempt = Promise.all(
      groups.map((group) =>
        this.fs.rmdir(group).then(
          () => false,
          (error: NodeJS.ErrnoException) => error.code === 'EBUSY',
        ),
      ),
    ).then((busy) => {
      removal.attempt = undefined;
      if (removal.cancelled) return;
      if (!busy.includes(true) || triesLeft <= 1) {
        this.removals.delete(executionId);
        return;
      }
      const delay = Math.min(REMOVE_RETRY_MAX_MS, REMOVE_RETRY_MS * 2 ** (REMOVE_TRIES - triesLeft));
      removal.retry = setTimeout(() => {
        this.removals.delete(executionId);
        void this.remove(executionId, triesLeft - 1);
      }, delay);
      removal.retry.unref();
    });
    this.removals.set(executionId, removal);
    return removal.attempt;
  }
}

/** A removal of an execution's groups: its attempt under way, or its next one's timer. */
interface Removal {
  attempt?: Promise<void>;
  retry?: NodeJS.Timeout;
  /** A launch of the same execution made its groups anew: nothing more is removed. */
  cancelled: boolean;
}

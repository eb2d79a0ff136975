import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ExecutionLimits } from './cluster-driver.js';

const ROOT = '/sys/fs/cgroup';
/** The hub's own subtree in each hierarchy; an execution's group is named after the execution. */
const HUB_GROUP = 'hub';
/**
 * The hub's processes in an execution's group besides the task's: the namespace's `unshare` and
 * the unprivileged shell that waits for the task as its PID 1. `maxProcesses` counts the task's.
 */
const LAUNCH_PROCESSES = 2;

/** A counter from a `key value` file (pids.events, memory.events, memory.oom_control); 0 when absent. */
function counter(text: string, key: string): number {
  const line = text.split('\n').find((entry) => entry.startsWith(`${key} `));
  return line ? Number(line.slice(key.length + 1)) || 0 : 0;
}

async function readOr(path: string, fallback: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return fallback;
  }
}

/**
 * A control group per execution with limits, where the machine allows (the hub runs as root and
 * cgroupfs is writable): cgroup v2 when its pids and memory controllers can be enabled, else the
 * pids and memory hierarchies of cgroup v1. The launch moves itself into them before the task
 * starts, so every process and thread of the task counts; the hub reads whether a limit was hit.
 */
export class ExecutionCgroups {
  private constructor(
    /** Where an execution's group goes in each hierarchy (one for v2, pids and memory for v1). */
    private readonly pids: string,
    private readonly memory: string,
    private readonly version: 1 | 2,
  ) {}

  /** The cgroups this machine offers the hub; undefined when it offers none (not root, a read-only cgroupfs). */
  static detect(): ExecutionCgroups | undefined {
    try {
      if (existsSync(join(ROOT, 'cgroup.controllers'))) {
        const controllers = readFileSync(join(ROOT, 'cgroup.controllers'), 'utf8').split(/\s+/);
        if (!controllers.includes('pids') || !controllers.includes('memory')) return undefined;
        const hub = join(ROOT, HUB_GROUP);
        writeFileSync(join(ROOT, 'cgroup.subtree_control'), '+pids +memory');
        mkdirSync(hub, { recursive: true });
        writeFileSync(join(hub, 'cgroup.subtree_control'), '+pids +memory');
        return new ExecutionCgroups(hub, hub, 2);
      }
      const pids = join(ROOT, 'pids', HUB_GROUP);
      const memory = join(ROOT, 'memory', HUB_GROUP);
      if (!existsSync(join(ROOT, 'pids', 'cgroup.procs')) || !existsSync(join(ROOT, 'memory', 'cgroup.procs'))) return undefined;
      mkdirSync(pids, { recursive: true });
      mkdirSync(memory, { recursive: true });
      return new ExecutionCgroups(pids, memory, 1);
    } catch {
      return undefined;
    }
  }

  /** Creates an execution's groups with its limits; the `cgroup.procs` files its launch joins (none without limits to keep). */
  async create(executionId: string, limits: ExecutionLimits): Promise<string[]> {
    const procs: string[] = [];
    if (limits.maxProcesses !== undefined) {
      const group = join(this.pids, executionId);
      await mkdir(group, { recursive: true });
      await writeFile(join(group, 'pids.max'), String(limits.maxProcesses + LAUNCH_PROCESSES));
      procs.push(join(group, 'cgroup.procs'));
    }
    if (limits.maxMemoryMiB !== undefined) {
      const group = join(this.memory, executionId);
      const bytes = String(limits.maxMemoryMiB * 1024 * 1024);
      await mkdir(group, { recursive: true });
      if (this.version === 2) {
        await writeFile(join(group, 'memory.max'), bytes);
        // Swap would let it run past the limit rather than be ended.
        await writeFile(join(group, 'memory.swap.max'), '0').catch(() => undefined);
      } else {
        await writeFile(join(group, 'memory.limit_in_bytes'), bytes);
        await writeFile(join(group, 'memory.memsw.limit_in_bytes'), bytes).catch(() => undefined);
      }
      if (!procs.includes(join(group, 'cgroup.procs'))) procs.push(join(group, 'cgroup.procs'));
    }
    return procs;
  }

  /** The limit an execution's task ran into, if any: it could not start a process, or the kernel killed one for memory. */
  async exceeded(executionId: string, limits: ExecutionLimits): Promise<'maxProcesses' | 'maxMemoryMiB' | undefined> {
    if (limits.maxMemoryMiB !== undefined) {
      const group = join(this.memory, executionId);
      const events = await readOr(join(group, this.version === 2 ? 'memory.events' : 'memory.oom_control'), '');
      if (counter(events, 'oom_kill') > 0) return 'maxMemoryMiB';
    }
    if (limits.maxProcesses !== undefined && counter(await readOr(join(this.pids, executionId, 'pids.events'), ''), 'max') > 0) return 'maxProcesses';
    return undefined;
  }

  /** Removes an execution's groups once nothing runs in them. */
  async remove(executionId: string): Promise<void> {
    for (const group of new Set([join(this.pids, executionId), join(this.memory, executionId)])) await rmdir(group).catch(() => undefined);
  }
}

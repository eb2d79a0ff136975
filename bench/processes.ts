import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import type pg from 'pg';

export interface Started {
  readonly process: ChildProcess;
  readonly url: string;
  /** Milliseconds from spawning to the first 200 of `readyPath`. */
  readonly startMs: number;
}

export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

/** Spawns `node [nodeArgs] <script>` with PORT set and waits until `readyPath` answers 200. */
export async function startNode(script: string, env: Record<string, string>, readyPath: string, nodeArgs: readonly string[] = []): Promise<Started> {
  const port = await freePort();
  const began = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, script], {
    env: { PATH: process.env.PATH, PORT: String(port), HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}: ${errors}`);
    try {
      if ((await fetch(`${url}${readyPath}`)).status === 200) return { process: child, url, startMs: performance.now() - began };
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export async function stop(started: Started): Promise<void> {
  if (started.process.exitCode !== null || started.process.signalCode !== null) return;
  const exited = once(started.process, 'exit');
  started.process.kill('SIGTERM');
  await exited;
}

/** CPU milliseconds (user and system) a process has used so far (Linux: /proc/<pid>/stat, in ticks of 10 ms). */
export function cpuMs(pid: number): number {
  // The fields after the command's name, which is in parentheses and may hold spaces.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Resident set size of a process in MiB (Linux). */
export function rssMiB(pid: number): number {
  const kib = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  return Math.round((kib / 1024) * 10) / 10;
}

/**
 * Milliseconds of CPU the whole machine has spent busy (user, system and interrupts, from
 * /proc/stat; undefined elsewhere): what a run costs, whatever else it waits on.
 */
function machineBusyMs(): number | undefined {
  try {
    const [user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return ((user + nice + system + irq + softirq) * 1000) / 100;
  } catch {
    return undefined;
  }
}

/** What `run` took in seconds, and the machine's busy CPU per job in milliseconds over it. */
export async function timedWithCpu(jobs: number, run: () => Promise<number>): Promise<{ seconds: number; cpuMsPerJob?: number }> {
  const busyBefore = machineBusyMs();
  const seconds = await run();
  const busyAfter = machineBusyMs();
  return { seconds, ...(busyBefore !== undefined && busyAfter !== undefined && { cpuMsPerJob: (busyAfter - busyBefore) / jobs }) };
}

/** The same processes spawned directly from Node, `slots` at a time. */
export async function spawnDirectly(count: number, slots: number, command: string): Promise<number> {
  let next = 0;
  const began = performance.now();
  await Promise.all(
    Array.from({ length: slots }, async () => {
      while (next++ < count) await once(spawn(command, [], { stdio: 'ignore' }), 'exit');
    }),
  );
  return (performance.now() - began) / 1000;
}

/** The fields of /proc/<pid>/stat after the command name, which is in parentheses and may hold spaces (Linux). */
function statFields(pid: number | string): string[] {
  return readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /s, '')
    .split(' ');
}

/** Milliseconds of CPU a process has used (user and system, from /proc/<pid>/stat; Linux). */
export function cpuMsOf(pid: number): number {
  // utime and stime are the 12th and 13th fields after the name.
  const fields = statFields(pid);
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/**
 * Milliseconds of CPU the descendants of a process have used (Linux): its children's own and
 * what they reaped (cutime, cstime), and what it reaped itself. For the hub: its launcher and every
 * launch below it (monitors, `setsid`, `unshare`, the tasks), however short-lived, once reaped.
 */
export function descendantsCpuMs(pid: number): number {
  const ms = (fields: string[], from: number) => ((Number(fields[from]) + Number(fields[from + 1])) * 1000) / 100;
  let total = ms(statFields(pid), 13);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = statFields(entry);
      // The parent's pid is the 2nd field after the name.
      if (fields[1] === String(pid)) total += ms(fields, 11) + ms(fields, 13);
    } catch {
      // Gone meanwhile.
    }
  }
  return total;
}

/**
 * Milliseconds of CPU PostgreSQL's backends serving `database` have used, by pid (/proc, so only
 * with PostgreSQL on this machine; empty otherwise): the hub's pool, its change feed. `db` is left
 * out, being the benchmark's own connection.
 */
export async function backendsCpuMs(db: pg.Client, database: string): Promise<Map<number, number>> {
  const pids = (await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database])).rows;
  const used = new Map<number, number>();
  for (const { pid } of pids)
    try {
      used.set(pid, cpuMsOf(pid));
    } catch {
      // Gone, or not on this machine.
    }
  return used;
}

/** CPU used between two readings of backendsCpuMs (a backend that came meanwhile counts from 0; one that left is lost). */
export const cpuBetween = (before: Map<number, number>, after: Map<number, number>): number =>
  [...after].reduce((sum, [pid, ms]) => sum + ms - (before.get(pid) ?? 0), 0);

/**
 * Kills the processes whose working directory lies in one of `dirs` (hubs' data directories):
 * what the jobs of a hub that a test, the fuzzer or a benchmark stopped left running (a session,
 * a service, a job nobody waited for). A hub leaves them for another hub to follow, and the run's
 * end leaves them to no one; their uids are shared by every hub of the run, and a limit on a uid's
 * processes counts them all.
 */
export function killProcessesUnder(dirs: ReadonlySet<string> | readonly string[]): void {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let cwd: string;
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      continue;
    }
    if (![...dirs].some((dir) => cwd.startsWith(`${dir}/`))) continue;
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
}

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

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

/** Milliseconds of CPU a process has used (user and system, from /proc/<pid>/stat; Linux). */
export function cpuMsOf(pid: number): number {
  // The fields after the command name, which is in parentheses and may hold spaces: utime and stime are the 12th and 13th.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /s, '')
    .split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

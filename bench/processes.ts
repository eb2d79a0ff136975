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

/** Spawns `node <script>` with PORT set and waits until `readyPath` answers 200. */
export async function startNode(script: string, env: Record<string, string>, readyPath: string): Promise<Started> {
  const port = await freePort();
  const began = performance.now();
  const child = spawn(process.execPath, [script], {
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

/** Resident set size of a process in MiB (Linux). */
export function rssMiB(pid: number): number {
  const kib = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  return Math.round((kib / 1024) * 10) / 10;
}

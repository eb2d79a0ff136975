import { spawn, type ChildProcess } from 'node:child_process';

/** A hub running as a process of its own, with every log line it wrote (parsed). */
export interface RunningHub {
  readonly process: ChildProcess;
  readonly port: number;
  readonly lines: Record<string, unknown>[];
  readonly output: () => string;
  readonly url: string;
}

/** The benchmarks' own: a free loopback port. */
export { freePort } from '../../bench/processes.js';

export interface HubProcessOptions {
  readonly port: number;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** In a process group of its own, for a command (npm) that runs the hub as its child. */
  readonly detached?: boolean;
  readonly timeoutMs?: number;
}

/** Runs `command`, which starts a hub, and resolves once /health/ready answers 200, or rejects with its output. */
export async function startHubProcess(command: string, args: string[], options: HubProcessOptions): Promise<RunningHub> {
  const { port, env, cwd, detached = false, timeoutMs = 60_000 } = options;
  const child = spawn(command, args, { cwd, env, detached, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  const lines: Record<string, unknown>[] = [];
  const collect = (chunk: Buffer) => {
    text += chunk.toString();
    for (const line of chunk.toString().split('\n').filter(Boolean)) {
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // Not a log line (a Node warning, npm's own lines).
      }
    }
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const hub = { process: child, port, lines, output: () => text, url: `http://127.0.0.1:${port}` };
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`The hub exited with ${child.exitCode}:\n${text}`);
    try {
      if ((await fetch(`${hub.url}/health/ready`)).status === 200) return hub;
    } catch {
      // Not listening yet.
    }
    await new Promise((done) => setTimeout(done, 50));
  }
  if (detached) process.kill(-child.pid!, 'SIGKILL');
  else child.kill('SIGKILL');
  throw new Error(`The hub did not become ready:\n${text}`);
}

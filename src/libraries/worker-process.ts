import { type ChildProcess, spawn } from 'node:child_process';
import type { PlacedProgram } from '../cluster/shipped-programs.js';

// A library worker started outside the cluster, for the specs and the benchmark (bench/libraries-worker.ts)
// that talk to it directly: the hub itself starts workers as cluster service jobs.

/** A library worker started directly: where it listens, and the process to stop. */
export interface StartedWorker {
  readonly url: string;
  readonly child: ChildProcess;
  /** A request to the worker with its secret (or `secret` instead, null for none). */
  request(path: string, body?: unknown, secret?: string | null, init?: RequestInit): Promise<Response>;
  stop(): void;
}

/**
 * Starts the placed library worker `program` on a free port as `run` (the hub's uid when absent)
 * with `env` (HUB_LIBRARY_* at least) and resolves once it prints where it listens.
 */
export function startLibraryWorker(program: PlacedProgram, env: Record<string, string>, run?: { uid: number; gid: number }): Promise<StartedWorker> {
  const secret = env.HUB_WORKER_SECRET ?? 'worker-secret';
  const child = spawn(program.node, [program.entry], {
    env: { HUB_WORKER_SECRET: secret, HUB_WORKER_PORT: '0', HUB_WORKER_HOST: '127.0.0.1', PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(run ?? {}),
  });
  // Whatever happens to the spec or the benchmark, the worker does not outlive it.
  const kill = () => child.exitCode === null && child.kill('SIGKILL');
  process.once('exit', kill);
  child.once('exit', () => process.removeListener('exit', kill));
  return new Promise((resolve, reject) => {
    let output = '';
    const marker = 'listening on 127.0.0.1:';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const at = output.indexOf(marker);
      if (at < 0 || !output.includes('\n', at)) return;
      const url = `http://127.0.0.1:${Number(output.slice(at + marker.length).split('\n')[0])}`;
      resolve({
        url,
        child,
        request: (path, body, given = secret, init = {}) =>
          fetch(`${url}${path}`, {
            method: body === undefined ? 'GET' : 'POST',
            headers: { ...(given === null ? {} : { 'x-hub-service-secret': given }), ...(init.headers as Record<string, string> | undefined) },
            ...(body === undefined ? {} : { body: JSON.stringify(body) }),
            ...(init.signal ? { signal: init.signal } : {}),
          }),
        stop: () => {
          if (child.exitCode === null) child.kill('SIGKILL');
        },
      });
    });
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`the library worker exited with ${code}: ${output}`)));
  });
}

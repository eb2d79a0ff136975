import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Duplex, Readable } from 'node:stream';
import { PRIVILEGED_ENV, systemProgram } from '../../src/cluster/drivers/host-tools.js';
import { poll } from './poll.js';

function program(name: string): string {
  const path = systemProgram(name);
  if (!path) throw new Error(`the launch's specs need ${name} (Debian: dash, util-linux, coreutils)`);
  return path;
}

/** `sh` as the hub finds it (dash, on Debian), which runs the launch's programs. */
export const SH = program('sh');

/** The launcher's environment, which the monitor and the task's init inherit: fixed, with the absolute paths of its programs (see launcher.ts). */
export const LAUNCH_ENV: Readonly<Record<string, string>> = { ...PRIVILEGED_ENV, SH, SETSID: program('setsid'), MKFIFO: program('mkfifo') };

/** How a shell program ended, and what it wrote on its standard output and error. */
export interface ShellEnd {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A shell program under way: its process, what it said on descriptor 3 (a line each, as it comes), the other end of its descriptor 4, and its end. */
export interface ShellRun {
  readonly child: ChildProcess;
  readonly said: string[];
  readonly fd4: Duplex;
  /** Lines read from descriptor 4 (the launcher's answers). */
  readonly answers: string[];
  /** Once it has ended and every holder of its output has closed it. */
  readonly ended: Promise<ShellEnd>;
}

export interface ShellRunOptions {
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Whether its input is a pipe the spec writes to (the launcher's requests); else /dev/null, as for a launch. */
  readonly input?: boolean;
}

/** The process groups of the programs run, which endShells ends. */
const groups = new Set<number>();

/**
 * Runs a program (`argv`: for one of the launch's, `[SH, '-c', text, $0, $1, …]`) as the hub's
 * launch does: the launcher's environment unless told, in a process group of its own (as the
 * launcher and its forks are), descriptors 3 (what the launch says) and 4 (the launcher's answers,
 * or a gate) connected to the spec.
 */
export function runShell(argv: readonly string[], options: ShellRunOptions = {}): ShellRun {
  const [file, ...args] = argv;
  const child = spawn(file, args, {
    cwd: options.cwd,
    env: options.env ?? LAUNCH_ENV,
    detached: true,
    stdio: [options.input ? 'pipe' : 'ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
  });
  const said: string[] = [];
  const answers: string[] = [];
  createInterface({ input: child.stdio[3] as Readable }).on('line', (line) => said.push(line));
  const fd4 = child.stdio[4] as Duplex;
  fd4.on('error', () => undefined);
  createInterface({ input: fd4 }).on('line', (line) => answers.push(line));
  let stdout = '';
  let stderr = '';
  if (child.pid) groups.add(child.pid);
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const ended = new Promise<ShellEnd>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, said, fd4, answers, ended };
}

/** Until `lines` holds a line that starts with `prefix`; that line. */
export async function heard(lines: readonly string[], prefix: string): Promise<string> {
  const seen = await poll(
    () => [...lines],
    (now) => now.some((line) => line.startsWith(prefix)),
    `a line "${prefix}…"`,
  );
  return seen.find((line) => line.startsWith(prefix)) as string;
}

/**
 * Kills whatever is left in the process groups of the programs run: nothing, when they work; what
 * a broken edit of one left behind (which would keep Jest waiting on its output), when they do not.
 */
export function endShells(): void {
  for (const group of groups) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  groups.clear();
}

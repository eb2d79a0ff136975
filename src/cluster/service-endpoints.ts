import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { Injectable } from '@nestjs/common';
import type { RE2JS } from 're2js';
import { HubConfig } from '../common/config/hub-config.js';
import { InvalidInputError } from '../common/errors/hub-errors.js';
import { re2js } from '../common/on-first-use.js';
import { ClusterRepository } from './cluster.repository.js';


/** How a service workload says it is ready: a line of its stdout matching `pattern`, or a listener on its port. */
export type Readiness = { readonly type: 'stdout'; readonly pattern: string } | { readonly type: 'port' };

/** Where a service execution listens, and the secret the hub sends it with every request it forwards (api-map §9). */
export interface ServiceEndpoint {
  readonly host: string;
  readonly port: number;
  readonly secret: string;
}

/** The header the hub sends the secret in, replacing any a client sent. */
export const SERVICE_SECRET_HEADER = 'x-hub-service-secret';

/** Whether `given` is the secret, compared in constant time (a hash first, so that lengths tell nothing either). */
export function secretMatches(given: string | undefined, secret: string): boolean {
  if (given === undefined) return false;
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(secret));
}

/** How long a probe waits between looks: short at first (a server ready in milliseconds is seen in milliseconds), longer after. */
function probeDelayMs(elapsedMs: number): number {
  return elapsedMs < 2000 ? 5 : elapsedMs < 10_000 ? 25 : 100;
}

/** The most of a stdout line a pattern is tried on: a workload that writes no newline does not grow the hub's memory. */
const MAX_LINE = 64 * 1024;
/** What a probe reads of stdout in one look. */
const READ_CHUNK = 64 * 1024;
/** TCP_LISTEN in /proc/net/tcp. */
const LISTEN = '0A';

/** A compiled stdout pattern (RE2: linear time, whatever the pattern and the line); 400 naming `path` when it is not one. */
export function compileReadinessPattern(pattern: string, path: string): RE2JS {
  try {
    return re2js().RE2JS.compile(pattern);
  } catch (error) {
    throw InvalidInputError.at(path, `readiness.pattern is not a valid regular expression: ${(error as Error).message}`);
  }
}

/** Whether `uid` owns a socket listening on `port` at 127.0.0.1 or every address, as /proc/net/tcp{,6} lists them. */
async function listenerOwnedBy(port: number, uid: number): Promise<boolean> {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let table: string;
    try {
      table = await readFile(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of table.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 8) continue;
      const [address, localPort] = fields[1].split(':');
      const local = /^(0+|0100007F|0{16}FFFF00000100007F|0{24}01000000)$/i.test(address);
      if (localPort === hexPort && fields[3] === LISTEN && Number(fields[7]) === uid && local) return true;
    }
  }
  return false;
}

/** Whether something accepts a connection at host:port now. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.setTimeout(1000, () => done(false));
  });
}

/**
 * Service endpoints (api-map §9): a port and a secret for a `service` workload, and the probe that
 * tells when it is ready. On the local driver the hub picks a port free on 127.0.0.1 when the
 * workload is submitted; the process must listen there. Readiness is probed from the launch: the
 * probe starts when the workload is run, before its start is announced, and watches the execution's
 * own stdout file, or the host's socket table for a listener of the execution's own uid on its port
 * (a listener of anyone else's does not make it ready).
 */
@Injectable()
export class ServiceEndpoints {
  /** Ports handed out lately, so that two workloads submitted at once do not get the same one before either listens. */
  private readonly recent: number[] = [];

  constructor(
    private readonly cluster: ClusterRepository,
    private readonly config: HubConfig,
  ) {}

  /** Whether this hub's driver can give endpoints (the local one; Slurm's launch-side port is not built yet). */
  get available(): boolean {
    return this.config.clusterDriver === 'local';
  }

  /** A port free on 127.0.0.1 now, and a fresh secret. */
  async allocate(): Promise<ServiceEndpoint> {
    if (!this.available) throw new InvalidInputError(`Service endpoints need the local cluster driver; this hub runs ${this.config.clusterDriver}`);
    for (;;) {
      const port = await new Promise<number>((resolve, reject) => {
        const server = createServer();
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => {
          const address = server.address();
          server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
        });
      });
      if (this.recent.includes(port)) continue;
      this.recent.push(port);
      if (this.recent.length > 256) this.recent.shift();
      return { host: '127.0.0.1', port, secret: randomBytes(32).toString('base64url') };
    }
  }

  /**
   * Waits until the latest execution of job `jobId` is ready as `readiness` says; resolves with when
   * that was seen, or undefined once `signal` is aborted (the workload ended, or its owner stopped
   * waiting). Reads from the beginning of its stdout each time it is called (after a restart too).
   */
  async ready(jobId: string, endpoint: ServiceEndpoint, readiness: Readiness, signal: AbortSignal): Promise<Date | undefined> {
    const job = await this.cluster.findJob(jobId);
    const executions = await this.cluster.executionsOf(jobId);
    const execution = executions.at(-1);
    if (!job || !execution) return undefined;
    const uid = job.task.identity?.uid ?? process.getuid?.() ?? -1;
    const look =
      readiness.type === 'stdout'
        ? this.stdoutLook(execution.executionDir, compileReadinessPattern(readiness.pattern, 'readiness'))
        : this.portLook(endpoint, uid);
    const began = Date.now();
    try {
      while (!signal.aborted) {
        if (await look.next()) return new Date();
        await new Promise((resolve) => setTimeout(resolve, probeDelayMs(Date.now() - began)));
      }
      return undefined;
    } finally {
      await look.close();
    }
  }

  /** Reads what the execution has written to stdout since the last look and tries the pattern on each line (and the line being written). */
  private stdoutLook(executionDir: string, pattern: RE2JS): { next(): Promise<boolean>; close(): Promise<void> } {
    const file = join(executionDir, 'logs', 'stdout');
    let offset = 0;
    let partial = '';
    const buffer = Buffer.alloc(READ_CHUNK);
    return {
      async next() {
        if (!existsSync(file)) return false;
        const handle = await open(file, 'r');
        try {
          for (;;) {
            const { bytesRead } = await handle.read(buffer, 0, READ_CHUNK, offset);
            if (bytesRead === 0) break;
            offset += bytesRead;
            const lines = (partial + buffer.subarray(0, bytesRead).toString('utf8')).split('\n');
            partial = (lines.pop() ?? '').slice(-MAX_LINE);
            if (lines.some((line) => pattern.matcher(line.slice(-MAX_LINE)).find())) return true;
          }
        } finally {
          await handle.close();
        }
        return partial.length > 0 && pattern.matcher(partial).find();
      },
      close: () => Promise.resolve(),
    };
  }

  /** A listener of the execution's own uid on its port that accepts a connection. */
  private portLook(endpoint: ServiceEndpoint, uid: number): { next(): Promise<boolean>; close(): Promise<void> } {
    const proc = existsSync('/proc/net/tcp');
    return {
      // Without /proc (not Linux) the owner cannot be told: a connection has to do.
      next: async () => (!proc || (await listenerOwnedBy(endpoint.port, uid))) && (await accepts(endpoint.host, endpoint.port)),
      close: () => Promise.resolve(),
    };
  }
}

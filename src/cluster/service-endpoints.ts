import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { constants, existsSync } from 'node:fs';
import { open, readFile, type FileHandle } from 'node:fs/promises';
import { connect, createServer, isIP } from 'node:net';
import { join } from 'node:path';
import { Injectable } from '@nestjs/common';
import type { RE2JS } from 're2js';
import { HubConfig } from '../common/config/hub-config.js';
import { InvalidInputError } from '../common/errors/hub-errors.js';
import { sourceFile } from '../common/source-files.js';
import { re2js } from '../common/on-first-use.js';
import { ClusterRepository } from './cluster.repository.js';
import type { ClusterNode } from './entities/cluster-node.entity.js';
import { ShippedPrograms } from './shipped-programs.js';

/** How a service workload says it is ready: a line of its stdout matching `pattern`, or a listener on its port. */
export type Readiness = { readonly type: 'stdout'; readonly pattern: string } | { readonly type: 'port' };

/** Where a service execution listens, and the secret the hub sends it with every request it forwards (api-map §9). */
export interface ServiceEndpoint {
  readonly host: string;
  readonly port: number;
  readonly secret: string;
}

/**
 * What a service workload is given when it is submitted: its secret, and its endpoint when the hub
 * picks it (the local driver). Where the job's own launch picks the port on the node it lands on
 * (Slurm), `host` and `port` are null until `ready` reads them.
 */
export interface EndpointGrant {
  readonly host: string | null;
  readonly port: number | null;
  readonly secret: string;
}

/** The names of the variables that tell a service process where to listen. */
export interface EndpointVariables {
  readonly host: string;
  readonly port: string;
}

/** What a service's task runs, and the variables it gets for its endpoint. */
export interface ServiceLaunch {
  readonly command: string;
  readonly args: string[];
  readonly envVars: { readonly name: string; readonly value: string }[];
}

/** The file of an execution's directory in which its launch writes `host:port` (Slurm). */
export const ENDPOINT_FILE = 'endpoint';
/** The launch's own program (src/cluster/programs/service-port.mjs). */
const SERVICE_PORT_PROGRAM = sourceFile('cluster/programs/service-port.mjs');
/**
 * The shell line of a launch on a node: the port program's variables, then the service in the same
 * process (`exec`). Its positional parameters: node, the program, the two variable names, the
 * service's command and arguments.
 */
const NODE_LAUNCH = 'out=$("$1" "$2" "$3" "$4") || exit 1; eval "$out"; export "$3" "$4"; shift 4; exec "$@"';
/** `host:port` as the port program writes it (an IPv6 host in brackets). */
const ENDPOINT_LINE = /^(?:\[([0-9A-Fa-f:.]+)\]|([0-9.]+)):([0-9]{1,5})\n?$/;
/** The longest endpoint file the hub reads (`[IPv6]:port` and a newline fit). */
const ENDPOINT_FILE_MAX = 64;
/** The ports a launch may name: never a privileged one, which only root's services hold. */
const LOWEST_PORT = 1024;
/** How often a probe reads the execution's node again while its launch has written an endpoint the hub cannot place yet. */
const NODE_REREAD_MS = 200;

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
/** Without /proc (not Linux) a listener's owner cannot be told: a connection has to do. */
const SOCKET_TABLE = existsSync('/proc/net/tcp');

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

/** Every address `node` is known by: its address, and what its address and host name resolve to. */
async function addressesOf(node: Pick<ClusterNode, 'address' | 'hostname'>): Promise<Set<string>> {
  const addresses = new Set<string>([node.address]);
  for (const name of [node.address, node.hostname]) {
    if (!name) continue;
    try {
      for (const { address } of await lookup(name, { all: true })) addresses.add(address);
    } catch {
      // A name that does not resolve adds nothing.
    }
  }
  return addresses;
}

/**
 * A file the job's user may have replaced (on Slurm its execution's directory and logs are theirs),
 * opened as they cannot trick the hub into: no link followed, no FIFO waited on (O_NONBLOCK: a
 * blocked open would hold one of libuv's few threads for good), nothing but a regular file; with
 * its size. Undefined when it is missing or anything else.
 */
async function openRegularFile(path: string): Promise<{ handle: FileHandle; size: number } | undefined> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const stats = await handle.stat();
    if (stats.isFile()) return { handle, size: stats.size };
  } catch {
    // Missing, a link, or unreadable: nothing to read.
  }
  await handle?.close();
  return undefined;
}

/** The endpoint file's text, if it is a small regular file (openRegularFile); '' otherwise. */
async function readEndpointFile(path: string): Promise<string> {
  const file = await openRegularFile(path);
  if (!file) return '';
  try {
    if (file.size > ENDPOINT_FILE_MAX) return '';
    const buffer = Buffer.alloc(ENDPOINT_FILE_MAX);
    const { bytesRead } = await file.handle.read(buffer, 0, ENDPOINT_FILE_MAX, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } catch {
    return '';
  } finally {
    await file.handle.close();
  }
}

/** The endpoint a launch wrote, if it is one the hub may forward to: an address of its own node and an unprivileged port. */
export function parseEndpointFile(text: string, nodeAddresses: ReadonlySet<string>): { host: string; port: number } | undefined {
  const match = ENDPOINT_LINE.exec(text);
  if (!match) return undefined;
  const host = match[1] ?? match[2];
  const port = Number(match[3]);
  if (isIP(host) === 0 || port < LOWEST_PORT || port > 65535 || !nodeAddresses.has(host)) return undefined;
  return { host, port };
}

/**
 * Service endpoints (api-map §9): a port and a secret for a `service` workload, and the probe that
 * tells when it is ready. On the local driver the hub picks a port free on 127.0.0.1 when the
 * workload is submitted; the process must listen there. On Slurm the job's own launch picks a port
 * free on its node (src/cluster/programs/service-port.mjs, before the service runs) and writes
 * `host:port` into the execution's directory, where the probe reads it: the job's user writes that
 * file, so the hub takes only an address of the node the execution runs on and an unprivileged port
 * (never the hub's host or another machine). Readiness is probed from the launch: the probe starts
 * when the workload is run, before its start is announced, and watches the execution's own stdout
 * file, or the socket for a listener: on the local driver one of the execution's own uid in the
 * host's socket table (a listener of anyone else's does not make it ready); on a node, whose socket
 * table the hub cannot read, one that accepts a connection.
 */
@Injectable()
export class ServiceEndpoints {
  /** Ports handed out lately, so that two workloads submitted at once do not get the same one before either listens. */
  private readonly recent: number[] = [];

  constructor(
    private readonly cluster: ClusterRepository,
    private readonly programs: ShippedPrograms,
    private readonly config: HubConfig,
  ) {}

  /** Whether the hub picks the port (the local driver), rather than the job's launch on its node. */
  private get hubPicks(): boolean {
    return this.config.clusterDriver === 'local';
  }

  /** A fresh secret, and on the local driver a port free on 127.0.0.1 now. */
  async allocate(): Promise<EndpointGrant> {
    const secret = randomBytes(32).toString('base64url');
    if (!this.hubPicks) return { host: null, port: null, secret };
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
      return { host: '127.0.0.1', port, secret };
    }
  }

  /**
   * What a service's task runs so that it learns its endpoint in `variables`: as it is, with the
   * hub's port, on the local driver; on a node, behind the launch's port program, run by a shell
   * that then becomes the service (`exec`: nothing of the hub's stays between it and Slurm).
   */
  launch(grant: EndpointGrant, task: { command: string; args: readonly string[] }, variables: EndpointVariables): ServiceLaunch {
    if (grant.host !== null && grant.port !== null)
      return {
        command: task.command,
        args: [...task.args],
        envVars: [
          { name: variables.host, value: grant.host },
          { name: variables.port, value: String(grant.port) },
        ],
      };
    const program = this.programs.place('service-port.mjs', SERVICE_PORT_PROGRAM);
    return {
      command: '/bin/sh',
      args: ['-c', NODE_LAUNCH, 'service-launch', this.programs.node(), program, variables.host, variables.port, task.command, ...task.args],
      envVars: [],
    };
  }

  /**
   * Waits until the latest execution of job `jobId` is ready as `readiness` says; resolves with when
   * that was seen and where it listens, or undefined once `signal` is aborted (the workload ended,
   * or its owner stopped waiting). Reads from the beginning of its stdout each time it is called
   * (after a restart too); where the launch picks the endpoint, waits for it first.
   */
  async ready(jobId: string, grant: EndpointGrant, readiness: Readiness, signal: AbortSignal): Promise<{ at: Date; endpoint: ServiceEndpoint } | undefined> {
    const job = await this.cluster.findJob(jobId);
    const execution = (await this.cluster.executionsOf(jobId)).at(-1);
    if (!job || !execution) return undefined;
    const uid = job.task.identity?.uid ?? process.getuid?.() ?? -1;
    const known = grant.host !== null && grant.port !== null ? { host: grant.host, port: grant.port } : undefined;
    const where = known ? () => Promise.resolve(known) : this.launchedEndpoint(jobId, execution.executionDir);
    const stdout = readiness.type === 'stdout' ? this.stdoutLook(execution.executionDir, compileReadinessPattern(readiness.pattern, 'readiness')) : undefined;
    const began = Date.now();
    while (!signal.aborted) {
      const endpoint = await where();
      // A listener on the hub's own host must be the execution's uid's; a node's socket table is out of the hub's sight.
      const isReady =
        endpoint !== undefined &&
        (stdout ? await stdout() : (!known || !SOCKET_TABLE || (await listenerOwnedBy(endpoint.port, uid))) && (await accepts(endpoint.host, endpoint.port)));
      if (isReady) return { at: new Date(), endpoint: { ...endpoint, secret: grant.secret } };
      await new Promise((resolve) => setTimeout(resolve, probeDelayMs(Date.now() - began)));
    }
    return undefined;
  }

  /**
   * The endpoint the execution's launch wrote (`host:port` in its directory), once it has and the
   * hub knows the node it runs on: only an address of that node is taken. Undefined until then.
   */
  private launchedEndpoint(jobId: string, executionDir: string): () => Promise<{ host: string; port: number } | undefined> {
    const file = join(executionDir, ENDPOINT_FILE);
    let found: { host: string; port: number } | undefined;
    let nodeReadAt = 0;
    let addresses: Set<string> | undefined;
    return async () => {
      if (found) return found;
      if (!existsSync(file)) return undefined;
      if (!addresses) {
        if (Date.now() - nodeReadAt < NODE_REREAD_MS) return undefined;
        nodeReadAt = Date.now();
        const node = (await this.cluster.executionsOf(jobId)).at(-1)?.node;
        if (!node) return undefined;
        addresses = await addressesOf(node);
      }
      found = parseEndpointFile(await readEndpointFile(file), addresses);
      return found;
    };
  }

  /** Reads what the execution has written to stdout since the last look and tries the pattern on each line (and the line being written). */
  private stdoutLook(executionDir: string, pattern: RE2JS): () => Promise<boolean> {
    const file = join(executionDir, 'logs', 'stdout');
    let offset = 0;
    let partial = '';
    const buffer = Buffer.alloc(READ_CHUNK);
    return async () => {
      const opened = await openRegularFile(file);
      if (!opened) return false;
      const { handle } = opened;
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
    };
  }
}

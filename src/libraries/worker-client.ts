import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { SERVICE_SECRET_HEADER, type ServiceEndpoint } from '../cluster/service-endpoints.js';
import { InvalidInputError, NotFoundError, ServiceUnavailableError } from '../common/errors/hub-errors.js';

/** The most of a worker's reply the hub takes (records of 100,000 rows of wide datasets fit). */
const MAX_REPLY_BYTES = 512 * 1024 * 1024;
/** Sockets the hub keeps open to one worker: requests beyond wait for one (a worker answers them one DuckDB connection at a time anyway). */
const MAX_SOCKETS = 32;

/** A worker that did not take the connection (gone, replaced): a 503, which the pool may try once more elsewhere. */
export class WorkerUnreachableError extends ServiceUnavailableError {}

/** A worker's reply: its status and body bytes. */
export interface WorkerReply {
  readonly status: number;
  readonly body: Buffer;
}

/** What a request to a worker carries beside its method and path. */
export interface WorkerRequest {
  /** Sent as JSON. */
  readonly body?: unknown;
  /** Aborts the request, which the worker takes as cancelling its query. */
  readonly signal?: AbortSignal;
  /** How long the worker may stay silent before the request is given up (a 503). */
  readonly timeoutMs?: number;
  /** Names the request, so that any hub may cancel its query (POST /cancel/<id>). */
  readonly requestId?: string;
}

/** What a worker answered that is not a success, as the caller's problem: 400 and 404 carry the worker's message. */
export function workerProblem(reply: WorkerReply): Error {
  let msg = '';
  let position: unknown;
  try {
    ({ msg, position } = JSON.parse(reply.body.toString('utf8')) as { msg: string; position?: unknown });
  } catch {
    // Not JSON: said below without it.
  }
  const detail = typeof msg === 'string' && msg !== '' ? msg : `The worker answered ${reply.status}`;
  if (reply.status === 400) return new InvalidInputError(detail, typeof position === 'number' ? [{ path: 'filter', message: detail }] : undefined);
  if (reply.status === 404) return new NotFoundError(detail);
  return new ServiceUnavailableError(`A worker of the library failed to answer (${reply.status}): ${detail}`);
}

/**
 * The hub's side of the channel to library workers (api-map §9 "Service endpoints"): plain HTTP
 * to a worker's endpoint with its secret in X-Hub-Service-Secret, over a keep-alive agent of its
 * own per worker (connections are reused between requests; a replaced worker's agent is dropped).
 * A request is cancelled by closing it, which the worker takes as cancelling its query.
 */
export class WorkerClient {
  private readonly agents = new Map<string, Agent>();

  /** Sends one request; resolves with the worker's status and body, or a 503 when it cannot be reached. */
  async send(
    endpoint: ServiceEndpoint,
    method: 'GET' | 'POST',
    path: string,
    { body, signal, timeoutMs, requestId }: WorkerRequest = {},
  ): Promise<WorkerReply> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise<WorkerReply>((resolve, reject) => {
      const request = httpRequest(
        {
          host: endpoint.host,
          port: endpoint.port,
          method,
          path,
          agent: this.agentOf(endpoint),
          signal,
          timeout: timeoutMs,
          headers: {
            [SERVICE_SECRET_HEADER]: endpoint.secret,
            ...(requestId && { 'x-hub-request-id': requestId }),
            ...(payload && { 'content-type': 'application/json', 'content-length': String(payload.length) }),
          },
        },
        (response: IncomingMessage) => {
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_REPLY_BYTES) {
              request.destroy();
              reject(new ServiceUnavailableError(`A worker's reply is larger than the ${MAX_REPLY_BYTES} bytes the hub relays; ask for fewer rows`));
              return;
            }
            chunks.push(chunk);
          });
          // A reply of one chunk (a page of records nearly always is) is relayed as it came, not copied.
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks) }));
          response.on('error', reject);
        },
      );
      request.on('timeout', () => request.destroy(new ServiceUnavailableError('The library worker did not answer in time')));
      request.on('error', (error: Error) => {
        if (error instanceof ServiceUnavailableError || error.name === 'AbortError') reject(error);
        else reject(new WorkerUnreachableError(`The library worker could not be reached: ${error.message}`));
      });
      request.end(payload);
    });
  }

  /** Drops the agents of workers that are gone, closing their idle sockets. */
  forget(keep: readonly ServiceEndpoint[]): void {
    const kept = new Set(keep.map(keyOf));
    for (const [key, agent] of this.agents)
      if (!kept.has(key)) {
        agent.destroy();
        this.agents.delete(key);
      }
  }

  close(): void {
    this.forget([]);
  }

  private agentOf(endpoint: ServiceEndpoint): Agent {
    const key = keyOf(endpoint);
    let agent = this.agents.get(key);
    if (!agent) {
      agent = new Agent({ keepAlive: true, maxSockets: MAX_SOCKETS });
      this.agents.set(key, agent);
    }
    return agent;
  }
}

/** A worker's endpoint is its address and its secret: a port used again by a new worker gets a new agent. */
function keyOf(endpoint: ServiceEndpoint): string {
  return `${endpoint.host}:${endpoint.port}:${endpoint.secret}`;
}

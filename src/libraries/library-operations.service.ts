import { randomUUID } from 'node:crypto';
import { Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { Clock, type CancelTimer } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { ConflictError, HubError, NotFoundError } from '../common/errors/hub-errors.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import { StatusReply } from '../common/http/status-reply.js';
import type { AsyncAcceptedDto, AsyncDeletionDto, AsyncStatusDto } from './dto/published-library.dto.js';
import { LibraryOperationsRepository, type OperationRow } from './library-operations.repository.js';
import { LibraryPool } from './library-pool.js';

/** A finished operation and its result are kept this long (api-map §5 reapTime). */
export const REAP_AFTER_MS = 10 * 60_000;
/** How often a hub deletes operations past their reap time. */
const REAP_INTERVAL_MS = 60_000;

export function operationNotFound(id: string): NotFoundError {
  return new NotFoundError(`Asynchronous operation ${id} not found`);
}

export function toAsyncStatus(row: OperationRow): AsyncStatusDto {
  return {
    state: row.state,
    ...(row.reapTime !== null && { reapTime: row.reapTime }),
    startTime: row.startTime,
    events: row.events,
    ...(row.error !== null && { error: row.error }),
    method: row.method,
    parameters: row.parameters,
  };
}

/**
 * Asynchronous operations of published libraries (api-map §5): a request allowed to go on
 * asynchronously that has not finished within HUB_LIBRARY_ASYNC_AFTER_MS becomes an operation,
 * recorded `running` (its `queued` event first: it was queued when it came), finished `completed`
 * with its result or `failed` with its error, and reaped with its result REAP_AFTER_MS after. The
 * hub running it holds its cancellation; deleting it there aborts its worker request, and
 * deleting it through another hub asks the library's workers to cancel the query its id names and
 * removes it, so that its end is dropped when it comes.
 */
@Injectable()
export class LibraryOperationsService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger: Logger;
  /** This hub's running operations' cancellations, by id. */
  private readonly running = new Map<string, AbortController>();
  private cancelReap?: CancelTimer;
  private closed = false;

  constructor(
    private readonly operations: LibraryOperationsRepository,
    private readonly pool: LibraryPool,
    private readonly clock: Clock,
    private readonly config: HubConfig,
    logger: HubLogger,
  ) {
    this.logger = logger.for('libraries');
  }

  onApplicationBootstrap(): void {
    this.armReap();
  }

  onApplicationShutdown(): void {
    this.closed = true;
    this.cancelReap?.();
    for (const controller of this.running.values()) controller.abort();
  }

  /**
   * Runs `work` (given the signal that cancels it): without `allowAsync` its result as it comes;
   * with it, the result when it comes within HUB_LIBRARY_ASYNC_AFTER_MS, else `202 {operationId}`
   * with `Location`, the work going on as an operation of `libraryId` whose result is its JSON text.
   */
  async run(
    libraryId: string,
    location: string,
    parameters: Record<string, unknown>,
    allowAsync: boolean,
    work: (signal?: AbortSignal, requestId?: string) => Promise<string | Buffer>,
  ): Promise<StatusReply<string | Buffer | AsyncAcceptedDto>> {
    // A synchronous request is no operation: nothing can name it or cancel it, so it gets no id
    // and no signal (each a cost on every page of records, and the signal one on the worker
    // request too).
    if (!allowAsync) return StatusReply.json(await work());
    const controller = new AbortController();
    const queued = this.clock.now();
    // The operation's id, known before it is one: the worker request carries it, so that a delete through any hub cancels the query.
    const id = randomUUID();
    const result = work(controller.signal, id);
    // 0: every request allowed to go on asynchronously does (no race with a reply already there).
    if (this.config.libraryAsyncAfterMs > 0) {
      let timer: NodeJS.Timeout | undefined;
      const late = Symbol('late');
      const first = await Promise.race([
        result,
        new Promise<typeof late>((resolve) => {
          timer = setTimeout(() => resolve(late), this.config.libraryAsyncAfterMs);
        }),
      ]).finally(() => clearTimeout(timer));
      if (first !== late) return StatusReply.json(first);
    }
    await this.operations.insert({
      id,
      libraryId,
      method: 'getRecords',
      parameters,
      startTime: queued,
      events: [
        { type: 'queued', time: queued.toISOString() },
        { type: 'running', time: this.clock.now().toISOString() },
      ],
    });
    this.running.set(id, controller);
    void this.settle(id, result).finally(() => this.running.delete(id));
    return new StatusReply({ operationId: id }, 202, { location: `${location}/operations/${id}` });
  }

  async status(libraryId: string, id: string): Promise<AsyncStatusDto> {
    const row = await this.operations.find(libraryId, id);
    if (!row) throw operationNotFound(id);
    return toAsyncStatus(row);
  }

  /** Every operation of the library, keyed by id. */
  async list(libraryId: string): Promise<Record<string, AsyncStatusDto>> {
    return Object.fromEntries((await this.operations.list(libraryId)).map((row) => [row.id, toAsyncStatus(row)]));
  }

  /** A completed operation's result, exactly as the synchronous reply would have been; 409 while it is not completed. */
  async result(libraryId: string, id: string): Promise<StatusReply<string | Buffer>> {
    const text = await this.operations.result(libraryId, id);
    if (text !== null) return StatusReply.json(text);
    const row = await this.operations.find(libraryId, id);
    if (!row) throw operationNotFound(id);
    throw new ConflictError(`Asynchronous operation ${id} is ${row.state}: it has no result${row.error ? ` (${row.error.msg})` : ''}`);
  }

  /** Deletes an operation, cancelling it first when it runs here (its worker request is aborted). */
  async delete(libraryId: string, id: string): Promise<AsyncDeletionDto> {
    const row = await this.operations.delete(libraryId, id);
    if (!row) throw operationNotFound(id);
    const running = row.state === 'running' || row.state === 'queued';
    const here = this.running.get(id);
    // Running here: its worker request is aborted (closing it ends the query). Elsewhere: the
    // library's workers are asked to cancel the query the request named with this id.
    if (here) here.abort();
    else if (running) await this.pool.cancel(libraryId, id);
    const data = running
      ? { ...toAsyncStatus(row), state: 'cancelled', events: [...row.events, { type: 'cancelled', time: this.clock.now().toISOString() }] }
      : toAsyncStatus(row);
    return { msg: running ? `Asynchronous operation ${id} cancelled and deleted` : `Asynchronous operation ${id} deleted`, id, data };
  }

  /** One reaper pass at the clock's now (exposed for tests on the fake clock); answers how many it deleted. */
  async reap(): Promise<number> {
    try {
      return await this.operations.reap(this.clock.now());
    } catch (error) {
      this.logger.error({ err: error }, 'Reaping asynchronous operations failed; the next pass tries again');
      return 0;
    }
  }

  private async settle(id: string, result: Promise<string | Buffer>): Promise<void> {
    try {
      const text = await result;
      const at = this.clock.now();
      await this.operations.finish(id, { state: 'completed', result: text.toString() }, at, new Date(at.getTime() + REAP_AFTER_MS));
    } catch (error) {
      // Cancelled: deleted already, nothing to record.
      if ((error as Error).name === 'AbortError') return;
      const at = this.clock.now();
      const status = error instanceof HubError ? error.status : 500;
      const msg = error instanceof HubError ? error.message : 'The operation failed';
      if (!(error instanceof HubError)) this.logger.error({ err: error, operationId: id }, 'An asynchronous operation failed');
      await this.operations
        .finish(id, { state: 'failed', error: { status, msg } }, at, new Date(at.getTime() + REAP_AFTER_MS))
        .catch((failure: unknown) => this.logger.error({ err: failure, operationId: id }, 'Could not record an operation’s failure'));
    }
  }

  /** The reaper's timer, on the injected clock (so tests move it), re-armed after each pass. */
  private armReap(): void {
    if (this.closed) return;
    this.cancelReap = this.clock.setTimer(new Date(this.clock.now().getTime() + REAP_INTERVAL_MS), async () => {
      await this.reap();
      this.armReap();
    });
  }
}

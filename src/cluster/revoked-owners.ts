import { Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { ChangeFeed } from '../common/database/change-feed.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import { ClusterScheduler } from './cluster-scheduler.js';
import { ClusterRepository } from './cluster.repository.js';

/**
 * Revocation reaches the queue (docs/cluster.md): a user deactivated or deleted has their
 * executions that have not started ended `failed`, with a `Revoked` event saying why; what runs
 * keeps running until an administrator stops it. Every change of a user (by any hub, or by hand in
 * SQL) comes through the change feed and starts a look at the queue; placement never claims an
 * inactive owner's execution nor releases their prepared launch meanwhile (fair-share.ts), so none
 * starts before the look ends it.
 */
@Injectable()
export class RevokedOwners implements OnApplicationBootstrap, OnApplicationShutdown {
  private running?: Promise<void>;
  private again = false;
  private stopped = false;
  private readonly logger: Logger;

  constructor(
    private readonly cluster: ClusterRepository,
    private readonly scheduler: ClusterScheduler,
    changes: ChangeFeed,
    logger: HubLogger,
  ) {
    this.logger = logger.for('cluster');
    changes.subscribe('users', () => this.look());
  }

  onApplicationBootstrap(): void {
    this.look();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  /** Looks at the queue now, or once more after the look under way. */
  private look(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.endRevoked()
      .catch((error: unknown) =>
        this.logger.error({ err: error }, 'Could not end the waiting executions of deactivated or deleted users; retrying at the next change'),
      )
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.look();
        }
      });
  }

  private async endRevoked(): Promise<void> {
    for (const { jobId, userName } of await this.cluster.revokedPending()) {
      const why =
        userName === null
          ? 'Its owner was deleted before it started: a deleted user’s work does not run'
          : `Its owner, user '${userName}', was deactivated before it started: a deactivated user’s work does not run`;
      await this.scheduler.stopJob({ id: jobId }, why, true);
    }
  }
}

import { Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import { HubDatabase } from '../common/database/hub-database.js';
import { ServiceUnavailableError } from '../common/errors/hub-errors.js';
import type { ReadinessDto } from './health.dto.js';

@Injectable()
export class HealthService implements BeforeApplicationShutdown {
  private shuttingDown = false;

  constructor(private readonly database: HubDatabase) {}

  /** From here the hub drains its requests: a load balancer should send new ones elsewhere. */
  beforeApplicationShutdown(): void {
    this.shuttingDown = true;
  }

  /** Ready means not shutting down, and the database answers and holds every migration this release knows. */
  async readiness(): Promise<ReadinessDto> {
    if (this.shuttingDown) throw new ServiceUnavailableError('Not ready: the hub is shutting down');
    const { reachable, migrationsApplied } = await this.database.readiness();
    if (!reachable) throw new ServiceUnavailableError('Not ready: the database does not answer');
    if (!migrationsApplied) throw new ServiceUnavailableError('Not ready: the database lacks migrations of this release');
    return { status: 'ok', checks: { database: 'up', migrations: 'applied' } };
  }
}

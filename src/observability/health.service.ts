import { Injectable } from '@nestjs/common';
import { HubDatabase } from '../common/database/hub-database.js';
import { ServiceUnavailableError } from '../common/errors/hub-errors.js';
import type { ReadinessDto } from './health.dto.js';

@Injectable()
export class HealthService {
  constructor(private readonly database: HubDatabase) {}

  /** Ready means the database answers and holds every migration this release knows. */
  async readiness(): Promise<ReadinessDto> {
    const { reachable, migrationsApplied } = await this.database.readiness();
    if (!reachable) throw new ServiceUnavailableError('Not ready: the database does not answer');
    if (!migrationsApplied) throw new ServiceUnavailableError('Not ready: the database lacks migrations of this release');
    return { status: 'ok', checks: { database: 'up', migrations: 'applied' } };
  }
}

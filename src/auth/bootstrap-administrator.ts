import { randomBytes } from 'node:crypto';
import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import type { Logger } from 'pino';
import { HubConfig } from '../common/config/hub-config.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import { PasswordHasher } from './password-hasher.js';
import { UsersRepository } from './users.repository.js';

/**
 * Creates the administrator on a hub's first start (when no system user exists yet), from
 * HUB_ADMIN_USER and HUB_ADMIN_PASSWORD; a generated password is logged this once only. Later
 * changes to those settings have no effect: the administrator changes their password through the API.
 */
@Injectable()
export class BootstrapAdministrator implements OnApplicationBootstrap {
  private readonly logger: Logger;

  constructor(
    private readonly config: HubConfig,
    private readonly users: UsersRepository,
    private readonly hasher: PasswordHasher,
    logger: HubLogger,
  ) {
    this.logger = logger.for('auth');
  }

  async onApplicationBootstrap(): Promise<void> {
    if (await this.users.hasSystemUser()) return;
    const password = this.config.adminPassword ?? randomBytes(18).toString('base64url');
    const userName = this.config.adminUser;
    const created = await this.users.insertIfAbsent({ userName, displayName: 'Administrator', system: true, passwordHash: await this.hasher.hash(password) });
    if (!created) return;
    if (this.config.adminPassword) this.logger.info(`Created the bootstrap administrator "${userName}"`);
    else
      this.logger.warn(
        `Created the bootstrap administrator "${userName}" with the generated password ${password} (shown only this once; change it after logging in)`,
      );
  }
}

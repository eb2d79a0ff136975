import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { DatabaseModule } from '../common/database/database.module.js';
import { LinkSession } from './entities/link-session.entity.js';
import { ClusterModule } from '../cluster/cluster.module.js';
import { ExecutionProfilesModule } from '../execution-profiles/execution-profiles.module.js';
import { NamespacesModule } from '../namespaces/namespaces.module.js';
import { RbacModule } from '../rbac/rbac.module.js';
import { LinkSessionsController } from './link-sessions.controller.js';
import { LinkSessionsRepository } from './link-sessions.repository.js';
import { LinkSessionsService } from './link-sessions.service.js';
import { SessionConfigurationsRepository } from './session-configurations.repository.js';
import { SessionConfigurationsService } from './session-configurations.service.js';
import { SessionEngine } from './session-engine.js';
import { SessionHeartbeats } from './session-heartbeats.js';
import { SessionProxy } from './session-proxy.js';

/**
 * Link sessions (api-map §8): configurations, and sessions, each a `service` cluster job of its
 * owner's with an endpoint (port and secret), moved on by the engine as its readiness probe and the
 * cluster's announcements say, and ended by the reaper.
 */
@Module({
  imports: [DatabaseModule.forFeature([LinkSession]), AuthModule, NamespacesModule, RbacModule, ClusterModule, ExecutionProfilesModule],
  controllers: [LinkSessionsController],
  providers: [
    LinkSessionsService,
    LinkSessionsRepository,
    SessionConfigurationsService,
    SessionConfigurationsRepository,
    SessionEngine,
    SessionHeartbeats,
    SessionProxy,
  ],
  exports: [LinkSessionsService, SessionConfigurationsService],
})
export class SessionsModule {}

import { Module, type DynamicModule } from '@nestjs/common';
import type { Logger } from 'pino';
import { AuthModule } from './auth/auth.module.js';
import { AuthDomainsModule } from './authdomains/authdomains.module.js';
import { ClusterModule } from './cluster/cluster.module.js';
import { CommonModule } from './common/common.module.js';
import { ExecutionProfilesModule } from './execution-profiles/execution-profiles.module.js';
import type { HubConfig } from './common/config/hub-config.js';
import { NamespacesModule } from './namespaces/namespaces.module.js';
import { ObservabilityModule } from './observability/observability.module.js';
import { PipelinesModule } from './pipelines/pipelines.module.js';
import { SessionsModule } from './sessions/sessions.module.js';
import { LibrariesModule } from './libraries/libraries.module.js';
import { RbacModule } from './rbac/rbac.module.js';

/** The hub: the shared machinery and one module per area. */
@Module({})
export class AppModule {
  static register(config: HubConfig, logger: Logger): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CommonModule.forRoot(config, logger),
        AuthModule,
        NamespacesModule,
        RbacModule,
        AuthDomainsModule,
        ExecutionProfilesModule,
        ClusterModule,
        PipelinesModule,
        SessionsModule,
        LibrariesModule,
        ObservabilityModule,
      ],
    };
  }
}

import { Module } from '@nestjs/common';
import { DatabaseModule } from '../common/database/database.module.js';
import { NamespacesModule } from '../namespaces/namespaces.module.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { RbacModule } from '../rbac/rbac.module.js';
import { ExecutionProfile } from './entities/execution-profile.entity.js';
import { ProfileBinding } from './entities/profile-binding.entity.js';
import { ExecutionProfilesController } from './execution-profiles.controller.js';
import { ExecutionProfilesRepository } from './execution-profiles.repository.js';
import { ExecutionProfilesService } from './execution-profiles.service.js';
import { ProfileBindingsController } from './profile-bindings.controller.js';
import { ProfileBindingsRepository } from './profile-bindings.repository.js';
import { ProfileBindingsService } from './profile-bindings.service.js';

/**
 * Execution profiles and their bindings to namespaces (api-map §4). Profiles are global and
 * guarded in `*`; a binding lives in its namespace and is guarded there.
 */
@Module({
  imports: [DatabaseModule.forFeature([ExecutionProfile, ProfileBinding]), NamespacesModule, RbacModule],
  controllers: [ExecutionProfilesController, ProfileBindingsController],
  providers: [ExecutionProfilesService, ExecutionProfilesRepository, ProfileBindingsService, ProfileBindingsRepository],
  exports: [ExecutionProfilesService, ProfileBindingsService],
})
export class ExecutionProfilesModule {
  constructor(namespaces: NamespacesService, profiles: ExecutionProfilesService, bindings: ProfileBindingsRepository) {
    namespaces.registerUsageCheck({ holds: 'execution profile bindings', count: (namespaceId, manager) => bindings.countIn(namespaceId, manager) });
    profiles.registerUsageCheck({ holds: 'namespace bindings', count: (profileId, manager) => bindings.countOf(profileId, manager) });
    namespaces.registerResourceLocator('profileBinding', async (id) => {
      const binding = await bindings.findById(id);
      return binding && { namespace: { id: binding.namespaceId, name: binding.namespaceName } };
    });
  }
}

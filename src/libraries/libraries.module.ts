import { mkdirSync } from 'node:fs';
import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { AuthDomainsModule } from '../authdomains/authdomains.module.js';
import { ClusterModule } from '../cluster/cluster.module.js';
import { HubConfig } from '../common/config/hub-config.js';
import { DatabaseModule } from '../common/database/database.module.js';
import { ExecutionProfilesModule } from '../execution-profiles/execution-profiles.module.js';
import { NamespacesModule } from '../namespaces/namespaces.module.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { RbacModule } from '../rbac/rbac.module.js';
import { LibraryDefinition } from './entities/library-definition.entity.js';
import { LibraryDefinitionsController } from './library-definitions.controller.js';
import { LibraryDefinitionsRepository } from './library-definitions.repository.js';
import { LibraryDefinitionsService } from './library-definitions.service.js';
import { LibraryOperationsRepository } from './library-operations.repository.js';
import { LibraryOperationsService } from './library-operations.service.js';
import { LibraryPool } from './library-pool.js';
import { LibraryVersions } from './library-versions.js';
import { PublishedLibrariesController } from './published-libraries.controller.js';
import { PublishedLibrariesRepository } from './published-libraries.repository.js';
import { PublishedLibrariesService } from './published-libraries.service.js';

/**
 * Published libraries of datasets (api-map §5): definitions, and published libraries, each served
 * by a pool of worker jobs of its publisher's with endpoints, which the pool keeps as the cluster's
 * announcements say; their operations relayed to the workers, in both interface versions; and
 * asynchronous operations kept in the database until reaped.
 */
@Module({
  imports: [
    DatabaseModule.forFeature([LibraryDefinition]),
    AuthModule,
    AuthDomainsModule,
    NamespacesModule,
    RbacModule,
    ClusterModule,
    ExecutionProfilesModule,
  ],
  controllers: [LibraryDefinitionsController, PublishedLibrariesController],
  providers: [
    LibraryDefinitionsService,
    LibraryDefinitionsRepository,
    PublishedLibrariesService,
    PublishedLibrariesRepository,
    LibraryOperationsService,
    LibraryOperationsRepository,
    LibraryPool,
    LibraryVersions,
  ],
  exports: [LibraryDefinitionsService, PublishedLibrariesService],
})
export class LibrariesModule {
  constructor(namespaces: NamespacesService, definitions: LibraryDefinitionsRepository, libraries: PublishedLibrariesRepository, config: HubConfig) {
    namespaces.registerUsageCheck({ holds: 'library definitions', count: (namespaceId, manager) => definitions.countIn(namespaceId, manager) });
    namespaces.registerResourceLocator('libraryDefinition', async (id) => {
      const definition = await definitions.findById(id);
      return definition && { namespace: { id: definition.namespaceId, name: definition.namespaceName } };
    });
    namespaces.registerResourceLocator('publishedLibrary', async (id) => {
      // Cached like the library the request then relays to (cleared by any change of it).
      const library = await libraries.cached(id);
      return library && { namespace: { id: library.namespaceId, name: library.namespaceName } };
    });
    // api-map §9 "Data that job users read": the default root exists from the start, 0755, the hub's.
    if (config.libraryRoots.length === 1 && config.libraryRoots[0].startsWith(config.sharedDir))
      mkdirSync(config.libraryRoots[0], { recursive: true, mode: 0o755 });
  }
}

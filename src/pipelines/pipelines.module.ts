import { Module } from '@nestjs/common';
import { DatabaseModule } from '../common/database/database.module.js';
import { NamespacesModule } from '../namespaces/namespaces.module.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { RbacModule } from '../rbac/rbac.module.js';
import { PipelineEntry } from './entities/pipeline-entry.entity.js';
import { PipelineEntriesController } from './pipeline-entries.controller.js';
import { PipelineEntriesRepository } from './pipeline-entries.repository.js';
import { PipelineEntriesService } from './pipeline-entries.service.js';

/**
 * Pipelines (api-map §7): entries, pipelines and folders in one table, guarded as /Pipelines in
 * their namespace. Runs, their engine and triggers come next.
 */
@Module({
  imports: [DatabaseModule.forFeature([PipelineEntry]), NamespacesModule, RbacModule],
  controllers: [PipelineEntriesController],
  providers: [PipelineEntriesService, PipelineEntriesRepository],
  exports: [PipelineEntriesService],
})
export class PipelinesModule {
  constructor(namespaces: NamespacesService, entries: PipelineEntriesRepository) {
    namespaces.registerUsageCheck({ holds: 'pipeline entries', count: (namespaceId, manager) => entries.countIn(namespaceId, manager) });
    namespaces.registerResourceLocator('pipelineEntry', async (id) => {
      const entry = await entries.findById(id);
      return entry && { namespace: { id: entry.namespaceId, name: entry.namespaceName } };
    });
  }
}

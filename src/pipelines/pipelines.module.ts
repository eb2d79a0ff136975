import { Module } from '@nestjs/common';
import { ClusterModule } from '../cluster/cluster.module.js';
import { DatabaseModule } from '../common/database/database.module.js';
import { ExecutionProfilesModule } from '../execution-profiles/execution-profiles.module.js';
import { NamespacesModule } from '../namespaces/namespaces.module.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { RbacModule } from '../rbac/rbac.module.js';
import { PipelineEntry } from './entities/pipeline-entry.entity.js';
import { PipelineRun } from './entities/pipeline-run.entity.js';
import { PipelineEngine } from './pipeline-engine.js';
import { PipelineEntriesController } from './pipeline-entries.controller.js';
import { PipelineEntriesRepository } from './pipeline-entries.repository.js';
import { PipelineEntriesService } from './pipeline-entries.service.js';
import { PipelineRunsController } from './pipeline-runs.controller.js';
import { PipelineRunsRepository } from './pipeline-runs.repository.js';
import { PipelineRunsService } from './pipeline-runs.service.js';
import { RunRetention } from './run-retention.js';

/**
 * Pipelines (api-map §7): entries, pipelines and folders in one table, guarded as /Pipelines in
 * their namespace; runs, guarded as /PipelineRuns in theirs, each node a batch job on the cluster,
 * moved on by the engine as the cluster announces its executions' changes.
 */
@Module({
  imports: [DatabaseModule.forFeature([PipelineEntry, PipelineRun]), NamespacesModule, RbacModule, ClusterModule, ExecutionProfilesModule],
  controllers: [PipelineEntriesController, PipelineRunsController],
  providers: [PipelineEntriesService, PipelineEntriesRepository, PipelineRunsService, PipelineRunsRepository, PipelineEngine, RunRetention],
  exports: [PipelineEntriesService, PipelineRunsService],
})
export class PipelinesModule {
  constructor(namespaces: NamespacesService, entries: PipelineEntriesRepository, runs: PipelineRunsRepository) {
    namespaces.registerUsageCheck({ holds: 'pipeline entries', count: (namespaceId, manager) => entries.countIn(namespaceId, manager) });
    namespaces.registerUsageCheck({ holds: 'pipeline runs', count: (namespaceId, manager) => runs.countIn(namespaceId, manager) });
    namespaces.registerResourceLocator('pipelineEntry', async (id) => {
      const entry = await entries.findById(id);
      return entry && { namespace: { id: entry.namespaceId, name: entry.namespaceName } };
    });
    namespaces.registerResourceLocator('pipelineRun', async (id) => {
      const run = await runs.location(id);
      return run && { namespace: { id: run.namespaceId, name: run.namespaceName }, ownerId: run.ownerId };
    });
  }
}

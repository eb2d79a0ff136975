import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { ClusterModule } from '../cluster/cluster.module.js';
import { DatabaseModule } from '../common/database/database.module.js';
import { ExecutionProfilesModule } from '../execution-profiles/execution-profiles.module.js';
import { NamespacesModule } from '../namespaces/namespaces.module.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { RbacModule } from '../rbac/rbac.module.js';
import { PipelineEntry } from './entities/pipeline-entry.entity.js';
import { PipelineRun } from './entities/pipeline-run.entity.js';
import { PipelineTrigger } from './entities/pipeline-trigger.entity.js';
import { TriggerFiring } from './entities/trigger-firing.entity.js';
import { PipelineEngine } from './pipeline-engine.js';
import { PipelineEntriesController } from './pipeline-entries.controller.js';
import { PipelineEntriesRepository } from './pipeline-entries.repository.js';
import { PipelineEntriesService } from './pipeline-entries.service.js';
import { PipelineRunsController } from './pipeline-runs.controller.js';
import { PipelineRunsRepository } from './pipeline-runs.repository.js';
import { PipelineRunsService } from './pipeline-runs.service.js';
import { PipelineTriggersController } from './pipeline-triggers.controller.js';
import { PipelineTriggersRepository } from './pipeline-triggers.repository.js';
import { PipelineTriggersService } from './pipeline-triggers.service.js';
import { RunRetention } from './run-retention.js';
import { TriggerFiringLoop } from './trigger-firing-loop.js';

/**
 * Pipelines (api-map §7): entries, pipelines and folders in one table, guarded as /Pipelines in
 * their namespace; runs, guarded as /PipelineRuns in theirs, each node a batch job on the cluster,
 * moved on by the engine as the cluster announces its executions' changes; triggers, checked as their
 * pipeline, fired by the firing loop.
 */
@Module({
  imports: [
    DatabaseModule.forFeature([PipelineEntry, PipelineRun, PipelineTrigger, TriggerFiring]),
    NamespacesModule,
    RbacModule,
    ClusterModule,
    ExecutionProfilesModule,
    AuthModule,
  ],
  controllers: [PipelineEntriesController, PipelineRunsController, PipelineTriggersController],
  providers: [
    PipelineEntriesService,
    PipelineEntriesRepository,
    PipelineRunsService,
    PipelineRunsRepository,
    PipelineEngine,
    RunRetention,
    PipelineTriggersService,
    PipelineTriggersRepository,
    TriggerFiringLoop,
  ],
  exports: [PipelineEntriesService, PipelineRunsService, PipelineTriggersService],
})
export class PipelinesModule {
  constructor(namespaces: NamespacesService, entries: PipelineEntriesRepository, runs: PipelineRunsRepository, triggers: PipelineTriggersRepository) {
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
    // A trigger is checked as its pipeline (api-map §7).
    namespaces.registerResourceLocator('pipelineTrigger', async (id) => {
      const trigger = await triggers.find(id);
      return trigger && { namespace: { id: trigger.namespaceId, name: trigger.namespaceName }, object: `/Pipelines/${trigger.pipelineId}` };
    });
  }
}

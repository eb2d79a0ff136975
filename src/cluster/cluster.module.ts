import { Module, type Provider } from '@nestjs/common';
import { availableParallelism, totalmem } from 'node:os';
import { HubConfig } from '../common/config/hub-config.js';
import { ANY_UNPRIVILEGED_USER, assertReachableAsync, makeDirectory } from '../common/data-location.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import { AuthModule } from '../auth/auth.module.js';
import { DatabaseModule } from '../common/database/database.module.js';
import { ExecutionProfilesModule } from '../execution-profiles/execution-profiles.module.js';
import { ExecutionProfilesService } from '../execution-profiles/execution-profiles.service.js';
import { NamespacesModule } from '../namespaces/namespaces.module.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { RbacModule } from '../rbac/rbac.module.js';
import { ClusterScheduler } from './cluster-scheduler.js';
import { ClusterController } from './cluster.controller.js';
import { ClusterRepository } from './cluster.repository.js';
import { ClusterService } from './cluster.service.js';
import { Attempts } from './attempts.js';
import { DiskReserve } from './disk-reserve.js';
import { ExecutionAnnouncements } from './execution-announcements.js';
import { FilesCopiedOut } from './files-copied-out.js';
import { CLUSTER_DRIVER, type ClusterDriver } from './drivers/cluster-driver.js';
import { ExecutionCgroups, NO_CGROUPS } from './drivers/cgroups.js';
import { defaultMaxMemoryMiB } from './drivers/execution-bounds.js';
import { hubRunsAsRoot } from './drivers/host-tools.js';
import { LocalDriver } from './drivers/local-driver.js';
import { JobIdentities, NOT_ROOT } from './job-identities.js';
import { RevokedOwners } from './revoked-owners.js';
import { ServiceEndpoints } from './service-endpoints.js';
import { ShippedPrograms } from './shipped-programs.js';
import { SlurmDriver } from './drivers/slurm-driver.js';
import { ClusterJob } from './entities/cluster-job.entity.js';
import { ClusterNode } from './entities/cluster-node.entity.js';
import { JobExecution } from './entities/job-execution.entity.js';

/**
 * Prepared launches by default: twice the slots, so that a burst keeps every slot's next launch
 * ready, and at least eight, so that each round that refills them (once fewer than half remain)
 * prepares four or more: on a small node every other end of a burst ran a round of its own.
 */
function defaultPreparedLaunches(slots: number): number {
  return Math.max(2 * slots, 8);
}

const DRIVER: Provider = {
  provide: CLUSTER_DRIVER,
  inject: [HubConfig, HubLogger],
  useFactory: async (config: HubConfig, hubLogger: HubLogger): Promise<ClusterDriver> => {
    const logger = hubLogger.for('cluster');
    const root = hubRunsAsRoot();
    makeDirectory(config.sharedDir, 'HUB_SHARED_DIR');
    if (config.clusterDriver === 'slurm') return new SlurmDriver({ root });
    if (!root) logger.warn(NOT_ROOT);
    const slots = config.localSlots ?? availableParallelism();
    // Read before the hub moves into a group of its own below it (cgroup v2): the same limit either way.
    const hubMemoryLimitMiB = ExecutionCgroups.ownMemoryLimitMiB();
    const defaults = {
      maxProcesses: config.jobDefaultMaxProcesses,
      maxMemoryMiB: config.jobDefaultMaxMemoryMiB ?? defaultMaxMemoryMiB(Math.floor(totalmem() / 1024 / 1024), hubMemoryLimitMiB, slots),
    };
    const detected = root ? ExecutionCgroups.detect() : undefined;
    const cgroups = detected && 'cgroups' in detected ? detected.cgroups : undefined;
    if (detected && 'problem' in detected) logger.warn({ problem: detected.problem }, NO_CGROUPS);
    else if (cgroups)
      logger.info({ pids: cgroups.pids, memory: cgroups.memory, defaults, hubMemoryLimitMiB }, 'Each execution runs in control groups of its own here');
    // The checks that run programs run at once, and the start goes on meanwhile.
    const [made, reachable] = await Promise.allSettled([
      LocalDriver.create(
        { labels: config.localNodeLabels, slots, root, cgroups, defaults, prepared: config.localPreparedLaunches ?? defaultPreparedLaunches(slots) },
        logger,
      ),
      root &&
        assertReachableAsync(
          ANY_UNPRIVILEGED_USER,
          config.sharedDir,
          'Jobs run in',
          'Set HUB_SHARED_DIR to a directory below directories every user can enter.',
        ),
    ]);
    if (made.status === 'rejected') throw made.reason;
    if (reachable.status === 'rejected') {
      await made.value.close();
      throw reachable.reason;
    }
    return made.value;
  },
};

/**
 * The cluster (api-map §9): nodes, jobs and their executions, run by the configured driver. Jobs
 * live in namespaces and run under execution profiles, neither of which can be deleted while
 * jobs refer to them.
 */
@Module({
  imports: [DatabaseModule.forFeature([ClusterNode, ClusterJob, JobExecution]), AuthModule, NamespacesModule, RbacModule, ExecutionProfilesModule],
  controllers: [ClusterController],
  providers: [
    ClusterService,
    ClusterRepository,
    ClusterScheduler,
    DiskReserve,
    RevokedOwners,
    JobIdentities,
    ExecutionAnnouncements,
    Attempts,
    FilesCopiedOut,
    ServiceEndpoints,
    ShippedPrograms,
    DRIVER,
  ],
  exports: [ClusterService, ExecutionAnnouncements, FilesCopiedOut, ServiceEndpoints, ShippedPrograms],
})
export class ClusterModule {
  constructor(namespaces: NamespacesService, profiles: ExecutionProfilesService, cluster: ClusterRepository) {
    namespaces.registerUsageCheck({ holds: 'jobs', count: (namespaceId, manager) => cluster.countJobsIn(namespaceId, manager) });
    profiles.registerUsageCheck({ holds: 'jobs', count: (profileId, manager) => cluster.countJobsUsing(profileId, manager) });
    namespaces.registerResourceLocator('clusterJob', async (id) => {
      const job = await cluster.jobLocation(id);
      return job && { namespace: { id: job.namespaceId, name: job.namespaceName }, ownerId: job.ownerId ?? undefined };
    });
    namespaces.registerResourceLocator('jobExecution', async (id) => {
      const jobId = await cluster.executionJobId(id);
      const job = jobId && (await cluster.jobLocation(jobId));
      return job ? { namespace: { id: job.namespaceId, name: job.namespaceName }, ownerId: job.ownerId ?? undefined, object: `/ClusterJobs/${jobId}` } : null;
    });
  }
}

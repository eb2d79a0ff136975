import { Module, type Provider } from '@nestjs/common';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import { HubConfig } from '../common/config/hub-config.js';
import { ANY_UNPRIVILEGED_USER, assertReachable, makeDirectory } from '../common/data-location.js';
import { StartupError } from '../common/errors/startup-error.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import { systemAccount, type SystemAccount } from '../common/system-account.js';
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
import { CLUSTER_DRIVER, type ClusterDriver } from './drivers/cluster-driver.js';
import { LocalDriver } from './drivers/local-driver.js';
import { SlurmDriver } from './drivers/slurm-driver.js';
import { ClusterJob } from './entities/cluster-job.entity.js';
import { ClusterNode } from './entities/cluster-node.entity.js';
import { JobExecution } from './entities/job-execution.entity.js';

/** Tasks run as this account when the hub runs as root. */
const JOBS_ACCOUNT = 'hub-jobs';

/** The account local tasks run as; without one (the hub is not root), a warning of what that means. */
function jobsAccount(logger: Logger): SystemAccount | undefined {
  let account: SystemAccount | undefined;
  try {
    account = systemAccount(JOBS_ACCOUNT, () => logger.info(`Creating the system user "${JOBS_ACCOUNT}" to run local jobs as`));
  } catch (error) {
    throw new StartupError(
      `The hub runs as root and runs jobs as the user "${JOBS_ACCOUNT}"; creating it failed (${(error as Error).message.trim()}). Create it.`,
    );
  }
  if (!account)
    logger.warn(
      "The local driver runs jobs as the hub's own user, who can read the hub's secrets: give Create on /ClusterJobs only to trusted users, or run the hub as root so that jobs run as the unprivileged user hub-jobs",
    );
  return account;
}

const DRIVER: Provider = {
  provide: CLUSTER_DRIVER,
  inject: [HubConfig, HubLogger],
  useFactory: (config: HubConfig, logger: HubLogger): ClusterDriver => {
    makeDirectory(config.sharedDir, 'HUB_SHARED_DIR');
    if (config.clusterDriver === 'slurm') return new SlurmDriver();
    const account = jobsAccount(logger.for('cluster'));
    if (account)
      assertReachable(ANY_UNPRIVILEGED_USER, config.sharedDir, 'Jobs run in', 'Set HUB_SHARED_DIR to a directory below directories every user can enter.');
    return new LocalDriver({ labels: config.localNodeLabels, slots: config.localSlots ?? availableParallelism(), account });
  },
};

/**
 * The cluster (api-map §9): nodes, jobs and their executions, run by the configured driver. Jobs
 * live in namespaces and run under execution profiles, neither of which can be deleted while
 * jobs refer to them.
 */
@Module({
  imports: [DatabaseModule.forFeature([ClusterNode, ClusterJob, JobExecution]), NamespacesModule, RbacModule, ExecutionProfilesModule],
  controllers: [ClusterController],
  providers: [ClusterService, ClusterRepository, ClusterScheduler, DRIVER],
  exports: [ClusterService],
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

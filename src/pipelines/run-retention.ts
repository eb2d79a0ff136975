import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { FilesCopiedOut } from '../cluster/files-copied-out.js';
import { HubConfig } from '../common/config/hub-config.js';
import { runStorePrefix } from './pipeline-engine.js';
import { PipelineRunsRepository } from './pipeline-runs.repository.js';

const PRUNE_INTERVAL_MS = 3600_000;
const PRUNE_BATCH = 500;

/**
 * Runs are kept, with their logs and results, `HUB_RUN_RETENTION_DAYS` after they end (api-map
 * §7), well past the cluster's own job retention; then this deletes them, results first, so that
 * no row ever names a file that is gone.
 */
@Injectable()
export class RunRetention {
  private readonly logger = new Logger('RunRetention');

  constructor(
    private readonly runs: PipelineRunsRepository,
    private readonly files: FilesCopiedOut,
    private readonly config: HubConfig,
  ) {}

  @Interval('pipeline-run-prune', PRUNE_INTERVAL_MS)
  async prune(now = Date.now()): Promise<number> {
    const before = new Date(now - this.config.runRetentionDays * 24 * 3600 * 1000);
    let pruned = 0;
    for (let batch = await this.runs.finishedBefore(before, PRUNE_BATCH); batch.length > 0; batch = await this.runs.finishedBefore(before, PRUNE_BATCH)) {
      for (const id of batch) {
        await this.files.remove(runStorePrefix(id));
        if (await this.runs.deleteFinished(id)) pruned += 1;
      }
    }
    if (pruned > 0) this.logger.log(`Pruned ${pruned} pipeline runs past their retention`);
    return pruned;
  }
}

import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { MetricsService } from './metrics.service.js';

/** Unfinished executions and free CPUs as the database has them now, read at each scrape. */
export interface ClusterSnapshot {
  /** Pending executions not yet placed have the node ''. */
  readonly executions: readonly { readonly status: 'pending' | 'running'; readonly node: string; readonly count: number }[];
  readonly freeSlots: readonly { readonly node: string; readonly free: number }[];
}

/**
 * The job path's figures, as operators of Nomad, Slurm (sdiag) or Airflow's scheduler read them:
 * what waits and runs on each node and the free CPUs there (gauges, read from the database at each
 * scrape, so every replica shows the whole cluster), and this hub's own submissions, starts, ends,
 * submit → process started latency, placement failures and driver errors.
 */
@Injectable()
export class ClusterMetrics {
  private snapshot: () => Promise<ClusterSnapshot> = () => Promise.resolve({ executions: [], freeSlots: [] });
  private readonly submissions: Counter;
  private readonly starts: Counter<'node'>;
  private readonly ends: Counter<'outcome'>;
  private readonly latency: Histogram;
  private readonly placementFailures: Counter;
  private readonly driverErrors: Counter<'operation'>;

  constructor(metrics: MetricsService) {
    const registers = [metrics.registry];
    const read = (): Promise<ClusterSnapshot> => this.snapshot();
    new Gauge({
      name: 'hub_cluster_executions',
      help: "Unfinished executions by status (pending, running) and node ('' for those not yet placed)",
      labelNames: ['status', 'node'] as const,
      registers,
      async collect() {
        this.reset();
        for (const { status, node, count } of (await read()).executions) this.set({ status, node }, count);
      },
    });
    new Gauge({
      name: 'hub_cluster_free_slots',
      help: 'CPUs of each schedulable node that no execution takes',
      labelNames: ['node'] as const,
      registers,
      async collect() {
        this.reset();
        for (const { node, free } of (await read()).freeSlots) this.set({ node }, free);
      },
    });
    this.submissions = new Counter({ name: 'hub_cluster_submissions_total', help: 'Jobs submitted to this hub', registers });
    this.starts = new Counter({
      name: 'hub_cluster_execution_starts_total',
      help: 'Executions this hub started (or submitted to a queueing cluster), by node',
      labelNames: ['node'] as const,
      registers,
    });
    this.ends = new Counter({
      name: 'hub_cluster_execution_ends_total',
      help: 'Executions this hub settled, by outcome (completed, failed, lost, stopped)',
      labelNames: ['outcome'] as const,
      registers,
    });
    this.latency = new Histogram({
      name: 'hub_cluster_start_latency_seconds',
      help: "From a job's submission to its task's process having started",
      buckets: [0.005, 0.01, 0.02, 0.03, 0.045, 0.06, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
    });
    this.placementFailures = new Counter({
      name: 'hub_cluster_placement_failures_total',
      help: "Times an execution was found to fit no node (a profile's constraints no node meets, or no node takes work)",
      registers,
    });
    this.driverErrors = new Counter({
      name: 'hub_cluster_driver_errors_total',
      help: 'Failures of the cluster driver, by operation (start, outcomes, stop, nodes)',
      labelNames: ['operation'] as const,
      registers,
    });
  }

  /** Where the gauges read from (the cluster area's repository). */
  readFrom(snapshot: () => Promise<ClusterSnapshot>): void {
    this.snapshot = snapshot;
  }

  submitted(): void {
    this.submissions.inc();
  }

  started(node: string, submitted: Date, startedAt: Date): void {
    this.starts.inc({ node });
    this.latency.observe(Math.max(0, startedAt.getTime() - submitted.getTime()) / 1000);
  }

  ended(outcome: 'completed' | 'failed' | 'lost' | 'stopped'): void {
    this.ends.inc({ outcome });
  }

  placementFailed(): void {
    this.placementFailures.inc();
  }

  driverFailed(operation: 'start' | 'outcomes' | 'stop' | 'nodes'): void {
    this.driverErrors.inc({ operation });
  }
}

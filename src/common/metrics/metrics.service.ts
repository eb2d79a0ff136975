import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/**
 * The hub's Prometheus registry: process metrics plus HTTP request counts and latencies per route.
 * One registry per application, so that several apps in one process (tests) do not collide.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'hub_http_requests_total',
    help: 'HTTP requests served, by method, route pattern and status code',
    labelNames: ['method', 'route', 'status_code'] as const,
    registers: [this.registry],
  });
  private readonly durations = new Histogram({
    name: 'hub_http_request_duration_seconds',
    help: 'Time from receiving a request to finishing its reply, by method and route pattern',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'hub_' });
  }

  /** `route` is the route pattern (never the raw URL, which would explode the label set). */
  observeRequest(method: string, route: string, statusCode: number, seconds: number): void {
    const labels = { method, route, status_code: String(statusCode) };
    this.requests.inc(labels);
    this.durations.observe(labels, seconds);
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}

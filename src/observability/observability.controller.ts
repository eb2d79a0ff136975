import { Controller, Header } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { Route } from '../common/http/route.decorator.js';
import { MetricsService } from '../common/metrics/metrics.service.js';
import { HealthDto, ReadinessDto } from './health.dto.js';
import { HealthService } from './health.service.js';

const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

@ApiTags('Operations')
@Controller()
export class ObservabilityController {
  constructor(
    private readonly health: HealthService,
    private readonly metrics: MetricsService,
  ) {}

  @Route({
    method: 'GET',
    path: 'health/live',
    summary: 'Liveness',
    description: 'Answers while the process serves HTTP.',
    access: { public: true },
    response: HealthDto,
  })
  live(): HealthDto {
    return { status: 'ok' };
  }

  @Route({
    method: 'GET',
    path: 'health/ready',
    summary: 'Readiness',
    description: 'Ready when the database answers and has every migration of this release; 503 otherwise and while shutting down.',
    access: { public: true },
    response: ReadinessDto,
    errors: { 503: 'Not ready: the database does not answer' },
  })
  ready(): Promise<ReadinessDto> {
    return this.health.readiness();
  }

  @Route({
    method: 'GET',
    path: 'metrics',
    summary: 'Prometheus metrics',
    description: 'Process metrics and per-route request counts and latency histograms, in the Prometheus text format.',
    access: { object: '/Metrics', action: 'Read' },
    produces: PROMETHEUS_TEXT,
  })
  @Header('content-type', PROMETHEUS_TEXT)
  renderMetrics(): Promise<string> {
    return this.metrics.render();
  }
}

import { Global, Module } from '@nestjs/common';
import { ClusterMetrics } from './cluster-metrics.js';
import { MetricsService } from './metrics.service.js';

@Global()
@Module({ providers: [MetricsService, ClusterMetrics], exports: [MetricsService, ClusterMetrics] })
export class MetricsModule {}

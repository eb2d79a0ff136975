import { Module } from '@nestjs/common';
import { HealthService } from './health.service.js';
import { ObservabilityController } from './observability.controller.js';

@Module({ controllers: [ObservabilityController], providers: [HealthService] })
export class ObservabilityModule {}

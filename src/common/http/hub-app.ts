import type { DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { NestLoggerAdapter } from '../logging/hub-logger.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { fastifyOptions, installHttpHooks } from './fastify-setup.js';
import { setupOpenApi } from './openapi.js';

/**
 * Builds the hub application on Fastify, initialised but not listening; `main` and the tests both
 * start from here, so tests exercise the production pipeline. `observe` may add hooks of its own
 * before the instance is ready (the test harness records which route answered each request).
 */
export async function createHubApp(root: DynamicModule, logger: Logger, observe?: (fastify: FastifyInstance) => void): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(root, new FastifyAdapter(fastifyOptions(logger)), {
    logger: new NestLoggerAdapter(logger),
    abortOnError: false,
  });
  try {
    installHttpHooks(app.getHttpAdapter().getInstance(), app.get(MetricsService));
    observe?.(app.getHttpAdapter().getInstance());
    setupOpenApi(app);
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
    return app;
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
}

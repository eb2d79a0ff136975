import type { DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { HubDatabase } from '../database/hub-database.js';
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
  const before = HubDatabase.openings();
  const app = await NestFactory.create<NestFastifyApplication>(root, new FastifyAdapter(fastifyOptions(logger)), {
    logger: new NestLoggerAdapter(logger),
    abortOnError: false,
  }).catch(async (error: unknown) => {
    // Never made, so never shut down by Nest: the database opened for it (maybe still opening) is closed here.
    await HubDatabase.closeOpenedSince(before);
    throw error;
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
    // Closed by app.close() as a rule; not when a hook before it failed.
    await HubDatabase.closeOpenedSince(before);
    throw error;
  }
}

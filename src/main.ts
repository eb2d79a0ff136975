import './common/heap-tuning.js';
import 'reflect-metadata';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module.js';
import { loadHubConfigFromProcess, type HubConfig } from './common/config/hub-config.js';
import { StartupError } from './common/errors/startup-error.js';
import { createHubApp } from './common/http/hub-app.js';
import { HUB_VERSION } from './common/hub-version.js';
import { createRootLogger } from './common/logging/hub-logger.js';

/** After SIGTERM or SIGINT, requests in flight get this long to finish before the hub gives up. */
const SHUTDOWN_DEADLINE_MS = 30_000;

async function main(): Promise<void> {
  let config: HubConfig;
  try {
    config = loadHubConfigFromProcess();
  } catch (error) {
    createRootLogger('info').fatal((error as Error).message);
    process.exit(1);
  }
  const logger = createRootLogger(config.logLevel);
  // Until the app can shut down in order, a signal ends the start at once; exiting still stops an
  // embedded database already started (its exit hook).
  const abortStart = (signal: NodeJS.Signals) => {
    logger.warn(`${signal} received while starting; stopping`);
    process.exit(1);
  };
  process.once('SIGTERM', abortStart);
  process.once('SIGINT', abortStart);
  let app: NestFastifyApplication | undefined;
  try {
    app = await createHubApp(AppModule.register(config, logger), logger);
    process.removeListener('SIGTERM', abortStart);
    process.removeListener('SIGINT', abortStart);
    // Exit with 0 once shut down (rather than re-raising the signal): a clean exit for supervisors,
    // and 'exit' handlers (log flushing, profilers) run.
    app.enableShutdownHooks(['SIGTERM', 'SIGINT'], { useProcessExit: true });
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        logger.info(`${signal} received: finishing requests in flight, then stopping`);
        setTimeout(() => {
          logger.error(`Shutdown did not finish within ${SHUTDOWN_DEADLINE_MS / 1000} s; exiting`);
          process.exit(1);
        }, SHUTDOWN_DEADLINE_MS).unref();
      });
    }
    await app.listen({ port: config.port, host: config.host });
    logger.info({ version: HUB_VERSION, url: await app.getUrl() }, `Hub ${HUB_VERSION} listening on port ${config.port}`);
  } catch (error) {
    if (error instanceof StartupError) logger.fatal(error.message);
    else logger.fatal({ err: error }, 'The hub failed to start');
    await app?.close().catch(() => undefined);
    process.exit(1);
  }
}

void main();

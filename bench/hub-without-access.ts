// The hub with its access guard replaced by one that lets every authenticated request through
// (lists unnarrowed), for measuring what access control costs. Never a way to run the hub.
import 'reflect-metadata';
import type { FastifyRequest } from 'fastify';
import { AppModule } from '../src/app.module.js';
import { loadHubConfigFromProcess } from '../src/common/config/hub-config.js';
import { createHubApp } from '../src/common/http/hub-app.js';
import { createRootLogger } from '../src/common/logging/hub-logger.js';
import { AccessGuard } from '../src/rbac/access.guard.js';

const config = loadHubConfigFromProcess();
const logger = createRootLogger(config.logLevel);
const app = await createHubApp(AppModule.register(config, logger), logger);
app.get(AccessGuard).canActivate = (context) => {
  context.switchToHttp().getRequest<FastifyRequest>().access = { asSelf: false, scope: { all: true, except: [] } };
  return Promise.resolve(true);
};
await app.listen({ port: config.port, host: config.host });
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void app.close().then(() => process.exit(0)));

// The hub's start on an external PostgreSQL, split (`npm run bench:start`, after a build): node's
// own start, loading the modules, Nest's create (injection, the database: connecting, checking the
// migrations, the change feed), the application's bootstrap hooks, Fastify's ready, listening, the
// first /health/ready; then the first /api/openapi.json, built on that request. Each run is a
// fresh process (`--child`), as only a first load costs what a start pays; the parent also times
// `node dist/src/main.js` from spawn to its first 200 of /health/ready. Uses hub_bench_start_<pid>
// on BENCH_DATABASE_URL, migrated by a first start that is not counted. docs/operations.md.
import { spawn } from 'node:child_process';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNode, stop, freePort } from './processes.js';
import { ADMIN_PASSWORD, dropDatabase, freshDatabase, HUB, median } from './support.js';

const RUNS = Number(process.env.BENCH_START_RUNS ?? 5);
const DATABASE = `hub_bench_start_${process.pid}`;

type Marks = [string, number][];
/** What begins the child's line of figures on its standard output. */
const RESULT = 'start-figures';

/** One start in this process, as main.ts and createHubApp make it, with the time of each step since the process began. */
async function child(): Promise<void> {
  const marks: Marks = [['node started', performance.now()]];
  const mark = (name: string) => marks.push([name, performance.now()]);
  await import('reflect-metadata');
  const { AppModule } = await import('../src/app.module.js');
  const { loadHubConfigFromProcess } = await import('../src/common/config/hub-config.js');
  const { createRootLogger } = await import('../src/common/logging/hub-logger.js');
  const { NestFactory } = await import('@nestjs/core');
  const { FastifyAdapter } = await import('@nestjs/platform-fastify');
  const { NestLoggerAdapter } = await import('../src/common/logging/hub-logger.js');
  const { MetricsService } = await import('../src/common/metrics/metrics.service.js');
  const { fastifyOptions, installHttpHooks } = await import('../src/common/http/fastify-setup.js');
  const { setupOpenApi } = await import('../src/common/http/openapi.js');
  const { HubDatabase } = await import('../src/common/database/hub-database.js');
  mark('modules loaded');
  const open = HubDatabase.open.bind(HubDatabase);
  let database = 0;
  HubDatabase.open = async (...args: Parameters<typeof HubDatabase.open>) => {
    const began = performance.now();
    const opened = await open(...args);
    database = performance.now() - began;
    return opened;
  };
  const config = loadHubConfigFromProcess();
  const logger = createRootLogger(config.logLevel);
  // The steps of createHubApp (src/common/http/hub-app.ts), one by one.
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.register(config, logger), new FastifyAdapter(fastifyOptions(logger)), {
    logger: new NestLoggerAdapter(logger),
    abortOnError: false,
  });
  mark("Nest's create (injection, the database, the change feed)");
  installHttpHooks(app.getHttpAdapter().getInstance(), app.get(MetricsService));
  setupOpenApi(app);
  mark('HTTP hooks, OpenAPI routes');
  await app.init();
  mark('bootstrap hooks (administrator, roles, credentials key, cluster)');
  await app.getHttpAdapter().getInstance().ready();
  mark("Fastify's ready");
  await app.listen({ port: config.port, host: config.host });
  mark('listening');
  const ready = await fetch(`http://127.0.0.1:${config.port}/health/ready`);
  await ready.text();
  mark(`first /health/ready (${ready.status})`);
  const document = await fetch(`http://127.0.0.1:${config.port}/api/openapi.json`);
  await document.text();
  mark(`first /api/openapi.json (${document.status})`);
  // On a line of its own, after whatever the hub logged there (its warnings at start).
  process.stdout.write(`\n${RESULT} ${JSON.stringify({ marks, database })}\n`);
  await app.close();
  process.exit(0);
}

async function runChild(env: Record<string, string>): Promise<{ marks: Marks; database: number }> {
  const port = await freePort();
  const started = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child'], {
    env: { PATH: process.env.PATH, PORT: String(port), HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  started.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise((resolve) => started.once('exit', resolve));
  if (code !== 0) throw new Error(`a start exited with ${String(code)}`);
  const line = out.split('\n').find((candidate) => candidate.startsWith(`${RESULT} `));
  if (!line) throw new Error(`a start printed no figures: ${out}`);
  return JSON.parse(line.slice(RESULT.length + 1)) as { marks: Marks; database: number };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-bench-'));
  const env = { DATABASE_URL: await freshDatabase(DATABASE), HUB_ADMIN_PASSWORD: ADMIN_PASSWORD, HUB_DATA_DIR: dataDir, HUB_LOG_LEVEL: 'warn' };
  try {
    await stop(await startNode(HUB, env, '/health/ready')); // migrates
    const spawned: number[] = [];
    const steps = new Map<string, number[]>();
    const databases: number[] = [];
    for (let run = 0; run < RUNS; run += 1) {
      const hub = await startNode(HUB, env, '/health/ready');
      spawned.push(hub.startMs);
      await stop(hub);
      const { marks, database } = await runChild(env);
      databases.push(database);
      marks.forEach(([name, at], index) => steps.set(name, [...(steps.get(name) ?? []), at - (index === 0 ? 0 : marks[index - 1][1])]));
    }
    console.log(`\nHub start on external PostgreSQL, median of ${RUNS} fresh processes (ms)\n`);
    console.log('| step | ms |\n|---|---|');
    for (const [name, values] of steps) console.log(`| ${name} | ${median(values).toFixed(0)} |`);
    console.log(`| (of Nest's create: the database connected, its migrations checked, the change feed) | ${median(databases).toFixed(0)} |`);
    console.log(
      `\nnode dist/src/main.js, spawn to the first 200 of /health/ready: median ${median(spawned).toFixed(0)} ms (${spawned.map((ms) => ms.toFixed(0)).join(', ')})`,
    );
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await dropDatabase(DATABASE);
  }
}

await (process.argv.includes('--child') ? child() : main());

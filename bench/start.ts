// The hub's start on an external PostgreSQL (`npm run bench:start`, after a build): the time from
// the node process starting to the first 200 of /health/ready, which means the database reachable
// and this release's migrations applied, over several fresh processes (BENCH_START_RUNS, default
// 7), with min, median and max. Two measures, alternated:
// - `node dist/hub.js` (the bundle `npm run build` makes of dist/src/main.js) as it is run, timed by this process from spawning it to the first 200;
// - the same start made step by step in a fresh child (`--child`), each step timed in the child
//   since its process began: node's own start, loading the packages one after another (each
//   figure what it adds), the hub's own modules, Nest's create (injection, the database), the
//   HTTP hooks and routes, the bootstrap hooks, Fastify's ready, listening, the first
//   /health/ready; then, after the start, the first /api/openapi.json (built on that request).
// With BENCH_START_COMPARE=<directory of another built checkout>, that tree's dist/hub.js is
// started too, alternately with this one's, on the same database: a before/after in one run, at one
// load (the CPU time each process spent to its 200, read from /proc, is the figure to compare on
// a busy machine). Uses hub_bench_start_<pid> on BENCH_DATABASE_URL, migrated by a first start that is not counted.
// docs/operations.md#start-up. Only node's built-in modules are imported statically, so that the
// child's first mark is node's own start.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';

const RUNS = Number(process.env.BENCH_START_RUNS ?? 7);
const COMPARE = process.env.BENCH_START_COMPARE;
const DATABASE = `hub_bench_start_${process.pid}`;

/** Each step's name, its end since the process began (ms), and the process's CPU time (user and system, ms) by then. */
type Marks = [string, number, number][];
/** What begins the child's line of figures on its standard output. */
const RESULT = 'start-figures';

/** The packages the hub loads at start, in an order where each adds what the ones before it did not. */
const PACKAGES = [
  'reflect-metadata',
  'rxjs',
  '@nestjs/common',
  '@nestjs/core',
  'fastify',
  '@nestjs/platform-fastify',
  'typeorm',
  'pg',
  'class-validator',
  'pino',
];

/** One start in this process, as main.ts and createHubApp make it, with the time of each step since the process began. */
async function child(): Promise<void> {
  const cpuMs = () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  };
  const marks: Marks = [['node started', performance.now(), cpuMs()]];
  const mark = (name: string) => marks.push([name, performance.now(), cpuMs()]);
  for (const name of PACKAGES) {
    await import(name);
    mark(`loading ${name}`);
  }
  const { AppModule } = await import('../src/app.module.js');
  const { loadHubConfigFromProcess } = await import('../src/common/config/hub-config.js');
  const { createRootLogger, NestLoggerAdapter } = await import('../src/common/logging/hub-logger.js');
  const { NestFactory } = await import('@nestjs/core');
  const { FastifyAdapter } = await import('@nestjs/platform-fastify');
  const { MetricsService } = await import('../src/common/metrics/metrics.service.js');
  const { fastifyOptions, installHttpHooks } = await import('../src/common/http/fastify-setup.js');
  const { setupOpenApi } = await import('../src/common/http/openapi.js');
  const { HubDatabase } = await import('../src/common/database/hub-database.js');
  mark("loading the hub's own modules (and what only they import)");
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
  mark("Nest's create (injection, the database)");
  installHttpHooks(app.getHttpAdapter().getInstance(), app.get(MetricsService));
  setupOpenApi(app);
  mark('HTTP hooks, OpenAPI routes (not the document)');
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
  mark(`after the start: first /api/openapi.json (${document.status})`);
  // On a line of its own, after whatever the hub logged there (its warnings at start).
  process.stdout.write(`\n${RESULT} ${JSON.stringify({ marks, database })}\n`);
  await app.close();
  process.exit(0);
}

interface ChildFigures {
  readonly marks: Marks;
  readonly database: number;
}

async function runChild(env: Record<string, string>, port: number): Promise<ChildFigures> {
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
  return JSON.parse(line.slice(RESULT.length + 1)) as ChildFigures;
}

const spread = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const ms = (value: number) => value.toFixed(0);
  return `${ms(sorted[0])} | ${ms(sorted[Math.floor(sorted.length / 2)])} | ${ms(sorted[sorted.length - 1])}`;
};
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(', ');

async function main(): Promise<void> {
  const { startNode, stop, freePort } = await import('./processes.js');
  const { ADMIN_PASSWORD, dropDatabase, freshDatabase, HUB } = await import('./support.js');
  const dataDir = mkdtempSync(join(tmpdir(), 'hub-bench-'));
  const env = { DATABASE_URL: await freshDatabase(DATABASE), HUB_ADMIN_PASSWORD: ADMIN_PASSWORD, HUB_DATA_DIR: dataDir, HUB_LOG_LEVEL: 'warn' };
  const loadBefore = load();
  try {
    // The first start migrates; it and the compared tree's first start run until each has written
    // its code cache (dist/hub.js's loader does so a few seconds in), as a deployed hub has.
    const withCodeCache = async (hubPath: string) => {
      const hub = await startNode(hubPath, env, '/health/ready');
      const dist = dirname(hubPath);
      const cached = () => readdirSync(dist).some((name) => name.endsWith('.code-cache'));
      const until = Date.now() + 15_000;
      while (existsSync(join(dist, 'hub-bundle.cjs')) && !cached() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 100));
      await stop(hub);
    };
    await withCodeCache(HUB);
    if (COMPARE) await withCodeCache(join(COMPARE, 'dist', 'hub.js'));
    const spawned: number[] = [];
    /** Each step's wall and CPU milliseconds, per run. */
    const steps = new Map<string, { wall: number[]; cpu: number[] }>();
    const databases: number[] = [];
    const spawnedCpu: number[] = [];
    const compared: number[] = [];
    const comparedCpu: number[] = [];
    /** A process's CPU time so far, user and system (Linux; clock ticks of 10 ms). */
    const cpuOf = (pid: number) => {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return (Number(fields[11]) + Number(fields[12])) * 10;
    };
    for (let run = 0; run < RUNS; run += 1) {
      const hub = await startNode(HUB, env, '/health/ready');
      spawned.push(hub.startMs);
      spawnedCpu.push(cpuOf(hub.process.pid!));
      await stop(hub);
      if (COMPARE) {
        const other = await startNode(join(COMPARE, 'dist', 'hub.js'), env, '/health/ready');
        compared.push(other.startMs);
        comparedCpu.push(cpuOf(other.process.pid!));
        await stop(other);
      }
      const figures = await runChild(env, await freePort());
      databases.push(figures.database);
      figures.marks.forEach(([name, at, cpu], index) => {
        const [, before, cpuBefore] = index === 0 ? ['', 0, 0] : figures.marks[index - 1];
        const step = steps.get(name) ?? { wall: [], cpu: [] };
        step.wall.push(at - before);
        step.cpu.push(cpu - cpuBefore);
        steps.set(name, step);
      });
    }
    const sum = (pick: (step: { wall: number[]; cpu: number[] }) => number[]) => {
      const counted = [...steps.entries()].filter(([name]) => !name.startsWith('after the start')).map(([, step]) => pick(step));
      return Array.from({ length: RUNS }, (_, run) => counted.reduce((total, values) => total + values[run], 0));
    };
    console.log(`\nHub start on external PostgreSQL, ${RUNS} fresh processes (ms); load average ${loadBefore} before, ${load()} after\n`);
    console.log(
      '| node dist/hub.js, spawn to the first 200 of /health/ready | wall min | median | max | CPU min | median | max |\n|---|---|---|---|---|---|---|',
    );
    console.log(`| **this tree** | ${spread(spawned)} | ${spread(spawnedCpu)} |`);
    if (COMPARE) console.log(`| ${COMPARE} | ${spread(compared)} | ${spread(comparedCpu)} |`);
    console.log('');
    console.log('| step (in a child making the same start) | wall min | median | max | CPU min | median | max |\n|---|---|---|---|---|---|---|');
    for (const [name, step] of steps) console.log(`| ${name} | ${spread(step.wall)} | ${spread(step.cpu)} |`);
    console.log(`| (of Nest's create: the database connected, its migrations checked, the change feed) | ${spread(databases)} | | | |`);
    console.log(`| **the child: node's start to the first 200 of /health/ready** | ${spread(sum((step) => step.wall))} | ${spread(sum((step) => step.cpu))} |`);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await dropDatabase(DATABASE);
  }
}

await (process.argv.includes('--child') ? child() : main());

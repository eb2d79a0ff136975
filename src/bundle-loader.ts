// The hub as it is run (`npm start`: dist/hub.js, which scripts/bundle.mjs makes of this file):
// runs the bundled hub (dist/hub-bundle.cjs, all of src/main.ts and its packages) through a V8 code
// cache kept beside it. Compiling the 10 MB bundle and, while it starts, the functions it calls
// was a fifth of a start's CPU; from the cache V8 reads them back instead (docs/operations.md,
// start-up). Node 20 has no compile cache of its own (module.enableCompileCache is Node 22's),
// so the bundle is compiled here with vm.Script's cachedData, as CommonJS: an ES module gives V8
// no way to take a cache.
//
// The cache is made by the first start that finds none (or finds it refused), a few seconds in,
// when the start's functions have been compiled; it holds what V8 compiled, nothing of the hub's
// data. V8 checks it against its own version, its flags and the source's length, not the
// source's text: the cache's name carries a hash of the bundle's text (set by the build), so a
// rebuilt bundle never runs a stale cache, and the build removes the old ones.
import './common/heap-tuning.js';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';

/** The bundle's hash, set by scripts/bundle.mjs. */
declare const HUB_BUNDLE_HASH: string;

/** Long enough after the start for its functions to be compiled (a start takes 1–2 s), short enough for a first start that is stopped soon. */
const CACHE_AFTER_MS = 5_000;

const here = dirname(fileURLToPath(import.meta.url));
const bundle = join(here, 'hub-bundle.cjs');
// The flags V8 checks are the process's (heap-tuning.js, imported above, sets its one before the compile): another node or other flags get a cache of their own.
const cacheFile = join(here, `hub-bundle-${HUB_BUNDLE_HASH}-${process.version}-${process.arch}.code-cache`);

function cached(): Buffer | undefined {
  try {
    return readFileSync(cacheFile);
  } catch {
    return undefined;
  }
}

/** Writes the cache through a file of its own, so that another hub starting from the same dist/ reads a whole cache or none. */
function keep(script: Script): void {
  const partial = `${cacheFile}.${process.pid}`;
  try {
    writeFileSync(partial, script.createCachedData(), { mode: 0o644 });
    renameSync(partial, cacheFile);
  } catch {
    // A dist/ the hub may not write (installed read-only, another user's): it starts as it did without one.
    rmSync(partial, { force: true });
  }
}

function runWithCodeCache(): void {
  const cachedData = cached();
  // The bundle is ASCII (scripts/bundle.mjs escapes the rest), which latin1 reads as it is: 15 ms for
  // 10 MB, where Node 20's UTF-8 read takes 90-100. CommonJS's own wrapper goes on the bundle's first
  // line, so that its stack traces keep their lines.
  const source = readFileSync(bundle, 'latin1');
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: bundle,
    cachedData,
  });
  if (cachedData === undefined || script.cachedDataRejected) setTimeout(() => keep(script), CACHE_AFTER_MS).unref();
  const module = { exports: {} };
  (script.runInThisContext() as (...args: unknown[]) => void)(module.exports, createRequire(bundle), module, bundle, here);
}

// Node 20 maps the stack traces of a vm.Script through no source map: with --enable-source-maps
// (someone debugging), the bundle is required as the module it is, without the cache.
if (process.sourceMapsEnabled) createRequire(import.meta.url)(bundle);
else runWithCodeCache();

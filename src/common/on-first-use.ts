import { createRequire } from 'node:module';
import type * as Re2js from 're2js';

const require = createRequire(import.meta.url);

/**
 * A package loaded when it is first used rather than when the hub starts: for packages that serve
 * requests or background work but nothing of the start (docs/operations.md, start-up). Through its
 * CommonJS entry, read synchronously on the first call; its types come from an `import type`. Every
 * user of such a package must take it this way: an ES import beside it would load its other build too.
 */
export function onFirstUse<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(name) as T);
}

/** RE2 (linear time whatever the pattern and the text), for access patterns, node constraints and readiness lines. */
export const re2js = onFirstUse<typeof Re2js>('re2js');

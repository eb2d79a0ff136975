import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The hub's release, from its package.json (found upwards from this file, in src/ or dist/). */
function readVersion(): string {
  let directory = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'hub' && manifest.version) return manifest.version;
    } catch {
      // Not here; look in the parent directory.
    }
    const parent = dirname(directory);
    if (parent === directory) return '0.0.0';
    directory = parent;
  }
}

export const HUB_VERSION = readVersion();

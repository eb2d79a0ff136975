import { readFileSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The hub's package.json, read upwards from `directory`; undefined at the file system's root. */
function findPackage(directory: string): { root: string; version: string } | undefined {
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'hub' && manifest.version) return { root: directory, version: manifest.version };
    } catch {
      // Not here; look in the parent directory.
    }
    const parent = dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
}

const here = dirname(fileURLToPath(import.meta.url));
const found = findPackage(here);

/** The hub's release, from its package.json. */
export const PACKAGE_VERSION = found?.version ?? '0.0.0';

/**
 * Where the files that ship beside the code are: src/ when the hub runs from its sources (the
 * tests), dist/src/ when it is built. Found from the package, not from the module asking: the
 * built hub is one bundled file (dist/hub.js), whose own place says nothing of where a module was.
 */
const sourceRoot = found && (here + sep).startsWith(join(found.root, 'dist') + sep) ? join(found.root, 'dist', 'src') : join(found?.root ?? here, 'src');

/**
 * A file that ships with the code (the launch's shell programs, the programs for workloads), by its
 * path under src/; the build copies them to dist/src/ (nest-cli.json's assets).
 */
export function sourceFile(pathUnderSrc: string): URL {
  return pathToFileURL(join(sourceRoot, pathUnderSrc));
}

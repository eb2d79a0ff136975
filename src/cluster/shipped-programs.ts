import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cp, mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Injectable, type OnModuleInit } from '@nestjs/common';
import { HubConfig } from '../common/config/hub-config.js';
import { ANY_UNPRIVILEGED_USER, blockedForAsync } from '../common/data-location.js';
import { sourceFile } from '../common/source-files.js';
import { hubRunsAsRoot } from './drivers/host-tools.js';

/** Where shipped programs go, below HUB_SHARED_DIR. */
const PROGRAMS_DIR = 'programs';

/** The library worker's sources: src/libraries (dist/src/libraries once built), the worker and the filter it compiles. */
const LIBRARIES_DIR = fileURLToPath(sourceFile('libraries/'));
/** The packages the library worker imports; with their dependencies, they are placed beside it. */
const LIBRARY_WORKER_PACKAGES = ['@duckdb/node-api', '@duckdb/node-bindings', 'sas7bdat', 'peggy', 'pg'];

/** A program placed for job users: run `entry` with `node`. */
export interface PlacedProgram {
  readonly node: string;
  readonly entry: string;
}

/** The worker's files below LIBRARIES_DIR (relative paths): the filter and its grammar, the worker's code; no spec, map or declaration. */
function libraryWorkerFiles(): string[] {
  const code = (name: string) =>
    (name.endsWith('.js') || name.endsWith('.ts')) && !name.endsWith('.d.ts') && !name.endsWith('.d.js') && !name.includes('.spec.');
  const top = readdirSync(LIBRARIES_DIR).filter((name) => name.startsWith('where-filter') && code(name));
  const worker = readdirSync(join(LIBRARIES_DIR, 'worker'))
    .filter(code)
    .map((name) => join('worker', name));
  return [...top, ...worker].sort();
}

/** The directory of package `name` as Node.js would resolve it from `from`: the nearest node_modules holding it. */
function packageDir(name: string, from: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === dirname(dir)) return undefined;
  }
}

/**
 * `roots` and everything they depend on (optional dependencies that are installed included: DuckDB's
 * binary comes as one), each once, by directory; a dependency nested in a package already taken
 * travels with it.
 */
function packageClosure(roots: readonly string[], from: string): { name: string; dir: string; version: string }[] {
  const taken = new Map<string, { name: string; dir: string; version: string }>();
  const visit = (name: string, at: string, optional: boolean) => {
    const dir = packageDir(name, at);
    if (!dir) {
      if (optional) return;
      throw new Error(`The library worker needs the package ${name}, which is not installed`);
    }
    if ([...taken.values()].some((p) => p.dir === dir || dir.startsWith(`${p.dir}${sep}`)) || taken.has(name)) return;
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      version: string;
      dependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
    };
    taken.set(name, { name, dir, version: manifest.version });
    for (const dependency of Object.keys(manifest.dependencies ?? {})) visit(dependency, dir, false);
    for (const dependency of Object.keys(manifest.optionalDependencies ?? {})) visit(dependency, dir, true);
  };
  for (const root of roots) visit(root, from, false);
  return [...taken.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** Makes everything below `root` readable by every user, directories and executables enterable by them, links dropped. */
function openToJobUsers(root: string): void {
  const info = lstatSync(root);
  if (info.isSymbolicLink()) return rmSync(root);
  if (info.isDirectory()) {
    chmodSync(root, 0o755);
    for (const name of readdirSync(root)) openToJobUsers(join(root, name));
  } else chmodSync(root, info.mode & 0o111 ? 0o755 : 0o644);
}

/** Whether every job user can reach and execute the hub's own Node.js (always, when the hub is not root: jobs run as its user). */
async function ownNodeUsableByJobUsers(): Promise<boolean> {
  const own = process.execPath;
  return !hubRunsAsRoot() || ((await blockedForAsync(ANY_UNPRIVILEGED_USER, dirname(own))) === undefined && (statSync(own).mode & 0o001) !== 0);
}

/**
 * Programs the hub ships for workloads (api-map §9): the sessions' `files` server, library workers,
 * and the Node.js that runs them. Each is placed under HUB_SHARED_DIR (so Slurm nodes reach it
 * too), readable and executable by every job user, owned by the hub so that no job can change it,
 * in a directory named after its content: hubs of different versions sharing the directory each
 * find their own, and placing it again is a no-op. Never run from the hub's checkout, which job
 * users may not be able to enter.
 */
@Injectable()
export class ShippedPrograms implements OnModuleInit {
  private readonly placed = new Map<string, string>();
  private libraryWorkerPlaced?: Promise<PlacedProgram>;
  /**
   * Whether every job user can run the hub's own Node.js: asked as one of them (a program run) from
   * the moment this is made, so that the start goes on meanwhile (see node()).
   */
  private readonly ownNodeUsable: Promise<boolean> = ownNodeUsableByJobUsers();
  private nodePath?: string;

  constructor(private readonly config: HubConfig) {}

  async onModuleInit(): Promise<void> {
    await this.settleNode();
  }

  /** The path of `name` (its content read from `source`) placed for job users; placed at the first call. */
  place(name: string, source: URL | string): string {
    const key = `${name}\0${String(source)}`;
    const known = this.placed.get(key);
    if (known) return known;
    const content = readFileSync(source);
    const path = this.write(name, createHash('sha256').update(content).digest('hex').slice(0, 16), (target) => writeFileSync(target, content, { mode: 0o755 }));
    this.placed.set(key, path);
    return path;
  }

  /**
   * The Node.js binary job users run shipped programs with: the hub's own when every job user can
   * reach and execute it (a system install), else a copy placed like the programs. Settled when the
   * module starts (onModuleInit).
   */
  node(): string {
    if (this.nodePath === undefined) throw new Error('ShippedPrograms.node() was asked before its module started');
    return this.nodePath;
  }

  private async settleNode(): Promise<string> {
    const usable = await this.ownNodeUsable;
    this.nodePath ??= usable ? process.execPath : this.write('node', `node-${process.version}`, (target) => copyFileSync(process.execPath, target));
    return this.nodePath;
  }

  /**
   * The library worker (src/libraries/worker) placed for job users with the packages it imports
   * (DuckDB's, its C API's, sas7bdat's, Peggy's, pg's), in a directory named after the worker's code, the
   * packages' versions and the Node.js version (DuckDB's and fs-ext's native parts are built for
   * it): placed once, whole, through a rename. Run as `<node> <entry>`. Under Jest the sources
   * are TypeScript: they are transpiled as they are placed, with SWC (present wherever the sources
   * are run rather than the build).
   */
  libraryWorker(): Promise<PlacedProgram> {
    // One placement, shared by the publishes that ask meanwhile; a failed one is tried again at the next ask.
    this.libraryWorkerPlaced ??= this.placeLibraryWorker().catch((error: unknown) => {
      this.libraryWorkerPlaced = undefined;
      throw error;
    });
    return this.libraryWorkerPlaced;
  }

  /** The copy (some 74 MB, DuckDB's library most of it) is asynchronous: it holds no request up. */
  private async placeLibraryWorker(): Promise<PlacedProgram> {
    const files = libraryWorkerFiles().map((file) => ({ file, content: this.workerFile(file) }));
    const packages = packageClosure(LIBRARY_WORKER_PACKAGES, LIBRARIES_DIR);
    const hash = createHash('sha256');
    for (const { file, content } of files) hash.update(`${file}\0`).update(content).update('\0');
    for (const { name, version } of packages) hash.update(`${name}@${version}\0`);
    hash.update(process.version);
    const directory = await this.writeDirectory('library-worker', `library-worker-${hash.digest('hex').slice(0, 16)}`, async (target) => {
      await writeFile(join(target, 'package.json'), `${JSON.stringify({ type: 'module', private: true })}\n`);
      for (const { file, content } of files) {
        const path = join(target, 'libraries', file.replace(/\.ts$/, '.js'));
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, content);
      }
      for (const { name, dir } of packages) {
        await cp(dir, join(target, 'node_modules', name), {
          recursive: true,
          dereference: true,
          filter: (source) => !relative(dir, source).startsWith(`node_modules${sep}.bin`),
        });
      }
    });
    return { node: await this.settleNode(), entry: join(directory, 'libraries', 'worker', 'main.js') };
  }

  /** A worker file's content as JavaScript: as built, or transpiled from the TypeScript source. */
  private workerFile(file: string): Buffer {
    const content = readFileSync(join(LIBRARIES_DIR, file));
    if (!file.endsWith('.ts')) return content;
    const swc = createRequire(import.meta.url)('@swc/core') as { transformSync(code: string, options: object): { code: string } };
    const { code } = swc.transformSync(content.toString('utf8'), {
      jsc: { target: 'es2022', parser: { syntax: 'typescript' } },
      module: { type: 'es6' },
      filename: file,
    });
    return Buffer.from(code);
  }

  /** Writes a program's directory `name` into its version's directory unless it is there already: whole, through a rename of the directory. */
  private async writeDirectory(name: string, version: string, make: (target: string) => Promise<void>): Promise<string> {
    const path = join(this.versionDirectory(version), name);
    if (existsSync(path)) return path;
    const temporary = `${path}.${process.pid}.tmp`;
    rmSync(temporary, { recursive: true, force: true });
    mkdirSync(temporary, { mode: 0o755 });
    try {
      await make(temporary);
      openToJobUsers(temporary);
      renameSync(temporary, path);
    } catch (error) {
      rmSync(temporary, { recursive: true, force: true });
      // Another hub placed the same version first: its copy is as good as ours.
      if (existsSync(path)) return path;
      throw error;
    }
    return path;
  }

  /** A version's directory under HUB_SHARED_DIR/programs, made with its parents 0755 (job users enter them). */
  private versionDirectory(version: string): string {
    const directory = join(this.config.sharedDir, PROGRAMS_DIR, version);
    mkdirSync(directory, { recursive: true, mode: 0o755 });
    for (let dir = directory; dir !== this.config.sharedDir && dir !== dirname(dir); dir = dirname(dir)) chmodSync(dir, 0o755);
    return directory;
  }

  /** Writes a program into its directory (made 0755, the hub's) unless it is there already: whole, through a rename. */
  private write(name: string, version: string, make: (target: string) => void): string {
    const path = join(this.config.sharedDir, PROGRAMS_DIR, version, name);
    if (existsSync(path)) return path;
    this.versionDirectory(version);
    const temporary = `${path}.${process.pid}.tmp`;
    make(temporary);
    chmodSync(temporary, 0o755);
    renameSync(temporary, path);
    return path;
  }
}

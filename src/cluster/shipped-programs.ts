import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Injectable } from '@nestjs/common';
import { HubConfig } from '../common/config/hub-config.js';
import { ANY_UNPRIVILEGED_USER, blockedFor } from '../common/data-location.js';
import { hubRunsAsRoot } from './drivers/host-tools.js';

/** Where shipped programs go, below HUB_SHARED_DIR. */
const PROGRAMS_DIR = 'programs';

/**
 * Programs the hub ships for workloads (api-map §9): the sessions' `files` server, library workers,
 * and the Node.js that runs them. Each is placed under HUB_SHARED_DIR (so Slurm nodes reach it
 * too), readable and executable by every job user, owned by the hub so that no job can change it,
 * in a directory named after its content: hubs of different versions sharing the directory each
 * find their own, and placing it again is a no-op. Never run from the hub's checkout, which job
 * users may not be able to enter.
 */
@Injectable()
export class ShippedPrograms {
  private readonly placed = new Map<string, string>();
  private nodePath?: string;

  constructor(private readonly config: HubConfig) {}

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
   * reach and execute it (a system install), else a copy placed like the programs.
   */
  node(): string {
    if (this.nodePath) return this.nodePath;
    const own = process.execPath;
    const reachable = !hubRunsAsRoot() || (blockedFor(ANY_UNPRIVILEGED_USER, dirname(own)) === undefined && (statSync(own).mode & 0o001) !== 0);
    this.nodePath = reachable ? own : this.write('node', `node-${process.version}`, (target) => copyFileSync(own, target));
    return this.nodePath;
  }

  /** Writes a program into its directory (made 0755, the hub's) unless it is there already: whole, through a rename. */
  private write(name: string, version: string, make: (target: string) => void): string {
    const directory = join(this.config.sharedDir, PROGRAMS_DIR, version);
    const path = join(directory, name);
    if (existsSync(path)) return path;
    mkdirSync(directory, { recursive: true, mode: 0o755 });
    for (let dir = directory; dir !== this.config.sharedDir && dir !== dirname(dir); dir = dirname(dir)) chmodSync(dir, 0o755);
    const temporary = `${path}.${process.pid}.tmp`;
    make(temporary);
    chmodSync(temporary, 0o755);
    renameSync(temporary, path);
    return path;
  }
}

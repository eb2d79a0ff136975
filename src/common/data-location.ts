import { execFile, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { StartupError } from './errors/startup-error.js';

/** A user the hub hands files to, with how messages name it. */
export interface Reacher {
  /** As messages name it: `the user "hub-postgres"`. */
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

/**
 * Stands for every unprivileged user jobs may run as (a uid with no group and no file of its own):
 * what it can enter, they can.
 */
export const ANY_UNPRIVILEGED_USER: Reacher = { name: 'the unprivileged users jobs run as', uid: 65534, gid: 65534 };

/** Where a data directory's state directory records which data directory it belongs to. */
const OWNER_FILE = 'data-dir.json';
/** Where a data directory records the state directory it uses (present only when it uses one). */
export const STATE_FILE = 'state.json';

interface StateRecord {
  readonly id: string;
  readonly stateDir: string;
}

interface OwnerRecord {
  readonly id: string;
  readonly dataDir: string;
}

/** `path` and every directory above it, from the root down. */
function pathFromRoot(path: string): string[] {
  const chain = [];
  for (let current = resolve(path); ; current = dirname(current)) {
    chain.unshift(current);
    if (dirname(current) === current) return chain;
  }
}

/** The probe of {@link blockedFor}: `sh`, as `user`, trying each directory on the way to `path` that exists. */
function probeOf(user: Reacher, path: string): { args: string[]; options: { uid: number; gid: number; env: NodeJS.ProcessEnv }; first: string } {
  const existing = pathFromRoot(path).filter((directory) => existsSync(directory));
  return {
    args: ['-c', 'for d do test -x "$d" || { printf %s "$d"; exit 1; }; done', 'sh', ...existing],
    options: { uid: user.uid, gid: user.gid, env: { PATH: '/usr/bin:/bin' } },
    first: existing[0],
  };
}

/**
 * The first directory on the way to `path` (itself included) that `user` cannot enter, found by
 * asking as that user (so ACLs and every other rule count); undefined when it gets through.
 * Directories not made yet are not tried: the hub makes them itself.
 */
export function blockedFor(user: Reacher, path: string): string | undefined {
  const { args, options, first } = probeOf(user, path);
  const probe = spawnSync('/bin/sh', args, { ...options, encoding: 'utf8' });
  if (probe.status === 0) return undefined;
  return probe.stdout || first;
}

/** {@link blockedFor} without holding the hub's thread while the probe runs (a start asks several such things at once). */
export function blockedForAsync(user: Reacher, path: string): Promise<string | undefined> {
  const { args, options, first } = probeOf(user, path);
  return new Promise((resolve) => execFile('/bin/sh', args, { ...options, encoding: 'utf8' }, (error, stdout) => resolve(error ? stdout || first : undefined)));
}

/** Why a user cannot use a path, and the setting that puts it elsewhere: the message of every such failure. */
export function unreachableMessage(what: string, path: string, user: string, blocked: string, remedy: string): string {
  return `${what} ${path}, but ${user} cannot enter ${blocked === path ? 'it' : `${blocked}, above it`}. ${remedy}`;
}

/** Throws a {@link StartupError} naming the path, the user and the setting when `user` cannot reach `path`. */
export function assertReachable(user: Reacher, path: string, what: string, remedy: string): void {
  const blocked = blockedFor(user, path);
  if (blocked) throw new StartupError(unreachableMessage(what, path, user.name, blocked, remedy));
}

/** {@link assertReachable} through {@link blockedForAsync}. */
export async function assertReachableAsync(user: Reacher, path: string, what: string, remedy: string): Promise<void> {
  const blocked = await blockedForAsync(user, path);
  if (blocked) throw new StartupError(unreachableMessage(what, path, user.name, blocked, remedy));
}

/** The hub's own user, by name, for messages. */
function hubUser(): string {
  try {
    return `the hub's user "${userInfo().username}"`;
  } catch {
    return `the hub's user (uid ${process.getuid?.()})`;
  }
}

/**
 * Makes a directory the hub itself writes in (and its parents), or throws a {@link StartupError}
 * naming it, the hub's user and the setting that moves it, rather than a bare EACCES.
 */
export function makeDirectory(path: string, setting: string, mode = 0o755): void {
  try {
    mkdirSync(path, { recursive: true, mode });
    accessSync(path, constants.W_OK | constants.X_OK);
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    if (!['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST'].includes(code ?? '')) throw error;
    throw new StartupError(`The hub keeps files in ${path}, but ${hubUser()} cannot write there (${message}). Set ${setting} to a directory it can write.`);
  }
}

/**
 * Where a data directory keeps what unprivileged users must reach (the embedded PostgreSQL's
 * files, executions' directories): the data directory itself when they can enter it, otherwise a
 * directory of its own under the state directory, named after the data directory's path, so that
 * two checkouts never share one.
 */
export interface DataLocation {
  readonly dataDir: string;
  /** The data directory's own directory under HUB_STATE_DIR, when it needs one. */
  readonly stateDir?: string;
  /** `dataDir` or `stateDir`: the parent of `postgres/` and of the default shared directory. */
  readonly openDir: string;
}

/** `/var/lib/hub/<name>-<hash of the path>`: readable for whoever looks in, and one per path. */
export function stateDirFor(stateRoot: string, dataDir: string): string {
  const path = resolve(dataDir);
  const hint = basename(path).startsWith('.') ? basename(dirname(path)) : basename(path);
  const name = hint.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[.]+/, '') || 'hub';
  return join(stateRoot, `${name}-${createHash('sha256').update(path).digest('hex').slice(0, 12)}`);
}

/**
 * Decides where a data directory's shared files live, without changing anything. Only a hub
 * running as root hands files to other users. A data directory that already has a layout keeps
 * it; a new one uses the state directory when unprivileged users could not enter it.
 */
export function locateData(dataDir: string, stateRoot: string): DataLocation {
  const inPlace = { dataDir, openDir: dataDir };
  if (process.getuid?.() !== 0) return inPlace;
  const stateDir = stateDirFor(stateRoot, dataDir);
  const inState = { dataDir, stateDir, openDir: stateDir };
  if (existsSync(join(dataDir, STATE_FILE))) return inState;
  if (existsSync(join(dataDir, 'postgres')) || existsSync(join(dataDir, 'work'))) return inPlace;
  return blockedFor(ANY_UNPRIVILEGED_USER, dataDir) ? inState : inPlace;
}

function readJson<T>(file: string): T | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/**
 * Makes the state directory of a data directory, owned by the hub and enterable by everyone, and
 * pairs the two: a state directory left by an earlier data directory at the same path (deleted and
 * made again, as by a fresh clone) is set aside rather than taken over, and a data directory that
 * was moved or copied gets its own.
 */
export function openStateDirectory(location: DataLocation, logger: Logger): void {
  const { dataDir, stateDir } = location;
  if (!stateDir) return;
  makeDirectory(dataDir, 'HUB_DATA_DIR');
  const stateFile = join(dataDir, STATE_FILE);
  const ownerFile = join(stateDir, OWNER_FILE);
  const mine = readJson<StateRecord>(stateFile);
  const owner = readJson<OwnerRecord>(ownerFile);
  if (mine && owner && mine.id === owner.id && mine.stateDir === stateDir) return;
  // Without a record or a database, it holds only executions' directories made this start.
  const earlier = owner !== undefined || existsSync(join(stateDir, 'postgres'));
  if (earlier) {
    const aside = `${stateDir}.replaced-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    renameSync(stateDir, aside);
    logger.warn(`${stateDir} held the data of an earlier data directory at ${dataDir}; it is kept in ${aside} and this one starts afresh`);
  } else if (mine && mine.stateDir !== stateDir) {
    logger.warn(`The data directory ${dataDir} was moved or copied: its earlier database stays in ${mine.stateDir}, and this one starts afresh in ${stateDir}`);
  }
  makeDirectory(dirname(stateDir), 'HUB_STATE_DIR');
  makeDirectory(stateDir, 'HUB_STATE_DIR', 0o711);
  const id = randomBytes(16).toString('hex');
  writeFileSync(ownerFile, `${JSON.stringify({ id, dataDir: resolve(dataDir) } satisfies OwnerRecord)}\n`, { mode: 0o644 });
  writeFileSync(stateFile, `${JSON.stringify({ id, stateDir } satisfies StateRecord)}\n`, { mode: 0o644 });
}

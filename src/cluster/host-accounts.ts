import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { promisify } from 'node:util';
import { PRIVILEGED_ENV, systemProgram } from './drivers/host-tools.js';

const run = promisify(execFile);

/** How long what NSS said is trusted when the local files did not change (LDAP and the like change without them). */
const SNAPSHOT_TTL_MS = 60_000;
/** The local files whose change (useradd, usermod, groupadd…) drops what was read at once. */
const ACCOUNT_FILES = ['/etc/passwd', '/etc/group'];

/** A host account, as NSS gives it. */
export interface HostAccount {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  /** Every group it is in (its primary group included), as `id -G` gives them. */
  readonly groups: readonly number[];
}

/** What a name turned out to be: an account, or none. */
type Found = HostAccount | undefined;

/** An account, with what makes it unfit to be a job's identity, if anything. */
export interface AccountFacts {
  readonly account: HostAccount;
  /** The groups of `HUB_JOB_FORBIDDEN_GROUPS` it is in, its primary group included. */
  readonly forbiddenGroups: readonly string[];
  /** The other accounts that hold its uid; undefined when the host does not list its accounts. */
  readonly sharing: readonly string[] | undefined;
}

/** What the host said, at one moment. */
interface Snapshot {
  readonly version: string;
  readonly at: number;
  /** Names of the accounts holding each uid, when the host lists its accounts (`getent passwd`); undefined when it lists none. */
  readonly holders: ReadonlyMap<number, readonly string[]> | undefined;
  /** The forbidden groups that exist, by gid. */
  readonly forbidden: ReadonlyMap<number, string>;
  /** Accounts looked up by name, so far. */
  readonly accounts: Map<string, Promise<Found>>;
}

async function output(program: string, args: readonly string[]): Promise<string> {
  const path = systemProgram(program);
  if (!path) return '';
  try {
    return (await run(path, args, { env: PRIVILEGED_ENV, timeout: 10_000, maxBuffer: 256 * 1024 * 1024 })).stdout;
  } catch (error) {
    // getent exits 2 when some of the keys asked for do not exist, and prints those that do.
    return (error as { stdout?: string }).stdout ?? '';
  }
}

/** `name:x:uid:gid:…` lines of passwd or group. */
const entries = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(':'));

/**
 * The host's accounts and groups, read through NSS (getent, id: LDAP and the like count) for the
 * checks of job identities (api-map §1, docs/security.md). Each read spawns a process (20 to 40 ms
 * each on a loaded machine, against a job path of about 10 ms), so what was read is kept until
 * `/etc/passwd` or `/etc/group` changes — two stat calls per submission, 20 µs on a quiet
 * machine, 110 µs on a loaded one — or a minute has passed, for accounts that NSS takes from
 * elsewhere.
 */
export class HostAccounts {
  private snapshot?: Promise<Snapshot>;

  constructor(private readonly forbiddenGroups: readonly string[]) {}

  /** The account named `name`, with its groups and what the host says of them; undefined when the host has none. */
  async facts(name: string): Promise<AccountFacts | undefined> {
    const { accounts, holders, forbidden } = await this.current();
    let found = accounts.get(name);
    if (!found) {
      found = lookUp(name);
      accounts.set(name, found);
    }
    const account = await found;
    if (!account) return undefined;
    return {
      account,
      forbiddenGroups: [...new Set([account.gid, ...account.groups])].flatMap((gid) => forbidden.get(gid) ?? []),
      sharing: holders && (holders.get(account.uid) ?? []).filter((other) => other !== account.name),
    };
  }

  private current(): Promise<Snapshot> {
    const version = ACCOUNT_FILES.map((path) => {
      try {
        const stats = statSync(path);
        return `${stats.mtimeMs}/${stats.ino}/${stats.size}`;
      } catch {
        return '-';
      }
    }).join(' ');
    const held = this.snapshot;
    if (held) {
      const fresh = held.then((snapshot) => snapshot.version === version && Date.now() - snapshot.at < SNAPSHOT_TTL_MS);
      return fresh.then((isFresh) => (isFresh ? held : this.read(held, version)));
    }
    return this.read(undefined, version);
  }

  /** Reads a new snapshot, once for every caller that found `stale` out of date. */
  private read(stale: Promise<Snapshot> | undefined, version: string): Promise<Snapshot> {
    if (this.snapshot !== stale) return this.snapshot as Promise<Snapshot>;
    const at = Date.now();
    this.snapshot = (async () => {
      const [passwd, groups] = await Promise.all([output('getent', ['passwd']), output('getent', ['group', ...this.forbiddenGroups])]);
      const holders = new Map<number, string[]>();
      for (const [name, , uid] of entries(passwd)) holders.set(Number(uid), [...(holders.get(Number(uid)) ?? []), name]);
      const forbidden = new Map<number, string>();
      for (const [name, , gid] of entries(groups)) if (this.forbiddenGroups.includes(name)) forbidden.set(Number(gid), name);
      return { version, at, holders: holders.size > 0 ? holders : undefined, forbidden, accounts: new Map() };
    })();
    return this.snapshot;
  }
}

/** One account by name, through NSS (getent passwd, id -G: the groups it would get at login). */
async function lookUp(name: string): Promise<Found> {
  const [entry] = entries(await output('getent', ['passwd', '--', name]));
  if (!entry || entry[0] !== name) return undefined;
  const groups = (await output('id', ['-G', '--', name])).trim().split(/\s+/).filter(Boolean).map(Number);
  return { name, uid: Number(entry[2]), gid: Number(entry[3]), groups };
}

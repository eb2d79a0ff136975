import { execFile } from 'node:child_process';
import { userInfo } from 'node:os';
import { promisify } from 'node:util';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { GroupsService } from '../auth/groups.service.js';
import { UsersService } from '../auth/users.service.js';
import { HubConfig } from '../common/config/hub-config.js';
import { ForbiddenError, InvalidInputError } from '../common/errors/hub-errors.js';
import { ADMINISTRATOR_ROLE } from '../rbac/built-in-roles.js';
import { AccessEvaluator } from '../rbac/access-evaluator.js';
import { taskEvent } from './cluster.repository.js';
import type { JobIdentity } from './drivers/cluster-driver.js';
import { hubRunsAsRoot, PRIVILEGED_ENV, systemProgram } from './drivers/host-tools.js';
import type { TaskEvent } from './entities/job-execution.entity.js';
import { HostAccounts, type HostAccount } from './host-accounts.js';

const run = promisify(execFile);

/** The start's one line when the local driver cannot run jobs as their users. */
export const NOT_ROOT =
  "The hub does not run as root: local jobs run as its own user and could read its secrets, so only holders of HubAdministrator may submit work (run the hub as root to run each user's jobs under their own unix identity)";

/** Accounts that are never a job's identity, whatever their uid: the system's, the hub's, its database's and Slurm's. */
const SERVICE_ACCOUNTS = new Set(['root', 'nobody', 'hub-jobs', 'hub-postgres', 'postgres', 'slurm', 'munge']);
const FIRST_ORDINARY_UID = 1000;
const NOBODY_UID = 65534;
/** Allocated uids that turned out to be taken (by an account, or a race) before one is found. */
const ALLOCATION_ATTEMPTS = 20;

/** Whether an account holds `uid` on this host, through NSS (so LDAP and the like count). */
async function uidTaken(uid: number): Promise<boolean> {
  const getent = systemProgram('getent');
  if (!getent) return false;
  try {
    await run(getent, ['passwd', String(uid)], { env: PRIVILEGED_ENV, timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/** Who an owner's job runs as, and, when their unixUserName is not used, the event that says why. */
export interface ResolvedIdentity {
  /** null: as the hub's own user (a local hub that is not root), which only administrators may ask for. */
  readonly identity: JobIdentity | null;
  readonly event?: TaskEvent;
}

/**
 * Who each hub user's jobs run as (api-map §1 and §9, docs/security.md): the account their
 * `unixUserName` names when it is an ordinary one (uid ≥ 1000, not a service account, primary
 * group not 0, in no group of `HUB_JOB_FORBIDDEN_GROUPS`, its uid no other account's), otherwise
 * (local driver only) a uid of their own from `HUB_JOB_UID_BASE` up, allocated once and kept, so
 * that no two hub users ever share one, with an event that says why. Judged at each submission
 * (host accounts change), and the job runs with exactly the uid, gid and groups judged then.
 * Without root the local driver runs jobs as the hub itself, and only administrators may submit.
 */
@Injectable()
export class JobIdentities {
  private readonly hostAccounts: HostAccounts;
  private readonly allocated = new Map<string, number>();
  private readonly root = hubRunsAsRoot();
  private readonly hubUid = process.getuid?.() ?? -1;
  private readonly hubUser = userInfo().username;

  constructor(
    private readonly dataSource: DataSource,
    private readonly config: HubConfig,
    private readonly users: UsersService,
    private readonly groups: GroupsService,
    private readonly evaluator: AccessEvaluator,
  ) {
    this.hostAccounts = new HostAccounts(config.jobForbiddenGroups);
  }

  /** The identity an owner's job runs as now. */
  async of(owner: { readonly id: string; readonly name: string }): Promise<ResolvedIdentity> {
    const slurm = this.config.clusterDriver === 'slurm';
    if (!slurm && !this.root) {
      if (!(await this.isAdministrator(owner.id)))
        throw new ForbiddenError(
          `Only holders of ${ADMINISTRATOR_ROLE} may submit work to this hub: it does not run as root, so its jobs would run as the hub's own user. Ask an administrator to run the hub as root, which runs each user's jobs under their own unix identity.`,
        );
      return { identity: null };
    }
    const unixUserName = await this.users.unixUserNameOf(owner.id);
    if (!unixUserName) {
      if (slurm)
        throw InvalidInputError.at(
          'unixUserName',
          `User '${owner.name}' has no unixUserName: Slurm runs jobs only under their user's account, so an administrator must set it to the user's account on the cluster`,
        );
      const uid = await this.allocate(owner.id);
      return { identity: { uid, gid: uid } };
    }
    const judged = await this.judge(unixUserName, owner.id);
    if ('account' in judged) {
      const { account } = judged;
      return { identity: { uid: account.uid, gid: account.gid, account: account.name, groups: account.groups } };
    }
    if (slurm)
      throw InvalidInputError.at(
        'unixUserName',
        `The unixUserName of user '${owner.name}' ('${unixUserName}') is not an ordinary account of this cluster: ${judged.reason}. Slurm runs jobs only under their user's own account`,
      );
    const uid = await this.allocate(owner.id);
    const message = `Runs as uid ${uid}, allocated to user '${owner.name}', not as the account '${unixUserName}' of their unixUserName: ${judged.reason}`;
    return { identity: { uid, gid: uid }, event: taskEvent('Identity', message, { uid: String(uid), unixUserName, reason: judged.reason }) };
  }

  private async isAdministrator(userId: string): Promise<boolean> {
    const permissions = await this.evaluator.permissionsOf({ userId, groups: await this.groups.effectiveGroupIds(userId) });
    return permissions.bound.some((entry) => entry.roleName === ADMINISTRATOR_ROLE && entry.namespaceId === null);
  }

  /** The account named `name` when `userId`'s jobs may run as it, else why not. */
  private async judge(name: string, userId: string): Promise<{ account: HostAccount } | { reason: string }> {
    const facts = await this.hostAccounts.facts(name);
    if (!facts) return { reason: 'the host has no such account' };
    const { account, forbiddenGroups: forbidden, sharing } = facts;
    if (account.uid === 0 || SERVICE_ACCOUNTS.has(account.name)) return { reason: `it is a service account (uid ${account.uid})` };
    if (account.uid === this.hubUid || account.name === this.hubUser) return { reason: "it is the hub's own account" };
    if (account.uid < FIRST_ORDINARY_UID || account.uid === NOBODY_UID)
      return { reason: `its uid ${account.uid} is a system account's (below ${FIRST_ORDINARY_UID}, or nobody)` };
    if (account.gid === 0) return { reason: 'its primary group is 0 (root)' };
    if (forbidden.length > 0) return { reason: `it is in the group ${forbidden.map((group) => `'${group}'`).join(', ')} (HUB_JOB_FORBIDDEN_GROUPS)` };
    if (sharing && sharing.length > 0)
      return { reason: `its uid ${account.uid} is shared with the account ${sharing.map((other) => `'${other}'`).join(', ')}` };
    if (await this.allocatedToAnother(account.uid, userId)) return { reason: `its uid ${account.uid} is allocated to another hub user` };
    return { account };
  }

  /** Whether a uid is one the hub allocated to another hub user (an account made later inside the range). */
  private async allocatedToAnother(uid: number, userId: string): Promise<boolean> {
    if (uid < this.config.jobUidBase) return false;
    const rows: { user_id: string | null }[] = await this.dataSource.query('SELECT user_id FROM job_uids WHERE uid = $1', [uid]);
    return rows.length > 0 && rows[0].user_id !== userId;
  }

  /**
   * The uid allocated to a hub user, allocating the next free one on first use. A uid an account
   * holds is skipped and kept reserved (no user), and so is every uid ever allocated: a uid is
   * never given to a second user, even after the first is deleted (files of theirs may remain).
   */
  private async allocate(userId: string): Promise<number> {
    const known = this.allocated.get(userId);
    if (known !== undefined) return known;
    for (let attempt = 0; attempt < ALLOCATION_ATTEMPTS; attempt++) {
      const existing: { uid: number }[] = await this.dataSource.query('SELECT uid FROM job_uids WHERE user_id = $1', [userId]);
      if (existing.length > 0) {
        this.allocated.set(userId, existing[0].uid);
        return existing[0].uid;
      }
      const [candidate]: { uid: number }[] = await this.dataSource.query(
        `INSERT INTO job_uids (uid, user_id)
         SELECT greatest($1::int, coalesce(max(uid) + 1, $1::int)), NULL FROM job_uids
         ON CONFLICT (uid) DO NOTHING RETURNING uid`,
        [this.config.jobUidBase],
      );
      // Another hub took it at the same moment: the next attempt takes the one after.
      if (!candidate) continue;
      // An account holds it: it stays reserved, for no one.
      if (await uidTaken(candidate.uid)) continue;
      try {
        await this.dataSource.query('UPDATE job_uids SET user_id = $2 WHERE uid = $1 AND NOT EXISTS (SELECT 1 FROM job_uids WHERE user_id = $2)', [
          candidate.uid,
          userId,
        ]);
      } catch (error) {
        // A concurrent first submission of the same user gave them another uid meanwhile (this one stays reserved): the next attempt reads it.
        if ((error as { code?: string }).code !== '23505') throw error;
      }
    }
    throw new Error(`No uid could be allocated for user ${userId} from ${this.config.jobUidBase} up`);
  }
}

import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { DataSource } from 'typeorm';
import type { GroupsService } from '../auth/groups.service.js';
import type { UsersService } from '../auth/users.service.js';
import type { HubConfig } from '../common/config/hub-config.js';
import { InvalidInputError } from '../common/errors/hub-errors.js';
import type { AccessEvaluator } from '../rbac/access-evaluator.js';
import { JobIdentities } from './job-identities.js';

/**
 * On Slurm, which runs jobs only under their user's own account, an account that is not ordinary
 * (primary group 0, a group of HUB_JOB_FORBIDDEN_GROUPS, a uid another account shares) is a 400
 * naming unixUserName at submission, as a missing one is. The accounts are made here (useradd).
 */
const asRoot = process.getuid?.() === 0 ? describe : describe.skip;

const SUFFIX = `${process.pid % 100000}`;
const PLAIN = `hubsl-plain-${SUFFIX}`;
const ROOT_GROUP = `hubsl-gid0-${SUFFIX}`;
const IN_DISK = `hubsl-disk-${SUFFIX}`;
const SHARED = `hubsl-shared-${SUFFIX}`;
const TWIN = `hubsl-twin-${SUFFIX}`;
const ACCOUNTS = [PLAIN, ROOT_GROUP, IN_DISK, SHARED, TWIN];

/** A user or group tool, again while another spec holds the lock on /etc/passwd or /etc/group. */
function accountTool(program: string, args: readonly string[]): void {
  for (let attempt = 1; ; attempt++) {
    try {
      execFileSync(program, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      return;
    } catch (error) {
      if (!String((error as { stderr?: Buffer }).stderr).includes('lock') || attempt === 50) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
    }
  }
}
const useradd = (...args: string[]) => accountTool('useradd', ['--no-create-home', '--shell', '/bin/sh', ...args]);
const id = (flag: string, account: string) => Number(execFileSync('id', [flag, account], { encoding: 'utf8' }).trim());
function removeAccounts(): void {
  for (const account of ACCOUNTS) {
    try {
      accountTool('userdel', [account]);
    } catch {
      // Not there.
    }
  }
}

asRoot('job identities on Slurm', () => {
  const unixUserNames = new Map<string, string | null>();
  const config = { clusterDriver: 'slurm', jobUidBase: 200000, jobForbiddenGroups: ['root', 'sudo', 'wheel', 'adm', 'disk', 'docker'] } as unknown as HubConfig;
  const users = { unixUserNameOf: (userId: string) => Promise.resolve(unixUserNames.get(userId) ?? null) } as unknown as UsersService;
  const dataSource = { query: () => Promise.resolve([]) } as unknown as DataSource;
  const identities = new JobIdentities(dataSource, config, users, {} as GroupsService, {} as AccessEvaluator);
  const of = (account: string | null) => {
    unixUserNames.set('user-id', account);
    return identities.of({ id: 'user-id', name: 'ada' });
  };
  const refusal = async (account: string | null): Promise<InvalidInputError> => {
    const error = await of(account).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(InvalidInputError);
    return error as InvalidInputError;
  };

  beforeAll(() => {
    removeAccounts();
    useradd(PLAIN);
    useradd('--gid', '0', '--no-user-group', ROOT_GROUP);
    useradd('--groups', 'disk', IN_DISK);
    useradd(SHARED);
    useradd('--non-unique', '--uid', String(id('-u', SHARED)), TWIN);
  });
  afterAll(removeAccounts);

  it('submits under an ordinary account, with its groups as judged', async () => {
    expect(await of(PLAIN)).toEqual({ identity: { uid: id('-u', PLAIN), gid: id('-g', PLAIN), account: PLAIN, groups: [id('-g', PLAIN)] } });
  });

  it.each([
    [ROOT_GROUP, 'its primary group is 0 (root)'],
    [IN_DISK, "it is in the group 'disk' (HUB_JOB_FORBIDDEN_GROUPS)"],
    [SHARED, `is shared with the account '${TWIN}'`],
    ['root', 'it is a service account (uid 0)'],
    ['hubsl-nobody-here', 'the host has no such account'],
  ])('refuses %s with a 400 naming unixUserName and why', async (account, reason) => {
    const error = await refusal(account);
    expect([error.status, error.errors?.map((entry) => entry.path)]).toEqual([400, ['unixUserName']]);
    expect(error.message).toContain(`The unixUserName of user 'ada' ('${account}') is not an ordinary account of this cluster: `);
    expect(error.message).toContain(reason);
  });

  it('refuses a user without unixUserName, saying an administrator sets it', async () => {
    expect((await refusal(null)).message).toContain("User 'ada' has no unixUserName");
  });
});

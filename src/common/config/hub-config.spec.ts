// The hub loads reflect-metadata first thing (main.ts); class-transformer's @Type needs it.
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stateDirFor } from '../data-location.js';
import { StartupError } from '../errors/startup-error.js';
import { ConfigurationError, loadHubConfig, SETTING_NAMES, type HubConfig } from './hub-config.js';

const CWD = '/srv/hub';
/** Only root hands files to other users, so only root's hub decides where they can reach them. */
const asRoot = process.getuid?.() === 0 ? it : it.skip;

type Env = Record<string, string | undefined>;

/** Runs loadHubConfig, expects a ConfigurationError, and returns its message. */
function configurationErrorFor(env: Env): string {
  try {
    loadHubConfig(env, CWD);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return (error as ConfigurationError).message;
  }
  throw new Error(`expected a ConfigurationError for ${Object.keys(env).join(', ')}, but the configuration loaded`);
}

const DEFAULTS: HubConfig = {
  port: 9090,
  host: '0.0.0.0',
  databaseUrl: undefined,
  databasePoolSize: 10,
  dataDir: '/srv/hub/.data',
  stateDir: '/var/lib/hub',
  adminUser: 'admin',
  adminPassword: undefined,
  jwtSecret: undefined,
  tokenTtlSeconds: 3600,
  credentialsKey: undefined,
  passwordMinLength: 8,
  loginFailureLimit: 5,
  loginLockoutSeconds: 900,
  loginMaxFailuresPerAddress: 100,
  loginFamiliarDays: 30,
  trustedProxies: [],
  invitationTtlSeconds: 604800,
  auditRetentionDays: 30,
  clusterDriver: 'local',
  sharedDir: '/srv/hub/.data/work',
  localNodeLabels: [],
  localSlots: undefined,
  jobRetentionDays: 7,
  jobUidBase: 200000,
  jobForbiddenGroups: ['root', 'sudo', 'wheel', 'adm', 'disk', 'docker', 'lxd', 'libvirt', 'kvm', 'shadow'],
  maxActiveJobsPerUser: 100,
  jobDefaultMaxProcesses: 4096,
  jobDefaultMaxMemoryMiB: undefined,
  maxRunningJobsPerUser: undefined,
  resultMaxBytes: 1073741824,
  runRetentionDays: 30,
  triggerFileRoots: ['/srv/hub/.data/work/inbox'],
  libraryRoots: ['/srv/hub/.data/work/libraries'],
  libraryAsyncAfterMs: 2000,
  logLevel: 'info',
  publicUrl: undefined,
  sessionHeartbeatInterval: 60,
  sessionHeartbeatGrace: 120,
  sessionRetentionHours: 24,
};

const ALL_SETTINGS = [
  'PORT',
  'HOST',
  'DATABASE_URL',
  'HUB_DB_POOL_SIZE',
  'HUB_DATA_DIR',
  'HUB_STATE_DIR',
  'HUB_ADMIN_USER',
  'HUB_ADMIN_PASSWORD',
  'HUB_JWT_SECRET',
  'HUB_TOKEN_TTL',
  'HUB_CREDENTIALS_KEY',
  'HUB_PASSWORD_MIN_LENGTH',
  'HUB_LOGIN_FAILURE_LIMIT',
  'HUB_LOGIN_LOCKOUT',
  'HUB_LOGIN_MAX_FAILURES_PER_ADDRESS',
  'HUB_LOGIN_FAMILIAR_DAYS',
  'HUB_TRUSTED_PROXIES',
  'HUB_INVITATION_TTL',
  'HUB_AUDIT_RETENTION_DAYS',
  'HUB_CLUSTER_DRIVER',
  'HUB_SHARED_DIR',
  'HUB_LOCAL_NODE_LABELS',
  'HUB_LOCAL_SLOTS',
  'HUB_LOCAL_PREPARED_LAUNCHES',
  'HUB_JOB_RETENTION_DAYS',
  'HUB_MIN_FREE_DISK_MIB',
  'HUB_JOB_UID_BASE',
  'HUB_JOB_FORBIDDEN_GROUPS',
  'HUB_MAX_ACTIVE_JOBS_PER_USER',
  'HUB_JOB_DEFAULT_MAX_PROCESSES',
  'HUB_JOB_DEFAULT_MAX_MEMORY_MIB',
  'HUB_MAX_RUNNING_JOBS_PER_USER',
  'HUB_RESULT_MAX_BYTES',
  'HUB_RUN_RETENTION_DAYS',
  'HUB_TRIGGER_FILE_ROOTS',
  'HUB_LIBRARY_ROOTS',
  'HUB_LIBRARY_ASYNC_AFTER_MS',
  'HUB_LOG_LEVEL',
  'HUB_PUBLIC_URL',
  'HUB_SESSION_HEARTBEAT_INTERVAL',
  'HUB_SESSION_HEARTBEAT_GRACE',
  'HUB_SESSION_RETENTION_HOURS',
];

describe('SETTING_NAMES', () => {
  it('lists every setting the hub reads, optional ones without a default included', () => {
    expect([...SETTING_NAMES].sort()).toEqual([...ALL_SETTINGS].sort());
  });

  it.each(['DATABASE_URL', 'HUB_ADMIN_PASSWORD', 'HUB_JWT_SECRET', 'HUB_SHARED_DIR'])('includes the optional setting %s', (name) => {
    expect(SETTING_NAMES).toContain(name);
  });
});

describe('loadHubConfig', () => {
  describe('defaults', () => {
    it('gives every setting its default when the environment is empty', () => {
      expect(loadHubConfig({}, CWD)).toEqual(DEFAULTS);
    });

    it('resolves the default data directory against the given working directory, to an absolute path', () => {
      const config = loadHubConfig({}, '/var/lib/other');
      expect(config.dataDir).toBe('/var/lib/other/.data');
      expect(config.sharedDir).toBe('/var/lib/other/.data/work');
    });

    it('treats empty strings as unset', () => {
      const env = Object.fromEntries(ALL_SETTINGS.map((name) => [name, '']));
      expect(loadHubConfig(env, CWD)).toEqual(DEFAULTS);
    });

    it('treats undefined values as unset', () => {
      const env = Object.fromEntries(ALL_SETTINGS.map((name) => [name, undefined]));
      expect(loadHubConfig(env, CWD)).toEqual(DEFAULTS);
    });

    it('ignores environment variables that are not settings', () => {
      const env = { PATH: '/usr/bin', HOME: '/root', HUB_UNKNOWN: 'x', HUB_PORT: 'not a number', port: 'abc' };
      expect(loadHubConfig(env, CWD)).toEqual(DEFAULTS);
    });
  });

  describe('reading each setting', () => {
    it('reads every setting when all are given', () => {
      const env = {
        PORT: '8080',
        HOST: '127.0.0.1',
        DATABASE_URL: 'postgres://hub:secret@db.example:5432/hub',
        HUB_DB_POOL_SIZE: '25',
        HUB_DATA_DIR: '/var/lib/hub',
        HUB_STATE_DIR: 'state',
        HUB_ADMIN_USER: 'root.user@example',
        HUB_ADMIN_PASSWORD: 'correct horse battery',
        HUB_JWT_SECRET: 'x'.repeat(40),
        HUB_TOKEN_TTL: '7200',
        HUB_PASSWORD_MIN_LENGTH: '12',
        HUB_LOGIN_FAILURE_LIMIT: '3',
        HUB_LOGIN_LOCKOUT: '600',
        HUB_LOGIN_MAX_FAILURES_PER_ADDRESS: '20',
        HUB_LOGIN_FAMILIAR_DAYS: '7',
        HUB_TRUSTED_PROXIES: '10.0.0.1, 192.168.0.0/16,::1',
        HUB_INVITATION_TTL: '86400',
        HUB_AUDIT_RETENTION_DAYS: '90',
        HUB_CLUSTER_DRIVER: 'slurm',
        HUB_SHARED_DIR: '/shared/hub',
        HUB_LOG_LEVEL: 'debug',
        HUB_CREDENTIALS_KEY: 'ab'.repeat(32),
        HUB_LOCAL_NODE_LABELS: 'gpu',
        HUB_LOCAL_SLOTS: '4',
        HUB_JOB_RETENTION_DAYS: '14',
        HUB_MIN_FREE_DISK_MIB: '0',
        HUB_JOB_UID_BASE: '500000',
        HUB_JOB_FORBIDDEN_GROUPS: 'wheel, docker,Admins',
        HUB_MAX_ACTIVE_JOBS_PER_USER: '0',
        HUB_JOB_DEFAULT_MAX_PROCESSES: '512',
        HUB_JOB_DEFAULT_MAX_MEMORY_MIB: '2048',
        HUB_MAX_RUNNING_JOBS_PER_USER: '0',
        HUB_RESULT_MAX_BYTES: '5000000000',
        HUB_RUN_RETENTION_DAYS: '3',
        HUB_TRIGGER_FILE_ROOTS: '/data/inbox:drop',
        HUB_LIBRARY_ROOTS: '/data/libraries',
        HUB_LIBRARY_ASYNC_AFTER_MS: '500',
        HUB_PUBLIC_URL: 'https://hub.example.org/',
        HUB_SESSION_HEARTBEAT_INTERVAL: '30',
        HUB_SESSION_HEARTBEAT_GRACE: '45',
        HUB_SESSION_RETENTION_HOURS: '6',
      };
      expect(loadHubConfig(env, CWD)).toEqual({
        port: 8080,
        host: '127.0.0.1',
        databaseUrl: 'postgres://hub:secret@db.example:5432/hub',
        databasePoolSize: 25,
        dataDir: '/var/lib/hub',
        stateDir: '/srv/hub/state',
        adminUser: 'root.user@example',
        adminPassword: 'correct horse battery',
        jwtSecret: 'x'.repeat(40),
        tokenTtlSeconds: 7200,
        passwordMinLength: 12,
        loginFailureLimit: 3,
        loginLockoutSeconds: 600,
        loginMaxFailuresPerAddress: 20,
        loginFamiliarDays: 7,
        trustedProxies: [{ address: '10.0.0.1' }, { address: '192.168.0.0', prefix: 16 }, { address: '::1' }],
        invitationTtlSeconds: 86400,
        auditRetentionDays: 90,
        clusterDriver: 'slurm',
        sharedDir: '/shared/hub',
        credentialsKey: Buffer.alloc(32, 0xab),
        localNodeLabels: ['gpu'],
        localSlots: 4,
        jobRetentionDays: 14,
        minFreeDiskMiB: 0,
        jobUidBase: 500000,
        jobForbiddenGroups: ['wheel', 'docker', 'Admins'],
        maxActiveJobsPerUser: 0,
        jobDefaultMaxProcesses: 512,
        jobDefaultMaxMemoryMiB: 2048,
        maxRunningJobsPerUser: 0,
        resultMaxBytes: 5000000000,
        runRetentionDays: 3,
        triggerFileRoots: ['/data/inbox', `${CWD}/drop`],
        libraryRoots: ['/data/libraries'],
        libraryAsyncAfterMs: 500,
        logLevel: 'debug',
        publicUrl: 'https://hub.example.org',
        sessionHeartbeatInterval: 30,
        sessionHeartbeatGrace: 45,
        sessionRetentionHours: 6,
      });
    });

    it.each([['postgres://hub@localhost/hub'], ['postgresql://hub:pw@127.0.0.1:5433/hub?sslmode=disable']])('reads DATABASE_URL %s', (url) => {
      expect(loadHubConfig({ DATABASE_URL: url }, CWD).databaseUrl).toBe(url);
    });

    it('reads HUB_ADMIN_PASSWORD, from 8 characters on', () => {
      expect(loadHubConfig({ HUB_ADMIN_PASSWORD: '12345678' }, CWD).adminPassword).toBe('12345678');
    });

    it('reads HUB_JWT_SECRET, from 32 characters on', () => {
      const secret = 's'.repeat(32);
      expect(loadHubConfig({ HUB_JWT_SECRET: secret }, CWD).jwtSecret).toBe(secret);
    });

    it('reads HUB_CREDENTIALS_KEY as 64 hexadecimal digits, base64 or base64url', () => {
      const key = Buffer.from([...Array(32).keys()].map((i) => i * 7 + 250));
      for (const text of [key.toString('hex'), key.toString('base64'), key.toString('base64url')]) {
        expect(loadHubConfig({ HUB_CREDENTIALS_KEY: text }, CWD).credentialsKey).toEqual(key);
      }
    });

    it.each([
      ['short', 'abc'],
      ['31 bytes', Buffer.alloc(31).toString('base64')],
      ['33 bytes', Buffer.alloc(33).toString('base64')],
      ['63 digits', 'a'.repeat(63)],
    ])('refuses a HUB_CREDENTIALS_KEY that is not 256 bits (%s), without echoing it', (_what, text) => {
      const message = configurationErrorFor({ HUB_CREDENTIALS_KEY: text });
      expect(message).toContain('HUB_CREDENTIALS_KEY must be a 256-bit key');
      expect(message).not.toContain(text);
    });

    it('reads the local node labels, its slots and the job retention', () => {
      expect(
        loadHubConfig({ HUB_LOCAL_NODE_LABELS: 'gpu,fast-disk', HUB_LOCAL_SLOTS: '3', HUB_LOCAL_PREPARED_LAUNCHES: '0', HUB_JOB_RETENTION_DAYS: '2' }, CWD),
      ).toMatchObject({
        localNodeLabels: ['gpu', 'fast-disk'],
        localSlots: 3,
        localPreparedLaunches: 0,
        jobRetentionDays: 2,
      });
    });

    it('reads the largest result a file may give and the days a pipeline run is kept', () => {
      expect(loadHubConfig({ HUB_RESULT_MAX_BYTES: '1', HUB_RUN_RETENTION_DAYS: '3650' }, CWD)).toMatchObject({ resultMaxBytes: 1, runRetentionDays: 3650 });
      expect(loadHubConfig({ HUB_RESULT_MAX_BYTES: String(Number.MAX_SAFE_INTEGER) }, CWD).resultMaxBytes).toBe(Number.MAX_SAFE_INTEGER);
    });

    it.each([
      ['HUB_RESULT_MAX_BYTES', '0'],
      ['HUB_RESULT_MAX_BYTES', '-1'],
      ['HUB_RESULT_MAX_BYTES', '1.5'],
      ['HUB_RESULT_MAX_BYTES', '1GiB'],
      ['HUB_RESULT_MAX_BYTES', String(2 ** 53)],
      ['HUB_RUN_RETENTION_DAYS', '0'],
      ['HUB_RUN_RETENTION_DAYS', '3651'],
      ['HUB_RUN_RETENTION_DAYS', 'a month'],
    ])('refuses %s=%s, naming the setting', (name, value) => {
      expect(configurationErrorFor({ [name]: value })).toContain(name);
    });

    it.each([
      ['HUB_LOCAL_NODE_LABELS', 'gpu,,x'],
      ['HUB_LOCAL_NODE_LABELS', 'a b'],
      ['HUB_LOCAL_SLOTS', '0'],
      ['HUB_LOCAL_PREPARED_LAUNCHES', '-1'],
      ['HUB_JOB_RETENTION_DAYS', '0'],
      ['HUB_MIN_FREE_DISK_MIB', '-1'],
      ['HUB_MIN_FREE_DISK_MIB', '1.5'],
      ['HUB_TRUSTED_PROXIES', 'proxy.example'],
      ['HUB_TRUSTED_PROXIES', '10.0.0.0/33'],
      ['HUB_TRUSTED_PROXIES', '10.0.0.1,'],
      ['HUB_TRUSTED_PROXIES', '::1/129'],
      ['HUB_LOGIN_MAX_FAILURES_PER_ADDRESS', '-1'],
      ['HUB_LOGIN_FAMILIAR_DAYS', '0'],
      ['HUB_JOB_FORBIDDEN_GROUPS', 'docker,,disk'],
      ['HUB_JOB_FORBIDDEN_GROUPS', 'docker;rm -rf'],
      // Below 1000: the uids of system accounts.
      ['HUB_JOB_UID_BASE', '999'],
      ['HUB_MAX_ACTIVE_JOBS_PER_USER', '-1'],
      ['HUB_MAX_ACTIVE_JOBS_PER_USER', 'many'],
      ['HUB_JOB_DEFAULT_MAX_PROCESSES', '0'],
      ['HUB_JOB_DEFAULT_MAX_MEMORY_MIB', '0'],
      ['HUB_JOB_DEFAULT_MAX_MEMORY_MIB', '1.5'],
      ['HUB_MAX_RUNNING_JOBS_PER_USER', '-1'],
    ])('refuses %s=%s', (name, value) => {
      expect(configurationErrorFor({ [name]: value })).toContain(name);
    });

    it('reads an absolute HUB_SHARED_DIR as given', () => {
      expect(loadHubConfig({ HUB_SHARED_DIR: '/mnt/shared' }, CWD).sharedDir).toBe('/mnt/shared');
    });

    it('resolves a relative HUB_SHARED_DIR against the working directory', () => {
      expect(loadHubConfig({ HUB_SHARED_DIR: 'shared' }, CWD).sharedDir).toBe('/srv/hub/shared');
    });

    it('resolves a relative HUB_DATA_DIR against the working directory and puts the default shared directory under it', () => {
      const config = loadHubConfig({ HUB_DATA_DIR: '../data' }, CWD);
      expect(config.dataDir).toBe('/srv/data');
      expect(config.sharedDir).toBe(join('/srv/data', 'work'));
    });

    asRoot('puts the default shared directory under the state directory when the data directory is closed to unprivileged users', () => {
      const closed = mkdtempSync(join(tmpdir(), 'hub-config-'));
      try {
        const dataDir = join(closed, '.data');
        const config = loadHubConfig({ HUB_DATA_DIR: dataDir, HUB_STATE_DIR: '/srv/state' }, CWD);
        expect(config.sharedDir).toBe(join(stateDirFor('/srv/state', dataDir), 'work'));
        expect(config.sharedDir).toMatch(/^\/srv\/state\/hub-config-\w+-[0-9a-f]{12}\/work$/);
        expect(existsSync('/srv/state')).toBe(false); // Decided, not made.
      } finally {
        rmSync(closed, { recursive: true, force: true });
      }
    });

    it('keeps HUB_SHARED_DIR independent of HUB_DATA_DIR when both are given', () => {
      const config = loadHubConfig({ HUB_DATA_DIR: '/d', HUB_SHARED_DIR: '/s' }, CWD);
      expect(config).toMatchObject({ dataDir: '/d', sharedDir: '/s' });
    });

    it.each([
      ['PORT', '0', { port: 0 }],
      ['PORT', '65535', { port: 65535 }],
      ['HOST', '::', { host: '::' }],
      ['HUB_DB_POOL_SIZE', '1', { databasePoolSize: 1 }],
      ['HUB_DB_POOL_SIZE', '1000', { databasePoolSize: 1000 }],
      ['HUB_ADMIN_USER', 'a', { adminUser: 'a' }],
      ['HUB_TOKEN_TTL', '60', { tokenTtlSeconds: 60 }],
      ['HUB_TOKEN_TTL', String(30 * 24 * 3600), { tokenTtlSeconds: 30 * 24 * 3600 }],
      ['HUB_PASSWORD_MIN_LENGTH', '1', { passwordMinLength: 1 }],
      ['HUB_LOGIN_FAILURE_LIMIT', '1', { loginFailureLimit: 1 }],
      ['HUB_LOGIN_LOCKOUT', '86400', { loginLockoutSeconds: 86400 }],
      ['HUB_INVITATION_TTL', '60', { invitationTtlSeconds: 60 }],
      ['HUB_CLUSTER_DRIVER', 'local', { clusterDriver: 'local' }],
      ['HUB_LOG_LEVEL', 'silent', { logLevel: 'silent' }],
      ['HUB_LOG_LEVEL', 'trace', { logLevel: 'trace' }],
    ])('reads %s=%s', (name, value, expected) => {
      expect(loadHubConfig({ [name]: value }, CWD)).toEqual({ ...DEFAULTS, ...expected });
    });

    it('converts numeric settings to numbers', () => {
      const config = loadHubConfig({ PORT: '3000', HUB_TOKEN_TTL: '120', HUB_DB_POOL_SIZE: '4' }, CWD);
      expect(typeof config.port).toBe('number');
      expect(typeof config.tokenTtlSeconds).toBe('number');
      expect(typeof config.databasePoolSize).toBe('number');
    });
  });

  describe('invalid values', () => {
    it.each([
      ['PORT', 'abc'],
      ['PORT', '70000'],
      ['PORT', '-1'],
      ['PORT', '80.5'],
      ['HUB_DB_POOL_SIZE', '0'],
      ['HUB_DB_POOL_SIZE', '1001'],
      ['HUB_TOKEN_TTL', '10'],
      ['HUB_TOKEN_TTL', String(30 * 24 * 3600 + 1)],
      ['HUB_TOKEN_TTL', 'an hour'],
      ['HUB_PASSWORD_MIN_LENGTH', '0'],
      ['HUB_PASSWORD_MIN_LENGTH', '1025'],
      ['HUB_LOGIN_FAILURE_LIMIT', '0'],
      ['HUB_LOGIN_LOCKOUT', '0'],
      ['HUB_LOGIN_LOCKOUT', '86401'],
      ['HUB_INVITATION_TTL', '59'],
      ['HUB_AUDIT_RETENTION_DAYS', '0'],
      ['HUB_CLUSTER_DRIVER', 'kubernetes'],
      ['HUB_LOG_LEVEL', 'loud'],
      ['HUB_LOG_LEVEL', 'INFO'],
      ['HUB_ADMIN_USER', 'bad user'],
      ['HUB_ADMIN_USER', '-admin'],
      ['HUB_ADMIN_USER', 'a'.repeat(129)],
    ])('refuses %s=%s, naming the setting and echoing the value', (name, value) => {
      const message = configurationErrorFor({ [name]: value });
      expect(message).toContain(name);
      expect(message).toContain(JSON.stringify(value));
    });

    it.each([
      ['DATABASE_URL', 'mysql://root:Hunter2Pw@db/hub'],
      ['DATABASE_URL', 'not a url Hunter2Pw'],
      ['DATABASE_URL', 'http://Hunter2Pw@db/hub'],
      ['HUB_ADMIN_PASSWORD', 'Hunt2Pw'],
      ['HUB_JWT_SECRET', 'Hunter2Pw-only-31-characters-xx'],
    ])('refuses %s=%s, naming the setting without revealing the secret value', (name, value) => {
      const message = configurationErrorFor({ [name]: value });
      expect(message).toContain(name);
      expect(message).not.toContain(value);
      expect(message).not.toContain('Hunt');
    });

    it('refuses a JWT secret one character short of 32', () => {
      expect(configurationErrorFor({ HUB_JWT_SECRET: 'k'.repeat(31) })).toContain('HUB_JWT_SECRET');
    });

    it('refuses an admin password one character short of 8', () => {
      expect(configurationErrorFor({ HUB_ADMIN_PASSWORD: 'p'.repeat(7) })).toContain('HUB_ADMIN_PASSWORD');
    });

    it('names every bad setting in one message', () => {
      const message = configurationErrorFor({
        PORT: 'abc',
        HUB_TOKEN_TTL: '10',
        HUB_CLUSTER_DRIVER: 'kubernetes',
        HUB_LOG_LEVEL: 'loud',
        DATABASE_URL: 'mysql://x',
        HUB_ADMIN_USER: 'has space',
        HOST: '127.0.0.1',
      });
      for (const name of ['PORT', 'HUB_TOKEN_TTL', 'HUB_CLUSTER_DRIVER', 'HUB_LOG_LEVEL', 'DATABASE_URL', 'HUB_ADMIN_USER']) {
        expect(message).toContain(name);
      }
      expect(message).not.toContain('HOST');
      expect(message).not.toContain('mysql://x');
    });

    it('throws a ConfigurationError, a StartupError named ConfigurationError', () => {
      let thrown: unknown;
      try {
        loadHubConfig({ PORT: 'abc' }, CWD);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ConfigurationError);
      expect(thrown).toBeInstanceOf(StartupError);
      expect((thrown as Error).name).toBe('ConfigurationError');
    });
  });
});

describe('.env.example', () => {
  const example = readFileSync(new URL('../../../.env.example', import.meta.url), 'utf8');
  const listed = [...example.matchAll(/^([A-Z_]+)=(.*)$/gm)].map(([, name, value]) => ({ name, value }));

  it('lists every setting, once, and nothing else', () => {
    expect(listed.map(({ name }) => name).sort()).toEqual([...SETTING_NAMES].sort());
  });

  it('shows the defaults: loaded as it stands, it gives the configuration of an empty environment', () => {
    const fromExample = loadHubConfig(Object.fromEntries(listed.map(({ name, value }) => [name, value])), '/srv/hub');
    expect(fromExample).toEqual(loadHubConfig({}, '/srv/hub'));
  });
});

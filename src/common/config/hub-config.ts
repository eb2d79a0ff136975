import 'reflect-metadata';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { plainToInstance, Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, Min, MinLength, registerDecorator, validateSync, type ValidationError } from 'class-validator';
import { locateData } from '../data-location.js';
import { StartupError } from '../errors/startup-error.js';
import { parseAddressRanges, type AddressRange } from '../http/client-address.js';

export const CLUSTER_DRIVERS = ['local', 'slurm'] as const;
export type ClusterDriverName = (typeof CLUSTER_DRIVERS)[number];

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The hub's settings (api-map §11), read and validated once at start. An abstract class so that it
 * serves as its own injection token.
 */
export abstract class HubConfig {
  abstract readonly port: number;
  abstract readonly host: string;
  /** External PostgreSQL; absent means the hub runs its own embedded server in `dataDir`. */
  abstract readonly databaseUrl?: string;
  abstract readonly databasePoolSize: number;
  abstract readonly dataDir: string;
  /**
   * Where a hub running as root keeps, per data directory, what its unprivileged users must reach
   * when they cannot enter the data directory (see `data-location.ts`).
   */
  abstract readonly stateDir: string;
  abstract readonly adminUser: string;
  abstract readonly adminPassword?: string;
  abstract readonly jwtSecret?: string;
  abstract readonly tokenTtlSeconds: number;
  /** The 256-bit key that encrypts credential data at rest; absent: one kept in `dataDir`. */
  abstract readonly credentialsKey?: Buffer;
  /** Password policy: the shortest password accepted (a password may never equal its user name). */
  abstract readonly passwordMinLength: number;
  /** Failed logins for one user name within `loginLockoutSeconds` that lock the name for that long. */
  abstract readonly loginFailureLimit: number;
  abstract readonly loginLockoutSeconds: number;
  /** Failed logins from one client address within `loginLockoutSeconds` that refuse its logins for the rest of that window; 0: no limit. */
  abstract readonly loginMaxFailuresPerAddress: number;
  /** Days a successful login keeps its address familiar to the user: failures from elsewhere never lock the user there. */
  abstract readonly loginFamiliarDays: number;
  /** Peers whose `X-Forwarded-For` names the client address (addresses and CIDRs). */
  abstract readonly trustedProxies: readonly AddressRange[];
  /** How long an invitation stays valid when its creator gives no `invitationExpiry`. */
  abstract readonly invitationTtlSeconds: number;
  /** Days an access decision stays in the audit before it is pruned. */
  abstract readonly auditRetentionDays: number;
  abstract readonly clusterDriver: ClusterDriverName;
  abstract readonly sharedDir: string;
  /** Labels of the local driver's node. */
  abstract readonly localNodeLabels: readonly string[];
  /** How many CPUs' worth of executions the local driver runs at once; absent: the host's CPUs. */
  abstract readonly localSlots?: number;
  /** How many launches of the next in line the local driver keeps prepared, waiting for a slot; absent: twice its slots. */
  abstract readonly localPreparedLaunches?: number;
  /** Days a finished job, its executions, logs and files are kept. */
  abstract readonly jobRetentionDays: number;
  /**
   * MiB kept free on the filesystem of the executions' directories (local driver; see
   * DiskReserve); absent: 10 % of that filesystem, at most 1,024 MiB; 0: no reserve.
   */
  abstract readonly minFreeDiskMiB?: number;
  /** The first uid the local driver allocates to a hub user without an ordinary account for their jobs. */
  abstract readonly jobUidBase: number;
  /** Host groups whose members (and accounts with primary group 0) are never a job's identity. */
  abstract readonly jobForbiddenGroups: readonly string[];
  /** Active (pending and running) jobs one user may have; 0: no limit. */
  abstract readonly maxActiveJobsPerUser: number;
  /** The local driver's `maxProcesses` of an execution whose profile sets none. */
  abstract readonly jobDefaultMaxProcesses: number;
  /** The local driver's `maxMemoryMiB` of an execution whose profile sets none; absent: from the memory the hub may use and its slots (see execution-bounds.ts). */
  abstract readonly jobDefaultMaxMemoryMiB?: number;
  /** Batch executions one user may run at once on one node; absent: all its slots but one (none on a one-slot node); 0: no cap. */
  abstract readonly maxRunningJobsPerUser?: number;
  /** The most bytes of one file the hub copies out of an execution into its store of results (a log over it keeps its last bytes). */
  abstract readonly resultMaxBytes: number;
  /** Days a finished pipeline run, with its results, is kept. */
  abstract readonly runRetentionDays: number;
  /** The directories (absolute) under which a File trigger may watch a path. */
  abstract readonly triggerFileRoots: readonly string[];
  /** The directories (absolute) under which a library definition's path must lie. */
  abstract readonly libraryRoots: readonly string[];
  /** Milliseconds a getRecords with allowAsync=true may take before it answers 202 and goes on as an asynchronous operation. */
  abstract readonly libraryAsyncAfterMs: number;
  abstract readonly logLevel: LogLevel;
  /** The hub's address as clients reach it (`https://hub.example.org`), for absolute URLs in replies; absent: the request's protocol and Host. */
  abstract readonly publicUrl?: string;
  /** Seconds from a link session's heartbeat to the next one expected. */
  abstract readonly sessionHeartbeatInterval: number;
  /** Seconds past the expected heartbeat before the reaper terminates a session. */
  abstract readonly sessionHeartbeatGrace: number;
  /** Hours an ended link session stays queryable. */
  abstract readonly sessionRetentionHours: number;
}

/** Host groups that grant root's powers or a way to them (devices, containers, virtual machines, logs, shadow passwords). */
const DEFAULT_FORBIDDEN_GROUPS = 'root,sudo,wheel,adm,disk,docker,lxd,libvirt,kvm,shadow';

/** Thrown when a setting is missing or malformed; the message names the setting. */
export class ConfigurationError extends StartupError {
  override readonly name = 'ConfigurationError';
}

const SECRET_SETTINGS = new Set(['HUB_ADMIN_PASSWORD', 'HUB_JWT_SECRET', 'HUB_CREDENTIALS_KEY', 'DATABASE_URL']);

function IsPostgresUrl(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isPostgresUrl',
      target: target.constructor,
      propertyName: propertyName as string,
      options: { message: '$property must be a postgres:// or postgresql:// URL' },
      validator: {
        validate(value: unknown) {
          if (typeof value !== 'string') return false;
          try {
            return ['postgres:', 'postgresql:'].includes(new URL(value).protocol);
          } catch {
            return false;
          }
        },
      },
    });
}

/** A 256-bit key written as 64 hexadecimal digits or in base64 (or base64url); undefined when it is neither. */
export function parseKey256(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) return undefined;
  const key = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return key.length === 32 ? key : undefined;
}

function IsKey256(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isKey256',
      target: target.constructor,
      propertyName: propertyName as string,
      options: { message: '$property must be a 256-bit key: 64 hexadecimal digits or 32 bytes in base64 (e.g. from `openssl rand -base64 32`)' },
      validator: { validate: (value: unknown) => typeof value === 'string' && parseKey256(value) !== undefined },
    });
}

function IsAddressRanges(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isAddressRanges',
      target: target.constructor,
      propertyName: propertyName as string,
      options: { message: '$property must be comma-separated IP addresses or CIDRs (e.g. 10.0.0.1,192.168.0.0/16,::1)' },
      validator: { validate: (value: unknown) => typeof value === 'string' && (value.trim() === '' || parseAddressRanges(value) !== undefined) },
    });
}

/**
 * The environment as the hub reads it; property names are the setting names. Every property has
 * an initializer, so that each is an own property of an instance: that is how SETTING_NAMES is read.
 */
class HubEnvironment {
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 9090;

  @IsOptional()
  @IsString()
  @MinLength(1)
  HOST = '0.0.0.0';

  @IsOptional()
  @IsPostgresUrl()
  DATABASE_URL?: string = undefined;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(1000)
  HUB_DB_POOL_SIZE = 10;

  @IsOptional()
  @IsString()
  @MinLength(1)
  HUB_DATA_DIR = './.data';

  @IsOptional()
  @IsString()
  @MinLength(1)
  HUB_STATE_DIR = '/var/lib/hub';

  @IsOptional()
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/, {
    message: '$property must be 1-128 letters, digits, ".", "_", "@" or "-", starting with a letter or digit',
  })
  HUB_ADMIN_USER = 'admin';

  @IsOptional()
  @IsString()
  @MinLength(8)
  HUB_ADMIN_PASSWORD?: string = undefined;

  @IsOptional()
  @IsString()
  @MinLength(32)
  HUB_JWT_SECRET?: string = undefined;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(60)
  @Max(30 * 24 * 3600)
  HUB_TOKEN_TTL = 3600;

  @IsOptional()
  @IsKey256()
  HUB_CREDENTIALS_KEY?: string = undefined;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(1024)
  HUB_PASSWORD_MIN_LENGTH = 8;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(1000)
  HUB_LOGIN_FAILURE_LIMIT = 5;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(24 * 3600)
  HUB_LOGIN_LOCKOUT = 900;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(1_000_000)
  HUB_LOGIN_MAX_FAILURES_PER_ADDRESS = 100;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(3650)
  HUB_LOGIN_FAMILIAR_DAYS = 30;

  @IsOptional()
  @IsAddressRanges()
  HUB_TRUSTED_PROXIES?: string = undefined;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(60)
  @Max(365 * 24 * 3600)
  HUB_INVITATION_TTL = 7 * 24 * 3600;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(3650)
  HUB_AUDIT_RETENTION_DAYS = 30;

  @IsOptional()
  @IsIn(CLUSTER_DRIVERS)
  HUB_CLUSTER_DRIVER: ClusterDriverName = 'local';

  @IsOptional()
  @IsString()
  @MinLength(1)
  HUB_SHARED_DIR?: string = undefined;

  @IsOptional()
  @Matches(/^[A-Za-z0-9_.-]{1,64}(,[A-Za-z0-9_.-]{1,64})*$/, { message: '$property must be comma-separated labels of 1-64 letters, digits, "_", "." or "-"' })
  HUB_LOCAL_NODE_LABELS?: string = undefined;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(4096)
  HUB_LOCAL_SLOTS?: number = undefined;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(4096)
  HUB_LOCAL_PREPARED_LAUNCHES?: number = undefined;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(3650)
  HUB_JOB_RETENTION_DAYS = 7;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(1024 * 1024)
  HUB_MIN_FREE_DISK_MIB?: number = undefined;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1000)
  @Max(2_000_000_000)
  HUB_JOB_UID_BASE = 200_000;

  @IsOptional()
  @Matches(/^[A-Za-z_][A-Za-z0-9_.-]{0,31}( *, *[A-Za-z_][A-Za-z0-9_.-]{0,31})*$/, { message: '$property must be comma-separated unix group names' })
  HUB_JOB_FORBIDDEN_GROUPS = DEFAULT_FORBIDDEN_GROUPS;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(1_000_000)
  HUB_MAX_ACTIVE_JOBS_PER_USER = 100;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(4_194_304)
  HUB_JOB_DEFAULT_MAX_PROCESSES = 4096;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(1_073_741_824)
  HUB_JOB_DEFAULT_MAX_MEMORY_MIB?: number = undefined;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(4096)
  HUB_MAX_RUNNING_JOBS_PER_USER?: number = undefined;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(Number.MAX_SAFE_INTEGER)
  HUB_RESULT_MAX_BYTES = 1024 * 1024 * 1024;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(3650)
  HUB_RUN_RETENTION_DAYS = 30;

  @IsOptional()
  @IsString()
  HUB_TRIGGER_FILE_ROOTS?: string = undefined;

  @IsOptional()
  @IsString()
  HUB_LIBRARY_ROOTS?: string = undefined;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  HUB_LIBRARY_ASYNC_AFTER_MS = 2000;

  @IsOptional()
  @IsIn(LOG_LEVELS)
  HUB_LOG_LEVEL: LogLevel = 'info';

  @IsOptional()
  @Matches(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, { message: '$property must be an http:// or https:// URL with no query' })
  HUB_PUBLIC_URL?: string = undefined;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(86400)
  HUB_SESSION_HEARTBEAT_INTERVAL = 60;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(86400)
  HUB_SESSION_HEARTBEAT_GRACE = 120;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(87600)
  HUB_SESSION_RETENTION_HOURS = 24;
}

/** Every setting the hub reads, in the order `.env.example` lists them. */
export const SETTING_NAMES = Object.keys(new HubEnvironment()) as (keyof HubEnvironment)[];

function describe(error: ValidationError, env: Record<string, string | undefined>): string {
  const shown = SECRET_SETTINGS.has(error.property) ? '' : ` (got ${JSON.stringify(env[error.property])})`;
  return `${Object.values(error.constraints ?? {}).join('; ')}${shown}`;
}

/**
 * Builds the configuration from an environment (normally `process.env`). Values other than secrets
 * are trimmed; blank ones count as unset. Throws a {@link ConfigurationError} naming every bad setting.
 */
export function loadHubConfig(env: Record<string, string | undefined>, cwd = process.cwd()): HubConfig {
  const given: Record<string, string> = {};
  for (const name of SETTING_NAMES) {
    const value = env[name];
    // Values are trimmed, but not secrets: a password may well begin or end with a space.
    if (value?.trim()) given[name] = SECRET_SETTINGS.has(name) ? value : value.trim();
  }
  const settings = plainToInstance(HubEnvironment, given);
  const errors = validateSync(settings, { forbidUnknownValues: true });
  if (errors.length > 0) {
    throw new ConfigurationError(`Invalid configuration: ${errors.map((e) => describe(e, env)).join('; ')}`);
  }
  const dataDir = resolve(cwd, settings.HUB_DATA_DIR);
  const stateDir = resolve(cwd, settings.HUB_STATE_DIR);
  const sharedDir = settings.HUB_SHARED_DIR ? resolve(cwd, settings.HUB_SHARED_DIR) : join(locateData(dataDir, stateDir).openDir, 'work');
  return {
    port: settings.PORT,
    host: settings.HOST,
    databaseUrl: settings.DATABASE_URL,
    databasePoolSize: settings.HUB_DB_POOL_SIZE,
    dataDir,
    stateDir,
    adminUser: settings.HUB_ADMIN_USER,
    adminPassword: settings.HUB_ADMIN_PASSWORD,
    jwtSecret: settings.HUB_JWT_SECRET,
    tokenTtlSeconds: settings.HUB_TOKEN_TTL,
    credentialsKey: settings.HUB_CREDENTIALS_KEY === undefined ? undefined : parseKey256(settings.HUB_CREDENTIALS_KEY.trim()),
    passwordMinLength: settings.HUB_PASSWORD_MIN_LENGTH,
    loginFailureLimit: settings.HUB_LOGIN_FAILURE_LIMIT,
    loginLockoutSeconds: settings.HUB_LOGIN_LOCKOUT,
    loginMaxFailuresPerAddress: settings.HUB_LOGIN_MAX_FAILURES_PER_ADDRESS,
    loginFamiliarDays: settings.HUB_LOGIN_FAMILIAR_DAYS,
    trustedProxies: settings.HUB_TRUSTED_PROXIES?.trim() ? (parseAddressRanges(settings.HUB_TRUSTED_PROXIES) ?? []) : [],
    invitationTtlSeconds: settings.HUB_INVITATION_TTL,
    auditRetentionDays: settings.HUB_AUDIT_RETENTION_DAYS,
    clusterDriver: settings.HUB_CLUSTER_DRIVER,
    sharedDir,
    localNodeLabels: settings.HUB_LOCAL_NODE_LABELS?.split(',') ?? [],
    localSlots: settings.HUB_LOCAL_SLOTS,
    localPreparedLaunches: settings.HUB_LOCAL_PREPARED_LAUNCHES,
    jobRetentionDays: settings.HUB_JOB_RETENTION_DAYS,
    minFreeDiskMiB: settings.HUB_MIN_FREE_DISK_MIB,
    jobUidBase: settings.HUB_JOB_UID_BASE,
    jobForbiddenGroups: settings.HUB_JOB_FORBIDDEN_GROUPS.split(',').map((name) => name.trim()),
    maxActiveJobsPerUser: settings.HUB_MAX_ACTIVE_JOBS_PER_USER,
    jobDefaultMaxProcesses: settings.HUB_JOB_DEFAULT_MAX_PROCESSES,
    jobDefaultMaxMemoryMiB: settings.HUB_JOB_DEFAULT_MAX_MEMORY_MIB,
    maxRunningJobsPerUser: settings.HUB_MAX_RUNNING_JOBS_PER_USER,
    resultMaxBytes: settings.HUB_RESULT_MAX_BYTES,
    runRetentionDays: settings.HUB_RUN_RETENTION_DAYS,
    triggerFileRoots: directoryList(settings.HUB_TRIGGER_FILE_ROOTS, cwd, join(sharedDir, 'inbox')),
    libraryRoots: directoryList(settings.HUB_LIBRARY_ROOTS, cwd, join(sharedDir, 'libraries')),
    libraryAsyncAfterMs: settings.HUB_LIBRARY_ASYNC_AFTER_MS,
    logLevel: settings.HUB_LOG_LEVEL,
    publicUrl: settings.HUB_PUBLIC_URL?.replace(/\/+$/, ''),
    sessionHeartbeatInterval: settings.HUB_SESSION_HEARTBEAT_INTERVAL,
    sessionHeartbeatGrace: settings.HUB_SESSION_HEARTBEAT_GRACE,
    sessionRetentionHours: settings.HUB_SESSION_RETENTION_HOURS,
  };
}

/**
 * HUB_TRIGGER_FILE_ROOTS, HUB_LIBRARY_ROOTS: colon-separated directories, relative ones to the
 * working directory; `fallback` (below HUB_SHARED_DIR) when unset.
 */
function directoryList(setting: string | undefined, cwd: string, fallback: string): string[] {
  const roots = (setting ?? '').split(':').filter((root) => root.trim() !== '');
  return roots.length > 0 ? roots.map((root) => resolve(cwd, root.trim())) : [fallback];
}

/** Reads `.env` from the working directory when present; variables already set win. */
export function loadHubConfigFromProcess(): HubConfig {
  const envFile = resolve(process.cwd(), '.env');
  if (existsSync(envFile)) process.loadEnvFile(envFile);
  return loadHubConfig(process.env);
}

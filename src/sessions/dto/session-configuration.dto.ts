import { ApiExtraModels, ApiHideProperty, ApiProperty, ApiPropertyOptional, getSchemaPath } from '../../common/http/openapi-decorators.js';
import { Type } from 'class-transformer';
import {
  Allow,
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  IsUUID,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateNested,
} from 'class-validator';
import { EnvVarDto } from '../../cluster/dto/cluster.dto.js';
import { Nullable } from '../../common/validation/nullable.js';
import { ServerOwnedFields } from '../../common/validation/server-owned-fields.js';

/** Configuration names: they appear in object paths (`/LinkSessionConfigurations/<name>`), so no spaces, wildcards or slashes. */
export const CONFIGURATION_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
export const READINESS_TYPES = ['stdout', 'port'] as const;
export const DEFAULT_MAX_LIFETIME_SECONDS = 86400;
export const DEFAULT_START_TIMEOUT_SECONDS = 60;
/** A year: long enough for anything, short enough that a death clock stays a date. */
const MAX_SECONDS = 365 * 86400;

export class SessionReadinessDto {
  @ApiProperty({
    enum: READINESS_TYPES,
    description:
      'stdout: ready when a line of stdout matches `pattern`; port: when a listener of the session’s own user accepts on HUB_SESSION_PORT (on a Slurm node, whose sockets the hub cannot see: when the port its launch picked accepts a connection)',
  })
  @IsIn(READINESS_TYPES, { message: `readiness.type must be one of ${READINESS_TYPES.join(', ')}` })
  type!: (typeof READINESS_TYPES)[number];

  @ApiPropertyOptional({ example: 'listening on', description: 'stdout only: a regular expression (RE2 syntax) tried on each line' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(1024)
  pattern?: string;
}

/** The body of a create or a replace (and what a patch must produce). */
export class SessionConfigurationInputDto extends ServerOwnedFields {
  /** Read back from replies and ignored, like `_id`. */
  @Allow() @ApiHideProperty() builtIn?: unknown;

  @ApiProperty({ example: 'notebook', description: '1-64 lower-case letters, digits, "_", "." or "-", starting with a letter or digit' })
  @IsString()
  @Matches(CONFIGURATION_NAME, { message: 'name must be 1-64 lower-case letters, digits, "_", "." or "-", starting with a letter or digit' })
  name!: string;

  @ApiPropertyOptional({ example: 'A notebook server' })
  @Nullable()
  @IsString()
  @MaxLength(1024)
  description?: string | null;

  @ApiProperty({ example: '/usr/bin/python3', description: 'A program: a path, or a name found on PATH' })
  @IsString()
  @MinLength(1, { message: 'command must not be empty' })
  @MaxLength(4096)
  command!: string;

  @ApiPropertyOptional({ type: [String], example: ['-m', 'http.server'] })
  @Nullable()
  @IsArray({ message: 'args must be an array of strings' })
  @ArrayMaxSize(1024)
  @IsString({ each: true })
  @MaxLength(32768, { each: true })
  args?: string[] | null;

  @ApiPropertyOptional({ type: [EnvVarDto] })
  @Nullable()
  @IsArray()
  @ArrayMaxSize(256)
  @IsObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => EnvVarDto)
  envVars?: EnvVarDto[] | null;

  @ApiProperty({ type: SessionReadinessDto })
  @IsObject({ message: 'readiness must be an object {type, pattern}' })
  @ValidateNested()
  @Type(() => SessionReadinessDto)
  readiness!: SessionReadinessDto;

  @ApiPropertyOptional({ format: 'uuid', description: 'Absent: the namespace’s default profile, read at each start' })
  @Nullable()
  @IsUUID('all', { message: 'executionProfileId must be an execution profile id (a UUID)' })
  executionProfileId?: string | null;

  @ApiPropertyOptional({ example: 'default', description: 'Where its sessions’ jobs run and which profile bindings apply; `default` when absent' })
  @Nullable()
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  namespace?: string | null;

  @ApiPropertyOptional({
    example: DEFAULT_MAX_LIFETIME_SECONDS,
    description: `Seconds from start to the death clock; ${DEFAULT_MAX_LIFETIME_SECONDS} when absent; at most the profile's maxRunSeconds`,
  })
  @Nullable()
  @Type(() => Number)
  @IsInt({ message: 'maxLifetimeSeconds must be a whole number of seconds' })
  @Min(1)
  @Max(MAX_SECONDS)
  maxLifetimeSeconds?: number | null;

  @ApiPropertyOptional({
    example: DEFAULT_START_TIMEOUT_SECONDS,
    description: `Seconds a session may stay Pending before it fails; ${DEFAULT_START_TIMEOUT_SECONDS} when absent`,
  })
  @Nullable()
  @Type(() => Number)
  @IsInt({ message: 'startTimeoutSeconds must be a whole number of seconds' })
  @Min(1)
  @Max(MAX_SECONDS)
  startTimeoutSeconds?: number | null;
}

@ApiExtraModels(SessionReadinessDto, EnvVarDto)
export class SessionConfigurationDto {
  @ApiProperty({ example: 'notebook' })
  name!: string;

  @ApiPropertyOptional()
  description?: string;

  @ApiProperty()
  command!: string;

  @ApiPropertyOptional({ type: [String] })
  args?: string[];

  @ApiPropertyOptional({ type: [EnvVarDto] })
  envVars?: EnvVarDto[];

  @ApiProperty({ allOf: [{ $ref: getSchemaPath(SessionReadinessDto) }] })
  readiness!: SessionReadinessDto;

  @ApiPropertyOptional({ format: 'uuid' })
  executionProfileId?: string;

  @ApiPropertyOptional({ example: 'default' })
  namespace?: string;

  @ApiProperty({ example: DEFAULT_MAX_LIFETIME_SECONDS })
  maxLifetimeSeconds!: number;

  @ApiProperty({ example: DEFAULT_START_TIMEOUT_SECONDS })
  startTimeoutSeconds!: number;

  @ApiPropertyOptional({ description: 'Beyond the interface: true for a configuration the hub ships (read-only)' })
  builtIn?: boolean;
}

/** An entry of the interface's configuration list (hub-interface §2.9). */
export class SessionConfigurationEntryDto {
  @ApiProperty({ example: 'files' })
  name!: string;

  @ApiProperty({ example: 'The session’s working directory over HTTP' })
  description!: string;
}

/** A configuration as stored. */
export interface SessionConfigurationRow {
  readonly name: string;
  readonly description: string | null;
  readonly command: string;
  readonly args: string[];
  readonly envVars: { name: string; value: string }[];
  readonly readiness: { type: 'stdout'; pattern: string } | { type: 'port' };
  readonly executionProfileId: string | null;
  readonly namespace: string;
  readonly maxLifetimeSeconds: number;
  readonly startTimeoutSeconds: number;
  readonly builtIn: boolean;
  readonly version: number;
}

export function toSessionConfigurationResponse(row: SessionConfigurationRow): SessionConfigurationDto {
  return {
    name: row.name,
    ...(row.description !== null && { description: row.description }),
    command: row.command,
    args: row.args,
    envVars: row.envVars,
    readiness: row.readiness,
    ...(row.executionProfileId !== null && { executionProfileId: row.executionProfileId }),
    namespace: row.namespace,
    maxLifetimeSeconds: row.maxLifetimeSeconds,
    startTimeoutSeconds: row.startTimeoutSeconds,
    builtIn: row.builtIn,
  };
}

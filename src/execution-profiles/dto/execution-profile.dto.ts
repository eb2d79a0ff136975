import { ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsObject, IsString, Matches, MaxLength, registerDecorator, ValidateNested } from 'class-validator';
import { ListOf } from '../../common/http/list-envelope.js';
import { IsEntityName } from '../../common/validation/entity-name.js';
import { IsStringMap } from '../../common/validation/is-string-map.js';
import { ServerOwnedFields } from '../../common/validation/server-owned-fields.js';
import type { ExecutionProfile } from '../entities/execution-profile.entity.js';
import { CONSTRAINT_ATTRIBUTE, CONSTRAINT_ATTRIBUTE_RULE, CONSTRAINT_OPERATORS, type ConstraintOperator, type NodeConstraint } from '../node-constraints.js';
import { Nullable } from '../../common/validation/nullable.js';

/** Names of environment variables: a letter or "_", then letters, digits or "_". */
export const ENVIRONMENT_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
export const MAX_CONSTRAINTS = 64;

/** The `properties` that limit each execution a profile runs (api-map §9): positive integers when present. */
export const PROFILE_LIMITS = ['maxProcesses', 'maxMemoryMiB', 'maxRunSeconds', 'maxDiskMiB'] as const;

/** `properties` whose limits, when present, are positive integers. */
function HasValidLimits(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'hasValidLimits',
      target: target.constructor,
      propertyName: propertyName as string,
      options: { message: `properties ${PROFILE_LIMITS.join(', ')} must be positive integers` },
      validator: {
        validate: (value: unknown) =>
          typeof value !== 'object' ||
          value === null ||
          PROFILE_LIMITS.every((name) => {
            const limit = (value as Record<string, unknown>)[name];
            return limit === undefined || (typeof limit === 'number' && Number.isSafeInteger(limit) && limit > 0);
          }),
      },
    });
}

/** One node constraint (api-map §4): a workload runs only on nodes meeting all of its profile's. */
export class NodeConstraintDto {
  @ApiProperty({ example: 'node.label', description: 'node.label, node.os, node.name or node.attr.<key>' })
  @IsString()
  @Matches(CONSTRAINT_ATTRIBUTE, { message: CONSTRAINT_ATTRIBUTE_RULE })
  attribute!: string;

  @ApiProperty({ example: 'gpu', description: 'For in and not_in, comma-separated values; for regexp, an RE2 expression matching a whole value' })
  @IsString()
  @MaxLength(1024)
  value!: string;

  @ApiProperty({ enum: CONSTRAINT_OPERATORS, example: '=' })
  @IsIn(CONSTRAINT_OPERATORS, { message: `operator must be one of ${CONSTRAINT_OPERATORS.join(', ')}` })
  operator!: ConstraintOperator;
}

/** The body of a create or a replace (and what a patch must produce). */
export class ExecutionProfileInputDto extends ServerOwnedFields {
  @ApiProperty({ example: 'GPU', maxLength: 128, description: 'Unique, ignoring case' })
  @IsEntityName()
  name!: string;

  @ApiPropertyOptional({ maxLength: 1024, example: 'Workloads that need a GPU' })
  @Nullable()
  @IsString()
  @MaxLength(1024)
  description?: string | null;

  @ApiPropertyOptional({ description: "The hub's default profile (at most one: the previous default stops being it); absent means false" })
  @Nullable()
  @IsBoolean()
  isDefault?: boolean | null;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string' },
    example: { JAVA_HOME: '/opt/java', OMP_NUM_THREADS: '4' },
    description: 'Environment variables set for every workload the profile runs',
  })
  @Nullable()
  @IsStringMap({
    maxEntries: 256,
    maxValueLength: 32768,
    key: { pattern: ENVIRONMENT_NAME, rule: 'names must be a letter or "_", then up to 127 letters, digits or "_"' },
  })
  environment?: Record<string, string> | null;

  @ApiPropertyOptional({ type: [NodeConstraintDto] })
  @Nullable()
  @IsArray()
  @ArrayMaxSize(MAX_CONSTRAINTS)
  @IsObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => NodeConstraintDto)
  constraints?: NodeConstraintDto[] | null;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: { intermediateFilesDir: '/scratch' },
    description: `Free-form settings, up to 64 KiB of JSON. ${PROFILE_LIMITS.join(', ')}, when present, limit each execution (positive integers; docs/security.md); maxDiskMiB bounds what its working directory and logs hold on the local driver (docs/cluster.md)`,
  })
  @Nullable()
  @IsObject({ message: 'properties must be an object' })
  @HasValidLimits()
  properties?: Record<string, unknown> | null;
}

/** hub-interface §2.8 "Execution profile". */
export class ExecutionProfileDto {
  @ApiProperty({ format: 'uuid' }) _id!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _created!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _modified!: string;
  @ApiProperty({ example: 'GPU' }) name!: string;
  @ApiPropertyOptional({ example: 'Workloads that need a GPU' }) description?: string;
  @ApiProperty() isDefault!: boolean;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) environment!: Record<string, string>;
  @ApiProperty({ type: [NodeConstraintDto] }) constraints!: NodeConstraint[];
  @ApiProperty({ type: 'object', additionalProperties: true }) properties!: Record<string, unknown>;
}

/** A profile in a list: only these four fields (hub-interface §4.9). */
export class ExecutionProfileListItemDto {
  @ApiProperty({ format: 'uuid' }) _id!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _created!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _modified!: string;
  @ApiProperty({ example: 'GPU' }) name!: string;
}

export class ExecutionProfileListDto extends ListOf(ExecutionProfileListItemDto) {}

/** hub-interface §2.8 "Profile validation result": `reason` is `taken` or `invalid` when `result` is false. */
export class NameAvailabilityDto {
  @ApiProperty() result!: boolean;
  @ApiPropertyOptional({ enum: ['taken', 'invalid'] }) reason?: string;
  @ApiPropertyOptional({ example: "An execution profile named 'GPU' already exists" }) msg?: string;
}

export function toExecutionProfileListItem(profile: Pick<ExecutionProfile, 'id' | 'created' | 'modified' | 'name'>): ExecutionProfileListItemDto {
  return { _id: profile.id, _created: profile.created.toISOString(), _modified: profile.modified.toISOString(), name: profile.name };
}

/** Absent values are `undefined`, which JSON leaves out. */
export function toExecutionProfileResponse(profile: ExecutionProfile): ExecutionProfileDto {
  return {
    ...toExecutionProfileListItem(profile),
    description: profile.description ?? undefined,
    isDefault: profile.isDefault,
    environment: profile.environment,
    // jsonb keeps keys in its own order; replies show them as the interface lists them.
    constraints: profile.constraints.map(({ attribute, value, operator }) => ({ attribute, value, operator })),
    properties: profile.properties,
  };
}

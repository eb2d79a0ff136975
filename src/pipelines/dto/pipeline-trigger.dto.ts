import { ApiHideProperty, ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { Type } from 'class-transformer';
import { Allow, IsBoolean, IsIn, IsInt, IsObject, IsOptional, IsString, IsUUID, Max, MaxLength, Min, MinLength, ValidateNested } from 'class-validator';
import { ListOf } from '../../common/http/list-envelope.js';
import { IsDateTime } from '../../common/validation/is-date-time.js';
import { PlainServerOwnedFields } from '../../common/validation/server-owned-fields.js';

/** `triggerType` (hub-interface §2.6b). */
export const TRIGGER_TYPES = ['Cron', 'File'] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];

/** The events of a File trigger (api-map §7). */
export const FILE_EVENTS = ['Arrival', 'Existence'] as const;
export type FileEvent = (typeof FILE_EVENTS)[number];

/** A firing's states (api-map §7 "Settled details"). */
export const FIRING_STATES = ['Success', 'Failed'] as const;
export type FiringState = (typeof FIRING_STATES)[number];

export const DEFAULT_POLL_SECONDS = 30;
/** A day: a File trigger polls at least that often. */
export const MAX_POLL_SECONDS = 86_400;

/**
 * `triggerSpec` (hub-interface §2.6b): the fields of a Cron or of a File trigger. Which fields a
 * type takes, and which it needs, is checked by the service (a field of the other type is a 400).
 */
export class TriggerSpecDto {
  @ApiProperty({ enum: TRIGGER_TYPES })
  @IsIn(TRIGGER_TYPES, { message: `type must be one of ${TRIGGER_TYPES.join(', ')}` })
  type!: TriggerType;

  @ApiPropertyOptional({ example: '0 30 2 * * *', description: 'Cron: 5 fields, or 6 with seconds first. Required for Cron.' })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  cronExpression?: string;

  @ApiPropertyOptional({ example: 'Europe/Berlin', description: 'Cron: an IANA time zone the schedule is read in; UTC when absent' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  timezone?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'Cron: no due time before it (inclusive)' })
  @IsOptional()
  @IsDateTime()
  startTime?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'Cron: no due time after it (inclusive); must be after startTime' })
  @IsOptional()
  @IsDateTime()
  endTime?: string;

  @ApiPropertyOptional({
    example: '/srv/hub/work/inbox/orders',
    description: 'File: an absolute directory under one of HUB_TRIGGER_FILE_ROOTS, readable by the owner’s job identity. Required for File.',
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(4096)
  path?: string;

  @ApiPropertyOptional({
    example: '*.csv',
    description: 'File: matched on the whole file name, case-sensitively; `*` any run of characters, `?` one. Required for File.',
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(255)
  pattern?: string;

  @ApiPropertyOptional({
    enum: FILE_EVENTS,
    description: 'File: Arrival fires once per new or changed file, Existence at each poll per file. Required for File.',
  })
  @IsOptional()
  @IsIn(FILE_EVENTS, { message: `event must be one of ${FILE_EVENTS.join(', ')}` })
  event?: FileEvent;

  @ApiPropertyOptional({ description: 'File: look in subdirectories too; false when absent' })
  @IsOptional()
  @IsBoolean()
  recursive?: boolean;

  @ApiPropertyOptional({ minimum: 1, maximum: MAX_POLL_SECONDS, default: DEFAULT_POLL_SECONDS, description: 'File: seconds between polls' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_POLL_SECONDS)
  pollSeconds?: number;
}

/** The body of a create or a replace (and what a patch must produce); what a read returns may be sent back. */
export class TriggerInputDto extends PlainServerOwnedFields {
  @Allow() @ApiHideProperty() ownerPrincipal?: unknown;
  @Allow() @ApiHideProperty() lastTriggered?: unknown;
  @Allow() @ApiHideProperty() modifed?: unknown;

  @ApiProperty({ format: 'uuid', description: 'The pipeline of the path' })
  @IsUUID('all', { message: 'pipelineId must be a pipeline id (a UUID)' })
  pipelineId!: string;

  @ApiProperty({ description: 'A disabled trigger does not fire; due times while disabled are skipped, with no catch-up' })
  @IsBoolean()
  disabled!: boolean;

  @ApiProperty({ type: TriggerSpecDto })
  @IsObject({ message: 'trigger must be an object {type, ...}' })
  @ValidateNested()
  @Type(() => TriggerSpecDto)
  trigger!: TriggerSpecDto;

  @ApiProperty({ format: 'uuid', description: "An execution profile bound to the pipeline's namespace, which the owner may Use there" })
  @IsUUID('all', { message: 'executionProfileId must be an execution profile id (a UUID)' })
  executionProfileId!: string;
}

/** A trigger's spec as stored and shown: what was sent, the fields of its type only. */
export type TriggerSpecShape = Partial<Omit<TriggerSpecDto, 'type'>> & { type: TriggerType };

/** A trigger (hub-interface §2.6b; api-map §7 "Settled details"). */
export class TriggerDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'uuid' }) pipelineId!: string;
  @ApiProperty({ format: 'date-time' }) created!: string;
  @ApiProperty({ format: 'date-time' }) modified!: string;
  @ApiProperty() disabled!: boolean;
  @ApiProperty({ type: TriggerSpecDto }) trigger!: TriggerSpecShape;
  @ApiProperty({ format: 'uuid' }) executionProfileId!: string;
  @ApiProperty({ format: 'uuid', description: 'The user id of the owner, who owns the runs it starts' }) ownerPrincipal!: string;
  @ApiPropertyOptional({ format: 'date-time', description: 'The triggerTime of the latest firing; absent until the first' }) lastTriggered?: string;
}

/** A list item: as a trigger, the modification time spelled `modifed` as hub-interface §2.6b spells it. */
export class TriggerListItemDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'uuid' }) pipelineId!: string;
  @ApiProperty({ format: 'date-time' }) created!: string;
  @ApiProperty({ format: 'date-time' }) modifed!: string;
  @ApiProperty() disabled!: boolean;
  @ApiProperty({ type: TriggerSpecDto }) trigger!: TriggerSpecShape;
  @ApiProperty({ format: 'uuid' }) executionProfileId!: string;
  @ApiProperty({ format: 'uuid' }) ownerPrincipal!: string;
  @ApiPropertyOptional({ format: 'date-time' }) lastTriggered?: string;
}

export class TriggerListDto extends ListOf(TriggerListItemDto) {}

/** A firing record (hub-interface §2.6b): `runId` when it succeeded, `error` when it failed. */
export class FiringDto {
  @ApiProperty({ format: 'uuid' }) triggerId!: string;
  @ApiProperty({ format: 'date-time', description: 'The due time (Cron), the poll instant (Existence) or when the file was seen (Arrival)' })
  triggerTime!: string;
  @ApiProperty({ enum: FIRING_STATES }) state!: FiringState;
  @ApiPropertyOptional({ format: 'uuid', description: 'The run started; absent when the firing failed' }) runId?: string;
  @ApiPropertyOptional({ description: 'Why no run could be started; absent when it succeeded' }) error?: string;
}

export class FiringListDto extends ListOf(FiringDto) {}

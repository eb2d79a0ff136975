import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsUUID, Max, Min } from 'class-validator';
import { ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { ListOf } from '../../common/http/list-envelope.js';
import { LIBRARY_ENGINES, type LibraryEngine } from './library-definition.dto.js';

/** The most workers one library may have (each a job of its publisher's, under their quota too). */
export const MAX_WORKERS = 64;

export class PublishLibraryInputDto {
  @ApiProperty({ format: 'uuid', description: 'The definition to publish; it must exist (400) and not be published already (409)' })
  @IsUUID('all', { message: 'libraryDefinitionId must be the id of a library definition' })
  libraryDefinitionId!: string;

  @ApiProperty({
    format: 'uuid',
    description:
      'The profile the workers run under: bound to the definition’s namespace (400), usable by the publisher there (403), without maxRunSeconds (400)',
  })
  @IsUUID('all', { message: 'executionProfileId must be the id of an execution profile' })
  executionProfileId!: string;

  @ApiPropertyOptional({ minimum: 1, maximum: MAX_WORKERS, default: 1, description: 'Worker processes (poolSize); each a service job of the publisher’s' })
  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'workers must be a positive integer' })
  @Min(1, { message: 'workers must be a positive integer' })
  @Max(MAX_WORKERS, { message: `workers must be at most ${MAX_WORKERS}` })
  workers?: number;
}

/** hub-interface §2.7 "Published library"; executionProfileId only under 2026.0.0. */
export class PublishedLibraryDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'uuid' }) libraryDefinitionId!: string;
  @ApiProperty({ example: 'sales' }) name!: string;
  @ApiProperty({ example: 'default' }) namespace!: string;
  @ApiPropertyOptional({ format: 'uuid', description: 'Under 2026.0.0 only' }) executionProfileId?: string;
}

export class PublishedLibraryListDto extends ListOf(PublishedLibraryDto) {}

export const MEMBER_TYPES = ['DATA', 'VIEW', 'CATALOG'] as const;
export type MemberType = (typeof MEMBER_TYPES)[number];

export class LibraryMemberDto {
  @ApiProperty({ example: 'orders' }) name!: string;
  @ApiProperty({ enum: MEMBER_TYPES }) type!: MemberType;
}

export class LibraryMemberListDto extends ListOf(LibraryMemberDto) {}

export const FIELD_TYPES = ['number', 'string', 'date', 'datetime', 'boolean'] as const;

export class DatasetFieldDto {
  @ApiProperty({ example: 'amount' }) name!: string;
  @ApiProperty({ enum: FIELD_TYPES }) type!: string;
  @ApiProperty({ example: '' }) label!: string;
  @ApiProperty({ example: 8, description: 'Bytes a value takes (strings: the longest value)' }) length!: number;
  @ApiProperty({ example: '', description: 'The display format `formatted` applies' }) format!: string;
}

/** hub-interface §2.7 "Dataset metadata". */
export class DatasetMetadataDto {
  @ApiProperty({ example: 'orders' }) name!: string;
  @ApiProperty({ enum: LIBRARY_ENGINES }) engine!: LibraryEngine;
  @ApiPropertyOptional({ format: 'date-time' }) created?: string;
  @ApiPropertyOptional({ format: 'date-time', description: 'The file’s modification time' }) lastModified?: string;
  @ApiProperty() label!: string;
  @ApiProperty({ description: 'The exact number of observations' }) nobs!: number;
  @ApiProperty() compressionType!: string;
  @ApiProperty({ enum: MEMBER_TYPES }) type!: string;
  @ApiProperty() charEncoding!: string;
  @ApiProperty() isPointobs!: boolean;
  @ApiProperty() dataRepresentation!: string;
  @ApiProperty() recordLength!: number;
  @ApiProperty({ type: 'array', items: {} }) engineProperties!: unknown[];
  @ApiProperty({ type: 'array', items: {} }) sort!: unknown[];
  @ApiProperty({ type: 'object', additionalProperties: true }) sortOptions!: Record<string, unknown>;
  @ApiProperty({ type: 'array', items: {} }) indexes!: unknown[];
  @ApiProperty({ type: [DatasetFieldDto] }) fields!: DatasetFieldDto[];
}

/** hub-interface §2.7 "Records result": `values` rows as arrays in `fields` order. */
export class RecordsDto {
  @ApiProperty({ type: [DatasetFieldDto] }) fields!: DatasetFieldDto[];
  @ApiProperty({
    type: 'array',
    items: { type: 'array', items: {} },
    description: 'One array per record, its values in `fields` order: numbers and booleans as JSON, dates YYYY-MM-DD, date-times ISO 8601, missing null',
  })
  values!: unknown[][];
}

export class FilterValidationDto {
  @ApiProperty() ok!: boolean;
  @ApiPropertyOptional({ description: 'Why the filter is invalid (the parser’s message, naming its position); the problem detail getRecords would answer' })
  msg?: string;
}

export class WorkerStatusDto {
  @ApiProperty({ enum: ['starting', 'ready', 'failed', 'stopped'] }) state!: string;
  @ApiPropertyOptional({ description: 'The cluster node its current process runs on' }) node?: string;
  @ApiPropertyOptional({ format: 'date-time', description: 'When its current process started' }) startTime?: string;
  @ApiProperty({ description: 'Requests its current process has served' }) requestsServed!: number;
  @ApiPropertyOptional({ description: 'Why it failed, while it is failed' }) message?: string;
}

export class LibraryDescriptionDto {
  @ApiProperty({ example: 'sales' }) name!: string;
  @ApiProperty({ enum: LIBRARY_ENGINES }) engine!: LibraryEngine;
  @ApiPropertyOptional({ example: '/srv/hub/work/libraries/sales', description: 'Absent for postgres' }) path?: string;
}

/** hub-interface §2.7 "Server status": poolSize under 2026.0.0, workerPoolSize under 2.3.0.461. */
export class ServerStatusDto {
  @ApiProperty({ format: 'date-time', description: 'When the library was published' }) startTime!: string;
  @ApiPropertyOptional({ description: 'Workers in the pool (2026.0.0)' }) poolSize?: number;
  @ApiPropertyOptional({ description: 'Workers in the pool (2.3.0.461)' }) workerPoolSize?: number;
  @ApiProperty({ description: 'Workers that ended unasked since publishing (each replaced)' }) failedWorkerCount!: number;
  @ApiProperty({ type: 'object', additionalProperties: { $ref: '#/components/schemas/WorkerStatusDto' }, description: 'By worker index: "0", "1", ...' })
  workers!: Record<string, WorkerStatusDto>;
  @ApiProperty({ type: LibraryDescriptionDto }) description!: LibraryDescriptionDto;
}

export class AsyncAcceptedDto {
  @ApiProperty({ format: 'uuid' }) operationId!: string;
}

export const OPERATION_STATES = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;
export type OperationState = (typeof OPERATION_STATES)[number];

export class OperationEventDto {
  @ApiProperty({ enum: OPERATION_STATES }) type!: OperationState;
  @ApiProperty({ format: 'date-time' }) time!: string;
}

export class OperationErrorDto {
  @ApiProperty({ example: 400 }) status!: number;
  @ApiProperty() msg!: string;
}

/** hub-interface §2.7 "Async operation status". */
export class AsyncStatusDto {
  @ApiProperty({ enum: OPERATION_STATES }) state!: OperationState;
  @ApiPropertyOptional({ format: 'date-time', description: 'When a finished operation and its result are deleted' }) reapTime?: string;
  @ApiProperty({ format: 'date-time' }) startTime!: string;
  @ApiProperty({ type: [OperationEventDto] }) events!: OperationEventDto[];
  @ApiPropertyOptional({ type: OperationErrorDto, description: 'Why a failed operation failed' }) error?: OperationErrorDto;
  @ApiProperty({ example: 'getRecords' }) method!: string;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The dataset `name` and the query given' }) parameters!: Record<string, unknown>;
}

export class AsyncDeletionDto {
  @ApiProperty() msg!: string;
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The operation’s status as it was cancelled or deleted' }) data!: Record<
    string,
    unknown
  >;
}

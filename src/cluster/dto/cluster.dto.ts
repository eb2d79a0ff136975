import { ApiExtraModels, ApiProperty, ApiPropertyOptional, getSchemaPath } from '../../common/http/openapi-decorators.js';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsDefined,
  IsInt,
  IsObject,
  IsString,
  IsUUID,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateNested,
} from 'class-validator';
import { TotalListOf } from '../../common/http/list-envelope.js';
import { ENVIRONMENT_NAME } from '../../execution-profiles/dto/execution-profile.dto.js';
import { EXECUTION_STATUSES, type ExecutionStatus, type TaskEvent } from '../entities/job-execution.entity.js';
import { JOB_STATUSES, JOB_TYPES, type JobStatus, type JobType } from '../entities/cluster-job.entity.js';
import { NODE_STATUSES, type NodeStatus } from '../entities/cluster-node.entity.js';
import { Nullable } from '../../common/validation/nullable.js';

export class NodeListItemDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ example: 'worker-1' }) name!: string;
  @ApiProperty({ example: '10.0.0.12' }) address!: string;
  @ApiProperty({ example: 'server' }) type!: string;
  @ApiProperty() isWorker!: boolean;
  @ApiProperty() isServer!: boolean;
  @ApiProperty({ enum: NODE_STATUSES }) status!: NodeStatus;
  @ApiProperty({ type: [String], example: ['gpu'] }) nodeLabels!: string[];
}

export class NodeResourcesDto {
  @ApiProperty({ description: 'MiB' }) memory!: number;
  @ApiProperty({ description: 'CPUs (for the local driver: the executions it runs at once)' }) cpu!: number;
}

export class NodeDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty() name!: string;
  @ApiProperty() hostname!: string;
  @ApiProperty() address!: string;
  @ApiProperty({ type: NodeResourcesDto }) resources!: NodeResourcesDto;
  @ApiProperty() type!: string;
  @ApiProperty() isWorker!: boolean;
  @ApiProperty() isServer!: boolean;
  @ApiProperty({ enum: NODE_STATUSES }) status!: NodeStatus;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, description: 'Also `os` and `draining`' }) attributes!: Record<string, string>;
}

export class NodeListDto extends TotalListOf(NodeListItemDto) {}

export class DrainDto {
  @ApiProperty({ description: 'true: take no new work; false: take work again' })
  @IsBoolean()
  enable!: boolean;
}

export class TaskSummaryDto {
  @ApiProperty() queued!: number;
  @ApiProperty() completed!: number;
  @ApiProperty() failed!: number;
  @ApiProperty() running!: number;
  @ApiProperty() starting!: number;
  @ApiProperty() lost!: number;
}

export class JobListItemDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ enum: JOB_STATUSES }) status!: JobStatus;
  @ApiProperty({ enum: JOB_TYPES }) type!: JobType;
  @ApiProperty({ format: 'date-time' }) submitTime!: string;
  @ApiProperty() priority!: number;
  @ApiProperty({ type: TaskSummaryDto }) taskSummary!: TaskSummaryDto;
}

export class JobDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ enum: JOB_STATUSES }) status!: JobStatus;
  @ApiProperty({ enum: JOB_TYPES }) type!: JobType;
  @ApiProperty({ format: 'date-time' }) submitTime!: string;
  @ApiProperty() priority!: number;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) properties!: Record<string, string>;
}

export class JobListDto extends TotalListOf(JobListItemDto) {}

export class EnvVarDto {
  @ApiProperty({ example: 'INPUT' })
  @IsString()
  @Matches(ENVIRONMENT_NAME, { message: 'name must be a letter or "_", then up to 127 letters, digits or "_"' })
  name!: string;

  @ApiProperty({ example: '/data/in.csv' })
  @IsString()
  @MaxLength(32768)
  value!: string;
}

export class TaskInputDto {
  @ApiProperty({ example: '/bin/echo', description: 'A program: a path, or a name found on PATH' })
  @IsString()
  @MinLength(1)
  @MaxLength(4096)
  command!: string;

  @ApiPropertyOptional({ type: [String], example: ['hello'] })
  @Nullable()
  @IsArray()
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
}

/** `POST /cluster/jobs` (api-map §9). */
export class SubmitJobDto {
  @ApiProperty({ example: 'nightly-report', maxLength: 256 })
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  name!: string;

  @ApiProperty({ example: 'default', description: 'The name of the namespace the job runs in' })
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  namespace!: string;

  @ApiProperty({ format: 'uuid', description: 'A profile bound to the namespace, which the caller may Use there' })
  @IsUUID('all', { message: 'executionProfileId must be an execution profile id (a UUID)' })
  executionProfileId!: string;

  @ApiProperty({ type: TaskInputDto })
  @IsDefined({ message: 'task is required' })
  @IsObject({ message: 'task must be an object {command, args, envVars}' })
  @ValidateNested()
  @Type(() => TaskInputDto)
  task!: TaskInputDto;

  @ApiPropertyOptional({ minimum: 0, maximum: 100, default: 50, description: 'Higher runs first' })
  @Nullable()
  @IsInt()
  @Min(0)
  @Max(100)
  priority?: number | null;
}

export class TaskEventDto {
  @ApiProperty({ example: 'Started' }) type!: string;
  @ApiProperty({ format: 'date-time' }) time!: string;
  @ApiProperty() displayMessage!: string;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) details!: Record<string, string>;
  @ApiProperty() message!: string;
}

export class TaskStateDto {
  @ApiProperty({ enum: ['pending', 'running', 'dead'] }) status!: string;
  @ApiProperty() failed!: boolean;
  @ApiProperty() restarts!: number;
  @ApiPropertyOptional({ format: 'date-time' }) lastRestart?: string;
  @ApiPropertyOptional({ format: 'date-time' }) startedAt?: string;
  @ApiPropertyOptional({ format: 'date-time' }) finishedAt?: string;
  @ApiProperty({ type: [TaskEventDto] }) events!: TaskEvent[];
}

export class ExecutionListItemDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'uuid' }) jobId!: string;
  @ApiProperty({ enum: EXECUTION_STATUSES }) status!: ExecutionStatus;
  @ApiProperty({ format: 'date-time' }) creationTime!: string;
  @ApiProperty({ format: 'date-time' }) modifiedTime!: string;
  @ApiPropertyOptional({ format: 'uuid' }) nodeId?: string;
  @ApiPropertyOptional() nodeName?: string;
}

export class ExecutionResourcesDto {
  @ApiProperty() reservedCPU!: number;
  @ApiProperty({ description: 'MiB; 0: none reserved' }) reservedMemory!: number;
}

@ApiExtraModels(TaskStateDto)
export class ExecutionDto extends ExecutionListItemDto {
  @ApiProperty({ type: 'object', additionalProperties: { $ref: getSchemaPath(TaskStateDto) } }) taskStates!: Record<string, TaskStateDto>;
  @ApiProperty({ type: ExecutionResourcesDto }) resources!: ExecutionResourcesDto;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) jobProperties!: Record<string, string>;
}

export class ExecutionListDto extends TotalListOf(ExecutionListItemDto) {}

export class VersionDto {
  @ApiProperty({ example: '0.5.0' }) version!: string;
}

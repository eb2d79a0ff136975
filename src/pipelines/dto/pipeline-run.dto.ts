import { ApiHideProperty, ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { Type } from 'class-transformer';
import { Allow, IsObject, IsOptional, IsString, IsUUID, MaxLength, MinLength, ValidateNested } from 'class-validator';
import { PipelineSpecDto } from './pipeline-spec.dto.js';

/** `pipelineRunState` (hub-interface §2.5b). */
export const RUN_STATES = ['Queued', 'Executing', 'Succeeded', 'Failed', 'Cancelled'] as const;
export type RunState = (typeof RUN_STATES)[number];

/** A node's states (api-map §7 "Pipeline semantics"). */
export const NODE_STATES = ['Waiting', 'Running', 'Succeeded', 'Failed', 'Skipped', 'Cancelled'] as const;
export type NodeState = (typeof NODE_STATES)[number];

/** The body of submit: hub-interface §4.7. */
export class SubmitPipelineDto {
  @ApiProperty({ format: 'uuid', description: "An execution profile bound to the pipeline's namespace, which the caller may Use there" })
  @IsUUID('all', { message: 'executionProfileId must be an execution profile id (a UUID)' })
  executionProfileId!: string;
}

/** Submit's reply. */
export class SubmittedRunDto {
  @ApiProperty({ format: 'uuid' }) pipelineRunId!: string;
}

/** The body of create-run: an ad hoc spec. Of `id`, `status` and `created` none is honoured (hub-interface §4.7). */
export class PipelineRunInputDto {
  @Allow() @ApiHideProperty() id?: unknown;
  @Allow() @ApiHideProperty() status?: unknown;
  @Allow() @ApiHideProperty() created?: unknown;
  @Allow() @ApiHideProperty() ownerPrincipal?: unknown;
  @Allow() @ApiHideProperty() pipelineId?: unknown;

  @ApiProperty({ type: PipelineSpecDto, description: 'What to run; validate must report no problem' })
  @IsObject({ message: 'spec must be an object {nodes, meta, keepGoing}' })
  @ValidateNested()
  @Type(() => PipelineSpecDto)
  spec!: PipelineSpecDto;

  @ApiProperty({ format: 'uuid', description: "An execution profile bound to the run's namespace, which the caller may Use there" })
  @IsUUID('all', { message: 'executionProfileId must be an execution profile id (a UUID)' })
  executionProfileId!: string;

  @ApiPropertyOptional({ example: 'default', description: "The namespace's name; `default` when absent" })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  namespace?: string;

  @ApiPropertyOptional({ example: 'transform', description: 'Only this node starts; the nodes it cannot reach end Skipped' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  entryPoint?: string;
}

/** A step of a node (api-map §7 "Events"): every value of `details` is a string. */
export class NodeEventDto {
  @ApiProperty({ format: 'date-time' }) time!: string;
  @ApiProperty({ example: 'Exited', description: 'Queued, Started, InputFetched, Exited, ResultStored, Skipped, Cancelled, Error, Timeout' }) type!: string;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, example: { exitCode: '0' } }) details!: Record<string, string>;
}

/** hub-interface §2.5b "Node status". */
export class NodeStatusDto {
  @ApiProperty({ enum: NODE_STATES }) state!: NodeState;
  @ApiPropertyOptional({ format: 'date-time', description: "When the first attempt's process started" }) startedAt?: string;
  @ApiPropertyOptional({ format: 'date-time', description: "When the last attempt's process ended" }) finishedAt?: string;
  @ApiPropertyOptional({ type: 'integer', description: 'Absent until the process exits' }) exitCode?: number;
  @ApiProperty({ type: [NodeEventDto] }) events!: NodeEventDto[];
}

/** hub-interface §2.5b "pipelineRunStatus". */
export class RunStatusDto {
  @ApiProperty({ enum: RUN_STATES }) state!: RunState;
  @ApiPropertyOptional({ format: 'date-time', description: "When the first node's job was submitted" }) startedAt?: string;
  @ApiPropertyOptional({ format: 'date-time' }) finishedAt?: string;
  @ApiProperty({ type: 'object', additionalProperties: { $ref: '#/components/schemas/NodeStatusDto' }, description: 'By node name' })
  nodeStatus!: Record<string, NodeStatusDto>;
}

/** hub-interface §2.5b "Pipeline run". */
export class PipelineRunDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'date-time' }) created!: string;
  @ApiProperty({ format: 'uuid', description: "The owner's user id" }) ownerPrincipal!: string;
  @ApiPropertyOptional({ format: 'uuid', description: 'Absent for an ad hoc run' }) pipelineId?: string;
  @ApiProperty({ example: 'default' }) namespace!: string;
  @ApiProperty({ type: RunStatusDto }) status!: RunStatusDto;
  @ApiProperty({ type: PipelineSpecDto, description: 'The spec the run was started with; later edits of the pipeline do not change it' })
  spec!: PipelineSpecDto;
  @ApiPropertyOptional({ example: 'transform' }) entryPoint?: string;
  @ApiProperty({ format: 'uuid' }) executionProfileId!: string;
}

/** hub-interface §2.5b "Run list item". */
export class PipelineRunListItemDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'date-time' }) created!: string;
  @ApiPropertyOptional({ format: 'date-time' }) startedAt?: string;
  @ApiPropertyOptional({ format: 'date-time' }) finishedAt?: string;
  @ApiProperty({ enum: RUN_STATES }) state!: RunState;
  @ApiProperty({ description: 'True only for a run ended by cancel' }) cancelled!: boolean;
  @ApiProperty({ format: 'uuid' }) ownerPrincipal!: string;
  @ApiProperty({ example: 'default' }) namespace!: string;
  @ApiProperty({ format: 'uuid' }) executionProfileId!: string;
  @ApiPropertyOptional({ format: 'uuid', description: 'Absent for an ad hoc run' }) pipelineId?: string;
}

/** `GET /pipelines/runs` answers `{data}` only (api-map §7). */
export class PipelineRunListDto {
  @ApiProperty({ type: [PipelineRunListItemDto] }) data!: PipelineRunListItemDto[];
}

/** hub-interface §2.5b "Node result entry". */
export class ResultEntryDto {
  @ApiProperty({ example: 'report' }) name!: string;
  @ApiProperty({ type: 'integer', example: 1024 }) size!: number;
}

/** hub-interface §2.5b "Result metadata". */
export class ResultMetadataDto {
  @ApiProperty({ example: 'report' }) name!: string;
  @ApiProperty({ example: 'text/csv' }) contentType!: string;
  @ApiProperty({ type: 'integer', example: 1024 }) size!: number;
}

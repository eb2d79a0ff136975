import { ApiExtraModels, ApiProperty, ApiPropertyOptional, getSchemaPath } from '../../common/http/openapi-decorators.js';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateNested,
} from 'class-validator';
import { EnvVarDto } from '../../cluster/dto/cluster.dto.js';
import { ENTITY_NAME } from '../../common/validation/entity-name.js';
import { IsMapOf } from '../../common/validation/is-map-of.js';

/** The most nodes a pipeline holds, and connections a node makes of each kind. */
export const MAX_NODES = 1000;
const MAX_TARGETS = 1000;

/** A node's name, or nothing: a node without one is a draft's, which validation reports. */
const NODE_NAME = new RegExp(`^(?:${ENTITY_NAME.source})?$`, 'u');
const NODE_NAME_RULE = 'name must be 1-128 letters, digits, "_", ".", "@", "-" or inner spaces';
const KEY = { pattern: /^[A-Za-z0-9_.-]{1,128}$/, rule: 'keys must be 1-128 letters, digits, "_", "." or "-"' };

function Targets(description: string): PropertyDecorator {
  return (target, property) => {
    ApiPropertyOptional({ type: [String], example: ['next'], description })(target, property);
    IsOptional()(target, property);
    IsArray()(target, property);
    ArrayMaxSize(MAX_TARGETS)(target, property);
    IsString({ each: true })(target, property);
    MaxLength(128, { each: true })(target, property);
  };
}

/** hub-interface §2.4b: the nodes that become ready when a node ends, by how it ended. */
export class ConnectionsDto {
  @Targets('Ready when the node exits 0 (a plain node)') onSuccess?: string[];
  @Targets('Ready when the node exits 0 (a conditionNode: true)') onTrue?: string[];
  @Targets('Ready when the node exits 1 (a conditionNode: false)') onFalse?: string[];
  @Targets('Ready whatever the outcome') onAny?: string[];
  @Targets('Ready when the node fails') onError?: string[];
}

/** A git repository checked out into the node's working directory before its task. */
export class GitResourceDto {
  @ApiProperty({ enum: ['git'] })
  @IsIn(['git'], { message: 'type must be git' })
  type!: 'git';

  @ApiPropertyOptional({ example: 'file:///srv/git/etl.git', description: 'Required to run (validation reports its absence)' })
  @IsOptional()
  @IsString()
  @MaxLength(4096)
  repo?: string;

  @ApiPropertyOptional({ example: 'main' })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  branchOrTag?: string;

  @ApiPropertyOptional({ example: '3f2a9c1' })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  revision?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, example: 1, description: 'A shallow clone of this many commits' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  depth?: number;

  @ApiPropertyOptional({ example: 'src', description: "Where in the node's working directory" })
  @IsOptional()
  @IsString()
  @MaxLength(1024)
  relativePath?: string;
}

/** A file the node leaves in its working directory, kept as a result. */
export class ArtifactDto {
  @ApiProperty({ example: 'out/report.csv', description: "Relative to the node's working directory" })
  @IsString()
  @MinLength(1)
  @MaxLength(1024)
  path!: string;

  @ApiPropertyOptional({ example: 'text/csv' })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  contentType?: string;
}

@ApiExtraModels(GitResourceDto)
export class NodeInputsDto {
  @ApiPropertyOptional({ type: 'object', additionalProperties: { $ref: getSchemaPath(GitResourceDto) }, description: 'Named git inputs' })
  @IsOptional()
  @IsMapOf(GitResourceDto, { maxEntries: 64, key: KEY })
  resources?: Record<string, GitResourceDto>;
}

@ApiExtraModels(ArtifactDto)
export class NodeOutputsDto {
  @ApiPropertyOptional({ type: 'object', additionalProperties: { $ref: getSchemaPath(ArtifactDto) }, description: 'Named results' })
  @IsOptional()
  @IsMapOf(ArtifactDto, { maxEntries: 256, key: KEY })
  artifacts?: Record<string, ArtifactDto>;
}

/** hub-interface §2.4b: what a node runs. */
export class NodeTaskDto {
  @ApiProperty({ enum: ['rawexec'] })
  @IsIn(['rawexec'], { message: 'type must be rawexec' })
  type!: 'rawexec';

  @ApiPropertyOptional({ example: 'python3', description: 'A program: a path, or a name found on PATH; required to run' })
  @IsOptional()
  @IsString()
  @MaxLength(4096)
  command?: string;

  @ApiPropertyOptional({ type: [String], example: ['etl.py', '--day', 'today'] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(1024)
  @IsString({ each: true })
  @MaxLength(32768, { each: true })
  args?: string[];

  @ApiPropertyOptional({ type: [EnvVarDto] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(256)
  @IsObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => EnvVarDto)
  envVars?: EnvVarDto[];

  @ApiPropertyOptional({ description: 'Exit 0 is true (onTrue), exit 1 false (onFalse), anything else an error' })
  @IsOptional()
  @IsBoolean()
  conditionNode?: boolean;
}

/** hub-interface §2.4b "Node". */
export class PipelineNodeDto {
  @ApiPropertyOptional({ example: 'extract', maxLength: 128, description: 'Unique within the pipeline; required to run' })
  @IsOptional()
  @IsString()
  @Matches(NODE_NAME, { message: NODE_NAME_RULE })
  name?: string;

  @ApiPropertyOptional({ type: ConnectionsDto })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => ConnectionsDto)
  connections?: ConnectionsDto;

  @ApiPropertyOptional({ type: NodeInputsDto })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => NodeInputsDto)
  inputs?: NodeInputsDto;

  @ApiPropertyOptional({ type: NodeOutputsDto })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => NodeOutputsDto)
  outputs?: NodeOutputsDto;

  @ApiPropertyOptional({ type: NodeTaskDto })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => NodeTaskDto)
  task?: NodeTaskDto;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Free-form; see docs/pipelines.md for the keys the engine reads' })
  @IsOptional()
  @IsObject()
  meta?: Record<string, unknown>;
}

/** hub-interface §2.4b "pipelineSpec": a DAG of nodes by their connections. */
export class PipelineSpecDto {
  @ApiPropertyOptional({ type: [PipelineNodeDto], maxItems: MAX_NODES })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(MAX_NODES)
  @IsObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => PipelineNodeDto)
  nodes?: PipelineNodeDto[];

  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  @IsOptional()
  @IsObject()
  meta?: Record<string, unknown>;

  @ApiPropertyOptional({ description: 'Nodes that do not depend on a failed node still run' })
  @IsOptional()
  @IsBoolean()
  keepGoing?: boolean;
}

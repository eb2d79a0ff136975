import { ApiHideProperty, ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { Type } from 'class-transformer';
import { Allow, IsIn, IsObject, IsOptional, IsString, IsUUID, MaxLength, MinLength, ValidateNested } from 'class-validator';
import { ListOf } from '../../common/http/list-envelope.js';
import { IsEntityName } from '../../common/validation/entity-name.js';
import { Nullable } from '../../common/validation/nullable.js';
import { ServerOwnedFields } from '../../common/validation/server-owned-fields.js';
import type { PipelineEntryRow } from '../pipeline-entries.repository.js';
import type { PipelineSpecShape } from '../pipeline-validation.js';
import { PipelineSpecDto } from './pipeline-spec.dto.js';

/** `pipelineEntityType` (hub-interface §2.4b). */
export const PIPELINE_ENTRY_TYPES = ['Pipeline', 'Folder'] as const;
export type PipelineEntryType = (typeof PIPELINE_ENTRY_TYPES)[number];

/** `pipelineFolderEntryEntityField`: what `fields` and `excludeFields` accept for entries. */
export const PIPELINE_ENTRY_FIELDS = ['_id', '_created', '_modified', '_type', 'name', 'folderId', 'folderPath'] as const;

/** What every entry body may carry but its name and namespace; `folderPath` is read back and ignored, like `_id`. */
abstract class PipelineEntryContentDto extends ServerOwnedFields {
  @Allow() @ApiHideProperty() folderPath?: unknown;

  @ApiPropertyOptional({
    enum: PIPELINE_ENTRY_TYPES,
    description: 'Pipeline when absent on create; absent on a replace keeps the current type. A change is 409.',
  })
  @IsOptional()
  @IsIn(PIPELINE_ENTRY_TYPES, { message: `_type must be one of ${PIPELINE_ENTRY_TYPES.join(', ')}` })
  _type?: PipelineEntryType;

  @ApiPropertyOptional({ format: 'uuid', description: 'The folder that holds the entry, in its namespace; absent (or null) at the top level' })
  @Nullable()
  @IsUUID('all', { message: 'folderId must be a folder id (a UUID)' })
  folderId?: string | null;

  @ApiPropertyOptional({ type: PipelineSpecDto, description: 'A pipeline only; it may break the rules of validate (a draft)' })
  @IsOptional()
  @IsObject({ message: 'spec must be an object {nodes, meta, keepGoing}' })
  @ValidateNested()
  @Type(() => PipelineSpecDto)
  spec?: PipelineSpecDto;
}

/** The body of a create or a replace (and what a patch must produce). */
export class PipelineEntryInputDto extends PipelineEntryContentDto {
  @ApiProperty({ example: 'nightly-etl', maxLength: 128, description: 'Unique within its folder and namespace, ignoring case' })
  @IsEntityName()
  name!: string;

  @ApiProperty({ example: 'default', description: "The namespace's name" })
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  namespace!: string;
}

/** The body of validate: an entry, whose name and namespace need not be given. */
export class PipelineEntryValidationInputDto extends PipelineEntryContentDto {
  @ApiPropertyOptional({ example: 'nightly-etl', maxLength: 128 })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  name?: string;

  @ApiPropertyOptional({ example: 'default', description: 'Where the caller is checked for Read on /Pipelines (in * when absent)' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  namespace?: string;
}

/** hub-interface §2.4b "Pipeline entry". */
export class PipelineEntryDto {
  @ApiProperty({ format: 'uuid' }) _id!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _created!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _modified!: string;
  @ApiProperty({ example: 'nightly-etl' }) name!: string;
  @ApiProperty({ example: 'default' }) namespace!: string;
  @ApiProperty({ enum: PIPELINE_ENTRY_TYPES }) _type!: PipelineEntryType;
  @ApiPropertyOptional({ format: 'uuid', description: 'Absent at the top level' }) folderId?: string;
  @ApiProperty({ example: '/reports/daily', description: 'The path of the folder that holds the entry: / at the top' }) folderPath!: string;
  @ApiPropertyOptional({ type: PipelineSpecDto, description: 'A pipeline only (absent when it was saved without one)' }) spec?: PipelineSpecShape;
}

export class PipelineEntryListDto extends ListOf(PipelineEntryDto) {}

/** The reply of validate: `[]` when the pipeline may run. */
export class PipelineValidationDto {
  @ApiProperty({ type: [String], example: ["Node 'load': onSuccess names 'report', which is no node of the pipeline"] })
  errors!: string[];
}

/** Absent values are `undefined`, which JSON leaves out. */
export function toPipelineEntryResponse(row: PipelineEntryRow): PipelineEntryDto {
  return {
    _id: row.id,
    _created: row.created,
    _modified: row.modified,
    name: row.name,
    namespace: row.namespaceName,
    _type: row.type,
    folderId: row.folderId ?? undefined,
    folderPath: row.folderPath,
    spec: row.spec ?? undefined,
  };
}

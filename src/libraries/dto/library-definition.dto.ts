import { IsIn, IsObject, IsString, MaxLength, MinLength } from 'class-validator';
import { ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { ListOf } from '../../common/http/list-envelope.js';
import { IsEntityName } from '../../common/validation/entity-name.js';
import { Nullable } from '../../common/validation/nullable.js';
import { ServerOwnedFields } from '../../common/validation/server-owned-fields.js';

/** The engines a library reads its datasets with (api-map §5). */
export const LIBRARY_ENGINES = ['csv', 'parquet', 'json', 'duckdb', 'sas7bdat', 'postgres'] as const;
export type LibraryEngine = (typeof LIBRARY_ENGINES)[number];

/** Engines whose path is a directory of member files (duckdb's is a database file; postgres has none). */
export const DIRECTORY_ENGINES: readonly LibraryEngine[] = ['csv', 'parquet', 'json', 'sas7bdat'];

/** The body of a create or a replace (and what a patch must produce). */
export class LibraryDefinitionInputDto extends ServerOwnedFields {
  @ApiProperty({ example: 'sales', maxLength: 128, description: 'Unique within its namespace' })
  @IsEntityName()
  name!: string;

  @ApiProperty({ example: 'default', description: 'The name of an existing namespace' })
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  namespace!: string;

  @ApiProperty({ enum: LIBRARY_ENGINES, example: 'parquet' })
  @IsIn(LIBRARY_ENGINES, { message: `engine must be one of ${LIBRARY_ENGINES.join(', ')}` })
  engine!: LibraryEngine;

  @ApiPropertyOptional({
    example: '/srv/hub/work/libraries/sales',
    maxLength: 4096,
    description:
      'Absolute, under one of HUB_LIBRARY_ROOTS once `..` and symbolic links are resolved (`<root>-x` is outside `<root>`). A directory of member files for csv, parquet, json and sas7bdat; a database file for duckdb; required for these, absent for postgres.',
  })
  @Nullable()
  @IsString()
  @MaxLength(4096)
  path?: string | null;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: { authDomainId: '0b0b5f2e-6f0e-4f7a-9b1a-2c5d0b9f4e11', schema: 'public' },
    description:
      'postgres: `authDomainId` (required) names an auth domain whose resolved credential (the publisher’s) holds the connection, sent to the workers by the hub, never in replies, logs or a job’s environment; `schema` (default public). Other engines: settings of their reader (strings, numbers, booleans), passed to the workers as they are.',
  })
  @Nullable()
  @IsObject({ message: 'options must be an object' })
  options?: Record<string, unknown> | null;
}

/** A library definition (api-map §5). */
export class LibraryDefinitionDto {
  @ApiProperty({ format: 'uuid' }) _id!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _created!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _modified!: string;
  @ApiProperty({ example: 'sales' }) name!: string;
  @ApiProperty({ example: 'default' }) namespace!: string;
  @ApiProperty({ enum: LIBRARY_ENGINES }) engine!: LibraryEngine;
  @ApiPropertyOptional({ example: '/srv/hub/work/libraries/sales', description: 'Absent for postgres' }) path?: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) options!: Record<string, unknown>;
}

export class LibraryDefinitionListDto extends ListOf(LibraryDefinitionDto) {}

/** A definition as the repository reads it: with its namespace's name. */
export interface LibraryDefinitionRow {
  readonly id: string;
  readonly namespaceId: string;
  readonly namespaceName: string;
  readonly name: string;
  readonly engine: LibraryEngine;
  readonly path: string | null;
  readonly options: Record<string, unknown>;
  readonly version: number;
  readonly created: Date;
  readonly modified: Date;
}

export function toLibraryDefinitionResponse(row: LibraryDefinitionRow): LibraryDefinitionDto {
  return {
    _id: row.id,
    _created: row.created.toISOString(),
    _modified: row.modified.toISOString(),
    name: row.name,
    namespace: row.namespaceName,
    engine: row.engine,
    ...(row.path !== null && { path: row.path }),
    options: row.options,
  };
}

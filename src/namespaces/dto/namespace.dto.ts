import { ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { IsBoolean, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { ListOf } from '../../common/http/list-envelope.js';
import { ServerOwnedFields } from '../../common/validation/server-owned-fields.js';
import type { Namespace } from '../entities/namespace.entity.js';
import { Nullable } from '../../common/validation/nullable.js';

export const NAMESPACE_NAME = /^[A-Za-z0-9_-]{1,64}$/;
export const NAMESPACE_FIELDS = ['_id', '_created', '_modified', 'name', 'description', 'isDefault'] as const;

/** The body of a create or a replace (and what a patch must produce). */
export class NamespaceInputDto extends ServerOwnedFields {
  @ApiProperty({ pattern: NAMESPACE_NAME.source, example: 'analytics', description: 'Unique, ignoring case' })
  @IsString()
  @Matches(NAMESPACE_NAME, { message: 'name must be 1-64 letters, digits, "_" or "-"' })
  name!: string;

  @ApiPropertyOptional({ maxLength: 1024, example: 'Reporting and dashboards' })
  @Nullable()
  @IsString()
  @MaxLength(1024)
  description?: string | null;

  @ApiPropertyOptional({ description: 'Make this the default namespace (the previous default stops being it); absent means false' })
  @IsOptional()
  @IsBoolean()
  isDefault?: boolean;
}

export class NamespaceDto {
  @ApiProperty({ format: 'uuid' }) _id!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _created!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _modified!: string;
  @ApiProperty({ example: 'analytics' }) name!: string;
  @ApiPropertyOptional({ example: 'Reporting and dashboards' }) description?: string;
  @ApiProperty() isDefault!: boolean;
}

export class NamespaceListDto extends ListOf(NamespaceDto) {}

/** Absent values are `undefined`, which JSON leaves out. */
/** A namespace as its list reads it: the times formatted by PostgreSQL (NamespacesRepository.list). */
export type NamespaceListRow = Pick<Namespace, 'id' | 'name' | 'description' | 'isDefault'> & { readonly created: string; readonly modified: string };

/** A list's item: as toNamespaceResponse, from a row whose times are ISO strings already. */
export function toNamespaceListItem(row: NamespaceListRow): NamespaceDto {
  return { _id: row.id, _created: row.created, _modified: row.modified, name: row.name, description: row.description ?? undefined, isDefault: row.isDefault };
}

export function toNamespaceResponse(namespace: Namespace): NamespaceDto {
  return {
    _id: namespace.id,
    _created: namespace.created.toISOString(),
    _modified: namespace.modified.toISOString(),
    name: namespace.name,
    description: namespace.description ?? undefined,
    isDefault: namespace.isDefault,
  };
}

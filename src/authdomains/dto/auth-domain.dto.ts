import { ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { IsBoolean, IsString, MaxLength, MinLength } from 'class-validator';
import { ListOf } from '../../common/http/list-envelope.js';
import { IsEntityName } from '../../common/validation/entity-name.js';
import { ServerOwnedFields } from '../../common/validation/server-owned-fields.js';
import { Nullable } from '../../common/validation/nullable.js';

/** The body of a create or a replace (and what a patch must produce). */
export class AuthDomainInputDto extends ServerOwnedFields {
  @ApiProperty({ example: 'Warehouse DB', maxLength: 128, description: 'Unique within its namespace, ignoring case' })
  @IsEntityName()
  name!: string;

  @ApiProperty({ example: 'default', description: 'The name of an existing namespace' })
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  namespace!: string;

  @ApiPropertyOptional({ maxLength: 1024, example: 'Credentials for the data warehouse' })
  @Nullable()
  @IsString()
  @MaxLength(1024)
  description?: string | null;

  @ApiPropertyOptional({ description: 'Users may store their own credentials in this domain; absent means false' })
  @Nullable()
  @IsBoolean()
  allowPersonalCredentials?: boolean | null;
}

/** hub-interface §2.5, as api-map §3 reads it: an auth domain. */
export class AuthDomainDto {
  @ApiProperty({ format: 'uuid' }) _id!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _created!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _modified!: string;
  @ApiProperty({ example: 'Warehouse DB' }) name!: string;
  @ApiProperty({ example: 'default' }) namespace!: string;
  @ApiPropertyOptional({ example: 'Credentials for the data warehouse' }) description?: string;
  @ApiProperty() allowPersonalCredentials!: boolean;
}

export class AuthDomainListDto extends ListOf(AuthDomainDto) {}

/** An auth domain as the repository reads it: with its namespace's name. */
export interface AuthDomainRow {
  readonly id: string;
  readonly namespaceId: string;
  readonly namespaceName: string;
  readonly name: string;
  readonly description: string | null;
  readonly allowPersonalCredentials: boolean;
  readonly version: number;
  readonly created: Date;
  readonly modified: Date;
}

/** Absent values are `undefined`, which JSON leaves out. */
export function toAuthDomainResponse(domain: AuthDomainRow): AuthDomainDto {
  return {
    _id: domain.id,
    _created: domain.created.toISOString(),
    _modified: domain.modified.toISOString(),
    name: domain.name,
    namespace: domain.namespaceName,
    description: domain.description ?? undefined,
    allowPersonalCredentials: domain.allowPersonalCredentials,
  };
}

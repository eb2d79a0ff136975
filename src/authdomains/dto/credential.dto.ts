import { ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { Type } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsObject, IsString, IsUUID, Max, MaxLength, Min, MinLength, ValidateNested } from 'class-validator';
import { ListOf } from '../../common/http/list-envelope.js';
import { IsStringMap } from '../../common/validation/is-string-map.js';
import { ServerOwnedFields } from '../../common/validation/server-owned-fields.js';
import { MAX_RANK, MIN_RANK, RANK_POSITIONS, type RankPosition } from '../credential-rank.js';
import { CREDENTIAL_TYPES, type CredentialType } from '../entities/credential.entity.js';
import { Nullable } from '../../common/validation/nullable.js';

const MAX_SAFE_RANK = Number(MAX_RANK);
const MIN_SAFE_RANK = Number(MIN_RANK);

/** hub-interface §2.6 `rankDefinition`: where to place a credential in its domain's order. */
export class RankDefinitionDto {
  @ApiPropertyOptional({
    enum: RANK_POSITIONS,
    description: 'High: first; Low: last; Mid: the middle; Above/Below: right before/after the credential in above/below; Between: strictly between the two',
  })
  @Nullable()
  @IsIn(RANK_POSITIONS, { message: `position must be one of ${RANK_POSITIONS.join(', ')}` })
  position?: RankPosition | null;

  @ApiPropertyOptional({ format: 'uuid', description: 'For Above and Between: the credential that stays better (ranks before)' })
  @Nullable()
  @IsUUID('all', { message: 'above must be a credential id (a UUID)' })
  above?: string | null;

  @ApiPropertyOptional({ format: 'uuid', description: 'For Below and Between: the credential that stays worse (ranks after)' })
  @Nullable()
  @IsUUID('all', { message: 'below must be a credential id (a UUID)' })
  below?: string | null;

  @ApiPropertyOptional({
    type: 'integer',
    format: 'int64',
    minimum: MIN_SAFE_RANK,
    maximum: MAX_SAFE_RANK,
    description: 'Without a position: the rank itself (lower is better); no other credential of the domain may hold it',
  })
  @Nullable()
  @IsInt({ message: 'value must be an integer' })
  @Min(MIN_SAFE_RANK)
  @Max(MAX_SAFE_RANK)
  value?: number | null;
}

/** The body of a create or a replace (and what a patch must produce). */
export class CredentialInputDto extends ServerOwnedFields {
  @ApiProperty({ format: 'uuid', description: 'The auth domain; it cannot change once the credential exists' })
  @IsUUID('all', { message: 'authDomainId must be an auth domain id (a UUID)' })
  authDomainId!: string;

  @ApiProperty({ format: 'uuid', description: 'The user or group id the credential belongs to' })
  @IsUUID('all', { message: 'principal must be a user or group id (a UUID)' })
  principal!: string;

  @ApiPropertyOptional({ description: 'A disabled credential is never resolved; absent means false' })
  @Nullable()
  @IsBoolean()
  disabled?: boolean | null;

  @ApiProperty({ example: 'Warehouse service account', maxLength: 256 })
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  label!: string;

  @ApiProperty({ enum: CREDENTIAL_TYPES, description: 'Internal: the hub keeps `data`, encrypted; Vault: the secret is at `vaultPath`' })
  @IsIn(CREDENTIAL_TYPES, { message: `type must be one of ${CREDENTIAL_TYPES.join(', ')}` })
  type!: CredentialType;

  @ApiPropertyOptional({ type: RankDefinitionDto, description: 'Where to place it; on create, absent means last (Low); on replace, absent keeps the rank' })
  @Nullable()
  @IsObject({ message: 'rank must be a rankDefinition object' })
  @ValidateNested()
  @Type(() => RankDefinitionDto)
  rank?: RankDefinitionDto | null;

  @ApiPropertyOptional({ example: 'secret/data/warehouse', maxLength: 1024, description: 'Required for, and only for, type Vault' })
  @Nullable()
  @IsString()
  @MinLength(1)
  @MaxLength(1024)
  vaultPath?: string | null;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string' },
    example: { username: 'etl', password: 's3cret' },
    description: 'For type Internal: the secret, encrypted at rest. Write-only but for its own principal: a replace without it keeps what is stored',
  })
  @Nullable()
  @IsStringMap({ maxEntries: 64, maxValueLength: 65536 })
  data?: Record<string, string> | null;
}

class CredentialFieldsDto {
  @ApiProperty({ format: 'uuid' }) _id!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _created!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _modified!: string;
  @ApiProperty({ format: 'uuid' }) authDomainId!: string;
  @ApiProperty({ format: 'uuid', description: 'A user or group id' }) principal!: string;
  @ApiProperty() disabled!: boolean;
  @ApiProperty({ example: 'Warehouse service account' }) label!: string;
  @ApiProperty({ enum: CREDENTIAL_TYPES }) type!: CredentialType;
  @ApiPropertyOptional({ example: 'secret/data/warehouse' }) vaultPath?: string;
}

/** A credential in a single-record reply: its rank as a rankDefinition; `data` only for its own principal and from resolve. */
export class CredentialDto extends CredentialFieldsDto {
  @ApiProperty({ type: RankDefinitionDto, example: { value: 16777216 } }) rank!: { value: number };
  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' } }) data?: Record<string, string>;
}

/** A credential in a list: its rank as an integer, never its data. */
export class CredentialListItemDto extends CredentialFieldsDto {
  @ApiProperty({ type: 'integer', format: 'int64', example: 16777216, description: 'Lower is better' }) rank!: number;
}

export class CredentialListDto extends ListOf(CredentialListItemDto) {
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, description: 'Auth domain id to name, for the domains on this page' })
  authDomains!: Record<string, string>;
}

/** A credential as the repository reads it, with its domain's name and namespace. */
export interface CredentialRow {
  readonly id: string;
  readonly authDomainId: string;
  readonly authDomainName: string;
  readonly namespaceId: string;
  readonly principalId: string;
  readonly disabled: boolean;
  readonly label: string;
  readonly type: CredentialType;
  readonly rank: string;
  readonly vaultPath: string | null;
  readonly sealedData: Buffer | null;
  readonly version: number;
  readonly created: Date;
  readonly modified: Date;
}

function fieldsOf(credential: CredentialRow): CredentialFieldsDto {
  return {
    _id: credential.id,
    _created: credential.created.toISOString(),
    _modified: credential.modified.toISOString(),
    authDomainId: credential.authDomainId,
    principal: credential.principalId,
    disabled: credential.disabled,
    label: credential.label,
    type: credential.type,
    vaultPath: credential.vaultPath ?? undefined,
  };
}

export function toCredentialListItem(credential: CredentialRow): CredentialListItemDto {
  return { ...fieldsOf(credential), rank: Number(credential.rank) };
}

/** `data` is given only where the caller may see it (its own credential, a resolve). */
export function toCredentialResponse(credential: CredentialRow, data?: Record<string, string>): CredentialDto {
  return { ...fieldsOf(credential), rank: { value: Number(credential.rank) }, ...(data && { data }) };
}

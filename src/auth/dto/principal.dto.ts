import { ApiProperty } from '../../common/http/openapi-decorators.js';
import { ListOf } from '../../common/http/list-envelope.js';
import { PRINCIPAL_TYPES, type PrincipalType } from './group.dto.js';

/** hub-interface §2.3: a user or a group, as one list shows both. */
export class PrincipalDto {
  @ApiProperty({ enum: PRINCIPAL_TYPES }) _type!: PrincipalType;
  @ApiProperty({ format: 'uuid' }) _id!: string;
  @ApiProperty({ description: "A user's displayName (its userName when it has none); a group's name", example: 'Ada Lovelace' })
  displayName!: string;
  @ApiProperty({ description: 'True when the principal has an externalId' }) external!: boolean;
}

export class PrincipalListDto extends ListOf(PrincipalDto) {}

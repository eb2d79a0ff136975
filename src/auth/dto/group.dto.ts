import { ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { IsBoolean, IsIn, IsOptional, IsString, IsUUID, MaxLength, MinLength } from 'class-validator';
import { IsEntityName } from '../../common/validation/entity-name.js';
import { ListOf } from '../../common/http/list-envelope.js';
import { ServerOwnedFields } from '../../common/validation/server-owned-fields.js';
import type { Group } from '../entities/group.entity.js';
import { Nullable } from '../../common/validation/nullable.js';

/** `groupField`: what `fields` and `excludeFields` accept for groups (hub-interface §2.2). */
export const GROUP_FIELDS = ['_id', '_created', '_modified', 'externalId', 'name'] as const;

export const MEMBERSHIP_TYPES = ['direct', 'indirect'] as const;
export type MembershipType = (typeof MEMBERSHIP_TYPES)[number];
export const PRINCIPAL_TYPES = ['User', 'Group'] as const;
export type PrincipalType = (typeof PRINCIPAL_TYPES)[number];
export const MEMBER_CHANGE_OPS = ['add', 'remove'] as const;

/** The body of a create or a replace (and what a patch must produce). */
export class GroupInputDto extends ServerOwnedFields {
  @ApiProperty({ example: 'Data Scientists', maxLength: 128, description: 'Unique, ignoring case' })
  @IsEntityName()
  name!: string;

  @ApiPropertyOptional({ maxLength: 256, description: 'Identity in an external directory; unique' })
  @Nullable()
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  externalId?: string | null;

  @ApiPropertyOptional({ description: 'Set by the hub; only false is accepted (or the current value on a replace)' })
  @Nullable()
  @IsBoolean()
  system?: boolean | null;
}

export class GroupDto {
  @ApiProperty({ format: 'uuid' }) _id!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _created!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _modified!: string;
  @ApiPropertyOptional() externalId?: string;
  @ApiProperty() system!: boolean;
  @ApiProperty({ example: 'Data Scientists' }) name!: string;
}

export class GroupListDto extends ListOf(GroupDto) {}

/** hub-interface §2.2 "Group member entry". */
export class GroupMemberDto {
  @ApiProperty({ enum: MEMBERSHIP_TYPES, description: 'direct, or indirect through member groups (direct wins when both)' })
  membershipType!: MembershipType;
  @ApiProperty({ enum: PRINCIPAL_TYPES }) principalType!: PrincipalType;
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ description: 'userName of a user, name of a group', example: 'ada' }) name!: string;
}

/** hub-interface §2.1 "User group membership entry". */
export class UserMembershipDto {
  @ApiProperty({ enum: MEMBERSHIP_TYPES }) membershipType!: MembershipType;
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ example: 'Data Scientists' }) name!: string;
}

/**
 * hub-interface §2.2 "Group member change item": a principal by `id`, or by `name` (a user name or
 * a group name) with `principalType`. When both are given they must name the same principal.
 */
export class GroupMemberChangeDto {
  @ApiProperty({ enum: MEMBER_CHANGE_OPS })
  @IsIn(MEMBER_CHANGE_OPS, { message: `op must be one of ${MEMBER_CHANGE_OPS.join(', ')}` })
  op!: (typeof MEMBER_CHANGE_OPS)[number];

  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID('all', { message: 'id must be a UUID' })
  id?: string;

  @ApiPropertyOptional({ enum: PRINCIPAL_TYPES, description: 'Required with name' })
  @IsOptional()
  @IsIn(PRINCIPAL_TYPES, { message: `principalType must be one of ${PRINCIPAL_TYPES.join(', ')}` })
  principalType?: PrincipalType;

  @ApiPropertyOptional({ example: 'ada' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  name?: string;
}

/** Absent values are `undefined`, which JSON leaves out. */
export function toGroupResponse(group: Group): GroupDto {
  return {
    _id: group.id,
    _created: group.created.toISOString(),
    _modified: group.modified.toISOString(),
    externalId: group.externalId ?? undefined,
    system: group.system,
    name: group.name,
  };
}

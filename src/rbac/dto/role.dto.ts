import { ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsIn, IsString, MaxLength, MinLength, ValidateNested, IsObject } from 'class-validator';
import { ACTIONS } from '../../common/http/route.decorator.js';
import { IsEntityName } from '../../common/validation/entity-name.js';
import { ListOf } from '../../common/http/list-envelope.js';
import { PlainServerOwnedFields } from '../../common/validation/server-owned-fields.js';
import type { PermissionValue, Role } from '../entities/role.entity.js';
import { OBJECT_MATCHERS } from '../object-matcher.js';
import { Nullable } from '../../common/validation/nullable.js';

export const EFFECTS = ['Allow', 'Deny'] as const;
/** The actions a permission may name: those of api-map §6, or `*` for all. */
export const PERMISSION_ACTIONS = [...ACTIONS, '*'] as const;
const MAX_PERMISSIONS = 500;

/** hub-interface §2.7b "Permission". */
export class PermissionDto {
  @ApiProperty({ example: '/Pipelines/*', description: 'An object path, or a pattern of them as objectMatcher says' })
  @IsString()
  @MinLength(1)
  @MaxLength(1024)
  object!: string;

  @ApiProperty({
    enum: OBJECT_MATCHERS,
    description: 'simple: exact, or ending in /* every path below; glob: * within a segment, ** across; regex: anchored',
  })
  @IsIn(OBJECT_MATCHERS, { message: `objectMatcher must be one of ${OBJECT_MATCHERS.join(', ')}` })
  objectMatcher!: (typeof OBJECT_MATCHERS)[number];

  @ApiProperty({ type: [String], enum: PERMISSION_ACTIONS, example: ['Read'] })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(PERMISSION_ACTIONS.length)
  @IsIn(PERMISSION_ACTIONS, { each: true, message: `each action must be one of ${PERMISSION_ACTIONS.join(', ')}` })
  actions!: string[];

  @ApiProperty({ enum: EFFECTS })
  @IsIn(EFFECTS, { message: `effect must be one of ${EFFECTS.join(', ')}` })
  effect!: (typeof EFFECTS)[number];
}

/** The body of a create or a replace (and what a patch must produce). */
export class RoleInputDto extends PlainServerOwnedFields {
  @ApiProperty({ example: 'Auditor', description: 'Unique, ignoring case' })
  @IsEntityName()
  name!: string;

  @ApiPropertyOptional({ maxLength: 1024 })
  @Nullable()
  @IsString()
  @MaxLength(1024)
  description?: string | null;

  @ApiPropertyOptional({ type: [PermissionDto] })
  @Nullable()
  @IsArray()
  @ArrayMaxSize(MAX_PERMISSIONS)
  @IsObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => PermissionDto)
  permissions?: PermissionDto[] | null;

  @ApiPropertyOptional({ description: 'Set by the hub: built-in roles are system roles; only false (or the current value) is accepted' })
  @Nullable()
  @IsBoolean()
  system?: boolean | null;
}

export class PermissionResponseDto {
  @ApiProperty() object!: string;
  @ApiProperty({ enum: OBJECT_MATCHERS }) objectMatcher!: string;
  @ApiProperty({ type: [String] }) actions!: string[];
  @ApiProperty({ enum: EFFECTS }) effect!: string;
}

/** hub-interface §2.7b "Role". */
export class RoleDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'date-time' }) created!: string;
  @ApiProperty({ format: 'date-time' }) modified!: string;
  @ApiProperty({ example: 'Auditor' }) name!: string;
  @ApiPropertyOptional() description?: string;
  @ApiProperty({ type: [PermissionResponseDto] }) permissions!: PermissionValue[];
  @ApiProperty() system!: boolean;
}

export class RoleListDto extends ListOf(RoleDto) {}

export function toPermissionValue(permission: PermissionDto): PermissionValue {
  return { object: permission.object, objectMatcher: permission.objectMatcher, actions: [...new Set(permission.actions)], effect: permission.effect };
}

/** Absent values are `undefined`, which JSON leaves out. */
export function toRoleResponse(role: Role): RoleDto {
  return {
    id: role.id,
    created: role.created.toISOString(),
    modified: role.modified.toISOString(),
    name: role.name,
    description: role.description ?? undefined,
    permissions: role.permissions,
    system: role.system,
  };
}

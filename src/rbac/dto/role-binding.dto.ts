import { ApiProperty } from '../../common/http/openapi-decorators.js';
import { IsString, IsUUID, Matches } from 'class-validator';
import { PlainServerOwnedFields } from '../../common/validation/server-owned-fields.js';
import type { PermissionValue } from '../entities/role.entity.js';

/** hub-interface §2.7b "Role binding", as a create takes it. */
export class RoleBindingInputDto extends PlainServerOwnedFields {
  @ApiProperty({ format: 'uuid', description: 'The role id' })
  @IsUUID('all', { message: 'role must be a role id (a UUID)' })
  role!: string;

  @ApiProperty({ format: 'uuid', description: 'The id of a user or a group' })
  @IsUUID('all', { message: 'principal must be a user or group id (a UUID)' })
  principal!: string;

  @ApiProperty({ example: 'analytics', description: 'A namespace name, or * for every namespace' })
  @IsString()
  @Matches(/^(\*|[A-Za-z0-9_-]{1,64})$/, { message: 'namespace must be a namespace name or *' })
  namespace!: string;
}

/** hub-interface §2.7b "Role binding". */
export class RoleBindingDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'date-time' }) created!: string;
  @ApiProperty({ format: 'uuid', description: 'The role id' }) role!: string;
  @ApiProperty({ format: 'uuid', description: 'The id of a user or a group' }) principal!: string;
  @ApiProperty({ example: 'analytics', description: 'A namespace name, or *' }) namespace!: string;
}

/** The role bindings list: `{data, totalCount, roles}`, `roles` naming the roles of the page. */
export class RoleBindingListDto {
  @ApiProperty({ type: [RoleBindingDto] }) data!: Partial<RoleBindingDto>[];
  @ApiProperty({ description: 'Number of bindings matching the filters, whatever the page' }) totalCount!: number;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, description: 'Role id to role name, for the roles on this page' })
  roles!: Record<string, string>;
}

export class DeletedCountDto {
  @ApiProperty({ description: 'How many bindings were deleted' }) count!: number;
}

/** A binding as the list reads it, with the names it sorts and reports by. */
export interface RoleBindingRow {
  readonly id: string;
  readonly created: Date;
  readonly role: string;
  readonly roleName: string;
  readonly permissions: PermissionValue[];
  readonly principal: string;
  readonly principalType: 'User' | 'Group';
  readonly principalName: string;
  /** Null: every namespace. */
  readonly namespaceId: string | null;
  /** A name, or `*`. */
  readonly namespace: string;
}

export function toRoleBindingResponse(row: RoleBindingRow): RoleBindingDto {
  return { id: row.id, created: row.created.toISOString(), role: row.role, principal: row.principal, namespace: row.namespace };
}

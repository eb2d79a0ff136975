import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { User } from '../entities/user.entity.js';

/** `userField`: what `fields` and `excludeFields` accept for users (hub-interface §2.1). */
export const USER_FIELDS = [
  '_id',
  '_created',
  '_modified',
  'externalId',
  'userName',
  'displayName',
  'active',
  'email',
  'unixHomeDirectory',
  'unixUserName',
  'userPrincipalName',
  'invitationPending',
] as const;

/** A user as the API shows it (hub-interface §2.1); the password never appears. */
export class UserDto {
  @ApiProperty({ format: 'uuid' }) _id!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _created!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.123Z' }) _modified!: string;
  @ApiPropertyOptional() externalId?: string;
  @ApiProperty() system!: boolean;
  @ApiProperty({ example: 'admin' }) userName!: string;
  @ApiPropertyOptional({ example: 'Administrator' }) displayName?: string;
  @ApiProperty() active!: boolean;
  @ApiPropertyOptional({ example: 'admin@example.com' }) email?: string;
  @ApiPropertyOptional() unixHomeDirectory?: string;
  @ApiPropertyOptional() unixUserName?: string;
  @ApiPropertyOptional() userPrincipalName?: string;
  @ApiProperty() invitationPending!: boolean;
  @ApiPropertyOptional({ format: 'date-time' }) invitationExpiry?: string;
}

/** Absent values are `undefined`, which JSON leaves out. */
export function toUserResponse(user: User): UserDto {
  return {
    _id: user.id,
    _created: user.created.toISOString(),
    _modified: user.modified.toISOString(),
    externalId: user.externalId ?? undefined,
    system: user.system,
    userName: user.userName,
    displayName: user.displayName ?? undefined,
    active: user.active,
    email: user.email ?? undefined,
    unixHomeDirectory: user.unixHomeDirectory ?? undefined,
    unixUserName: user.unixUserName ?? undefined,
    userPrincipalName: user.userPrincipalName ?? undefined,
    invitationPending: user.invitationPending,
    invitationExpiry: user.invitationExpiry?.toISOString(),
  };
}

import { ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { IsBoolean, IsEmail, IsString, Matches, MaxLength, MinLength, ValidateIf } from 'class-validator';
import { ListOf } from '../../common/http/list-envelope.js';
import { IsDateTime } from '../../common/validation/is-date-time.js';
import { ServerOwnedFields } from '../../common/validation/server-owned-fields.js';
import type { User } from '../entities/user.entity.js';
import { Nullable } from '../../common/validation/nullable.js';

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

export const USER_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;
export const USER_NAME_RULE = 'userName must be 1-128 letters, digits, ".", "_", "@" or "-", starting with a letter or digit';
const UNIX_USER_NAME = /^[a-z_][a-z0-9_.-]{0,31}$/;
const USER_PRINCIPAL_NAME = /^[^@\s]+@[^@\s]+$/;
const ABSOLUTE_PATH = /^\/[^\0]{0,4095}$/;

/**
 * The body of a create or a replace (and what a patch must produce). `password` sets a new
 * password (required on create unless an invitation is pending); `system` and
 * `invitationPending` may be sent back as read but not changed.
 */
export class UserInputDto extends ServerOwnedFields {
  @ApiProperty({ pattern: USER_NAME.source, example: 'ada', description: 'Unique, ignoring case' })
  @IsString()
  @Matches(USER_NAME, { message: USER_NAME_RULE })
  userName!: string;

  @ApiPropertyOptional({ maxLength: 256, example: 'Ada Lovelace' })
  @Nullable()
  @IsString()
  @MaxLength(256)
  displayName?: string | null;

  @ApiPropertyOptional({ example: 'ada@example.com' })
  @Nullable()
  @IsEmail({}, { message: 'email must be an e-mail address' })
  @MaxLength(320)
  email?: string | null;

  @ApiPropertyOptional({ description: 'Inactive users cannot log in; absent means true' })
  @Nullable()
  @IsBoolean()
  active?: boolean | null;

  @ApiPropertyOptional({ description: 'Set by the hub; only false is accepted (or the current value on a replace)' })
  @Nullable()
  @IsBoolean()
  system?: boolean | null;

  @ApiPropertyOptional({ maxLength: 256, description: 'Identity in an external directory; unique' })
  @Nullable()
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  externalId?: string | null;

  @ApiPropertyOptional({ example: '/home/ada' })
  @Nullable()
  @IsString()
  @Matches(ABSOLUTE_PATH, { message: 'unixHomeDirectory must be an absolute path' })
  unixHomeDirectory?: string | null;

  @ApiPropertyOptional({ pattern: UNIX_USER_NAME.source, example: 'ada' })
  @Nullable()
  @IsString()
  @Matches(UNIX_USER_NAME, { message: 'unixUserName must be a POSIX user name: a lower-case letter or "_", then up to 31 of a-z, 0-9, "_", "." or "-"' })
  unixUserName?: string | null;

  @ApiPropertyOptional({ example: 'ada@EXAMPLE.COM' })
  @Nullable()
  @IsString()
  @MaxLength(256)
  @Matches(USER_PRINCIPAL_NAME, { message: 'userPrincipalName must look like name@REALM' })
  userPrincipalName?: string | null;

  @ApiPropertyOptional({ description: 'On create: invite the user instead of setting a password. Cannot be changed later.' })
  @Nullable()
  @IsBoolean()
  invitationPending?: boolean | null;

  @ApiPropertyOptional({ format: 'date-time', description: 'When a pending invitation lapses; default 7 days after creation' })
  @Nullable()
  @IsDateTime()
  invitationExpiry?: string | null;

  @ApiPropertyOptional({ format: 'password', writeOnly: true, description: 'Required on create unless invitationPending; never returned' })
  @ValidateIf((_dto, value) => value !== undefined)
  @IsString()
  @MaxLength(1024)
  password?: string;
}

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

/** The reply to a create: with a pending invitation, its token, shown this once only. */
export class CreatedUserDto extends UserDto {
  @ApiPropertyOptional({ description: 'Only when invitationPending: the token for POST /api/v2/auth/accounts; never shown again' })
  invitationToken?: string;
}

export class UserListDto extends ListOf(UserDto) {}

/** hub-interface §2.1 "User unix details": what the cluster runs the user's work as. */
export class UnixDetailsDto {
  @ApiProperty({ description: 'The unix user name: unixUserName when set, else userName', example: 'ada' }) userName!: string;
  @ApiPropertyOptional({ example: 'ada@EXAMPLE.COM' }) userPrincipalName?: string;
  @ApiPropertyOptional({ example: '/home/ada' }) unixHomeDirectory?: string;
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

export function toUnixDetails(user: User): UnixDetailsDto {
  return {
    userName: user.unixUserName ?? user.userName,
    userPrincipalName: user.userPrincipalName ?? undefined,
    unixHomeDirectory: user.unixHomeDirectory ?? undefined,
  };
}

import { ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { IsNotEmpty, IsString, Matches, MaxLength, MinLength, ValidateIf } from 'class-validator';
import { USER_NAME, USER_NAME_RULE } from './user.dto.js';

/** hub-interface §2.4 "Token-bearing account body": accepts an invitation. */
export class AccountRequestDto {
  @ApiProperty({ description: 'The invitationToken returned when the user was created' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  token!: string;

  @ApiProperty({ example: 'Ada Lovelace', maxLength: 256 })
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  displayName!: string;

  @ApiProperty({ pattern: USER_NAME.source, example: 'ada', description: 'May differ from the invited name; unique, ignoring case' })
  @IsString()
  @Matches(USER_NAME, { message: USER_NAME_RULE })
  userName!: string;

  @ApiProperty({
    format: 'password',
    description: 'Required: the hub authenticates only the tokens it issues itself, so an account without a password could not log in',
  })
  @IsString()
  @MaxLength(1024)
  password!: string;

  @ApiPropertyOptional({
    description:
      "The `sub` of the user's tokens at an external identity provider, kept as the user's externalId (unique). Recorded for a provider integration; the hub does not accept external tokens yet.",
  })
  @ValidateIf((_dto, value) => value !== undefined)
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  jwtSubject?: string;
}

/** hub-interface §2.4 "Password change". */
export class PasswordChangeDto {
  @ApiProperty({ format: 'password' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(1024)
  currentPassword!: string;

  @ApiProperty({ format: 'password' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(1024)
  newPassword!: string;
}

/** hub-interface §2.4 "Claims response". */
export class ClaimsDto {
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: 'sub (user id), userName, groups (ids, transitive), iat, exp, iss',
    example: { sub: '1f0c6a1e-4b8e-4a5e-9a55-0d7f3c1c2b11', userName: 'ada', groups: [], iat: 1795300000, exp: 1795303600, iss: 'hub' },
  })
  claims!: Record<string, unknown>;
}

import { Body, Controller } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import { Origin, type RequestOrigin } from '../common/http/client-address.js';
import type { Versioned } from '../common/http/entity-tag.js';
import { MessageDto } from '../common/http/message.dto.js';
import { Route } from '../common/http/route.decorator.js';
import { ProjectionParams } from '../common/http/route-params.js';
import type { Projection } from '../common/query/projection.js';
import { VerifiedClaims } from './auth.guard.js';
import { AuthService } from './auth.service.js';
import { AccountRequestDto, ClaimsDto, PasswordChangeDto } from './dto/account.dto.js';
import { LoginRequestDto, LoginResponseDto } from './dto/login.dto.js';
import { USER_FIELDS, UserDto } from './dto/user.dto.js';
import { UsersService } from './users.service.js';

const LOCKED = 'Too many failed logins for this user name; try again later';
/** A valid token whose user was deleted since it was issued. */
const GONE = 'Your user record no longer exists';
const REVOKES = 'Every token issued to the user before, the one that made the change included, is revoked (401): log in again.';

@ApiTags('Authentication')
@Controller('api/v2/auth')
export class AuthController {
  constructor(
    private readonly auth: AuthService,
    private readonly users: UsersService,
  ) {}

  @Route({
    method: 'POST',
    path: 'login',
    summary: 'Log in',
    description:
      'Exchanges a user name and password for a bearer token valid for `expiresIn` seconds. After 5 failures for one user name within 15 minutes (configurable), the name is locked for 15 minutes; after 100 failures from one client address (HUB_LOGIN_MAX_FAILURES_PER_ADDRESS) within that window, the address is refused for the rest of it: both 429 with `Retry-After`. The client address is the peer, or the `X-Forwarded-For` entry a proxy listed in HUB_TRUSTED_PROXIES set.',
    access: { public: true },
    response: LoginResponseDto,
    errors: { 401: 'Invalid user name or password', 429: LOCKED },
  })
  login(@Body() body: LoginRequestDto, @Origin() origin: RequestOrigin): Promise<LoginResponseDto> {
    return this.auth.login(body, origin);
  }

  @Route({
    method: 'GET',
    path: 'me',
    summary: "Get the caller's user record",
    access: { self: true },
    response: UserDto,
    projection: USER_FIELDS,
    etag: true,
    errors: { 404: GONE },
  })
  getCurrentUser(@CurrentCaller() caller: Caller, @ProjectionParams() projection: Projection | undefined): Promise<Versioned<Partial<UserDto>>> {
    return this.users.getCurrent(caller, projection);
  }

  @Route({
    method: 'GET',
    path: 'claims',
    summary: "Get the caller's verified claims",
    description: 'The claims of the bearer token; for HTTP Basic, those a login would issue now, without `iat` and `exp`.',
    access: { self: true },
    response: ClaimsDto,
  })
  getClaims(@CurrentCaller() caller: Caller, @VerifiedClaims() claims: Record<string, unknown>): ClaimsDto {
    return this.auth.claims(caller, claims);
  }

  @Route({
    method: 'PUT',
    path: 'me/password',
    summary: "Change the caller's password",
    description: `A wrong \`currentPassword\` is a 400 and counts as a failed login for the lockout. ${REVOKES}`,
    access: { self: true },
    response: MessageDto,
    errors: { 404: GONE, 429: LOCKED },
  })
  changePassword(@CurrentCaller() caller: Caller, @Body() body: PasswordChangeDto, @Origin() origin: RequestOrigin): Promise<MessageDto> {
    return this.auth.changePassword(caller, body, origin);
  }

  @Route({
    method: 'POST',
    path: 'accounts',
    summary: 'Accept an invitation',
    description:
      'Completes an invited user with the `invitationToken` from its creation: sets the user name, display name and a password. A `jwtSubject`, when given, must equal the `externalId` an administrator set on the invited user (else 400): only an administrator links an external identity. A token works once; an expired or used one is 400.',
    access: { public: true },
    response: UserDto,
    errors: { 409: "A user named 'ada' already exists (names are compared ignoring case)" },
  })
  acceptInvitation(@Body() body: AccountRequestDto): Promise<UserDto> {
    return this.auth.acceptInvitation(body);
  }
}

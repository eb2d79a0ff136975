import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { Clock } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { InvalidInputError, NotFoundError, UnauthorizedError } from '../common/errors/hub-errors.js';
import type { Caller } from '../common/http/caller.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import { CallerCache } from './caller-cache.js';
import type { AccountRequestDto, ClaimsDto, PasswordChangeDto } from './dto/account.dto.js';
import type { LoginRequestDto, LoginResponseDto } from './dto/login.dto.js';
import { toUserResponse, type UserDto } from './dto/user.dto.js';
import type { User } from './entities/user.entity.js';
import { invitationTokenHash } from './invitation-token.js';
import { GroupsRepository } from './groups.repository.js';
import { LoginThrottle } from './login-throttle.js';
import { PasswordHasher } from './password-hasher.js';
import { PasswordPolicy } from './password-policy.js';
import { UsersRepository } from './users.repository.js';

export const TOKEN_ISSUER = 'hub';

/** What the hub puts in its tokens besides `iat`, `exp` and `iss`. */
interface TokenClaims {
  readonly sub: string;
  readonly userName: string;
  /** Ids of the user's groups, direct or not, when the token was issued. */
  readonly groups: readonly string[];
}

/** Who makes a request, and the claims they proved it with. */
export interface Authentication {
  readonly caller: Caller;
  readonly claims: Record<string, unknown>;
}

const AUTHORIZATION = /^(\S+)\s+(\S+)\s*$/;

function canLogIn(user: User): boolean {
  return user.active && !user.invitationPending && user.passwordHash !== null;
}

@Injectable()
export class AuthService {
  constructor(
    private readonly users: UsersRepository,
    private readonly groups: GroupsRepository,
    private readonly hasher: PasswordHasher,
    private readonly policy: PasswordPolicy,
    private readonly throttle: LoginThrottle,
    private readonly callers: CallerCache,
    private readonly jwt: JwtService,
    private readonly config: HubConfig,
    private readonly clock: Clock,
  ) {}

  async login(request: LoginRequestDto): Promise<LoginResponseDto> {
    const user = await this.verifyCredentials(request.username, request.password);
    const claims: TokenClaims = { sub: user.id, userName: user.userName, groups: await this.groups.effectiveGroupIds(user.id) };
    return { token: await this.jwt.signAsync(claims), expiresIn: this.config.tokenTtlSeconds };
  }

  /** Identifies the caller from an `Authorization` header: a bearer JWT, or Basic checked like a login. */
  async authenticate(authorization: string | undefined): Promise<Authentication> {
    if (!authorization) throw new UnauthorizedError('A bearer token or HTTP Basic credentials are required');
    const [, scheme = '', credentials = ''] = AUTHORIZATION.exec(authorization) ?? [];
    switch (scheme.toLowerCase()) {
      case 'bearer':
        return this.authenticateBearer(credentials);
      case 'basic':
        return this.authenticateBasic(credentials);
      default:
        throw new UnauthorizedError('The Authorization header must be "Bearer <token>" or "Basic <credentials>"');
    }
  }

  /**
   * The verified claims of the caller's token. A caller using HTTP Basic has no token: it gets
   * the claims a login would put in one now, without `iat` and `exp`.
   */
  claims(_caller: Caller, claims: Record<string, unknown>): ClaimsDto {
    return { claims };
  }

  /** Changes the caller's password; a wrong current password counts as a failed login. */
  async changePassword(caller: Caller, change: PasswordChangeDto): Promise<MessageDto> {
    const user = await this.throttle.throttled(caller.userName, async () => {
      const current = await this.users.findById(caller.userId);
      if (!current) throw new NotFoundError('Your user record no longer exists');
      return (await this.hasher.verify(current.passwordHash, change.currentPassword)) ? current : null;
    });
    if (!user) throw InvalidInputError.at('/currentPassword', 'currentPassword is not your current password');
    this.policy.check(change.newPassword, user.userName, '/newPassword');
    const passwordHash = await this.hasher.hash(change.newPassword);
    await this.users.update(user.id, () => ({ passwordHash }));
    return message('Password changed');
  }

  /**
   * Completes an invited account (`POST /auth/accounts`): the token must belong to a pending,
   * unexpired invitation, and works once. The invitee chooses their user name, display name and
   * password, and may link an external identity (`jwtSubject`, kept as `externalId`).
   */
  async acceptInvitation(request: AccountRequestDto): Promise<UserDto> {
    this.policy.check(request.password, request.userName, '/password');
    const passwordHash = await this.hasher.hash(request.password);
    const accepted = await this.users.acceptInvitation(invitationTokenHash(request.token), (invited) => {
      if (!invited.invitationPending) throw invalidToken();
      if (invited.invitationExpiry && invited.invitationExpiry.getTime() <= this.clock.now().getTime())
        throw InvalidInputError.at('/token', 'This invitation has expired; ask for a new one');
      return {
        userName: request.userName,
        displayName: request.displayName,
        externalId: request.jwtSubject ?? invited.externalId,
        passwordHash,
        invitationPending: false,
        invitationExpiry: null,
      };
    });
    if (!accepted) throw invalidToken();
    this.callers.forget(accepted.id);
    return toUserResponse(accepted);
  }

  private async authenticateBearer(token: string): Promise<Authentication> {
    let claims: TokenClaims & Record<string, unknown>;
    try {
      claims = await this.jwt.verifyAsync<TokenClaims & Record<string, unknown>>(token);
    } catch {
      throw new UnauthorizedError('The bearer token is invalid or has expired; log in again');
    }
    // A token without an expiry would be good forever: the hub issues none, so none is accepted.
    if (typeof claims.exp !== 'number') throw new UnauthorizedError('The bearer token has no expiry (exp); log in again');
    const caller = await this.callers.get(claims.sub, (id) => this.loadCaller(id));
    if (!caller) throw new UnauthorizedError("The bearer token's user no longer exists or is inactive");
    return { caller, claims };
  }

  private async authenticateBasic(encoded: string): Promise<Authentication> {
    const decoded = Buffer.from(encoded, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new UnauthorizedError('Basic credentials must be base64 of "<user name>:<password>"');
    if (decoded.includes('\0')) throw new UnauthorizedError('Invalid user name or password');
    const user = await this.verifyCredentials(decoded.slice(0, colon), decoded.slice(colon + 1));
    const caller: Caller = { userId: user.id, userName: user.userName, groups: await this.groups.effectiveGroupIds(user.id) };
    return { caller, claims: { sub: caller.userId, userName: caller.userName, groups: caller.groups, iss: TOKEN_ISSUER } };
  }

  private async loadCaller(id: string): Promise<Caller | null> {
    const user = await this.users.findById(id);
    if (!user || !canLogIn(user)) return null;
    return { userId: user.id, userName: user.userName, groups: await this.groups.effectiveGroupIds(user.id) };
  }

  /** Checks a user name and password, throttled per name; unknown names and wrong passwords look alike. */
  private async verifyCredentials(userName: string, password: string): Promise<User> {
    const user = await this.throttle.throttled(userName, async () => {
      const found = await this.users.findByUserName(userName);
      const valid = await this.hasher.verify(found?.passwordHash ?? null, password);
      return found && valid && canLogIn(found) ? found : null;
    });
    if (!user) throw new UnauthorizedError('Invalid user name or password');
    return user;
  }
}

function invalidToken(): InvalidInputError {
  return InvalidInputError.at('/token', 'The invitation token is not valid or has already been used');
}

import type { BlockList } from 'node:net';
import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import type { Logger } from 'pino';
import { Clock } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { InvalidInputError, NotFoundError, UnauthorizedError } from '../common/errors/hub-errors.js';
import type { Caller } from '../common/http/caller.js';
import { clientAddress, trustedProxies, type RequestOrigin } from '../common/http/client-address.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import { HubLogger } from '../common/logging/hub-logger.js';
import { CallerCache, type AuthenticatedUser } from './caller-cache.js';
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
  /** The user's token version when the token was issued: a later password change, reset or deactivation revokes the token. */
  readonly tokenVersion: number;
}

/** A verified token's claims: `exp` is checked to be a number before they are kept. */
type VerifiedClaims = TokenClaims & Record<string, unknown> & { readonly exp: number };

/** How many verified bearer tokens are kept (AuthService.rememberVerified): a hub's active sessions, and more. */
const VERIFIED_TOKENS = 10_000;

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
  private readonly proxies: BlockList;
  private readonly logger: Logger;
  /** Whether the warning about an X-Forwarded-For the hub does not trust was logged (once per process). */
  private warnedOfUntrustedProxy = false;
  /** Bearer tokens verified lately (rememberVerified). */
  private readonly verifiedTokens = new Map<string, VerifiedClaims>();

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
    logger: HubLogger,
  ) {
    this.proxies = trustedProxies(config.trustedProxies);
    this.logger = logger.for('auth');
  }

  async login(request: LoginRequestDto, origin: RequestOrigin): Promise<LoginResponseDto> {
    const user = await this.verifyCredentials(request.username, request.password, origin);
    const claims: TokenClaims = {
      sub: user.id,
      userName: user.userName,
      groups: await this.groups.effectiveGroupIds(user.id),
      tokenVersion: user.tokenVersion,
    };
    return { token: await this.jwt.signAsync(claims), expiresIn: this.config.tokenTtlSeconds };
  }

  /** Identifies the caller from an `Authorization` header: a bearer JWT, or Basic checked like a login (throttled by `origin`'s client address too). */
  async authenticate(authorization: string | undefined, origin: RequestOrigin): Promise<Authentication> {
    if (!authorization) throw new UnauthorizedError('A bearer token or HTTP Basic credentials are required');
    const [, scheme = '', credentials = ''] = AUTHORIZATION.exec(authorization) ?? [];
    switch (scheme.toLowerCase()) {
      case 'bearer':
        return this.authenticateBearer(credentials);
      case 'basic':
        return this.authenticateBasic(credentials, origin);
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

  /**
   * Changes the caller's password; a wrong current password counts as a failed login. Every token
   * issued before, the one that made the change included, stops working.
   */
  async changePassword(caller: Caller, change: PasswordChangeDto, origin: RequestOrigin): Promise<MessageDto> {
    const user = await this.throttle.throttled(caller.userName, this.addressOf(origin), async () => {
      const current = await this.users.findById(caller.userId);
      if (!current) throw new NotFoundError('Your user record no longer exists');
      return (await this.hasher.verify(current.passwordHash, change.currentPassword)) ? current : null;
    });
    if (!user) throw InvalidInputError.at('/currentPassword', 'currentPassword is not your current password');
    this.policy.check(change.newPassword, user.userName, '/newPassword');
    const passwordHash = await this.hasher.hash(change.newPassword);
    await this.users.update(user.id, (current) => ({ passwordHash, tokenVersion: current.tokenVersion + 1 }));
    this.callers.forget(user.id);
    return message('Password changed; log in again: every token issued before is revoked');
  }

  /**
   * Completes an invited account (`POST /auth/accounts`): the token must belong to a pending,
   * unexpired invitation, and works once. The invitee chooses their user name, display name and
   * password. Only an administrator links an external identity (`externalId`): a `jwtSubject`
   * must be the one the administrator set on the invited user.
   */
  async acceptInvitation(request: AccountRequestDto): Promise<UserDto> {
    this.policy.check(request.password, request.userName, '/password');
    const passwordHash = await this.hasher.hash(request.password);
    const accepted = await this.users.acceptInvitation(invitationTokenHash(request.token), (invited) => {
      if (!invited.invitationPending) throw invalidToken();
      if (invited.invitationExpiry && invited.invitationExpiry.getTime() <= this.clock.now().getTime())
        throw InvalidInputError.at('/token', 'This invitation has expired; ask for a new one');
      if (request.jwtSubject !== undefined && request.jwtSubject !== invited.externalId)
        throw InvalidInputError.at('/jwtSubject', 'jwtSubject must be the externalId an administrator set on your invitation; only an administrator sets it');
      return {
        userName: request.userName,
        displayName: request.displayName,
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
    let claims = this.verifiedTokens.get(token);
    // Expired as jsonwebtoken decides (its clock, not the hub's): from the second of `exp` on.
    if (!claims || Math.floor(Date.now() / 1000) >= claims.exp) {
      try {
        claims = await this.jwt.verifyAsync<VerifiedClaims>(token);
      } catch {
        throw new UnauthorizedError('The bearer token is invalid or has expired; log in again');
      }
      // A token without an expiry would be good forever: the hub issues none, so none is accepted.
      if (typeof claims.exp !== 'number') throw new UnauthorizedError('The bearer token has no expiry (exp); log in again');
      this.rememberVerified(token, Object.freeze(claims));
    }
    const authenticated = await this.callers.get(claims.sub, (id) => this.loadCaller(id));
    if (!authenticated) throw new UnauthorizedError("The bearer token's user no longer exists or is inactive");
    if (claims.tokenVersion !== authenticated.tokenVersion)
      throw new UnauthorizedError('The bearer token was revoked (a password change, reset or deactivation); log in again');
    return { caller: authenticated.caller, claims };
  }

  /**
   * Keeps a verified token's claims for its next requests: its signature and issuer cannot change,
   * so only its expiry is checked again (and its token version against the user's, as for any).
   * Verifying it cost 4 % of the hub's CPU on a list request. The oldest is dropped past
   * VERIFIED_TOKENS, so that a flood of valid tokens holds a bounded memory.
   */
  private rememberVerified(token: string, claims: VerifiedClaims): void {
    if (this.verifiedTokens.size >= VERIFIED_TOKENS) this.verifiedTokens.delete(this.verifiedTokens.keys().next().value as string);
    this.verifiedTokens.set(token, claims);
  }

  private async authenticateBasic(encoded: string, origin: RequestOrigin): Promise<Authentication> {
    const decoded = Buffer.from(encoded, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new UnauthorizedError('Basic credentials must be base64 of "<user name>:<password>"');
    if (decoded.includes('\0')) throw new UnauthorizedError('Invalid user name or password');
    const user = await this.verifyCredentials(decoded.slice(0, colon), decoded.slice(colon + 1), origin);
    const caller: Caller = { userId: user.id, userName: user.userName, groups: await this.groups.effectiveGroupIds(user.id) };
    return { caller, claims: { sub: caller.userId, userName: caller.userName, groups: caller.groups, iss: TOKEN_ISSUER } };
  }

  private async loadCaller(id: string): Promise<AuthenticatedUser | null> {
    const user = await this.users.findById(id);
    if (!user || !canLogIn(user)) return null;
    return { caller: { userId: user.id, userName: user.userName, groups: await this.groups.effectiveGroupIds(user.id) }, tokenVersion: user.tokenVersion };
  }

  private addressOf(origin: RequestOrigin): string {
    const address = clientAddress(origin, this.proxies);
    // A proxy the hub does not trust makes every client behind it one address: their failures add
    // up, and none of them is ever familiar on its own (docs/identity.md).
    if (origin.forwardedFor && address === origin.peer && !this.warnedOfUntrustedProxy) {
      this.warnedOfUntrustedProxy = true;
      this.logger.warn(
        `A login came from ${origin.peer} with an X-Forwarded-For header, and HUB_TRUSTED_PROXIES does not list ${origin.peer}: the hub takes ${origin.peer} as the client's address, so login limits and familiar addresses count every client behind it as one. If the hub is behind a proxy at ${origin.peer}, add it to HUB_TRUSTED_PROXIES (logged once)`,
      );
    }
    return address;
  }

  /** Checks a user name and password, throttled per name and per client address; unknown names and wrong passwords look alike. */
  private async verifyCredentials(userName: string, password: string, origin: RequestOrigin): Promise<User> {
    const user = await this.throttle.throttled(userName, this.addressOf(origin), async () => {
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

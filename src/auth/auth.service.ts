import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { HubConfig } from '../common/config/hub-config.js';
import { ChangeFeed, RowCache } from '../common/database/change-feed.js';
import { NotFoundError, UnauthorizedError } from '../common/errors/hub-errors.js';
import type { Caller } from '../common/http/caller.js';
import { Versioned } from '../common/http/entity-tag.js';
import { applyProjection, type Projection } from '../common/query/projection.js';
import type { LoginRequestDto, LoginResponseDto } from './dto/login.dto.js';
import { toUserResponse, type UserDto } from './dto/user.dto.js';
import type { User } from './entities/user.entity.js';
import { PasswordHasher } from './password-hasher.js';
import { UsersRepository } from './users.repository.js';

/** What the hub puts in its tokens besides `iat`, `exp` and `iss`. */
interface TokenClaims {
  readonly sub: string;
  readonly userName: string;
  readonly groups: readonly string[];
}

const AUTHORIZATION = /^(\S+)\s+(\S+)\s*$/;

function canLogIn(user: User): boolean {
  return user.active && !user.invitationPending && user.passwordHash !== null;
}

function toCaller(user: User): Caller {
  return { userId: user.id, userName: user.userName, groups: [] };
}

@Injectable()
export class AuthService {
  /** Who a token's subject is, checked on every request without a query per request. */
  private readonly callers: RowCache<Caller>;

  constructor(
    private readonly users: UsersRepository,
    private readonly hasher: PasswordHasher,
    private readonly jwt: JwtService,
    private readonly config: HubConfig,
    changes: ChangeFeed,
  ) {
    this.callers = new RowCache(changes, 'users');
  }

  async login(request: LoginRequestDto): Promise<LoginResponseDto> {
    const user = await this.verifyCredentials(request.username, request.password);
    const claims: TokenClaims = { sub: user.id, userName: user.userName, groups: [] };
    return { token: await this.jwt.signAsync(claims), expiresIn: this.config.tokenTtlSeconds };
  }

  /** Identifies the caller from an `Authorization` header: a bearer JWT, or Basic checked like a login. */
  async authenticate(authorization: string | undefined): Promise<Caller> {
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

  async getCurrentUser(caller: Caller, projection: Projection | undefined): Promise<Versioned<Partial<UserDto>>> {
    const user = await this.users.findById(caller.userId);
    if (!user) throw new NotFoundError('Your user record no longer exists');
    return new Versioned(applyProjection(toUserResponse(user), projection), user.version);
  }

  private async authenticateBearer(token: string): Promise<Caller> {
    let claims: TokenClaims;
    try {
      claims = await this.jwt.verifyAsync<TokenClaims & object>(token);
    } catch {
      throw new UnauthorizedError('The bearer token is invalid or has expired; log in again');
    }
    const caller = await this.callers.get(claims.sub, async (id) => {
      const user = await this.users.findById(id);
      return user && canLogIn(user) ? toCaller(user) : null;
    });
    if (!caller) throw new UnauthorizedError("The bearer token's user no longer exists or is inactive");
    return caller;
  }

  private async authenticateBasic(encoded: string): Promise<Caller> {
    const decoded = Buffer.from(encoded, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new UnauthorizedError('Basic credentials must be base64 of "<user name>:<password>"');
    if (decoded.includes('\0')) throw new UnauthorizedError('Invalid user name or password');
    return toCaller(await this.verifyCredentials(decoded.slice(0, colon), decoded.slice(colon + 1)));
  }

  private async verifyCredentials(userName: string, password: string): Promise<User> {
    const user = await this.users.findByUserName(userName);
    const valid = await this.hasher.verify(user?.passwordHash ?? null, password);
    if (!user || !valid || !canLogIn(user)) throw new UnauthorizedError('Invalid user name or password');
    return user;
  }
}

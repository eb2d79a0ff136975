import { Body, Controller } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import type { Versioned } from '../common/http/entity-tag.js';
import { Route } from '../common/http/route.decorator.js';
import { ProjectionParams } from '../common/http/route-params.js';
import type { Projection } from '../common/query/projection.js';
import { AuthService } from './auth.service.js';
import { LoginRequestDto, LoginResponseDto } from './dto/login.dto.js';
import { USER_FIELDS, UserDto } from './dto/user.dto.js';

@ApiTags('Authentication')
@Controller('api/v2/auth')
export class AuthController {
  constructor(private readonly auth: AuthService) {}

  @Route({
    method: 'POST',
    path: 'login',
    summary: 'Log in',
    description: 'Exchanges a user name and password for a bearer token valid for `expiresIn` seconds.',
    access: { public: true },
    response: LoginResponseDto,
    errors: { 401: 'Invalid user name or password' },
  })
  login(@Body() body: LoginRequestDto): Promise<LoginResponseDto> {
    return this.auth.login(body);
  }

  @Route({
    method: 'GET',
    path: 'me',
    summary: "Get the caller's user record",
    access: { self: true },
    response: UserDto,
    projection: USER_FIELDS,
    etag: true,
  })
  getCurrentUser(@CurrentCaller() caller: Caller, @ProjectionParams() projection: Projection | undefined): Promise<Versioned<Partial<UserDto>>> {
    return this.auth.getCurrentUser(caller, projection);
  }
}

import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { routeOptionsOf } from '../common/http/route.decorator.js';
import { AuthService } from './auth.service.js';

/** Every route needs an authenticated caller unless its `@Route` says `public`. */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(private readonly auth: AuthService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const options = routeOptionsOf(context);
    if (options && 'public' in options.access) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    request.caller = await this.auth.authenticate(request.headers.authorization);
    return true;
  }
}

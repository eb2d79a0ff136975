import { createParamDecorator, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { originOf } from '../common/http/client-address.js';
import { routeOptionsOf } from '../common/http/route.decorator.js';
import { AuthService } from './auth.service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The claims the caller authenticated with (see {@link AuthService.claims}). */
    claims?: Record<string, unknown>;
  }
}

/** Every route needs an authenticated caller unless its `@Route` says `public`. */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(private readonly auth: AuthService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const options = routeOptionsOf(context);
    if (options && 'public' in options.access) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const { caller, claims } = await this.auth.authenticate(request.headers.authorization, originOf(request));
    request.caller = caller;
    request.claims = claims;
    return true;
  }
}

/** The verified claims of the request's credentials. */
export const VerifiedClaims = createParamDecorator((_data: unknown, context: ExecutionContext): Record<string, unknown> => {
  return context.switchToHttp().getRequest<FastifyRequest>().claims ?? {};
});

import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { UnauthorizedError } from '../errors/hub-errors.js';

/** The authenticated user a request acts for; every service method takes it first. */
export interface Caller {
  readonly userId: string;
  readonly userName: string;
  /** Ids of the groups the user belongs to, directly or not. */
  readonly groups: readonly string[];
}

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
  }
}

/** The caller the authentication guard attached to the request. */
export const CurrentCaller = createParamDecorator((_data: unknown, context: ExecutionContext): Caller => {
  const caller = context.switchToHttp().getRequest<FastifyRequest>().caller;
  if (!caller) throw new UnauthorizedError('This operation needs an authenticated caller');
  return caller;
});

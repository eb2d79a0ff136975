import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { HubConfig } from '../common/config/hub-config.js';
import type { Caller } from '../common/http/caller.js';
import type { Viewer } from './link-sessions.service.js';

/** The hub's address as the client reached it: HUB_PUBLIC_URL when set, else the request's protocol and Host. */
export function baseUrlOf(request: FastifyRequest, config: Pick<HubConfig, 'publicUrl'>): string {
  return config.publicUrl ?? `${request.protocol}://${request.host}`;
}

/** The request's caller and the base of the absolute URLs its replies carry (see baseUrlOf); the controller adds the setting. */
export const RequestBase = createParamDecorator((_data: unknown, context: ExecutionContext): FastifyRequest =>
  context.switchToHttp().getRequest<FastifyRequest>(),
);

export function viewerOf(caller: Caller, request: FastifyRequest, config: Pick<HubConfig, 'publicUrl'>): Viewer {
  return { caller, base: baseUrlOf(request, config) };
}

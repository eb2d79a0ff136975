import { applyDecorators, createParamDecorator, Injectable, type ExecutionContext, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sendProblem } from '../common/errors/problem.filter.js';
import { ApiHeader } from '../common/http/openapi-decorators.js';

/** The versions of the published library datasets interface (hub-interface §9), the default first. */
export const INTERFACE_VERSIONS = ['2026.0.0', '2.3.0.461'] as const;
export type InterfaceVersion = (typeof INTERFACE_VERSIONS)[number];
export const CURRENT_VERSION: InterfaceVersion = '2026.0.0';
/** The version whose differences hub-interface §9 lists. */
export const LEGACY_VERSION: InterfaceVersion = '2.3.0.461';

/** Where the versioned interface lives: every reply below it names the version served. */
const VERSIONED_PREFIX = '/api/v2/libraries/published';

declare module 'fastify' {
  interface FastifyRequest {
    /** The interface version a request under /libraries/published selected (Accept-Version). */
    libraryVersion?: InterfaceVersion;
  }
}

function versioned(url: string): boolean {
  if (!url.startsWith(VERSIONED_PREFIX)) return false;
  const next = url.charAt(VERSIONED_PREFIX.length);
  return next === '' || next === '/' || next === '?';
}

/**
 * Reads `Accept-Version` on every request under /libraries/published before anything else (so a
 * refusal of any kind, 401 and 403 included, still names the version in `Content-Version`): absent
 * or empty is 2026.0.0; one the hub does not serve is a 400 before authentication, in 2026.0.0's terms.
 */
@Injectable()
export class LibraryVersions implements OnModuleInit {
  constructor(private readonly adapter: HttpAdapterHost) {}

  onModuleInit(): void {
    const fastify = this.adapter.httpAdapter.getInstance<FastifyInstance>();
    fastify.addHook('onRequest', (request, reply, done) => {
      if (!versioned(request.url)) return done();
      const asked = request.headers['accept-version'];
      const given = (Array.isArray(asked) ? asked.join(',') : (asked ?? '')).trim();
      const version = given === '' ? CURRENT_VERSION : INTERFACE_VERSIONS.find((known) => known === given);
      void reply.header('content-version', version ?? CURRENT_VERSION);
      if (!version) {
        sendProblem(reply, request.id, {
          status: 400,
          detail: `Accept-Version '${given.slice(0, 64)}' is not served: ${INTERFACE_VERSIONS.join(' (default) or ')}`,
          errors: [{ path: 'Accept-Version', message: `must be ${INTERFACE_VERSIONS.join(' or ')}` }],
        });
        return;
      }
      request.libraryVersion = version;
      done();
    });
  }
}

/** The interface version the request selected. */
export const AcceptedVersion = createParamDecorator(
  (_data: unknown, context: ExecutionContext): InterfaceVersion => context.switchToHttp().getRequest<FastifyRequest>().libraryVersion ?? CURRENT_VERSION,
);

/** The `Accept-Version` header of a versioned operation, in its OpenAPI description. */
export function VersionedOperation(): MethodDecorator {
  return applyDecorators(
    ApiHeader({
      name: 'Accept-Version',
      required: false,
      schema: { type: 'string', enum: [...INTERFACE_VERSIONS], default: CURRENT_VERSION },
      description:
        'The interface version: 2026.0.0 (default) or 2.3.0.461 (hub-interface §9); any other is a 400. The reply names the version served in Content-Version.',
    }),
  );
}

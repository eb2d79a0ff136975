import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';

/**
 * The namespaces a list is narrowed to (api-map §6): all of them but some (the caller may read
 * in `*`), or only some. Ids; entities of `*` (a null namespace) are in scope only with `all`.
 */
export type NamespaceScope = { readonly all: true; readonly except: readonly string[] } | { readonly all: false; readonly only: readonly string[] };

/** What the access guard decided for a request, beyond letting it through. */
export interface RequestAccess {
  /** Allowed only because the caller acts on themself; the service limits what they may change. */
  readonly asSelf: boolean;
  /** For a `namespaced` list: the namespaces its items may come from. */
  readonly scope?: NamespaceScope;
}

declare module 'fastify' {
  interface FastifyRequest {
    access?: RequestAccess;
  }
}

function accessOf(context: ExecutionContext): RequestAccess {
  const access = context.switchToHttp().getRequest<FastifyRequest>().access;
  // Every route but public and self-only ones passes the access guard, which sets this.
  if (!access) throw new Error('No access decision for this request: is the route declared with a permission?');
  return access;
}

/** The namespace scope of a `namespaced` list route. */
export const ListScope = createParamDecorator((_data: unknown, context: ExecutionContext): NamespaceScope => {
  const scope = accessOf(context).scope;
  if (!scope) throw new Error('@ListScope() needs a route declared with `namespaced: true`');
  return scope;
});

/** True when the caller was let through only as themself (a route declared with `self`). */
export const AsSelf = createParamDecorator((_data: unknown, context: ExecutionContext): boolean => accessOf(context).asSelf);

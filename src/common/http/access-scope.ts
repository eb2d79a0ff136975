import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';

/**
 * Items of a list that a Deny hides although their namespace is in scope — exactly those a single
 * read would refuse for it: the item `<prefix><id>` when its namespace is `namespaceId` (null: any).
 * `ids`: those exact ids; `pattern`: those whose path matches this anchored regular expression
 * (in the syntax RE2 and PostgreSQL share); neither: every item.
 */
export interface HiddenItems {
  readonly namespaceId: string | null;
  readonly ids?: readonly string[];
  readonly pattern?: string;
}

/** The item-level Denies of a list: its items' object paths are `prefix` + id (`/ClusterJobs/`). */
export interface ItemDenials {
  readonly prefix: string;
  readonly hidden: readonly HiddenItems[];
}

/**
 * The namespaces a list is narrowed to (api-map §6): all of them but some (the caller may read
 * in `*`), or only some. Ids; entities of `*` (a null namespace) are in scope only with `all`.
 * With `items`, the list also leaves out the items a Deny of them hides.
 */
export type NamespaceScope = ({ readonly all: true; readonly except: readonly string[] } | { readonly all: false; readonly only: readonly string[] }) & {
  readonly items?: ItemDenials;
};

/** What the access guard decided for a request, beyond letting it through. */
export interface RequestAccess {
  /** Allowed only because the caller acts on themself; the service limits what they may change. */
  readonly asSelf: boolean;
  /** For a `namespaced` list: the namespaces its items may come from. */
  readonly scope?: NamespaceScope;
  /** For a list of items outside namespaces (decided in `*`): the items a Deny hides. */
  readonly items?: ItemDenials;
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

/** The item-level Denies of a list of items outside namespaces (undefined: none hide anything). */
export const ListDenials = createParamDecorator((_data: unknown, context: ExecutionContext): ItemDenials | undefined => accessOf(context).items);

/** True when the caller was let through only as themself (a route declared with `self`). */
export const AsSelf = createParamDecorator((_data: unknown, context: ExecutionContext): boolean => accessOf(context).asSelf);

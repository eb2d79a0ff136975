import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { NotFoundError, UnauthorizedError } from '../common/errors/hub-errors.js';
import type { Caller } from '../common/http/caller.js';
import { isUuid } from '../common/query/query-values.js';
import { routeOptionsOf, type NamespaceSource, type RoutePermission } from '../common/http/route.decorator.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import {
  AccessEvaluator,
  namespaceOfResource,
  NO_SUCH_NAMESPACE,
  notAllowed,
  type DecisionNamespace,
  type Effect,
  type PrincipalPermissions,
} from './access-evaluator.js';
import { AuditLog } from './audit-log.js';

const EVERY_NAMESPACE: DecisionNamespace = { id: null, name: '*' };
const PLACEHOLDER = /\{([^}]+)\}/g;

/** UUIDs in lower case; anything else as given. */
function canonical(value: string): string {
  return isUuid(value) ? value.toLowerCase() : value;
}

function stringAt(container: unknown, key: string): string | undefined {
  const value = (container as Record<string, unknown> | undefined)?.[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The user a route lets act as themself without the permission, if any. */
function selfOf(access: RoutePermission, request: FastifyRequest, ownerId: string | undefined): string | undefined {
  const self = access.self;
  if (self === undefined) return undefined;
  if (typeof self === 'string') return canonical((request.params as Record<string, string>)[self] ?? '');
  if ('body' in self) {
    const id = stringAt(request.body, self.body);
    return id === undefined ? undefined : canonical(id);
  }
  return 'owner' in self ? ownerId : undefined;
}

/**
 * Decides every request against the access model (api-map §6), after authentication, from the
 * permission its `@Route` declares:
 * - a single resource (an object with a path parameter) the caller may not do `action` on is a
 *   403 if the caller may read it, else a 404, as if it did not exist;
 * - one audit record tells what was decided for the request (a narrowed list adds a Filter record,
 *   both naming the namespaces it was narrowed to);
 * - a `namespaced` list needs Read in at least one namespace and is narrowed to those;
 * - a route declared with `self` lets a caller act on their own record without the permission.
 * Every decision is audited.
 */
@Injectable()
export class AccessGuard implements CanActivate {
  constructor(
    private readonly evaluator: AccessEvaluator,
    private readonly audit: AuditLog,
    private readonly namespaces: NamespacesService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const options = routeOptionsOf(context);
    if (!options) throw new Error('Every route is declared with @Route');
    const access = options.access;
    if (!('object' in access)) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const caller = request.caller;
    if (!caller) throw new UnauthorizedError('A bearer token or HTTP Basic credentials are required');
    const permissions = await this.evaluator.permissionsOf(caller);
    if (access.namespaced) {
      this.authorizeList(request, caller, permissions, access);
      return true;
    }
    const params = request.params as Record<string, string>;
    // Path parameters in an object are ids: anything else names nothing (as ResourceId answers),
    // and never becomes part of a path matched against every permission.
    for (const [, name] of access.object.matchAll(PLACEHOLDER)) {
      if (!isUuid(params[name] ?? '')) throw new NotFoundError(`The ${name} in the path is not an id: not found`);
    }
    // Ids as the database and ResourceId take them: an upper-case UUID names the same resource.
    const placement = await this.placementOf(access.namespace, request);
    const { namespace, ownerId, where } = placement;
    const requested = access.object.replace(PLACEHOLDER, (_match, name: string) => canonical(params[name] ?? ''));
    // The object checked may be another (an execution's job), which a 404 must not name.
    const object = placement.object ?? requested;
    const allowed = permissions.decide({ object, action: access.action, namespaceId: namespace.id }) === 'Allow';
    const asSelf = !allowed && selfOf(access, request, ownerId) === caller.userId;
    this.record(caller, object, access.action, namespace.name, allowed || asSelf ? 'Allow' : 'Deny', 'Request');
    if (allowed || asSelf) {
      // A list of items outside namespaces leaves out those a Deny hides from their single reads.
      const items = options.list && !asSelf && !access.object.includes('{') ? permissions.itemDenials(access.object, access.action, namespace.id) : undefined;
      request.access = { asSelf, ...(items && { items }) };
      return true;
    }
    if (object !== access.object && !this.mayRead(caller, permissions, object, namespace)) throw new NotFoundError(`${requested} not found`);
    throw notAllowed(access.action, object, where ? { where } : namespace);
  }

  /** Whether a denied caller may at least read the resource: if not, it is answered as not found. */
  private mayRead(caller: Caller, permissions: PrincipalPermissions, object: string, namespace: DecisionNamespace): boolean {
    // Everyone may read their own user record (api-map §6).
    if (object === `/Users/${caller.userId}`) return true;
    return permissions.decide({ object, action: 'Read', namespaceId: namespace.id }) === 'Allow';
  }

  /** A list of namespaced items: Read in at least one namespace, narrowed to where it holds. */
  private authorizeList(request: FastifyRequest, caller: Caller, permissions: PrincipalPermissions, access: RoutePermission): void {
    const scope = permissions.scope(access.object, access.action);
    const where = scope ? permissions.describeScope(scope) : '*';
    const ownedOnly = !scope && typeof access.self === 'object' && 'owned' in access.self;
    this.record(caller, access.object, access.action, ownedOnly ? 'own items' : where, scope || ownedOnly ? 'Allow' : 'Deny', 'Request');
    if (ownedOnly) {
      request.access = { asSelf: true, scope: { all: false, only: [] } };
      return;
    }
    if (!scope) throw notAllowed(access.action, access.object, 'anywhere');
    this.record(caller, access.object, access.action, where, 'Allow', 'Filter');
    // Items a Deny hides from single reads are hidden from the list too.
    const items = permissions.itemDenials(access.object, access.action);
    request.access = { asSelf: false, scope: items ? { ...scope, items } : scope };
  }

  private record(caller: Caller, object: string, action: string, namespace: string, decision: Effect, purpose: 'Request' | 'Filter'): void {
    this.audit.record({ object, namespace, action, userId: caller.userId, groups: caller.groups, decision, purpose });
  }

  /**
   * The namespace a route's permission is checked in, and the owner of the resource it was
   * learnt from. A namespace or resource that does not exist leaves only the bindings of `*` to
   * decide (the operation itself then answers 404 or 400). A namespace learnt from a resource is
   * not named in a denial (`where`): the caller may not be allowed to know it.
   */
  private async placementOf(
    source: NamespaceSource | undefined,
    request: FastifyRequest,
  ): Promise<{ namespace: DecisionNamespace; ownerId?: string; object?: string; where?: string }> {
    if (source && 'resource' in source) {
      const id = canonical(('param' in source ? (request.params as Record<string, string>)[source.param] : stringAt(request.body, source.body)) ?? '');
      const placement = isUuid(id) ? await this.namespaces.locate(source.resource, id) : null;
      const where = isUuid(id) ? namespaceOfResource(source.resource, id).where : `the namespace of an unknown ${source.resource}`;
      return placement ? { ...placement, where } : { namespace: { id: NO_SUCH_NAMESPACE, name: '(unknown)' }, where };
    }
    return { namespace: await this.namespaceOf(source, request) };
  }

  private async namespaceOf(source: Exclude<NamespaceSource, { resource: string }> | undefined, request: FastifyRequest): Promise<DecisionNamespace> {
    if (!source) return EVERY_NAMESPACE;
    if ('param' in source) {
      const id = canonical((request.params as Record<string, string>)[source.param] ?? '');
      const found = isUuid(id) ? await this.namespaces.find({ id }) : null;
      return found ?? { id: NO_SUCH_NAMESPACE, name: id };
    }
    const name = 'body' in source ? (stringAt(request.body, source.body) ?? source.default) : stringAt(request.query, source.query);
    if (name === undefined || name === '*') return EVERY_NAMESPACE;
    const found = await this.namespaces.find({ name });
    return found ?? { id: NO_SUCH_NAMESPACE, name };
  }
}

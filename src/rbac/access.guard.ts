import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ForbiddenError, NotFoundError, UnauthorizedError } from '../common/errors/hub-errors.js';
import type { Caller } from '../common/http/caller.js';
import { isUuid } from '../common/query/query-values.js';
import { routeOptionsOf, type NamespaceSource, type RoutePermission } from '../common/http/route.decorator.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { AccessEvaluator, type Effect, type PrincipalPermissions } from './access-evaluator.js';
import { AuditLog } from './audit-log.js';

/** A namespace a decision is made in: null id for `*`; the name (or what was given) for the audit. */
interface DecisionNamespace {
  readonly id: string | null;
  readonly name: string;
}

const EVERY_NAMESPACE: DecisionNamespace = { id: null, name: '*' };
const PLACEHOLDER = /\{([^}]+)\}/g;

function describeNamespace(namespace: DecisionNamespace): string {
  return namespace.id === null && namespace.name === '*' ? 'every namespace' : `namespace '${namespace.name}'`;
}

function stringAt(container: unknown, key: string): string | undefined {
  const value = (container as Record<string, unknown> | undefined)?.[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * Decides every request against the access model (api-map §6), after authentication, from the
 * permission its `@Route` declares:
 * - a single resource (an object with a path parameter) the caller may not do `action` on is a
 *   403 if the caller may read it, else a 404, as if it did not exist;
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
    const object = access.object.replace(PLACEHOLDER, (_match, name: string) => params[name] ?? '');
    const namespace = await this.namespaceOf(access.namespace, request);
    if (this.decide(caller, permissions, object, access.action, namespace) === 'Allow') {
      request.access = { asSelf: false };
      return true;
    }
    if (access.self && params[access.self]?.toLowerCase() === caller.userId) {
      request.access = { asSelf: true };
      return true;
    }
    const singleResource = object !== access.object;
    if (singleResource && (access.action === 'Read' || this.decide(caller, permissions, object, 'Read', namespace) === 'Deny')) {
      throw new NotFoundError(`${object} not found`);
    }
    throw new ForbiddenError(`Not allowed: ${access.action} on ${object} in ${describeNamespace(namespace)}`);
  }

  /** A list of namespaced items: Read in at least one namespace, narrowed to where it holds. */
  private authorizeList(request: FastifyRequest, caller: Caller, permissions: PrincipalPermissions, access: RoutePermission): void {
    const scope = permissions.scope(access.object, access.action);
    this.record(caller, access.object, access.action, EVERY_NAMESPACE, scope ? 'Allow' : 'Deny', 'Request');
    if (!scope) throw new ForbiddenError(`Not allowed: ${access.action} on ${access.object} in any namespace`);
    this.record(caller, access.object, access.action, EVERY_NAMESPACE, 'Allow', 'Filter');
    request.access = { asSelf: false, scope };
  }

  private decide(caller: Caller, permissions: PrincipalPermissions, object: string, action: string, namespace: DecisionNamespace): Effect {
    const decision = permissions.decide({ object, action, namespaceId: namespace.id });
    this.record(caller, object, action, namespace, decision, 'Request');
    return decision;
  }

  private record(caller: Caller, object: string, action: string, namespace: DecisionNamespace, decision: Effect, purpose: 'Request' | 'Filter'): void {
    this.audit.record({ object, namespace: namespace.name, action, userId: caller.userId, groups: caller.groups, decision, purpose });
  }

  /**
   * The namespace a route's permission is checked in. A namespace that does not exist leaves
   * only the bindings of `*` to decide (the operation itself then answers 404 or 400).
   */
  private async namespaceOf(source: NamespaceSource | undefined, request: FastifyRequest): Promise<DecisionNamespace> {
    if (!source) return EVERY_NAMESPACE;
    if ('param' in source) {
      const id = (request.params as Record<string, string>)[source.param];
      const found = isUuid(id) ? await this.namespaces.find({ id }) : null;
      return found ?? { id, name: id };
    }
    const name = 'body' in source ? stringAt(request.body, source.body) : stringAt(request.query, source.query);
    if (name === undefined || name === '*') return EVERY_NAMESPACE;
    const found = await this.namespaces.find({ name });
    return found ?? { id: name, name };
  }
}

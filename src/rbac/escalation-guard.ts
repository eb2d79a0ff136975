import { Injectable } from '@nestjs/common';
import type { EscalationChecks } from '../auth/role-guard.js';
import { ForbiddenError } from '../common/errors/hub-errors.js';
import type { Caller } from '../common/http/caller.js';
import { AccessEvaluator, notAllowed, type DecisionNamespace } from './access-evaluator.js';
import { AuditLog } from './audit-log.js';
import { ADMINISTRATOR_ROLE } from './built-in-roles.js';
import { RoleBindingsRepository } from './role-bindings.repository.js';
import { RolesRepository } from './roles.repository.js';

const EVERY_NAMESPACE: DecisionNamespace = { id: null, name: '*' };

/**
 * The one guard against handing out roles (api-map §6): binding a role, changing what a role
 * grants, and the doors to the same rights around them — another user's password, `active`,
 * `externalId` or `unixUserName`, a group's members — need `Use` on the roles concerned, where
 * they are bound. Each decision is audited like the access guard's.
 */
@Injectable()
export class EscalationGuard implements EscalationChecks {
  constructor(
    private readonly evaluator: AccessEvaluator,
    private readonly audit: AuditLog,
    private readonly bindings: RoleBindingsRepository,
    private readonly roles: RolesRepository,
  ) {}

  /**
   * Requires a permission beyond a route's own (recorded like the guard's decisions): 403 naming
   * it when the caller lacks it, and `where` instead of the namespace's name when the caller may
   * not be allowed to know it.
   */
  async require(caller: Caller, object: string, action: string, namespace: DecisionNamespace, where?: string): Promise<void> {
    if (!(await this.allowed(caller, object, action, namespace))) throw notAllowed(action, object, where === undefined ? namespace : { where });
  }

  async requireUseOfRolesBoundTo(caller: Caller, principalIds: readonly string[], change: string): Promise<void> {
    if (principalIds.length === 0) return;
    const rows = await this.bindings.ofPrincipals(principalIds);
    const seen = new Set<string>();
    for (const row of rows) {
      const key = `${row.role} ${row.namespaceId}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const namespace = { id: row.namespaceId, name: row.namespace };
      if (!(await this.allowed(caller, `/Roles/${row.role}`, 'Use', namespace))) {
        throw new ForbiddenError(
          `Not allowed: ${change} hands out role '${row.roleName}' (${row.role}), bound in ${row.namespaceId === null ? 'every namespace' : `namespace '${row.namespace}'`}, which needs Use on /Roles/${row.role} there`,
        );
      }
    }
  }

  async requireAdministrator(caller: Caller, change: string): Promise<void> {
    const role = await this.roles.findByName(ADMINISTRATOR_ROLE);
    if (!role || !(await this.allowed(caller, `/Roles/${role.id}`, 'Use', EVERY_NAMESPACE))) {
      throw new ForbiddenError(`Not allowed: only an administrator (Use on role '${ADMINISTRATOR_ROLE}' in every namespace) may ${change}`);
    }
  }

  /** A decision, recorded in the audit like the access guard's. */
  private async allowed(caller: Caller, object: string, action: string, namespace: DecisionNamespace): Promise<boolean> {
    const decision = (await this.evaluator.permissionsOf(caller)).decide({ object, action, namespaceId: namespace.id });
    this.audit.record({ object, namespace: namespace.name, action, userId: caller.userId, groups: caller.groups, decision, purpose: 'Request' });
    return decision === 'Allow';
  }
}

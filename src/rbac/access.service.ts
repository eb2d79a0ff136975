import { Injectable } from '@nestjs/common';
import { GroupsService } from '../auth/groups.service.js';
import { type FieldError } from '../common/errors/hub-errors.js';
import type { Caller } from '../common/http/caller.js';
import { invalidBody } from '../common/validation/validate-input.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { AccessEvaluator, ANY_ACTION, NO_SUCH_NAMESPACE, type BoundPermission, type DecisionNamespace, type Effect } from './access-evaluator.js';
import { EscalationGuard } from './escalation-guard.js';
import type { EvaluateItemDto, ExplainItemDto, ExplainResultDto, ExplanationDto } from './dto/access.dto.js';

function permissionMatches(entry: BoundPermission, object: string, action: string): boolean {
  return (entry.permission.actions.includes(action) || entry.permission.actions.includes(ANY_ACTION)) && entry.matcher.matches(object);
}

/** Where a permission comes from, in words: role, permission, binding, principal, namespace. */
function sourceOf(entry: BoundPermission): string {
  const { permission } = entry;
  const principal = `${entry.principalType === 'User' ? 'user' : 'group'} '${entry.principalName}'`;
  const namespace = entry.namespaceId === null ? 'every namespace (*)' : `namespace '${entry.namespaceName}'`;
  return `role '${entry.roleName}' (${entry.roleId}) permission ${entry.permissionIndex + 1} (${permission.objectMatcher} ${permission.object}: ${permission.actions.join(', ')}) through binding ${entry.bindingId} of ${principal} in ${namespace}`;
}

/** A namespace name as the items give it: absent or `*` means every namespace. */
const namedNamespace = (name: string | undefined): name is string => name !== undefined && name !== '*';

@Injectable()
export class AccessService {
  constructor(
    private readonly evaluator: AccessEvaluator,
    private readonly namespaces: NamespacesService,
    private readonly groups: GroupsService,
    private readonly escalation: EscalationGuard,
  ) {}

  /**
   * Requires a permission a service checks beyond its route's (recorded like the guard's
   * decisions): 403 naming it when the caller lacks it, and `where` instead of the namespace's
   * name when the caller may not be allowed to know it.
   */
  require(caller: Caller, object: string, action: string, namespace: DecisionNamespace, where?: string): Promise<void> {
    return this.escalation.require(caller, object, action, namespace, where);
  }

  /**
   * One decision per item, for the caller, exactly as a request would be decided: a namespace
   * that does not exist leaves only the bindings of `*` (so the answer says nothing of which
   * namespaces exist).
   */
  async evaluate(caller: Caller, items: readonly EvaluateItemDto[]): Promise<Effect[]> {
    const [found, permissions] = await Promise.all([
      this.namespaces.findByNames(items.map((item) => item.namespace).filter(namedNamespace)),
      this.evaluator.permissionsOf(caller),
    ]);
    return items.map((item) => {
      const namespaceId = namedNamespace(item.namespace) ? (found.get(item.namespace.toLowerCase())?.id ?? NO_SUCH_NAMESPACE) : null;
      return permissions.decide({ object: item.object, action: item.action, namespaceId });
    });
  }

  /**
   * For any user (as a member of `groups` when given, else of its own groups): the decision, and
   * every permission of the bindings that apply in the namespace, matching or not. Unknown users,
   * groups and namespaces are a 400 naming the item.
   */
  async explain(_caller: Caller, items: readonly ExplainItemDto[]): Promise<ExplainResultDto[]> {
    const [found, principals] = await Promise.all([
      this.namespaces.findByNames(items.map((item) => item.namespace).filter(namedNamespace)),
      this.groups.findPrincipals(items.flatMap((item) => [item.user, ...(item.groups ?? [])])),
    ]);
    const known = new Map(principals.map((principal) => [principal.id, principal.type]));
    const errors: FieldError[] = [];
    items.forEach((item, index) => {
      if (known.get(item.user.toLowerCase()) !== 'User') errors.push({ path: `/${index}/user`, message: `No user has the id ${item.user}` });
      const unknownGroups = (item.groups ?? []).filter((id) => known.get(id.toLowerCase()) !== 'Group');
      if (unknownGroups.length > 0) errors.push({ path: `/${index}/groups`, message: `No group has the id ${unknownGroups.join(', ')}` });
      if (namedNamespace(item.namespace) && !found.has(item.namespace.toLowerCase()))
        errors.push({ path: `/${index}/namespace`, message: `No namespace is named '${item.namespace}'` });
    });
    if (errors.length > 0) throw invalidBody(errors);
    return Promise.all(
      items.map(async (item): Promise<ExplainResultDto> => {
        const userId = item.user.toLowerCase();
        const groups = item.groups?.map((id) => id.toLowerCase()) ?? (await this.groups.effectiveGroupIds(userId));
        const permissions = await this.evaluator.permissionsOf({ userId, groups });
        const namespaceId = namedNamespace(item.namespace) ? (found.get(item.namespace.toLowerCase())?.id ?? null) : null;
        const explanation = permissions.applicable(namespaceId).map((entry): ExplanationDto => ({
          matches: permissionMatches(entry, item.object, item.action),
          source: sourceOf(entry),
          effect: entry.permission.effect,
        }));
        return { effect: permissions.decide({ object: item.object, action: item.action, namespaceId }), explanation };
      }),
    );
  }
}

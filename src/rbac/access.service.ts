import { Injectable } from '@nestjs/common';
import { GroupsService } from '../auth/groups.service.js';
import { type FieldError } from '../common/errors/hub-errors.js';
import type { Caller } from '../common/http/caller.js';
import { invalidBody } from '../common/validation/validate-input.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { AccessEvaluator, type BoundPermission, type Effect } from './access-evaluator.js';
import type { EvaluateItemDto, ExplainItemDto, ExplainResultDto, ExplanationDto } from './dto/access.dto.js';

const ANY_ACTION = '*';

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

@Injectable()
export class AccessService {
  constructor(
    private readonly evaluator: AccessEvaluator,
    private readonly namespaces: NamespacesService,
    private readonly groups: GroupsService,
  ) {}

  /** One decision per item, for the caller, exactly as a request would be decided. */
  async evaluate(caller: Caller, items: readonly EvaluateItemDto[]): Promise<Effect[]> {
    const namespaceIds = await this.namespaceIds(items);
    const permissions = await this.evaluator.permissionsOf(caller);
    return items.map((item, index) => permissions.decide({ object: item.object, action: item.action, namespaceId: namespaceIds[index] }));
  }

  /**
   * For any user (as a member of `groups` when given, else of its own groups): the decision, and
   * every permission of the bindings that apply in the namespace, matching or not.
   */
  async explain(_caller: Caller, items: readonly ExplainItemDto[]): Promise<ExplainResultDto[]> {
    const namespaceIds = await this.namespaceIds(items);
    const users = await Promise.all(items.map((item) => this.groups.findPrincipal(item.user)));
    const errors: FieldError[] = [];
    users.forEach((user, index) => {
      if (user?.type !== 'User') errors.push({ path: `/${index}/user`, message: `No user has the id ${items[index].user}` });
    });
    if (errors.length > 0) throw invalidBody(errors);
    return Promise.all(
      items.map(async (item, index): Promise<ExplainResultDto> => {
        const userId = item.user.toLowerCase();
        const groups = item.groups?.map((id) => id.toLowerCase()) ?? (await this.groups.effectiveGroupIds(userId));
        const permissions = await this.evaluator.permissionsOf({ userId, groups });
        const namespaceId = namespaceIds[index];
        const explanation = permissions.applicable(namespaceId).map((entry): ExplanationDto => ({
          matches: permissionMatches(entry, item.object, item.action),
          source: sourceOf(entry),
          effect: entry.permission.effect,
        }));
        return { effect: permissions.decide({ object: item.object, action: item.action, namespaceId }), explanation };
      }),
    );
  }

  /** The namespace id of each item (null: `*` or none given); an unknown name is a 400 naming the item. */
  private async namespaceIds(items: readonly { namespace?: string }[]): Promise<(string | null)[]> {
    const lookUp = (name: string | undefined) => (name && name !== '*' ? this.namespaces.find({ name }) : Promise.resolve(null));
    const found = await Promise.all(items.map((item) => lookUp(item.namespace)));
    const errors: FieldError[] = [];
    items.forEach((item, index) => {
      if (item.namespace && item.namespace !== '*' && !found[index])
        errors.push({ path: `/${index}/namespace`, message: `No namespace is named '${item.namespace}'` });
    });
    if (errors.length > 0) throw invalidBody(errors);
    return found.map((namespace) => namespace?.id ?? null);
  }
}

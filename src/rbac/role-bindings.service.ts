import { Injectable } from '@nestjs/common';
import { GroupsService } from '../auth/groups.service.js';
import { NotFoundError, type FieldError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import type { Caller } from '../common/http/caller.js';
import type { ListQuery } from '../common/query/list-query.js';
import { invalidQuery } from '../common/query/list-query.js';
import { invalidBody } from '../common/validation/validate-input.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { AccessEvaluator } from './access-evaluator.js';
import { AccessService } from './access.service.js';
import { toRoleBindingResponse, type DeletedCountDto, type RoleBindingDto, type RoleBindingInputDto, type RoleBindingListDto } from './dto/role-binding.dto.js';
import { RoleBindingsRepository } from './role-bindings.repository.js';
import { RolesRepository } from './roles.repository.js';

@Injectable()
export class RoleBindingsService {
  constructor(
    private readonly bindings: RoleBindingsRepository,
    private readonly roles: RolesRepository,
    private readonly groups: GroupsService,
    private readonly namespaces: NamespacesService,
    private readonly evaluator: AccessEvaluator,
    private readonly access: AccessService,
  ) {}

  /** The bindings in `scope`, with the names of their roles. */
  async query(_caller: Caller, query: ListQuery, scope: NamespaceScope): Promise<RoleBindingListDto> {
    const page = await this.bindings.list(query, scope);
    return {
      data: page.items.map(toRoleBindingResponse),
      totalCount: page.totalCount,
      roles: Object.fromEntries(page.items.map((row) => [row.role, row.roleName])),
    };
  }

  /**
   * Gives a role to a user or group in a namespace (`*`: all); role, principal and namespace must
   * exist, and the caller needs Use on the role in that namespace.
   */
  async create(caller: Caller, input: RoleBindingInputDto): Promise<RoleBindingDto> {
    const [role, principal, namespace] = await Promise.all([
      this.roles.findById(input.role),
      this.groups.findPrincipal(input.principal),
      input.namespace === '*' ? null : this.namespaces.find({ name: input.namespace }),
    ]);
    const errors: FieldError[] = [];
    if (!role) errors.push({ path: '/role', message: `No role has the id ${input.role}` });
    if (!principal) errors.push({ path: '/principal', message: `No user or group has the id ${input.principal}` });
    if (input.namespace !== '*' && !namespace) errors.push({ path: '/namespace', message: `No namespace is named '${input.namespace}'` });
    if (!role || !principal || errors.length > 0) throw invalidBody(errors);
    // Granting a role needs Use on it where it is granted, so that managing bindings does not let
    // anyone give themself more than they were trusted to hand out.
    await this.access.require(caller, `/Roles/${role.id}`, 'Use', { id: namespace?.id ?? null, name: namespace?.name ?? '*' });
    const id = await this.bindings.insert({ roleId: role.id, principalId: principal.id, principalType: principal.type, namespaceId: namespace?.id ?? null });
    this.evaluator.forgetAll();
    const created = await this.bindings.findById(id);
    if (!created) throw new NotFoundError(`Role binding ${id} was deleted as it was created`);
    return toRoleBindingResponse(created);
  }

  /**
   * Deletes the bindings matching every filter given (at least one), except the bootstrap
   * administrator's own, which keeps the hub administrable.
   */
  async deleteWhere(_caller: Caller, query: ListQuery): Promise<DeletedCountDto> {
    if (query.filters.length === 0) {
      throw invalidQuery([{ path: 'filter', message: 'is required: give filter[role][EQ], filter[namespace][EQ] or filter[principal][EQ]' }]);
    }
    // A namespace is named ignoring case, as everywhere else: filter on its stored name.
    const filters = await Promise.all(
      query.filters.map(async (condition) => {
        if (condition.field !== 'namespace' || condition.value === '*') return condition;
        const namespace = await this.namespaces.find({ name: String(condition.value) });
        return { ...condition, value: namespace?.name ?? String(condition.value) };
      }),
    );
    const count = await this.bindings.deleteWhere(filters);
    if (count > 0) this.evaluator.forgetAll();
    return { count };
  }
}

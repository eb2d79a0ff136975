import { Body, Controller } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { ListScope, type NamespaceScope } from '../common/http/access-scope.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import { Route } from '../common/http/route.decorator.js';
import { ListParams } from '../common/http/route-params.js';
import type { ListQuery } from '../common/query/list-query.js';
import { DeletedCountDto, RoleBindingDto, RoleBindingInputDto, RoleBindingListDto } from './dto/role-binding.dto.js';
import { ROLE_BINDING_DELETE_QUERY, ROLE_BINDING_LIST_QUERY } from './list-queries.js';
import { RoleBindingsService } from './role-bindings.service.js';

@ApiTags('Access control')
@Controller('api/v2/rbac/rolebindings')
export class RoleBindingsController {
  constructor(private readonly bindings: RoleBindingsService) {}

  @Route({
    method: 'GET',
    summary: 'Query role bindings',
    description:
      'Narrowed to the namespaces where the caller may read role bindings; `roles` names the roles of the page. Sorts by role name and principal name.',
    access: { object: '/RoleBindings', action: 'Read', namespaced: true },
    list: ROLE_BINDING_LIST_QUERY,
    response: RoleBindingListDto,
  })
  queryRoleBindings(@CurrentCaller() caller: Caller, @ListParams() query: ListQuery, @ListScope() scope: NamespaceScope): Promise<RoleBindingListDto> {
    return this.bindings.query(caller, query, scope);
  }

  @Route({
    method: 'POST',
    status: 201,
    summary: 'Create a role binding',
    description: 'Gives a role to a user or group in a namespace (`*`: every namespace); the role, principal and namespace must exist.',
    access: { object: '/RoleBindings', action: 'Create', namespace: { body: 'namespace' } },
    response: RoleBindingDto,
    errors: { 409: 'This principal already has this role in this namespace' },
  })
  createRoleBinding(@CurrentCaller() caller: Caller, @Body() body: RoleBindingInputDto): Promise<RoleBindingDto> {
    return this.bindings.create(caller, body);
  }

  @Route({
    method: 'DELETE',
    summary: 'Delete role bindings by filter',
    description:
      'Deletes the bindings matching every filter given (at least one; `filter[namespace][EQ]` takes a name or *). The bootstrap administrator keeps its HubAdministrator binding in *.',
    access: { object: '/RoleBindings', action: 'Delete', namespace: { query: 'filter[namespace][EQ]' } },
    list: ROLE_BINDING_DELETE_QUERY,
    response: DeletedCountDto,
  })
  deleteRoleBindings(@CurrentCaller() caller: Caller, @ListParams() query: ListQuery): Promise<DeletedCountDto> {
    return this.bindings.deleteWhere(caller, query);
  }
}

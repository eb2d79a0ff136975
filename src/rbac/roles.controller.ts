import { Body, Controller, Param } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { ListDenials, type ItemDenials } from '../common/http/access-scope.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import { IfMatch, type EntityTagCondition, type Versioned } from '../common/http/entity-tag.js';
import type { ListEnvelope } from '../common/http/list-envelope.js';
import { MessageDto } from '../common/http/message.dto.js';
import { Route } from '../common/http/route.decorator.js';
import { ListParams, PatchBody, ResourceId } from '../common/http/route-params.js';
import type { JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import { RoleDto, RoleInputDto, RoleListDto } from './dto/role.dto.js';
import { ROLE_LIST_QUERY } from './list-queries.js';
import { RolesService } from './roles.service.js';

const DUPLICATE = "A role named 'Auditor' already exists (names are compared ignoring case)";
const BUILT_IN = "Role 'HubAdministrator' is built in and read-only";
const roleId = new ResourceId('Role');

@ApiTags('Access control')
@Controller('api/v2/rbac/roles')
export class RolesController {
  constructor(private readonly roles: RolesService) {}

  @Route({ method: 'GET', summary: 'Query roles', access: { object: '/Roles', action: 'Read' }, list: ROLE_LIST_QUERY, response: RoleListDto })
  queryRoles(@CurrentCaller() caller: Caller, @ListParams() query: ListQuery, @ListDenials() denials: ItemDenials | undefined): Promise<ListEnvelope<RoleDto>> {
    return this.roles.query(caller, query, denials);
  }

  @Route({
    method: 'POST',
    status: 201,
    summary: 'Create a role',
    description: 'Permissions are `{object, objectMatcher, actions, effect}`; an unknown matcher, action or effect, or an invalid regex, is 400.',
    access: { object: '/Roles', action: 'Create' },
    response: RoleDto,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  createRole(@CurrentCaller() caller: Caller, @Body() body: RoleInputDto): Promise<Versioned<RoleDto>> {
    return this.roles.create(caller, body);
  }

  @Route({ method: 'GET', path: ':roleId', summary: 'Get a role', access: { object: '/Roles/{roleId}', action: 'Read' }, response: RoleDto, etag: true })
  getRole(@CurrentCaller() caller: Caller, @Param('roleId', roleId) id: string): Promise<Versioned<RoleDto>> {
    return this.roles.get(caller, id);
  }

  @Route({
    method: 'PUT',
    path: ':roleId',
    summary: 'Replace a role',
    access: { object: '/Roles/{roleId}', action: 'Update' },
    response: RoleDto,
    etag: true,
    errors: { 403: BUILT_IN, 409: DUPLICATE },
  })
  replaceRole(
    @CurrentCaller() caller: Caller,
    @Param('roleId', roleId) id: string,
    @Body() body: RoleInputDto,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<RoleDto>> {
    return this.roles.replace(caller, id, body, ifMatch);
  }

  @Route({
    method: 'PATCH',
    path: ':roleId',
    summary: 'Patch a role',
    access: { object: '/Roles/{roleId}', action: 'Update' },
    response: RoleDto,
    patch: true,
    etag: true,
    errors: { 403: BUILT_IN, 409: DUPLICATE },
  })
  patchRole(
    @CurrentCaller() caller: Caller,
    @Param('roleId', roleId) id: string,
    @PatchBody() patch: JsonPatch,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<RoleDto>> {
    return this.roles.patch(caller, id, patch, ifMatch);
  }

  @Route({
    method: 'DELETE',
    path: ':roleId',
    summary: 'Delete a role',
    description: 'Refused (409) while bindings give the role; built-in roles cannot be deleted (403).',
    access: { object: '/Roles/{roleId}', action: 'Delete' },
    response: MessageDto,
    etag: true,
    errors: { 403: BUILT_IN, 409: "Role 'Auditor' is given by 2 role bindings; delete them first" },
  })
  deleteRole(@CurrentCaller() caller: Caller, @Param('roleId', roleId) id: string, @IfMatch() ifMatch: EntityTagCondition | undefined): Promise<MessageDto> {
    return this.roles.delete(caller, id, ifMatch);
  }
}

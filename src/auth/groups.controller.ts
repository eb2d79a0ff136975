import { Body, Controller, Param } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { ListDenials, type ItemDenials } from '../common/http/access-scope.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import { IfMatch, type EntityTagCondition, type Versioned } from '../common/http/entity-tag.js';
import type { ListEnvelope } from '../common/http/list-envelope.js';
import { MessageDto } from '../common/http/message.dto.js';
import { Route } from '../common/http/route.decorator.js';
import { ListParams, PatchBody, ProjectionParams, ResourceId } from '../common/http/route-params.js';
import type { JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { Projection } from '../common/query/projection.js';
import { InputListPipe } from '../common/validation/input-validation.pipe.js';
import { GROUP_FIELDS, GroupDto, GroupInputDto, GroupListDto, GroupMemberChangeDto, GroupMemberDto } from './dto/group.dto.js';
import { GroupsService } from './groups.service.js';
import { GROUP_LIST_QUERY, GROUP_MEMBER_LIST_QUERY } from './list-queries.js';

const DUPLICATE = "A group named 'Data Scientists' already exists (names are compared ignoring case)";
const MAX_MEMBER_CHANGES = 1000;
const groupId = new ResourceId('Group');

@ApiTags('Groups')
@Controller('api/v2/auth/groups')
export class GroupsController {
  constructor(private readonly groups: GroupsService) {}

  @Route({ method: 'GET', summary: 'Query groups', access: { object: '/Groups', action: 'Read' }, list: GROUP_LIST_QUERY, response: GroupListDto })
  queryGroups(
    @CurrentCaller() caller: Caller,
    @ListParams() query: ListQuery,
    @ListDenials() denials: ItemDenials | undefined,
  ): Promise<ListEnvelope<GroupDto>> {
    return this.groups.query(caller, query, denials);
  }

  @Route({
    method: 'POST',
    status: 201,
    summary: 'Create a group',
    access: { object: '/Groups', action: 'Create' },
    response: GroupDto,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  createGroup(@CurrentCaller() caller: Caller, @Body() body: GroupInputDto): Promise<Versioned<GroupDto>> {
    return this.groups.create(caller, body);
  }

  @Route({
    method: 'GET',
    path: ':groupId',
    summary: 'Get a group',
    access: { object: '/Groups/{groupId}', action: 'Read' },
    response: GroupDto,
    projection: GROUP_FIELDS,
    etag: true,
  })
  getGroup(
    @CurrentCaller() caller: Caller,
    @Param('groupId', groupId) id: string,
    @ProjectionParams() projection: Projection | undefined,
  ): Promise<Versioned<Partial<GroupDto>>> {
    return this.groups.get(caller, id, projection);
  }

  @Route({
    method: 'PUT',
    path: ':groupId',
    summary: 'Replace a group',
    access: { object: '/Groups/{groupId}', action: 'Update' },
    response: GroupDto,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  replaceGroup(
    @CurrentCaller() caller: Caller,
    @Param('groupId', groupId) id: string,
    @Body() body: GroupInputDto,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<GroupDto>> {
    return this.groups.replace(caller, id, body, ifMatch);
  }

  @Route({
    method: 'PATCH',
    path: ':groupId',
    summary: 'Patch a group',
    access: { object: '/Groups/{groupId}', action: 'Update' },
    response: GroupDto,
    patch: true,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  patchGroup(
    @CurrentCaller() caller: Caller,
    @Param('groupId', groupId) id: string,
    @PatchBody() patch: JsonPatch,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<GroupDto>> {
    return this.groups.patch(caller, id, patch, ifMatch);
  }

  @Route({
    method: 'DELETE',
    path: ':groupId',
    summary: 'Delete a group',
    description: 'Removes its memberships, both ways. Built-in groups cannot be deleted (403).',
    access: { object: '/Groups/{groupId}', action: 'Delete' },
    response: MessageDto,
    etag: true,
    errors: { 403: "Group 'Administrators' is a built-in group and cannot be deleted" },
  })
  deleteGroup(@CurrentCaller() caller: Caller, @Param('groupId', groupId) id: string, @IfMatch() ifMatch: EntityTagCondition | undefined): Promise<MessageDto> {
    return this.groups.delete(caller, id, ifMatch);
  }

  @Route({
    method: 'GET',
    path: ':groupId/members',
    summary: "List a group's members",
    description: 'Users and groups in the group directly, and those in it through member groups (`indirect`), by name.',
    access: { object: '/Groups/{groupId}', action: 'Read' },
    list: GROUP_MEMBER_LIST_QUERY,
    response: [GroupMemberDto],
  })
  listGroupMembers(@CurrentCaller() caller: Caller, @Param('groupId', groupId) id: string, @ListParams() query: ListQuery): Promise<GroupMemberDto[]> {
    return this.groups.members(caller, id, query);
  }

  @Route({
    method: 'PATCH',
    path: ':groupId/members',
    summary: "Change a group's members",
    description: `Items \`{op: add|remove, id}\` or \`{op, name, principalType}\`, applied in order as one transaction (at most ${MAX_MEMBER_CHANGES}). An unknown principal, or an addition that would make a group contain itself, is 400 and changes nothing. A member gets the roles bound to the group and to every group containing it, so any change needs Use on each of those roles (403 naming the first missing), as binding them does.`,
    access: { object: '/Groups/{groupId}', action: 'Update' },
    response: MessageDto,
    body: [GroupMemberChangeDto],
    consumes: ['application/json'],
  })
  changeGroupMembers(
    @CurrentCaller() caller: Caller,
    @Param('groupId', groupId) id: string,
    @Body(new InputListPipe(GroupMemberChangeDto, MAX_MEMBER_CHANGES)) changes: GroupMemberChangeDto[],
  ): Promise<MessageDto> {
    return this.groups.changeMembers(caller, id, changes);
  }
}

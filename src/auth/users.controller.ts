import { Body, Controller, Param } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { AsSelf, ListDenials, type ItemDenials } from '../common/http/access-scope.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import { IfMatch, type EntityTagCondition, type Versioned } from '../common/http/entity-tag.js';
import type { ListEnvelope } from '../common/http/list-envelope.js';
import { MessageDto } from '../common/http/message.dto.js';
import { Route } from '../common/http/route.decorator.js';
import { ListParams, PatchBody, ProjectionParams, ResourceId } from '../common/http/route-params.js';
import type { JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { Projection } from '../common/query/projection.js';
import { UserMembershipDto } from './dto/group.dto.js';
import { CreatedUserDto, UnixDetailsDto, USER_FIELDS, UserDto, UserInputDto, UserListDto } from './dto/user.dto.js';
import { USER_GROUP_LIST_QUERY, USER_LIST_QUERY } from './list-queries.js';
import { UsersService } from './users.service.js';

const DUPLICATE = "A user named 'ada' already exists (names are compared ignoring case)";
/** What a change of who a user is needs beyond Update (api-map §6). */
const GUARDED =
  "Another user's `password`, `active`, `externalId` or `unixUserName` changes only with Use on every role bound to that user (directly or through any group), as binding those roles needs; `externalId` only by an administrator; the bootstrap administrator's password only by themself. A new password or `active: false` revokes every token issued to the user before. `unixUserName` is unique (409).";
const userId = new ResourceId('User');

@ApiTags('Users')
@Controller('api/v2/auth/users')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Route({ method: 'GET', summary: 'Query users', access: { object: '/Users', action: 'Read' }, list: USER_LIST_QUERY, response: UserListDto })
  queryUsers(@CurrentCaller() caller: Caller, @ListParams() query: ListQuery, @ListDenials() denials: ItemDenials | undefined): Promise<ListEnvelope<UserDto>> {
    return this.users.query(caller, query, denials);
  }

  @Route({
    method: 'POST',
    status: 201,
    summary: 'Create a user',
    description:
      'With `password`, an active account. With `invitationPending: true` and no password, an invitation: the reply carries `invitationToken` this once, valid until `invitationExpiry` (default 7 days) for POST /api/v2/auth/accounts.',
    access: { object: '/Users', action: 'Create' },
    response: CreatedUserDto,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  createUser(@CurrentCaller() caller: Caller, @Body() body: UserInputDto): Promise<Versioned<CreatedUserDto>> {
    return this.users.create(caller, body);
  }

  @Route({
    method: 'GET',
    path: ':userId',
    summary: 'Get a user',
    access: { object: '/Users/{userId}', action: 'Read', self: 'userId' },
    response: UserDto,
    projection: USER_FIELDS,
    etag: true,
  })
  getUser(
    @CurrentCaller() caller: Caller,
    @Param('userId', userId) id: string,
    @ProjectionParams() projection: Projection | undefined,
  ): Promise<Versioned<Partial<UserDto>>> {
    return this.users.get(caller, id, projection);
  }

  @Route({
    method: 'PUT',
    path: ':userId',
    summary: 'Replace a user',
    description: `Absent fields are cleared, except the password (kept unless given) and a pending invitation’s expiry (kept unless given). ${GUARDED}`,
    access: { object: '/Users/{userId}', action: 'Update', self: 'userId' },
    response: UserDto,
    etag: true,
    errors: { 403: 'You may change only your own displayName and email', 409: DUPLICATE },
  })
  replaceUser(
    @CurrentCaller() caller: Caller,
    @Param('userId', userId) id: string,
    @Body() body: UserInputDto,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
    @AsSelf() asSelf: boolean,
  ): Promise<Versioned<UserDto>> {
    return this.users.replace(caller, id, body, ifMatch, asSelf);
  }

  @Route({
    method: 'PATCH',
    path: ':userId',
    summary: 'Patch a user',
    description: GUARDED,
    access: { object: '/Users/{userId}', action: 'Update', self: 'userId' },
    response: UserDto,
    patch: true,
    etag: true,
    errors: { 403: 'You may change only your own displayName and email', 409: DUPLICATE },
  })
  patchUser(
    @CurrentCaller() caller: Caller,
    @Param('userId', userId) id: string,
    @PatchBody() patch: JsonPatch,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
    @AsSelf() asSelf: boolean,
  ): Promise<Versioned<UserDto>> {
    return this.users.patch(caller, id, patch, ifMatch, asSelf);
  }

  @Route({
    method: 'DELETE',
    path: ':userId',
    summary: 'Delete a user',
    description: 'Removes the user from every group. System users cannot be deleted (403).',
    access: { object: '/Users/{userId}', action: 'Delete' },
    response: MessageDto,
    etag: true,
    errors: { 403: "User 'admin' is a system user and cannot be deleted" },
  })
  deleteUser(@CurrentCaller() caller: Caller, @Param('userId', userId) id: string, @IfMatch() ifMatch: EntityTagCondition | undefined): Promise<MessageDto> {
    return this.users.delete(caller, id, ifMatch);
  }

  @Route({
    method: 'POST',
    path: ':userId/unlock',
    summary: "Lift a user's login lock",
    description:
      'Clears the failed logins counted against the user’s name and the lock they put on it (beyond the interface). Like resetting the user’s password, it needs Use on every role bound to the user, directly or through groups: unlocking an administrator takes an administrator.',
    access: { object: '/Users/{userId}', action: 'Update' },
    response: MessageDto,
    errors: { 403: "Not allowed: unlocking user 'admin' hands out role 'HubAdministrator'" },
  })
  unlockUser(@CurrentCaller() caller: Caller, @Param('userId', userId) id: string): Promise<MessageDto> {
    return this.users.unlock(caller, id);
  }

  @Route({
    method: 'GET',
    path: ':userId/groups',
    summary: "List a user's groups",
    description: 'Groups the user is in directly, and those it is in through them (`indirect`), by name.',
    access: { object: '/Users/{userId}', action: 'Read', self: 'userId' },
    list: USER_GROUP_LIST_QUERY,
    response: [UserMembershipDto],
  })
  listUserGroups(@CurrentCaller() caller: Caller, @Param('userId', userId) id: string, @ListParams() query: ListQuery): Promise<UserMembershipDto[]> {
    return this.users.groups(caller, id, query);
  }

  @Route({
    method: 'GET',
    path: ':userId/unix',
    summary: "Get a user's unix details",
    access: { object: '/Users/{userId}', action: 'Read', self: 'userId' },
    response: UnixDetailsDto,
  })
  getUserUnixDetails(@CurrentCaller() caller: Caller, @Param('userId', userId) id: string): Promise<UnixDetailsDto> {
    return this.users.unixDetails(caller, id);
  }
}

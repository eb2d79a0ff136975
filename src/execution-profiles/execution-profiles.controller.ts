import { Body, Controller, Param, Query } from '@nestjs/common';
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
import {
  ExecutionProfileDto,
  ExecutionProfileInputDto,
  ExecutionProfileListDto,
  NameAvailabilityDto,
  type ExecutionProfileListItemDto,
} from './dto/execution-profile.dto.js';
import { ExecutionProfilesService } from './execution-profiles.service.js';
import { EXECUTION_PROFILE_LIST_QUERY } from './list-queries.js';

const DUPLICATE = "An execution profile named 'GPU' already exists (names are compared ignoring case)";

@ApiTags('Execution profiles')
@Controller('api/v2/execution-profiles/execprofiles')
export class ExecutionProfilesController {
  constructor(private readonly profiles: ExecutionProfilesService) {}

  @Route({
    method: 'GET',
    summary: 'Query execution profiles',
    description:
      'hasPermission keeps the profiles on which the caller holds that action, in * or in a namespace the profile is bound to; hasBindingTo and isDefaultFor take namespace ids or names.',
    access: { object: '/ExecutionProfiles', action: 'Read' },
    list: EXECUTION_PROFILE_LIST_QUERY,
    response: ExecutionProfileListDto,
  })
  queryExecutionProfiles(
    @CurrentCaller() caller: Caller,
    @ListParams() query: ListQuery,
    @ListDenials() denials: ItemDenials | undefined,
  ): Promise<ListEnvelope<ExecutionProfileListItemDto>> {
    return this.profiles.query(caller, query, denials);
  }

  @Route({
    method: 'POST',
    status: 201,
    summary: 'Create an execution profile',
    access: { object: '/ExecutionProfiles', action: 'Create' },
    response: ExecutionProfileDto,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  createExecutionProfile(@CurrentCaller() caller: Caller, @Body() body: ExecutionProfileInputDto): Promise<Versioned<ExecutionProfileDto>> {
    return this.profiles.create(caller, body);
  }

  @Route({
    method: 'GET',
    path: 'name-availability',
    summary: 'Validate a profile name: is it free?',
    description: '{result: true} for a free valid name; {result: false, reason: taken|invalid, msg} otherwise, never a 400 for the name.',
    access: { object: '/ExecutionProfiles', action: 'Read' },
    query: { name: 'The name to check' },
    response: NameAvailabilityDto,
  })
  validateExecutionProfileName(@CurrentCaller() caller: Caller, @Query('name') name: unknown): Promise<NameAvailabilityDto> {
    return this.profiles.nameAvailability(caller, name);
  }

  @Route({
    method: 'GET',
    path: ':id',
    summary: 'Get an execution profile',
    access: { object: '/ExecutionProfiles/{id}', action: 'Read' },
    response: ExecutionProfileDto,
    etag: true,
  })
  getExecutionProfile(@CurrentCaller() caller: Caller, @Param('id', new ResourceId('Execution profile')) id: string): Promise<Versioned<ExecutionProfileDto>> {
    return this.profiles.get(caller, id);
  }

  @Route({
    method: 'PUT',
    path: ':id',
    summary: 'Replace an execution profile',
    access: { object: '/ExecutionProfiles/{id}', action: 'Update' },
    response: ExecutionProfileDto,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  replaceExecutionProfile(
    @CurrentCaller() caller: Caller,
    @Param('id', new ResourceId('Execution profile')) id: string,
    @Body() body: ExecutionProfileInputDto,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<ExecutionProfileDto>> {
    return this.profiles.replace(caller, id, body, ifMatch);
  }

  @Route({
    method: 'PATCH',
    path: ':id',
    summary: 'Patch an execution profile',
    access: { object: '/ExecutionProfiles/{id}', action: 'Update' },
    response: ExecutionProfileDto,
    patch: true,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  patchExecutionProfile(
    @CurrentCaller() caller: Caller,
    @Param('id', new ResourceId('Execution profile')) id: string,
    @PatchBody() patch: JsonPatch,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<ExecutionProfileDto>> {
    return this.profiles.patch(caller, id, patch, ifMatch);
  }

  @Route({
    method: 'DELETE',
    path: ':id',
    summary: 'Delete an execution profile',
    description: 'Refused with 409 while it is bound to a namespace or anything runs under it.',
    access: { object: '/ExecutionProfiles/{id}', action: 'Delete' },
    response: MessageDto,
    etag: true,
    errors: { 409: "Execution profile 'GPU' is still used by 2 namespace bindings; remove them first" },
  })
  deleteExecutionProfile(
    @CurrentCaller() caller: Caller,
    @Param('id', new ResourceId('Execution profile')) id: string,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<MessageDto> {
    return this.profiles.delete(caller, id, ifMatch);
  }
}

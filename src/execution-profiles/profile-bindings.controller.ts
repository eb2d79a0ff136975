import { Body, Controller, Param } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { ListScope, type NamespaceScope } from '../common/http/access-scope.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import { IfMatch, type EntityTagCondition, type Versioned } from '../common/http/entity-tag.js';
import { MessageDto } from '../common/http/message.dto.js';
import { Route } from '../common/http/route.decorator.js';
import { ListParams, PatchBody, ResourceId } from '../common/http/route-params.js';
import type { JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import { ExecutionProfileDto } from './dto/execution-profile.dto.js';
import { ProfileBindingDto, ProfileBindingInputDto, ProfileBindingListDto } from './dto/profile-binding.dto.js';
import { PROFILE_BINDING_LIST_QUERY } from './list-queries.js';
import { ProfileBindingsService } from './profile-bindings.service.js';

const IN_ITS_NAMESPACE = { resource: 'profileBinding', param: 'id' } as const;
const DUPLICATE = 'This execution profile is already bound to this namespace';
const GRANT =
  'Binding a profile also needs Use on /ExecutionProfiles/<its id> in *; moving a binding needs Create on /ExecutionProfileBindings in the new namespace.';

@ApiTags('Execution profile bindings')
@Controller('api/v2/execution-profiles')
export class ProfileBindingsController {
  constructor(private readonly bindings: ProfileBindingsService) {}

  @Route({
    method: 'GET',
    path: 'bindings',
    summary: 'Query execution profile bindings',
    description: 'Sorting by executionProfileId or namespaceId orders by the profile or namespace name.',
    access: { object: '/ExecutionProfileBindings', action: 'Read', namespaced: true },
    list: PROFILE_BINDING_LIST_QUERY,
    response: ProfileBindingListDto,
  })
  queryBindings(@CurrentCaller() caller: Caller, @ListParams() query: ListQuery, @ListScope() scope: NamespaceScope): Promise<ProfileBindingListDto> {
    return this.bindings.query(caller, query, scope);
  }

  @Route({
    method: 'POST',
    path: 'bindings',
    status: 201,
    summary: 'Bind an execution profile to a namespace',
    description: GRANT,
    access: { object: '/ExecutionProfileBindings', action: 'Create', namespace: { resource: 'namespace', body: 'namespaceId' } },
    response: ProfileBindingDto,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  createBinding(@CurrentCaller() caller: Caller, @Body() body: ProfileBindingInputDto): Promise<Versioned<ProfileBindingDto>> {
    return this.bindings.create(caller, body);
  }

  @Route({
    method: 'GET',
    path: 'bindings/:id',
    summary: 'Get an execution profile binding',
    access: { object: '/ExecutionProfileBindings/{id}', action: 'Read', namespace: IN_ITS_NAMESPACE },
    response: ProfileBindingDto,
    etag: true,
  })
  getBinding(@CurrentCaller() caller: Caller, @Param('id', new ResourceId('Execution profile binding')) id: string): Promise<Versioned<ProfileBindingDto>> {
    return this.bindings.get(caller, id);
  }

  @Route({
    method: 'POST',
    path: 'bindings/:id/default',
    summary: "Make a binding its namespace's default",
    description: 'The previous default binding of the namespace stops being it.',
    access: { object: '/ExecutionProfileBindings/{id}', action: 'Update', namespace: IN_ITS_NAMESPACE },
    response: ProfileBindingDto,
    etag: true,
  })
  makeDefaultBinding(
    @CurrentCaller() caller: Caller,
    @Param('id', new ResourceId('Execution profile binding')) id: string,
  ): Promise<Versioned<ProfileBindingDto>> {
    return this.bindings.makeDefault(caller, id);
  }

  @Route({
    method: 'PUT',
    path: 'bindings/:id',
    summary: 'Replace an execution profile binding',
    description: GRANT,
    access: { object: '/ExecutionProfileBindings/{id}', action: 'Update', namespace: IN_ITS_NAMESPACE },
    response: ProfileBindingDto,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  replaceBinding(
    @CurrentCaller() caller: Caller,
    @Param('id', new ResourceId('Execution profile binding')) id: string,
    @Body() body: ProfileBindingInputDto,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<ProfileBindingDto>> {
    return this.bindings.replace(caller, id, body, ifMatch);
  }

  @Route({
    method: 'PATCH',
    path: 'bindings/:id',
    summary: 'Patch an execution profile binding',
    description: GRANT,
    access: { object: '/ExecutionProfileBindings/{id}', action: 'Update', namespace: IN_ITS_NAMESPACE },
    response: ProfileBindingDto,
    patch: true,
    etag: true,
    errors: { 409: DUPLICATE },
  })
  patchBinding(
    @CurrentCaller() caller: Caller,
    @Param('id', new ResourceId('Execution profile binding')) id: string,
    @PatchBody() patch: JsonPatch,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<ProfileBindingDto>> {
    return this.bindings.patch(caller, id, patch, ifMatch);
  }

  @Route({
    method: 'DELETE',
    path: 'bindings/:id',
    summary: 'Delete an execution profile binding',
    access: { object: '/ExecutionProfileBindings/{id}', action: 'Delete', namespace: IN_ITS_NAMESPACE },
    response: MessageDto,
    etag: true,
  })
  deleteBinding(
    @CurrentCaller() caller: Caller,
    @Param('id', new ResourceId('Execution profile binding')) id: string,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<MessageDto> {
    return this.bindings.delete(caller, id, ifMatch);
  }

  @Route({
    method: 'GET',
    path: 'namespaces/:namespaceId/default',
    summary: 'Get the default execution profile of a namespace',
    description: "The profile of the namespace's default binding, for anyone who may read the namespace; 404 when it has none.",
    access: { object: '/Namespaces/{namespaceId}', action: 'Read', namespace: { param: 'namespaceId' } },
    response: ExecutionProfileDto,
  })
  getDefaultProfile(@CurrentCaller() caller: Caller, @Param('namespaceId', new ResourceId('Namespace')) namespaceId: string): Promise<ExecutionProfileDto> {
    return this.bindings.defaultProfile(caller, namespaceId);
  }

  @Route({
    method: 'GET',
    path: 'namespaces/:namespaceId/bindings/:executionProfileId',
    summary: 'Get the binding of an execution profile in a namespace',
    description: 'For anyone who may read the namespace; 404 when the profile is not bound there.',
    access: { object: '/Namespaces/{namespaceId}', action: 'Read', namespace: { param: 'namespaceId' } },
    response: ProfileBindingDto,
    etag: true,
  })
  getBindingIn(
    @CurrentCaller() caller: Caller,
    @Param('namespaceId', new ResourceId('Namespace')) namespaceId: string,
    @Param('executionProfileId', new ResourceId('Execution profile')) executionProfileId: string,
  ): Promise<Versioned<ProfileBindingDto>> {
    return this.bindings.bindingIn(caller, namespaceId, executionProfileId);
  }
}

import { Body, Controller, Param } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { ListScope, type NamespaceScope } from '../common/http/access-scope.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import { IfMatch, type EntityTagCondition, type Versioned } from '../common/http/entity-tag.js';
import type { ListEnvelope } from '../common/http/list-envelope.js';
import { MessageDto } from '../common/http/message.dto.js';
import { Route } from '../common/http/route.decorator.js';
import { ListParams, PatchBody, ResourceId } from '../common/http/route-params.js';
import type { JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import { FiringListDto, TriggerDto, TriggerInputDto, TriggerListDto, type FiringDto, type TriggerListItemDto } from './dto/pipeline-trigger.dto.js';
import { FIRING_LIST_QUERY, TRIGGER_FIRING_LIST_QUERY, TRIGGER_LIST_QUERY } from './list-queries.js';
import { PipelineTriggersService } from './pipeline-triggers.service.js';

const PIPELINE = { resource: 'pipelineEntry', param: 'id' } as const;
/** A trigger is checked as its pipeline: the locator answers /Pipelines/<its pipeline> in the pipeline's namespace. */
const TRIGGER = { resource: 'pipelineTrigger', param: 'triggerId' } as const;
const entryId = new ResourceId('Pipeline entry');
const triggerId = new ResourceId('Trigger');
const OWNER_CHECKS =
  "The body's pipelineId must be the path's; the execution profile must be bound to the pipeline's namespace and usable by the owner there; a File trigger's path must lie under HUB_TRIGGER_FILE_ROOTS and be readable by the owner's job identity (400 otherwise).";

@ApiTags('Pipelines')
@Controller('api/v2/pipelines')
export class PipelineTriggersController {
  constructor(private readonly triggers: PipelineTriggersService) {}

  @Route({
    method: 'GET',
    path: 'entries/:id/triggers',
    summary: 'List the triggers of a pipeline',
    description: 'Oldest first unless sorted. Items spell the modification time `modifed`, as the interface does. Needs Read on the pipeline.',
    access: { object: '/Pipelines/{id}', action: 'Read', namespace: PIPELINE },
    list: TRIGGER_LIST_QUERY,
    response: TriggerListDto,
  })
  listTriggers(@CurrentCaller() caller: Caller, @Param('id', entryId) id: string, @ListParams() query: ListQuery): Promise<ListEnvelope<TriggerListItemDto>> {
    return this.triggers.list(caller, id, query);
  }

  @Route({
    method: 'POST',
    path: 'entries/:id/triggers',
    status: 201,
    summary: 'Create a trigger',
    description: `The caller becomes its owner, who owns the runs it starts: it needs Update and Execute on the pipeline. ${OWNER_CHECKS} A Cron trigger's first due time is the first after now; a File trigger takes the files present now as seen.`,
    access: { object: '/Pipelines/{id}', action: 'Update', namespace: PIPELINE },
    response: TriggerDto,
    etag: true,
  })
  createTrigger(@CurrentCaller() caller: Caller, @Param('id', entryId) id: string, @Body() body: TriggerInputDto): Promise<Versioned<TriggerDto>> {
    return this.triggers.create(caller, id, body);
  }

  @Route({
    method: 'GET',
    path: 'triggers/:triggerId',
    summary: 'Get a trigger',
    description: 'Needs Read on its pipeline.',
    access: { object: '/PipelineTriggers/{triggerId}', action: 'Read', namespace: TRIGGER },
    response: TriggerDto,
    etag: true,
  })
  getTrigger(@CurrentCaller() caller: Caller, @Param('triggerId', triggerId) id: string): Promise<Versioned<TriggerDto>> {
    return this.triggers.get(caller, id);
  }

  @Route({
    method: 'POST',
    path: 'triggers/:triggerId/run-as-me',
    summary: 'Run a trigger as me',
    description: `The caller becomes the owner, with the checks of a creator (Update and Execute on the pipeline, the profile usable by the caller). ${OWNER_CHECKS}`,
    access: { object: '/PipelineTriggers/{triggerId}', action: 'Update', namespace: TRIGGER },
    response: TriggerDto,
    etag: true,
  })
  runTriggerAsMe(@CurrentCaller() caller: Caller, @Param('triggerId', triggerId) id: string): Promise<Versioned<TriggerDto>> {
    return this.triggers.runAsMe(caller, id);
  }

  @Route({
    method: 'PUT',
    path: 'triggers/:triggerId',
    summary: 'Replace a trigger',
    description: `A body id other than the path's is 400; created, modified, ownerPrincipal and lastTriggered are ignored (the owner stays). ${OWNER_CHECKS} Enabling restarts its due times from now: those missed while disabled are not fired.`,
    access: { object: '/PipelineTriggers/{triggerId}', action: 'Update', namespace: TRIGGER },
    response: TriggerDto,
    etag: true,
  })
  replaceTrigger(
    @CurrentCaller() caller: Caller,
    @Param('triggerId', triggerId) id: string,
    @Body() body: TriggerInputDto,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<TriggerDto>> {
    return this.triggers.replace(caller, id, body, ifMatch);
  }

  @Route({
    method: 'PATCH',
    path: 'triggers/:triggerId',
    summary: 'Patch a trigger',
    description: 'Validated like a replace; changes to id, created, modified, ownerPrincipal and lastTriggered are ignored.',
    access: { object: '/PipelineTriggers/{triggerId}', action: 'Update', namespace: TRIGGER },
    response: TriggerDto,
    patch: true,
    etag: true,
  })
  patchTrigger(
    @CurrentCaller() caller: Caller,
    @Param('triggerId', triggerId) id: string,
    @PatchBody() patch: JsonPatch,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<TriggerDto>> {
    return this.triggers.patch(caller, id, patch, ifMatch);
  }

  @Route({
    method: 'DELETE',
    path: 'triggers/:triggerId',
    summary: 'Delete a trigger',
    description: 'With its firings. Needs Update on its pipeline (changing a pipeline’s triggers is changing it); the runs it started stay.',
    access: { object: '/PipelineTriggers/{triggerId}', action: 'Update', namespace: TRIGGER },
    response: MessageDto,
    etag: true,
  })
  deleteTrigger(
    @CurrentCaller() caller: Caller,
    @Param('triggerId', triggerId) id: string,
    @IfMatch() ifMatch: EntityTagCondition | undefined,
  ): Promise<MessageDto> {
    return this.triggers.delete(caller, id, ifMatch);
  }

  @Route({
    method: 'GET',
    path: 'triggers/:triggerId/firings',
    summary: 'List the firings of a trigger',
    description: 'Newest first unless sorted. A firing is Success with the runId it started, or Failed with the error that kept it from starting one.',
    access: { object: '/PipelineTriggers/{triggerId}', action: 'Read', namespace: TRIGGER },
    list: TRIGGER_FIRING_LIST_QUERY,
    response: FiringListDto,
  })
  listTriggerFirings(
    @CurrentCaller() caller: Caller,
    @Param('triggerId', triggerId) id: string,
    @ListParams() query: ListQuery,
  ): Promise<ListEnvelope<FiringDto>> {
    return this.triggers.firings(caller, id, query);
  }

  @Route({
    method: 'GET',
    path: 'firings',
    summary: 'List the firings of all triggers',
    description: 'The firings of the triggers of pipelines the caller may read, newest first unless sorted; 403 without Read on /Pipelines in any namespace.',
    access: { object: '/Pipelines', action: 'Read', namespaced: true },
    list: FIRING_LIST_QUERY,
    response: FiringListDto,
  })
  listFirings(@CurrentCaller() caller: Caller, @ListParams() query: ListQuery, @ListScope() scope: NamespaceScope): Promise<ListEnvelope<FiringDto>> {
    return this.triggers.allFirings(caller, query, scope);
  }
}

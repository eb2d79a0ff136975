import { Injectable } from '@nestjs/common';
import { GroupsService } from '../auth/groups.service.js';
import { ClusterService } from '../cluster/cluster.service.js';
import { Clock } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { ConflictError, HubError, InvalidInputError, NotFoundError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import type { Caller } from '../common/http/caller.js';
import { requireIfMatch, Versioned, type EntityTagCondition } from '../common/http/entity-tag.js';
import { toListEnvelope, type ListEnvelope } from '../common/http/list-envelope.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import { applyJsonPatch, type JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import { validateInput } from '../common/validation/validate-input.js';
import { ExecutionProfilesService } from '../execution-profiles/execution-profiles.service.js';
import { ProfileBindingsService } from '../execution-profiles/profile-bindings.service.js';
import { AccessService } from '../rbac/access.service.js';
import {
  TriggerInputDto,
  type FiringDto,
  type TriggerDto,
  type TriggerListItemDto,
  type TriggerSpecDto,
  type TriggerSpecShape,
} from './dto/pipeline-trigger.dto.js';
import { pipelineEntryNotFound } from './pipeline-entries.service.js';
import { PipelineEntriesRepository, type PipelineEntryRow } from './pipeline-entries.repository.js';
import {
  PipelineTriggersRepository,
  type FiringRow,
  type SeenFile,
  type TriggerChanges,
  type TriggerListRow,
  type TriggerRow,
} from './pipeline-triggers.repository.js';
import { matchingFiles, watchedPathProblem } from './trigger-files.js';
import { ownerOf, TriggerFiringLoop } from './trigger-firing-loop.js';
import { dueAfter, ScheduleProblem, CronSchedule } from './trigger-schedule.js';

const CRON_FIELDS = ['cronExpression', 'timezone', 'startTime', 'endTime'] as const;
const FILE_FIELDS = ['path', 'pattern', 'event', 'recursive', 'pollSeconds'] as const;

export function triggerNotFound(id: string): NotFoundError {
  return new NotFoundError(`Trigger ${id} not found`);
}

export function toTriggerResponse(row: TriggerRow): TriggerDto {
  return {
    id: row.id,
    pipelineId: row.pipelineId,
    created: row.created,
    modified: row.modified,
    disabled: row.disabled,
    trigger: row.spec,
    executionProfileId: row.executionProfileId,
    ownerPrincipal: row.ownerId,
    ...(row.lastTriggered && { lastTriggered: row.lastTriggered }),
  };
}

function toTriggerListItem(row: TriggerListRow): TriggerListItemDto {
  return {
    id: row.id,
    pipelineId: row.pipelineId,
    created: row.created,
    modifed: row.modified,
    disabled: row.disabled,
    trigger: row.spec,
    executionProfileId: row.executionProfileId,
    ownerPrincipal: row.ownerId,
    ...(row.lastTriggered && { lastTriggered: row.lastTriggered }),
  };
}

function toFiringResponse(row: FiringRow): FiringDto {
  return {
    triggerId: row.triggerId,
    triggerTime: row.triggerTime,
    state: row.state,
    ...(row.runId && { runId: row.runId }),
    ...(row.error && { error: row.error }),
  };
}

function versioned(row: TriggerRow): Versioned<TriggerDto> {
  return new Versioned(toTriggerResponse(row), row.version);
}

/** A trigger spec as stored: the fields of its type that were sent, each checked; 400 naming the field otherwise. */
function specOf(input: TriggerSpecDto): TriggerSpecShape {
  const [own, foreign] = input.type === 'Cron' ? [CRON_FIELDS, FILE_FIELDS] : [FILE_FIELDS, CRON_FIELDS];
  for (const field of foreign) if (input[field] !== undefined) throw InvalidInputError.at(`/trigger/${field}`, `A ${input.type} trigger has no ${field}`);
  const required = input.type === 'Cron' ? ['cronExpression'] : ['path', 'pattern', 'event'];
  for (const field of required)
    if (input[field as keyof TriggerSpecDto] === undefined) throw InvalidInputError.at(`/trigger/${field}`, `A ${input.type} trigger needs ${field}`);
  const spec: Record<string, unknown> = { type: input.type };
  for (const field of own) if (input[field] !== undefined) spec[field] = input[field];
  if (input.type === 'Cron') {
    try {
      new CronSchedule(input.cronExpression as string, input.timezone ?? 'UTC');
    } catch (error) {
      if (error instanceof ScheduleProblem) throw InvalidInputError.at(`/trigger/${error.field}`, error.message);
      throw error;
    }
    if (input.startTime && input.endTime && Date.parse(input.endTime) <= Date.parse(input.startTime))
      throw InvalidInputError.at('/trigger/endTime', `endTime ${input.endTime} must be after startTime ${input.startTime}`);
  } else if (input.pattern?.includes('/'))
    throw InvalidInputError.at('/trigger/pattern', `pattern '${input.pattern}' is matched on a file name, which holds no /`);
  return spec as TriggerSpecShape;
}

/** Whether the files a File trigger sees change with this update (so that those present are taken as seen again). */
function watchChanged(before: TriggerSpecShape, after: TriggerSpecShape): boolean {
  return (
    before.type !== after.type || before.path !== after.path || before.pattern !== after.pattern || (before.recursive ?? false) !== (after.recursive ?? false)
  );
}

/** Millisecond 0 of the second: due times and poll instants count from whole seconds (api-map §7). */
function wholeSecond(time: Date): Date {
  return new Date(Math.floor(time.getTime() / 1000) * 1000);
}

/**
 * Triggers of pipelines (api-map §7 "Trigger semantics"): checked as their pipeline (the routes
 * decide Read, Update; Execute to own is checked here for the owner), owned by their creator or
 * by whoever last ran run-as-me. The firing loop (trigger-firing-loop.ts) fires them.
 */
@Injectable()
export class PipelineTriggersService {
  constructor(
    private readonly triggers: PipelineTriggersRepository,
    private readonly entries: PipelineEntriesRepository,
    private readonly profiles: ExecutionProfilesService,
    private readonly bindings: ProfileBindingsService,
    private readonly access: AccessService,
    private readonly groups: GroupsService,
    private readonly cluster: ClusterService,
    private readonly config: HubConfig,
    private readonly clock: Clock,
    private readonly loop: TriggerFiringLoop,
  ) {}

  async list(_caller: Caller, pipelineId: string, query: ListQuery): Promise<ListEnvelope<TriggerListItemDto>> {
    await this.pipeline(pipelineId);
    return toListEnvelope(await this.triggers.list(pipelineId.toLowerCase(), query), query, toTriggerListItem);
  }

  /** A trigger of the path's pipeline, owned by the caller (who needs Execute on it besides the route's Update). */
  async create(caller: Caller, pipelineId: string, input: TriggerInputDto): Promise<Versioned<TriggerDto>> {
    const entry = await this.pipeline(pipelineId);
    const { changes, seen } = await this.prepare(caller, entry, input, undefined, true);
    const created = await this.triggers.insert(changes, seen);
    await this.loop.changed();
    return versioned(created);
  }

  async get(_caller: Caller, id: string): Promise<Versioned<TriggerDto>> {
    return versioned(await this.found(id));
  }

  /** The caller becomes the owner, with the checks of a creator. */
  async runAsMe(caller: Caller, id: string): Promise<Versioned<TriggerDto>> {
    return this.update(caller, id, undefined, (current) => this.inputOf(current), true);
  }

  async replace(caller: Caller, id: string, input: TriggerInputDto, ifMatch: EntityTagCondition | undefined): Promise<Versioned<TriggerDto>> {
    if (input.id !== undefined && (typeof input.id !== 'string' || input.id.toLowerCase() !== id.toLowerCase()))
      throw InvalidInputError.at('/id', `id must be the trigger's id of the path (${id}) when present`);
    return this.update(caller, id, ifMatch, () => input, false);
  }

  async patch(caller: Caller, id: string, patch: JsonPatch, ifMatch: EntityTagCondition | undefined): Promise<Versioned<TriggerDto>> {
    return this.update(caller, id, ifMatch, (current) => validateInput(TriggerInputDto, applyJsonPatch(toTriggerResponse(current), patch)), false);
  }

  async delete(_caller: Caller, id: string, ifMatch: EntityTagCondition | undefined): Promise<MessageDto> {
    const current = await this.found(id);
    requireIfMatch(ifMatch, current.version);
    if (!(await this.triggers.delete(current.id, current.version))) throw new ConflictError('The trigger changed while this request was applied; retry');
    await this.loop.changed();
    return message(`Trigger ${current.id} deleted`);
  }

  async firings(_caller: Caller, id: string, query: ListQuery): Promise<ListEnvelope<FiringDto>> {
    const trigger = await this.found(id);
    return toListEnvelope(await this.triggers.listFirings(query, { triggerId: trigger.id }), query, toFiringResponse);
  }

  async allFirings(_caller: Caller, query: ListQuery, scope: NamespaceScope): Promise<ListEnvelope<FiringDto>> {
    return toListEnvelope(await this.triggers.listFirings(query, { scope }), query, toFiringResponse);
  }

  private async update(
    caller: Caller,
    id: string,
    ifMatch: EntityTagCondition | undefined,
    decide: (current: TriggerRow) => TriggerInputDto | Promise<TriggerInputDto>,
    asOwner: boolean,
  ): Promise<Versioned<TriggerDto>> {
    const current = await this.found(id);
    requireIfMatch(ifMatch, current.version);
    const input = await decide(current);
    const entry = await this.pipeline(current.pipelineId);
    const owner = asOwner ? caller : await ownerOf(this.groups, current);
    const { changes, seen } = await this.prepare(owner, entry, input, current, asOwner);
    if (!(await this.triggers.update(current.id, current.version, changes, seen)))
      throw new ConflictError('The trigger changed while this request was applied; retry');
    await this.loop.changed();
    return versioned(await this.found(id));
  }

  /**
   * The checks of a create or an update (api-map §7), for `owner`: the body's pipeline is the
   * path's, the spec's fields, the profile bound to the pipeline's namespace and usable by the
   * owner there, a File trigger's path watchable by the owner, and, for a new owner, Execute on
   * the pipeline. Enabling (or creating enabled) restarts its due times from now, with no catch-up.
   */
  private async prepare(
    owner: Caller,
    entry: PipelineEntryRow,
    input: TriggerInputDto,
    current: TriggerRow | undefined,
    newOwner: boolean,
  ): Promise<{ changes: TriggerChanges; seen?: SeenFile[] }> {
    if (input.pipelineId.toLowerCase() !== entry.id)
      throw InvalidInputError.at('/pipelineId', `pipelineId must be the pipeline of the path (${entry.id}); a trigger does not move between pipelines`);
    const spec = specOf(input.trigger);
    const namespace = { id: entry.namespaceId, name: entry.namespaceName };
    const profileId = input.executionProfileId.toLowerCase();
    const usable =
      (await this.profiles.find(profileId)) !== null &&
      (await this.bindings.isBound(profileId, entry.namespaceId)) &&
      (await this.access.require(owner, `/ExecutionProfiles/${profileId}`, 'Use', namespace).then(
        () => true,
        () => false,
      ));
    if (!usable)
      throw InvalidInputError.at(
        '/executionProfileId',
        `No execution profile ${profileId} is bound to namespace '${entry.namespaceName}' and usable by ${owner.userName} there`,
      );
    if (newOwner) await this.access.require(owner, `/Pipelines/${entry.id}`, 'Execute', namespace);
    if (spec.type === 'File') {
      const identity = await this.cluster.jobIdentityOf({ id: owner.userId, name: owner.userName }).catch((error: unknown) => {
        if (error instanceof HubError) throw InvalidInputError.at('/trigger/path', `path '${spec.path}' cannot be read as ${owner.userName}: ${error.message}`);
        throw error;
      });
      const problem = await watchedPathProblem(spec.path as string, this.config.triggerFileRoots, identity);
      if (problem) throw InvalidInputError.at('/trigger/path', problem);
    }
    const now = this.clock.now();
    const enabling = !input.disabled && (!current || current.disabled);
    const enabledAt = enabling || !current ? wholeSecond(now) : new Date(current.enabledAt);
    const nextDue = input.disabled ? null : dueAfter(spec, enabledAt.getTime(), now.getTime());
    // Files present when a File trigger is created or enabled (or starts watching elsewhere) are taken as seen.
    const rescan = spec.type === 'File' && !input.disabled && (enabling || (current !== undefined && watchChanged(current.spec, spec)));
    const seen = rescan
      ? await matchingFiles(
          spec.path as string,
          spec.pattern as string,
          spec.recursive ?? false,
          await this.cluster.jobIdentityOf({ id: owner.userId, name: owner.userName }),
        )
      : undefined;
    return {
      changes: {
        pipelineId: entry.id,
        owner: { id: owner.userId, name: owner.userName },
        disabled: input.disabled,
        spec,
        executionProfileId: profileId,
        enabledAt,
        nextDue: nextDue === null ? null : new Date(nextDue),
      },
      seen,
    };
  }

  /** A trigger as a body, for an update that keeps what it is (run-as-me). */
  private inputOf(current: TriggerRow): Promise<TriggerInputDto> {
    return validateInput(TriggerInputDto, {
      pipelineId: current.pipelineId,
      disabled: current.disabled,
      trigger: current.spec,
      executionProfileId: current.executionProfileId,
    });
  }

  private async pipeline(id: string): Promise<PipelineEntryRow> {
    const entry = await this.entries.findById(id);
    if (!entry) throw pipelineEntryNotFound(id);
    if (entry.type !== 'Pipeline') throw new NotFoundError(`Folder '${entry.name}' has no triggers: only a pipeline has`);
    return entry;
  }

  private async found(id: string): Promise<TriggerRow> {
    const trigger = await this.triggers.find(id);
    if (!trigger) throw triggerNotFound(id);
    return trigger;
  }
}

import { Injectable } from '@nestjs/common';
import { ConflictError, InvalidInputError, NotFoundError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import type { Caller } from '../common/http/caller.js';
import { requireIfMatch, Versioned, type EntityTagCondition } from '../common/http/entity-tag.js';
import { toListEnvelope, type ListEnvelope } from '../common/http/list-envelope.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import { applyJsonPatch, type JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import { applyProjection, type Projection } from '../common/query/projection.js';
import { validateInput } from '../common/validation/validate-input.js';
import { NamespacesService, type NamespaceRef } from '../namespaces/namespaces.service.js';
import { NO_SUCH_NAMESPACE } from '../rbac/access-evaluator.js';
import { AccessService } from '../rbac/access.service.js';
import {
  PipelineEntryInputDto,
  toPipelineEntryResponse,
  type PipelineEntryDto,
  type PipelineEntryType,
  type PipelineEntryValidationInputDto,
  type PipelineValidationDto,
} from './dto/pipeline-entry.dto.js';
import { namespaceFilterOf, narrowedToNamespaces } from './list-queries.js';
import { PipelineEntriesRepository, type PipelineEntryChanges, type PipelineEntryRow } from './pipeline-entries.repository.js';
import { validatePipelineSpec, type PipelineSpecShape } from './pipeline-validation.js';

export function pipelineEntryNotFound(id: string): NotFoundError {
  return new NotFoundError(`Pipeline entry ${id} not found`);
}

function noSuchNamespace(name: string): InvalidInputError {
  return InvalidInputError.at('/namespace', `No namespace is named '${name}'`);
}

function versioned(row: PipelineEntryRow): Versioned<PipelineEntryDto> {
  return new Versioned(toPipelineEntryResponse(row), row.version);
}

/** A spec as stored: the validated body's JSON (its DTO instances made plain). */
function plainSpec(spec: object | undefined): PipelineSpecShape | null {
  return spec === undefined ? null : (JSON.parse(JSON.stringify(spec)) as PipelineSpecShape);
}

/** The problem with an entry's type and spec, if any: a folder carries no spec. */
function folderSpecProblem(type: PipelineEntryType, spec: object | undefined): string | undefined {
  return type === 'Folder' && spec !== undefined ? 'A folder carries no spec' : undefined;
}

@Injectable()
export class PipelineEntriesService {
  constructor(
    private readonly entries: PipelineEntriesRepository,
    private readonly namespaces: NamespacesService,
    private readonly access: AccessService,
  ) {}

  /** The entries in `scope` (where the caller may read them), narrowed further by a `namespace` filter. */
  async query(_caller: Caller, query: ListQuery, scope: NamespaceScope): Promise<ListEnvelope<PipelineEntryDto>> {
    const names = namespaceFilterOf(query);
    const ids = names && [...(await this.namespaces.findByNames(names)).values()].map((namespace) => namespace.id);
    const narrowed = narrowedToNamespaces(query, scope, ids);
    return toListEnvelope(await this.entries.list(narrowed.query, narrowed.scope), query, toPipelineEntryResponse);
  }

  async create(_caller: Caller, input: PipelineEntryInputDto): Promise<Versioned<PipelineEntryDto>> {
    const type = input._type ?? 'Pipeline';
    const problem = folderSpecProblem(type, input.spec);
    if (problem) throw InvalidInputError.at('/spec', problem);
    const namespace = await this.namespaces.find({ name: input.namespace });
    if (!namespace) throw noSuchNamespace(input.namespace);
    return versioned(await this.entries.insert(changesFrom(input, type, namespace)));
  }

  async get(_caller: Caller, id: string, projection: Projection | undefined): Promise<Versioned<Partial<PipelineEntryDto>>> {
    const entry = await this.entries.findById(id);
    if (!entry) throw pipelineEntryNotFound(id);
    return new Versioned(applyProjection(toPipelineEntryResponse(entry), projection), entry.version);
  }

  async replace(caller: Caller, id: string, input: PipelineEntryInputDto, ifMatch: EntityTagCondition | undefined): Promise<Versioned<PipelineEntryDto>> {
    return this.update(caller, id, ifMatch, () => input);
  }

  async patch(caller: Caller, id: string, patch: JsonPatch, ifMatch: EntityTagCondition | undefined): Promise<Versioned<PipelineEntryDto>> {
    return this.update(caller, id, ifMatch, (current) => validateInput(PipelineEntryInputDto, applyJsonPatch(toPipelineEntryResponse(current), patch)));
  }

  /** Deletes a pipeline, or a folder that holds nothing (409 otherwise). */
  async delete(_caller: Caller, id: string, ifMatch: EntityTagCondition | undefined): Promise<MessageDto> {
    const deleted = await this.entries.delete(id, (current) => requireIfMatch(ifMatch, current.version));
    if (!deleted) throw pipelineEntryNotFound(id);
    return message(`${deleted.type} '${deleted.name}' deleted`);
  }

  /** The rules of a runnable pipeline, all at once (none for a folder, which carries no spec). */
  validate(_caller: Caller, input: PipelineEntryValidationInputDto): PipelineValidationDto {
    const type = input._type ?? 'Pipeline';
    const problem = folderSpecProblem(type, input.spec);
    if (type === 'Folder') return { errors: problem ? [problem] : [] };
    return { errors: validatePipelineSpec(plainSpec(input.spec) ?? undefined) };
  }

  /**
   * A replace or a patch. Moving an entry to another namespace is creating it there, so it needs
   * Create on /Pipelines in the new namespace too (and a folder moves so only when empty).
   */
  private async update(
    caller: Caller,
    id: string,
    ifMatch: EntityTagCondition | undefined,
    decide: (current: PipelineEntryRow) => PipelineEntryInputDto | Promise<PipelineEntryInputDto>,
  ): Promise<Versioned<PipelineEntryDto>> {
    const updated = await this.entries.update(id, async (current) => {
      requireIfMatch(ifMatch, current.version);
      const input = await decide(current);
      const type = input._type ?? current.type;
      if (type !== current.type) throw new ConflictError(`${current.type} '${current.name}' cannot become a ${type}: an entry keeps its _type`);
      const problem = folderSpecProblem(type, input.spec);
      if (problem) throw InvalidInputError.at('/spec', problem);
      const namespace = await this.namespaces.find({ name: input.namespace });
      // Checked before the namespace's existence, and named as the caller gave it, so that a
      // refusal tells nothing of which namespaces exist.
      if (namespace?.id !== current.namespaceId)
        await this.access.require(caller, '/Pipelines', 'Create', { id: namespace?.id ?? NO_SUCH_NAMESPACE, name: input.namespace });
      if (!namespace) throw noSuchNamespace(input.namespace);
      return changesFrom(input, type, namespace);
    });
    if (!updated) throw pipelineEntryNotFound(id);
    return versioned(updated);
  }
}

function changesFrom(input: PipelineEntryInputDto, type: PipelineEntryType, namespace: NamespaceRef): PipelineEntryChanges {
  return { namespaceId: namespace.id, type, name: input.name, folderId: input.folderId?.toLowerCase() ?? null, spec: plainSpec(input.spec) };
}

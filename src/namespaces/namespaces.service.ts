import { Injectable } from '@nestjs/common';
import { ChangeFeed, RowCache } from '../common/database/change-feed.js';
import type { EntityManager } from 'typeorm';
import { usesOf, type UsageCheck } from '../common/database/usage-checks.js';
import { ConflictError, NotFoundError } from '../common/errors/hub-errors.js';
import type { NamespaceScope } from '../common/http/access-scope.js';
import type { Caller } from '../common/http/caller.js';
import { requireIfMatch, Versioned, type EntityTagCondition } from '../common/http/entity-tag.js';
import { toListEnvelope, type ListEnvelope } from '../common/http/list-envelope.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import { applyJsonPatch, type JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import { validateInput } from '../common/validation/validate-input.js';
import { NamespaceInputDto, toNamespaceListItem, toNamespaceResponse, type NamespaceDto } from './dto/namespace.dto.js';
import type { Namespace } from './entities/namespace.entity.js';
import { NamespacesRepository, type NamespaceChanges } from './namespaces.repository.js';

/**
 * How an area tells that a namespace still holds its entities. The contract for an area whose
 * entities live in namespaces: store `namespace_id uuid NOT NULL REFERENCES namespaces ON DELETE
 * RESTRICT` (and show the name through a join), and register a check. The foreign key makes the
 * rule exact: an insert takes a key-share lock on the namespace row, which waits for the delete's
 * row lock, so no entity slips into a namespace being deleted, and renaming a namespace moves
 * nothing. The check only gives the 409 its words.
 */
export type NamespaceUsageCheck = UsageCheck;

/** What other areas learn of a namespace. */
export interface NamespaceRef {
  readonly id: string;
  readonly name: string;
}

/**
 * Where a resource of some area lives, the user who owns it when it has one, and the object a
 * permission on it is checked on when that is not the route's (an execution is checked as its job).
 */
export interface ResourcePlacement {
  readonly namespace: NamespaceRef;
  readonly ownerId?: string;
  readonly object?: string;
}

/**
 * How the access guard learns where a resource lives, so that a permission on it is checked in
 * its namespace (api-map §6). Registered by the resource's area under a kind such as
 * `authDomain`; resolves to null when there is no such resource.
 */
export type ResourceLocator = (id: string) => Promise<ResourcePlacement | null>;

function changesFrom(input: NamespaceInputDto): NamespaceChanges {
  return { name: input.name, description: input.description ?? null, isDefault: input.isDefault ?? false };
}

function versioned(namespace: Namespace): Versioned<NamespaceDto> {
  return new Versioned(toNamespaceResponse(namespace), namespace.version);
}

function notFound(id: string): NotFoundError {
  return new NotFoundError(`Namespace ${id} not found`);
}

@Injectable()
export class NamespacesService {
  private readonly usageChecks: NamespaceUsageCheck[] = [];
  private readonly locators = new Map<string, ResourceLocator>();

  /**
   * Namespaces by id and by name: every namespaced request and submission looks one up. Keyed by
   * name too, so that any change to any namespace clears it all (they change rarely).
   */
  private readonly cache: RowCache<NamespaceRef>;

  constructor(
    private readonly namespaces: NamespacesRepository,
    changes: ChangeFeed,
  ) {
    this.cache = new RowCache<NamespaceRef>(changes, 'namespaces').clearOn('namespaces');
    this.registerResourceLocator('namespace', async (id) => {
      const namespace = await this.find({ id });
      return namespace && { namespace };
    });
  }

  /** Called by each area whose entities live in namespaces, so that a namespace in use is not deleted. */
  registerUsageCheck(check: NamespaceUsageCheck): void {
    this.usageChecks.push(check);
  }

  /** Called by each area whose single resources are guarded in their own namespace. */
  registerResourceLocator(kind: string, locate: ResourceLocator): void {
    if (this.locators.has(kind)) throw new Error(`A resource locator for ${kind} is already registered`);
    this.locators.set(kind, locate);
  }

  /** Where a resource lives, through the locator its area registered; null when there is no such resource. */
  locate(kind: string, id: string): Promise<ResourcePlacement | null> {
    const locate = this.locators.get(kind);
    if (!locate) throw new Error(`No resource locator is registered for ${kind}`);
    return locate(id);
  }

  /** The namespaces in `scope` (those where the caller may read them). */
  async query(_caller: Caller, query: ListQuery, scope: NamespaceScope): Promise<ListEnvelope<NamespaceDto>> {
    return toListEnvelope(await this.namespaces.list(query, scope), query, toNamespaceListItem);
  }

  /** A namespace's id and name, by id or by name (ignoring case), for other areas; null when there is none. */
  async find(reference: { id: string } | { name: string }): Promise<NamespaceRef | null> {
    const key = 'id' in reference ? reference.id.toLowerCase() : `name:${reference.name.toLowerCase()}`;
    return this.cache.get(key, async () => {
      const namespace = 'id' in reference ? await this.namespaces.findById(reference.id) : await this.namespaces.findByName(reference.name);
      return namespace && { id: namespace.id, name: namespace.name };
    });
  }

  /** Namespaces by name (ignoring case), keyed by lower-case name, in one query. */
  async findByNames(names: readonly string[]): Promise<Map<string, NamespaceRef>> {
    if (names.length === 0) return new Map();
    const found = await this.namespaces.findByNames([...new Set(names.map((name) => name.toLowerCase()))]);
    return new Map(found.map((namespace) => [namespace.name.toLowerCase(), { id: namespace.id, name: namespace.name }]));
  }

  async create(_caller: Caller, input: NamespaceInputDto): Promise<Versioned<NamespaceDto>> {
    return versioned(await this.namespaces.insert(changesFrom(input)));
  }

  async get(_caller: Caller, id: string): Promise<Versioned<NamespaceDto>> {
    const namespace = await this.namespaces.findById(id);
    if (!namespace) throw notFound(id);
    return versioned(namespace);
  }

  async replace(_caller: Caller, id: string, input: NamespaceInputDto, ifMatch: EntityTagCondition | undefined): Promise<Versioned<NamespaceDto>> {
    const updated = await this.namespaces.update(id, (current) => {
      requireIfMatch(ifMatch, current.version);
      return changesFrom(input);
    });
    this.cache.clear();
    if (!updated) throw notFound(id);
    return versioned(updated);
  }

  async patch(_caller: Caller, id: string, patch: JsonPatch, ifMatch: EntityTagCondition | undefined): Promise<Versioned<NamespaceDto>> {
    const updated = await this.namespaces.update(id, async (current) => {
      requireIfMatch(ifMatch, current.version);
      return changesFrom(await validateInput(NamespaceInputDto, applyJsonPatch(toNamespaceResponse(current), patch)));
    });
    this.cache.clear();
    if (!updated) throw notFound(id);
    return versioned(updated);
  }

  async delete(_caller: Caller, id: string, ifMatch: EntityTagCondition | undefined): Promise<MessageDto> {
    const deleted = await this.namespaces.delete(id, async (current, manager) => {
      requireIfMatch(ifMatch, current.version);
      await this.refuseIfInUse(current, manager);
    });
    this.cache.clear();
    if (!deleted) throw notFound(id);
    return message(`Namespace '${deleted.name}' deleted`);
  }

  private async refuseIfInUse(namespace: Namespace, manager: EntityManager): Promise<void> {
    const held = await usesOf(this.usageChecks, namespace.id, manager);
    if (held.length > 0) throw new ConflictError(`Namespace '${namespace.name}' still holds ${held.join(', ')}; delete or move them first`);
  }
}

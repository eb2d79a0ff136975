import { Injectable } from '@nestjs/common';
import { AuthDomainsService } from '../authdomains/auth-domains.service.js';
import { HubConfig } from '../common/config/hub-config.js';
import { InvalidInputError, NotFoundError, type FieldError } from '../common/errors/hub-errors.js';
import type { Caller } from '../common/http/caller.js';
import { requireIfMatch, Versioned, type EntityTagCondition } from '../common/http/entity-tag.js';
import { toListEnvelope, type ListEnvelope } from '../common/http/list-envelope.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import { applyJsonPatch, type JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import { isUuid } from '../common/query/query-values.js';
import { invalidBody, validateInput } from '../common/validation/validate-input.js';
import { NamespacesService, type NamespaceRef } from '../namespaces/namespaces.service.js';
import { NO_SUCH_NAMESPACE } from '../rbac/access-evaluator.js';
import { AccessService } from '../rbac/access.service.js';
import { LibraryDefinitionInputDto, toLibraryDefinitionResponse, type LibraryDefinitionDto, type LibraryDefinitionRow } from './dto/library-definition.dto.js';
import { LibraryDefinitionsRepository, type LibraryDefinitionChanges } from './library-definitions.repository.js';
import { libraryPathProblem } from './library-paths.js';

/** The most keys a definition's options hold (they travel to every worker as HUB_LIBRARY_OPTIONS). */
const MAX_OPTIONS = 32;
/** A PostgreSQL schema name as a worker may quote it: letters, digits, `_` and `$`, not leading with a digit. */
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

export function libraryDefinitionNotFound(id: string): NotFoundError {
  return new NotFoundError(`Library definition ${id} not found`);
}

/**
 * Library definitions (api-map §5): what a published library reads, with which engine, in a
 * namespace. A path must lie under HUB_LIBRARY_ROOTS; a postgres definition names an auth domain
 * instead, whose credential the hub resolves only when a worker needs it.
 */
@Injectable()
export class LibraryDefinitionsService {
  constructor(
    private readonly definitions: LibraryDefinitionsRepository,
    private readonly namespaces: NamespacesService,
    private readonly domains: AuthDomainsService,
    private readonly access: AccessService,
    private readonly config: HubConfig,
  ) {}

  async query(_caller: Caller, query: ListQuery): Promise<ListEnvelope<LibraryDefinitionDto>> {
    return toListEnvelope(await this.definitions.list(query), query, toLibraryDefinitionResponse);
  }

  async create(caller: Caller, input: LibraryDefinitionInputDto): Promise<Versioned<LibraryDefinitionDto>> {
    const namespace = await this.namespaces.find({ name: input.namespace });
    if (!namespace) throw InvalidInputError.at('/namespace', `No namespace is named '${input.namespace}'`);
    return versioned(await this.definitions.insert(await this.changesFrom(caller, input, namespace)));
  }

  async get(_caller: Caller, id: string): Promise<Versioned<LibraryDefinitionDto>> {
    return versioned(await this.find(id));
  }

  /** A definition as stored, for the published libraries of the area; 404 when there is none. */
  async find(id: string): Promise<LibraryDefinitionRow> {
    const definition = await this.definitions.findById(id);
    if (!definition) throw libraryDefinitionNotFound(id);
    return definition;
  }

  async replace(
    caller: Caller,
    id: string,
    input: LibraryDefinitionInputDto,
    ifMatch: EntityTagCondition | undefined,
  ): Promise<Versioned<LibraryDefinitionDto>> {
    return this.update(caller, id, ifMatch, () => input);
  }

  async patch(caller: Caller, id: string, patch: JsonPatch, ifMatch: EntityTagCondition | undefined): Promise<Versioned<LibraryDefinitionDto>> {
    return this.update(caller, id, ifMatch, async (current) =>
      validateInput(LibraryDefinitionInputDto, applyJsonPatch(toLibraryDefinitionResponse(current), patch)),
    );
  }

  /** A published definition is refused (409): its library's workers read it. */
  async delete(_caller: Caller, id: string, ifMatch: EntityTagCondition | undefined): Promise<MessageDto> {
    const deleted = await this.definitions.delete(id, (current) => requireIfMatch(ifMatch, current.version));
    if (!deleted) throw libraryDefinitionNotFound(id);
    return message(`Library definition '${deleted.name}' deleted`);
  }

  /** Moving a definition to another namespace is creating it there: Create on /LibraryDefinitions there too. */
  private async update(
    caller: Caller,
    id: string,
    ifMatch: EntityTagCondition | undefined,
    decide: (current: LibraryDefinitionRow) => LibraryDefinitionInputDto | Promise<LibraryDefinitionInputDto>,
  ): Promise<Versioned<LibraryDefinitionDto>> {
    const updated = await this.definitions.update(id, async (current) => {
      requireIfMatch(ifMatch, current.version);
      const currentNamespace = await this.namespaces.find({ id: current.namespaceId });
      const input = await decide({ ...current, namespaceName: currentNamespace?.name ?? '' });
      const namespace = await this.namespaces.find({ name: input.namespace });
      if (namespace?.id !== current.namespaceId)
        await this.access.require(caller, '/LibraryDefinitions', 'Create', { id: namespace?.id ?? NO_SUCH_NAMESPACE, name: input.namespace });
      if (!namespace) throw InvalidInputError.at('/namespace', `No namespace is named '${input.namespace}'`);
      return this.changesFrom(caller, input, namespace);
    });
    if (!updated) throw libraryDefinitionNotFound(id);
    return this.get(caller, id);
  }

  /** The stored form of a valid input: every rule of api-map §5 on path and options, each problem named. */
  private async changesFrom(caller: Caller, input: LibraryDefinitionInputDto, namespace: NamespaceRef): Promise<LibraryDefinitionChanges> {
    const errors: FieldError[] = [];
    const options = input.options ?? {};
    const path = input.path ?? null;
    if (input.engine === 'postgres') {
      if (path !== null) errors.push({ path: '/path', message: 'A postgres definition has no path: its auth domain holds the connection' });
      errors.push(...(await this.postgresOptionProblems(caller, options)));
    } else {
      if (path === null) errors.push({ path: '/path', message: `path is required for the ${input.engine} engine` });
      else {
        const problem = await libraryPathProblem(path, this.config.libraryRoots);
        if (problem) errors.push({ path: '/path', message: problem });
      }
      errors.push(...plainOptionProblems(options));
    }
    if (errors.length > 0) throw invalidBody(errors);
    return { namespaceId: namespace.id, name: input.name, engine: input.engine, path, options };
  }

  /** `authDomainId` an auth domain that exists (the caller may see), `schema` a plain name; nothing else. */
  private async postgresOptionProblems(caller: Caller, options: Record<string, unknown>): Promise<FieldError[]> {
    const errors: FieldError[] = [];
    for (const key of Object.keys(options))
      if (key !== 'authDomainId' && key !== 'schema')
        errors.push({ path: `/options/${key}`, message: `A postgres definition's options are authDomainId and schema, not ${key}` });
    const domainId = options.authDomainId;
    if (typeof domainId !== 'string' || !isUuid(domainId))
      errors.push({ path: '/options/authDomainId', message: 'options.authDomainId must be the id of an auth domain' });
    else {
      const found = await this.domains.get(caller, domainId.toLowerCase()).catch((error: unknown) => {
        if (error instanceof NotFoundError) return null;
        throw error;
      });
      if (!found) errors.push({ path: '/options/authDomainId', message: `No auth domain has the id ${domainId}` });
    }
    if (options.schema !== undefined && (typeof options.schema !== 'string' || !SCHEMA_NAME.test(options.schema)))
      errors.push({ path: '/options/schema', message: 'options.schema must be a schema name (letters, digits, _ and $; 63 at most)' });
    return errors;
  }
}

/** Options of a file engine: at most MAX_OPTIONS plain values (strings, numbers, booleans), never an auth domain. */
function plainOptionProblems(options: Record<string, unknown>): FieldError[] {
  const keys = Object.keys(options);
  if (keys.length > MAX_OPTIONS) return [{ path: '/options', message: `options holds at most ${MAX_OPTIONS} settings` }];
  return keys.flatMap((key) => {
    const value = options[key];
    if (key === 'authDomainId') return [{ path: '/options/authDomainId', message: 'Only a postgres definition names an auth domain' }];
    return ['string', 'number', 'boolean'].includes(typeof value) && String(value).length <= 1024
      ? []
      : [{ path: `/options/${key}`, message: `options.${key} must be a string (up to 1024 characters), a number or a boolean` }];
  });
}

function versioned(definition: LibraryDefinitionRow): Versioned<LibraryDefinitionDto> {
  return new Versioned(toLibraryDefinitionResponse(definition), definition.version);
}

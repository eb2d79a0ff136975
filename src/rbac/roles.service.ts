import { isDeepStrictEqual } from 'node:util';
import { Injectable } from '@nestjs/common';
import { ConflictError, ForbiddenError, InvalidInputError, NotFoundError, type FieldError } from '../common/errors/hub-errors.js';
import type { ItemDenials } from '../common/http/access-scope.js';
import type { Caller } from '../common/http/caller.js';
import { requireIfMatch, Versioned, type EntityTagCondition } from '../common/http/entity-tag.js';
import { toListEnvelope, type ListEnvelope } from '../common/http/list-envelope.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import { applyJsonPatch, type JsonPatch } from '../common/patch/json-patch.js';
import type { ListQuery } from '../common/query/list-query.js';
import { invalidBody, validateInput } from '../common/validation/validate-input.js';
import { AccessEvaluator } from './access-evaluator.js';
import { AccessService } from './access.service.js';
import { RoleInputDto, toPermissionValue, toRoleResponse, type RoleDto } from './dto/role.dto.js';
import type { Role } from './entities/role.entity.js';
import { compileObjectMatcher } from './object-matcher.js';
import { RolesRepository, type RoleChanges } from './roles.repository.js';

function versioned(role: Role): Versioned<RoleDto> {
  return new Versioned(toRoleResponse(role), role.version);
}

function notFound(id: string): NotFoundError {
  return new NotFoundError(`Role ${id} not found`);
}

function readOnly(role: Role): ForbiddenError {
  return new ForbiddenError(`Role '${role.name}' is built in and read-only`);
}

/** The columns a body sets, once every permission's object compiles under its matcher. */
function changesFrom(input: RoleInputDto): RoleChanges {
  const permissions = input.permissions ?? [];
  const errors: FieldError[] = [];
  permissions.forEach((permission, index) => {
    try {
      compileObjectMatcher(permission.objectMatcher, permission.object);
    } catch (error) {
      errors.push({ path: `/permissions/${index}/object`, message: `object is not a valid ${permission.objectMatcher}: ${(error as Error).message}` });
    }
  });
  if (errors.length > 0) throw invalidBody(errors);
  return { name: input.name, description: input.description ?? null, permissions: permissions.map(toPermissionValue) };
}

@Injectable()
export class RolesService {
  constructor(
    private readonly roles: RolesRepository,
    private readonly evaluator: AccessEvaluator,
    private readonly access: AccessService,
  ) {}

  /** The roles, but those a Deny hides from the caller's single reads. */
  async query(_caller: Caller, query: ListQuery, denials: ItemDenials | undefined): Promise<ListEnvelope<RoleDto>> {
    return toListEnvelope(await this.roles.list(query, denials), query, toRoleResponse);
  }

  async create(_caller: Caller, input: RoleInputDto): Promise<Versioned<RoleDto>> {
    if (input.system) throw InvalidInputError.at('/system', 'system is set by the hub; only built-in roles are system roles');
    return versioned(await this.roles.insert(changesFrom(input)));
  }

  async get(_caller: Caller, id: string): Promise<Versioned<RoleDto>> {
    const role = await this.roles.findById(id);
    if (!role) throw notFound(id);
    return versioned(role);
  }

  async replace(caller: Caller, id: string, input: RoleInputDto, ifMatch: EntityTagCondition | undefined): Promise<Versioned<RoleDto>> {
    return this.update(caller, id, ifMatch, () => input);
  }

  async patch(caller: Caller, id: string, patch: JsonPatch, ifMatch: EntityTagCondition | undefined): Promise<Versioned<RoleDto>> {
    return this.update(caller, id, ifMatch, (current) => validateInput(RoleInputDto, applyJsonPatch(toRoleResponse(current), patch)));
  }

  /** Refused while bindings give the role (409): delete them first, so nobody loses access unawares. */
  async delete(_caller: Caller, id: string, ifMatch: EntityTagCondition | undefined): Promise<MessageDto> {
    const deleted = await this.roles.delete(id, async (current, manager) => {
      if (current.system) throw readOnly(current);
      requireIfMatch(ifMatch, current.version);
      const bindings = await this.roles.bindingCount(manager, id);
      if (bindings > 0) throw new ConflictError(`Role '${current.name}' is given by ${bindings} role binding${bindings > 1 ? 's' : ''}; delete them first`);
    });
    if (!deleted) throw notFound(id);
    this.evaluator.forgetAll();
    return message(`Role '${deleted.name}' deleted`);
  }

  /**
   * A replace or a patch. Changing what a role grants is granting it anew to everyone who holds
   * it, so it needs Use on the role (as binding it does), not only Update.
   */
  private async update(
    caller: Caller,
    id: string,
    ifMatch: EntityTagCondition | undefined,
    decide: (current: Role) => RoleInputDto | Promise<RoleInputDto>,
  ): Promise<Versioned<RoleDto>> {
    const updated = await this.roles.update(id, async (current) => {
      if (current.system) throw readOnly(current);
      requireIfMatch(ifMatch, current.version);
      const input = await decide(current);
      if (input.system) throw InvalidInputError.at('/system', 'system is set by the hub and cannot be changed');
      const changes = changesFrom(input);
      if (!isDeepStrictEqual(changes.permissions, current.permissions)) await this.access.require(caller, `/Roles/${id}`, 'Use', { id: null, name: '*' });
      return changes;
    });
    if (!updated) throw notFound(id);
    this.evaluator.forgetAll();
    return versioned(updated);
  }
}

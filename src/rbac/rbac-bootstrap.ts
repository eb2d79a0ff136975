import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { UsersService } from '../auth/users.service.js';
import { AccessEvaluator } from './access-evaluator.js';
import { ADMINISTRATOR_ROLE, BUILT_IN_ROLES } from './built-in-roles.js';
import { RoleBindingsRepository } from './role-bindings.repository.js';
import { RolesRepository } from './roles.repository.js';

/**
 * At every start (after the bootstrap administrator exists): the built-in roles as this release
 * defines them, and the HubAdministrator role in `*` for every system user, so the hub is never
 * left without an administrator. Idempotent, and safe when several hubs start together.
 */
@Injectable()
export class RbacBootstrap implements OnApplicationBootstrap {
  constructor(
    private readonly roles: RolesRepository,
    private readonly bindings: RoleBindingsRepository,
    private readonly users: UsersService,
    private readonly evaluator: AccessEvaluator,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.roles.upsertSystemRoles(BUILT_IN_ROLES);
    const administrator = await this.roles.findByName(ADMINISTRATOR_ROLE);
    if (!administrator) throw new Error(`The built-in role ${ADMINISTRATOR_ROLE} is missing`);
    for (const userId of await this.users.systemUserIds()) {
      await this.bindings.ensure({ roleId: administrator.id, principalId: userId, principalType: 'User', namespaceId: null });
    }
    this.evaluator.forgetAll();
  }
}

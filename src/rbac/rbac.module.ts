import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AuthModule } from '../auth/auth.module.js';
import { DatabaseModule } from '../common/database/database.module.js';
import { NamespacesModule } from '../namespaces/namespaces.module.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { AccessEvaluator } from './access-evaluator.js';
import { AccessController } from './access.controller.js';
import { AccessGuard } from './access.guard.js';
import { AccessService } from './access.service.js';
import { RoleGuard } from '../auth/role-guard.js';
import { EscalationGuard } from './escalation-guard.js';
import { AuditLog } from './audit-log.js';
import { AuditRepository } from './audit.repository.js';
import { AuditRecord } from './entities/audit-record.entity.js';
import { RoleBinding } from './entities/role-binding.entity.js';
import { Role } from './entities/role.entity.js';
import { RbacBootstrap } from './rbac-bootstrap.js';
import { RoleBindingsController } from './role-bindings.controller.js';
import { RoleBindingsRepository } from './role-bindings.repository.js';
import { RoleBindingsService } from './role-bindings.service.js';
import { RolesController } from './roles.controller.js';
import { RolesRepository } from './roles.repository.js';
import { RolesService } from './roles.service.js';

/**
 * Access control (api-map §6): roles, bindings, the evaluator, explain and the audit, the global
 * guard that decides every request after authentication, and the escalation guard, which it
 * registers with identity (which cannot import it).
 */
@Module({
  imports: [DatabaseModule.forFeature([Role, RoleBinding, AuditRecord]), AuthModule, NamespacesModule],
  controllers: [RolesController, RoleBindingsController, AccessController],
  providers: [
    AccessEvaluator,
    AccessGuard,
    AccessService,
    AuditLog,
    AuditRepository,
    RolesService,
    RolesRepository,
    RoleBindingsService,
    RoleBindingsRepository,
    RbacBootstrap,
    EscalationGuard,
    { provide: APP_GUARD, useExisting: AccessGuard },
  ],
  exports: [AccessEvaluator, AccessService],
})
export class RbacModule {
  constructor(namespaces: NamespacesService, bindings: RoleBindingsRepository, roleGuard: RoleGuard, escalation: EscalationGuard) {
    roleGuard.register(escalation);
    namespaces.registerUsageCheck({ holds: 'role bindings', count: (namespaceId, manager) => bindings.countIn(namespaceId, manager) });
  }
}

import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { DatabaseModule } from '../common/database/database.module.js';
import { NamespacesModule } from '../namespaces/namespaces.module.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { RbacModule } from '../rbac/rbac.module.js';
import { AuthDomainsController } from './auth-domains.controller.js';
import { AuthDomainsRepository } from './auth-domains.repository.js';
import { AuthDomainsService } from './auth-domains.service.js';
import { CredentialCipher } from './credential-cipher.js';
import { CredentialKeyCheck } from './credential-key-check.js';
import { CredentialsController } from './credentials.controller.js';
import { CredentialsRepository } from './credentials.repository.js';
import { CredentialsService } from './credentials.service.js';
import { AuthDomain } from './entities/auth-domain.entity.js';
import { Credential } from './entities/credential.entity.js';

/**
 * Auth domains and their ranked credentials (api-map §3). A domain lives in a namespace, and a
 * credential in its domain's: both are guarded there.
 */
@Module({
  imports: [DatabaseModule.forFeature([AuthDomain, Credential]), AuthModule, NamespacesModule, RbacModule],
  controllers: [AuthDomainsController, CredentialsController],
  providers: [AuthDomainsService, AuthDomainsRepository, CredentialsService, CredentialsRepository, CredentialCipher, CredentialKeyCheck],
  exports: [AuthDomainsService, CredentialsService],
})
export class AuthDomainsModule {
  constructor(namespaces: NamespacesService, domains: AuthDomainsRepository, credentials: CredentialsRepository) {
    namespaces.registerUsageCheck({ holds: 'auth domains', count: (namespaceId, manager) => domains.countIn(namespaceId, manager) });
    namespaces.registerResourceLocator('authDomain', async (id) => {
      const domain = await domains.findById(id);
      return domain && { namespace: { id: domain.namespaceId, name: domain.namespaceName } };
    });
    namespaces.registerResourceLocator('credential', async (id) => {
      const placement = await credentials.locationOf(id);
      return (
        placement && {
          namespace: { id: placement.namespaceId, name: placement.namespaceName },
          ownerId: placement.principalType === 'User' ? placement.principalId : undefined,
        }
      );
    });
  }
}

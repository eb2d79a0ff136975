import { createSecretKey, type KeyObject } from 'node:crypto';
import { join } from 'node:path';
import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { JwtModule } from '@nestjs/jwt';
import { HubConfig } from '../common/config/hub-config.js';
import { readOrCreateSecretFile } from '../common/config/secret-file.js';
import { DatabaseModule } from '../common/database/database.module.js';
import { AuthController } from './auth.controller.js';
import { AuthGuard } from './auth.guard.js';
import { AuthService, TOKEN_ISSUER } from './auth.service.js';
import { BootstrapAdministrator } from './bootstrap-administrator.js';
import { CallerCache } from './caller-cache.js';
import { GroupGroupMember, GroupUserMember } from './entities/group-member.entity.js';
import { Group } from './entities/group.entity.js';
import { LoginAddressFailure, LoginFailure, LoginFamiliarAddress } from './entities/login-failure.entity.js';
import { UserInvitation } from './entities/user-invitation.entity.js';
import { User } from './entities/user.entity.js';
import { GroupsController } from './groups.controller.js';
import { GroupsRepository } from './groups.repository.js';
import { GroupsService } from './groups.service.js';
import { LoginThrottle } from './login-throttle.js';
import { PasswordHasher } from './password-hasher.js';
import { PasswordPolicy } from './password-policy.js';
import { PrincipalsController } from './principals.controller.js';
import { RoleGuard } from './role-guard.js';
import { UsersController } from './users.controller.js';
import { UsersRepository } from './users.repository.js';
import { UsersService } from './users.service.js';

/**
 * HUB_JWT_SECRET, or a secret generated once and kept in the data directory, as a key object:
 * given a string, jsonwebtoken first tries to parse it as a PEM public key on every verification,
 * which cost more than the rest of the request's JavaScript.
 */
function jwtKey(config: HubConfig): KeyObject {
  return createSecretKey(Buffer.from(config.jwtSecret ?? readOrCreateSecretFile(join(config.dataDir, 'jwt.secret')), 'utf8'));
}

@Module({
  imports: [
    DatabaseModule.forFeature([User, Group, GroupUserMember, GroupGroupMember, UserInvitation, LoginFailure, LoginAddressFailure, LoginFamiliarAddress]),
    JwtModule.registerAsync({
      inject: [HubConfig],
      useFactory: (config: HubConfig) => ({
        secret: jwtKey(config),
        signOptions: { algorithm: 'HS256', issuer: TOKEN_ISSUER, expiresIn: config.tokenTtlSeconds },
        verifyOptions: { algorithms: ['HS256'], issuer: TOKEN_ISSUER },
      }),
    }),
  ],
  controllers: [AuthController, UsersController, GroupsController, PrincipalsController],
  providers: [
    AuthService,
    UsersService,
    GroupsService,
    UsersRepository,
    GroupsRepository,
    PasswordHasher,
    PasswordPolicy,
    LoginThrottle,
    CallerCache,
    BootstrapAdministrator,
    RoleGuard,
    { provide: APP_GUARD, useClass: AuthGuard },
  ],
  exports: [AuthService, UsersService, GroupsService, RoleGuard],
})
export class AuthModule {}

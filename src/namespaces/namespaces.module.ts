import { Module } from '@nestjs/common';
import { DatabaseModule } from '../common/database/database.module.js';
import { Namespace } from './entities/namespace.entity.js';
import { NamespacesController } from './namespaces.controller.js';
import { NamespacesRepository } from './namespaces.repository.js';
import { NamespacesService } from './namespaces.service.js';

@Module({
  imports: [DatabaseModule.forFeature([Namespace])],
  controllers: [NamespacesController],
  providers: [NamespacesService, NamespacesRepository],
  exports: [NamespacesService],
})
export class NamespacesModule {}

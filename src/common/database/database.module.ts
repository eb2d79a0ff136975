import { Global, Module, type DynamicModule } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { HubConfig } from '../config/hub-config.js';
import { HubLogger } from '../logging/hub-logger.js';
import { ChangeFeed } from './change-feed.js';
import { HubDatabase } from './hub-database.js';

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- an entity is any class
type EntityClass = Function;

/** Entities declared by the area modules; read when the data source opens, after every import. */
const declaredEntities = new Set<EntityClass>();

/** Holds the area modules' `forFeature` imports; it provides nothing itself. */
@Module({})
class DatabaseFeatureModule {}

/** Provides the TypeORM `DataSource`, the {@link ChangeFeed} and the {@link HubDatabase} behind them to every area. */
@Global()
@Module({})
export class DatabaseModule {
  static forRoot(): DynamicModule {
    return {
      module: DatabaseModule,
      providers: [
        {
          provide: HubDatabase,
          useFactory: (config: HubConfig, logger: HubLogger) => HubDatabase.open(config, logger.for('database'), [...declaredEntities]),
          inject: [HubConfig, HubLogger],
        },
        { provide: DataSource, useFactory: (database: HubDatabase) => database.dataSource, inject: [HubDatabase] },
        { provide: ChangeFeed, useFactory: (database: HubDatabase) => database.changes, inject: [HubDatabase] },
      ],
      exports: [HubDatabase, DataSource, ChangeFeed],
    };
  }

  /** Declares an area's entities: `imports: [DatabaseModule.forFeature([Namespace])]`. */
  static forFeature(entities: readonly EntityClass[]): DynamicModule {
    for (const entity of entities) declaredEntities.add(entity);
    return { module: DatabaseFeatureModule };
  }

  /** Every entity declared so far (the migration CLI's data source needs them). */
  static entities(): EntityClass[] {
    return [...declaredEntities];
  }
}

import { Global, Module, type DynamicModule } from '@nestjs/common';
import { HubConfig } from './hub-config.js';

/** Makes the validated {@link HubConfig} injectable everywhere. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: HubConfig): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: HubConfig, useValue: config }], exports: [HubConfig] };
  }
}

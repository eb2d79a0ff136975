import { Global, Module, type DynamicModule } from '@nestjs/common';
import type { Logger } from 'pino';
import { HubLogger } from './hub-logger.js';

@Global()
@Module({})
export class LoggingModule {
  static forRoot(root: Logger): DynamicModule {
    return { module: LoggingModule, providers: [{ provide: HubLogger, useValue: new HubLogger(root) }], exports: [HubLogger] };
  }
}

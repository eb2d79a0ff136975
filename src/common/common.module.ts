import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import type { Logger } from 'pino';
import { ClockModule } from './clock/clock.js';
import { ConfigModule } from './config/config.module.js';
import type { HubConfig } from './config/hub-config.js';
import { DatabaseModule } from './database/database.module.js';
import { ProblemFilter } from './errors/problem.filter.js';
import { ReplyInterceptor } from './http/reply.interceptor.js';
import { RouteRequestInterceptor } from './http/route-request.interceptor.js';
import { LoggingModule } from './logging/logging.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { ListCounts } from './query/list-counts.js';
import { InputValidationPipe } from './validation/input-validation.pipe.js';

/** What every area stands on: configuration, the clock, logging, the database, metrics, the scheduler and the HTTP pipeline. */
@Module({})
export class CommonModule {
  static forRoot(config: HubConfig, logger: Logger): DynamicModule {
    return {
      module: CommonModule,
      imports: [ConfigModule.forRoot(config), ClockModule, LoggingModule.forRoot(logger), DatabaseModule.forRoot(), MetricsModule, ScheduleModule.forRoot()],
      providers: [
        { provide: APP_FILTER, useClass: ProblemFilter },
        { provide: APP_PIPE, useClass: InputValidationPipe },
        { provide: APP_INTERCEPTOR, useClass: RouteRequestInterceptor },
        { provide: APP_INTERCEPTOR, useClass: ReplyInterceptor },
        ListCounts,
      ],
    };
  }
}

import { ApiProperty } from '../common/http/openapi-decorators.js';

export class HealthDto {
  @ApiProperty({ example: 'ok' })
  status!: 'ok';
}

export class ReadinessDto extends HealthDto {
  @ApiProperty({
    type: 'object',
    properties: { database: { type: 'string', enum: ['up'] }, migrations: { type: 'string', enum: ['applied'] } },
    required: ['database', 'migrations'],
    example: { database: 'up', migrations: 'applied' },
  })
  checks!: { database: 'up'; migrations: 'applied' };
}

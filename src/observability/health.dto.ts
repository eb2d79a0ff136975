import { ApiProperty } from '@nestjs/swagger';

export class HealthDto {
  @ApiProperty({ example: 'ok' })
  status!: 'ok';
}

export class ReadinessDto extends HealthDto {
  @ApiProperty({ example: { database: 'up', migrations: 'applied' } })
  checks!: { database: 'up'; migrations: 'applied' };
}

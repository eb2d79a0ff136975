import { ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import { ListOf } from '../../common/http/list-envelope.js';

/** `sessionStatus` (hub-interface §2.9). */
export const SESSION_STATUSES = ['Pending', 'Ready', 'Failed', 'Terminated', 'Blocked'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];
/** The statuses a session lives in: its job may run, the reaper watches it. */
export const LIVE_STATUSES: readonly SessionStatus[] = ['Pending', 'Ready', 'Blocked'];
/** Why a session failed or was terminated (api-map §8). */
export type EndReason = 'exited' | 'startTimeout' | 'terminated' | 'heartbeat' | 'deathClock' | 'deleted';

/** `POST /linksessions/sessions` (hub-interface §4.10). */
export class StartSessionDto {
  @ApiPropertyOptional({ example: 'files', description: 'A configuration the caller may Use; `files` when absent' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  configuration?: string;

  @ApiPropertyOptional({ example: 'desktop-42', description: 'Echoed back as clientSessionID' })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  clientSessionID?: string;

  @ApiPropertyOptional({ example: 'Analysis of March', description: 'Echoed back as clientSessionDescription' })
  @IsOptional()
  @IsString()
  @MaxLength(1024)
  clientDescription?: string;
}

export class SessionEventDto {
  @ApiProperty({ enum: SESSION_STATUSES, description: 'The status entered' })
  type!: string;

  @ApiProperty({ format: 'date-time' })
  when!: string;

  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'string' },
    description: '`reason` on Failed and Terminated, `exitCode` when the process exited, `message`',
  })
  details!: Record<string, string>;
}

export class LinkSessionDto {
  @ApiProperty({ format: 'uuid' })
  sessionID!: string;

  @ApiPropertyOptional()
  clientSessionID?: string;

  @ApiPropertyOptional()
  clientSessionDescription?: string;

  @ApiProperty({ enum: SESSION_STATUSES })
  status!: SessionStatus;

  @ApiPropertyOptional({ description: 'The absolute URL of the session’s proxy root; to its owner, once Ready' })
  sessionFilesystemURL?: string;

  @ApiProperty({ format: 'date-time', description: 'startTime + the configuration’s maxLifetimeSeconds' })
  deathClock!: string;

  @ApiProperty({ format: 'date-time' })
  startTime!: string;

  @ApiPropertyOptional({ format: 'date-time' })
  finishedTime?: string;

  @ApiPropertyOptional({ format: 'date-time' })
  lastHeartbeatTime?: string;

  @ApiProperty({ format: 'date-time' })
  nextExpectedHeartbeat!: string;

  @ApiProperty({ format: 'uuid', description: 'The owner’s user id' })
  ownerPrincipal!: string;

  @ApiPropertyOptional({ description: 'Sent as X-Session-Token to the proxy; to its owner, once Ready' })
  accessToken?: string;

  @ApiProperty({ example: 'files' })
  configurationName!: string;

  @ApiProperty({ description: 'CPU-hours: reserved CPUs (one) × hours from startTime to finishedTime (or now)' })
  cost!: number;

  @ApiProperty({ type: [SessionEventDto] })
  events!: SessionEventDto[];
}

export class LinkSessionListDto extends ListOf(LinkSessionDto) {}

export class SessionMessageDto {
  @ApiProperty({ example: 'Session 5f0c6a1e-4b8e-4a5e-9a55-0d7f3c1c2b11 terminated' })
  message!: string;
}

export class HeartbeatDto {
  @ApiProperty({ format: 'date-time' })
  nextExpectedHeartbeat!: string;
}

export class DeletedSessionsDto {
  @ApiProperty({ example: 3 })
  countDeleted!: number;

  @ApiProperty({ example: 0 })
  countFailed!: number;
}

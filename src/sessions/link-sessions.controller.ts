import { Body, Controller, Param, Query } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import type { FastifyRequest } from 'fastify';
import { HubConfig } from '../common/config/hub-config.js';
import type { ByteWindowReply } from '../common/http/byte-reply.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import { MessageDto } from '../common/http/message.dto.js';
import { Route } from '../common/http/route.decorator.js';
import { PatchBody, ResourceId } from '../common/http/route-params.js';
import type { JsonPatch } from '../common/patch/json-patch.js';
import { ListParams } from '../common/http/route-params.js';
import type { ListQuery } from '../common/query/list-query.js';
import type { RawQuery } from '../common/query/query-values.js';
import { DeletedSessionsDto, HeartbeatDto, LinkSessionDto, LinkSessionListDto, SessionMessageDto, StartSessionDto } from './dto/link-session.dto.js';
import { SESSION_LIST_QUERY } from './list-queries.js';
import { SessionConfigurationDto, SessionConfigurationEntryDto, SessionConfigurationInputDto } from './dto/session-configuration.dto.js';
import { LinkSessionsService } from './link-sessions.service.js';
import { SessionConfigurationsService } from './session-configurations.service.js';
import { RequestBase, viewerOf } from './session-viewer.js';

const sessionId = new ResourceId('Link session');
const OWNER_ONLY = 'Only the session’s owner: anyone else’s session is 404, administrators included.';
/** Configurations are named, not ids: the permission is on the collection (path placeholders are ids only). */
const CONFIGURATION = '/LinkSessionConfigurations';
/** Delete by filter takes the query's filters as plain parameters, each operator of each. */
const DELETE_FILTERS = Object.fromEntries(
  Object.entries(SESSION_LIST_QUERY.filters).flatMap(([field, spec]) =>
    spec.operators.map((operator) => [`filter[${field}][${operator}]`, `As for the query: ${field} ${operator}`]),
  ),
);
const WINDOW = {
  origin: 'start (default) or end: where offset counts from',
  offset: 'Bytes from the origin (int64, default 0)',
  limit: 'Bytes to read (1 to 16777216, default 65536)',
};

@ApiTags('Link sessions')
@Controller('api/v2/linksessions')
export class LinkSessionsController {
  constructor(
    private readonly sessions: LinkSessionsService,
    private readonly configurations: SessionConfigurationsService,
    private readonly config: HubConfig,
  ) {}

  // Configurations

  @Route({
    method: 'GET',
    path: 'configurations',
    summary: 'List configurations',
    description: 'The configurations the caller may Use (on /LinkSessionConfigurations/<name> in *), as `[{name, description}]`.',
    access: { self: true },
    response: [SessionConfigurationEntryDto],
  })
  listConfigurations(@CurrentCaller() caller: Caller): Promise<SessionConfigurationEntryDto[]> {
    return this.configurations.listUsable(caller);
  }

  @Route({
    method: 'POST',
    path: 'configurations',
    status: 201,
    summary: 'Create a configuration',
    description:
      'Beyond the interface. A readiness type other than stdout or port, a stdout readiness without a valid pattern (RE2 syntax), an empty command, non-array args, a timeout that is not a positive whole number, an unknown namespace or profile, or a maxLifetimeSeconds above the profile’s maxRunSeconds is a 400; an existing name (files included) is a 409.',
    access: { object: '/LinkSessionConfigurations', action: 'Create' },
    response: SessionConfigurationDto,
    errors: { 409: "A session configuration is named 'notebook' already" },
  })
  createConfiguration(@CurrentCaller() caller: Caller, @Body() body: SessionConfigurationInputDto): Promise<SessionConfigurationDto> {
    return this.configurations.create(caller, body);
  }

  @Route({
    method: 'GET',
    path: 'configurations/:name',
    summary: 'Get a configuration',
    description: 'Beyond the interface.',
    access: { object: CONFIGURATION, action: 'Read' },
    response: SessionConfigurationDto,
  })
  getConfiguration(@CurrentCaller() caller: Caller, @Param('name') name: string): Promise<SessionConfigurationDto> {
    return this.configurations.get(caller, name);
  }

  @Route({
    method: 'PUT',
    path: 'configurations/:name',
    summary: 'Replace a configuration',
    description:
      'Beyond the interface; validated as a create. The built-in files is read-only (409). Sessions started before keep what they were started with.',
    access: { object: CONFIGURATION, action: 'Update' },
    response: SessionConfigurationDto,
    errors: { 409: "Session configuration 'files' is built in: the hub keeps it as its release ships it" },
  })
  replaceConfiguration(
    @CurrentCaller() caller: Caller,
    @Param('name') name: string,
    @Body() body: SessionConfigurationInputDto,
  ): Promise<SessionConfigurationDto> {
    return this.configurations.replace(caller, name, body);
  }

  @Route({
    method: 'PATCH',
    path: 'configurations/:name',
    summary: 'Patch a configuration',
    description: 'Beyond the interface; the patched configuration is validated as a replace. The built-in files is read-only (409).',
    access: { object: CONFIGURATION, action: 'Update' },
    response: SessionConfigurationDto,
    patch: true,
    errors: { 409: "Session configuration 'files' is built in: the hub keeps it as its release ships it" },
  })
  patchConfiguration(@CurrentCaller() caller: Caller, @Param('name') name: string, @PatchBody() patch: JsonPatch): Promise<SessionConfigurationDto> {
    return this.configurations.patch(caller, name, patch);
  }

  @Route({
    method: 'DELETE',
    path: 'configurations/:name',
    summary: 'Delete a configuration',
    description: 'Beyond the interface. Sessions started with it run on; the built-in files cannot be deleted (409).',
    access: { object: CONFIGURATION, action: 'Delete' },
    response: MessageDto,
    errors: { 409: "Session configuration 'files' is built in: the hub keeps it as its release ships it" },
  })
  deleteConfiguration(@CurrentCaller() caller: Caller, @Param('name') name: string): Promise<MessageDto> {
    return this.configurations.delete(caller, name);
  }

  // Sessions

  @Route({
    method: 'POST',
    path: 'sessions',
    status: 201,
    summary: 'Start session',
    description:
      'Pending at once; poll until Ready (or Failed). Needs Create on /LinkSessions and Use on /LinkSessionConfigurations/<configuration> (in *), and Use on the execution profile in the configuration’s namespace. An unknown configuration is a 400 naming it; `files` when none is named. The owner’s quota of active jobs is a 429, and on a local hub that does not run as root only administrators may start (403); nothing is created then.',
    access: { object: '/LinkSessions', action: 'Create' },
    response: LinkSessionDto,
    errors: { 429: 'Too many active jobs: at most 100 per user (HUB_MAX_ACTIVE_JOBS_PER_USER)' },
  })
  startSession(@CurrentCaller() caller: Caller, @RequestBase() request: FastifyRequest, @Body() body: StartSessionDto): Promise<LinkSessionDto> {
    return this.sessions.start(viewerOf(caller, request, this.config), body);
  }

  @Route({
    method: 'GET',
    path: 'sessions',
    summary: 'Query sessions (administrator)',
    description:
      'Every user’s sessions, ended ones included while retained; newest first unless sorted. Needs Execute on /LinkSessions in * (the sessions administrator).',
    access: { object: '/LinkSessions', action: 'Execute' },
    list: SESSION_LIST_QUERY,
    response: LinkSessionListDto,
  })
  querySessions(
    @CurrentCaller() caller: Caller,
    @RequestBase() request: FastifyRequest,
    @ListParams() query: ListQuery,
  ): Promise<{ totalCount: number; data: LinkSessionDto[] }> {
    return this.sessions.query(viewerOf(caller, request, this.config), query);
  }

  @Route({
    method: 'DELETE',
    path: 'sessions',
    summary: 'Delete sessions (administrator)',
    description:
      'Terminates the live sessions the filters match (reason deleted) and deletes every matching record. The filters of the query (ownerPrincipal, configurationName, status, startTime, deathClock), at least one; no paging or sort (400). A filter that matches nothing answers zero counts. Needs Execute on /LinkSessions in *.',
    access: { object: '/LinkSessions', action: 'Execute' },
    query: DELETE_FILTERS,
    response: DeletedSessionsDto,
  })
  deleteSessions(@CurrentCaller() caller: Caller, @Query() raw: RawQuery): Promise<DeletedSessionsDto> {
    return this.sessions.deleteByFilter(caller, raw);
  }

  @Route({
    method: 'GET',
    path: 'me/sessions',
    summary: 'List own sessions',
    description: 'The caller’s sessions, ended ones included while retained (HUB_SESSION_RETENTION_HOURS), newest first.',
    access: { self: true },
    response: LinkSessionListDto,
  })
  mySessions(@CurrentCaller() caller: Caller, @RequestBase() request: FastifyRequest): Promise<{ totalCount: number; data: LinkSessionDto[] }> {
    return this.sessions.mine(viewerOf(caller, request, this.config));
  }

  @Route({
    method: 'GET',
    path: 'sessions/:sessionId',
    summary: 'Get session',
    description:
      'Its owner’s, or any to the sessions administrator (Execute on /LinkSessions in *); 404 to anyone else. sessionFilesystemURL and accessToken only to the owner of a Ready session.',
    access: { self: true },
    response: LinkSessionDto,
  })
  getSession(@CurrentCaller() caller: Caller, @RequestBase() request: FastifyRequest, @Param('sessionId', sessionId) id: string): Promise<LinkSessionDto> {
    return this.sessions.get(viewerOf(caller, request, this.config), id);
  }

  @Route({
    method: 'DELETE',
    path: 'sessions/:sessionId',
    summary: 'Terminate session',
    description: `Works in every state, Pending and Blocked included; answers once its job is dead. A session that has ended is left as it is (200). ${OWNER_ONLY}`,
    access: { self: true },
    response: SessionMessageDto,
  })
  terminateSession(@CurrentCaller() caller: Caller, @Param('sessionId', sessionId) id: string): Promise<SessionMessageDto> {
    return this.sessions.terminate(caller, id);
  }

  @Route({
    method: 'PUT',
    path: 'sessions/:sessionId/heartbeat',
    summary: 'Heartbeat',
    description: `nextExpectedHeartbeat is now + HUB_SESSION_HEARTBEAT_INTERVAL; past it + HUB_SESSION_HEARTBEAT_GRACE the reaper terminates the session. A session that has ended is a 409. ${OWNER_ONLY}`,
    access: { self: true },
    response: HeartbeatDto,
    errors: { 409: 'Link session 5f0c6a1e-4b8e-4a5e-9a55-0d7f3c1c2b11 has ended (Terminated): it takes no heartbeat' },
  })
  heartbeat(@CurrentCaller() caller: Caller, @Param('sessionId', sessionId) id: string): Promise<HeartbeatDto> {
    return this.sessions.heartbeat(caller, id);
  }

  @Route({
    method: 'GET',
    path: 'sessions/:sessionId/logs/:logname',
    summary: 'Get session log',
    description: `logname is stdout or stderr of the session's process. A window as \`{message}\`, or its exact bytes with \`Accept: application/octet-stream\`; empty before the process has started. ${OWNER_ONLY}`,
    access: { self: true },
    query: WINDOW,
    bytes: { key: 'message' },
  })
  getSessionLog(
    @CurrentCaller() caller: Caller,
    @Param('sessionId', sessionId) id: string,
    @Param('logname') logName: string,
    @Query() window: Record<string, unknown>,
  ): Promise<ByteWindowReply> {
    return this.sessions.log(caller, id, logName, window);
  }
}

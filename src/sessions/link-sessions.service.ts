import { randomBytes, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { parseByteWindow } from '../cluster/byte-window.js';
import { ClusterService } from '../cluster/cluster.service.js';
import { ServiceEndpoints } from '../cluster/service-endpoints.js';
import { Clock } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../common/errors/hub-errors.js';
import { ByteWindowReply } from '../common/http/byte-reply.js';
import type { Caller } from '../common/http/caller.js';
import { ProfileBindingsService } from '../execution-profiles/profile-bindings.service.js';
import { ExecutionProfilesService } from '../execution-profiles/execution-profiles.service.js';
import type { ExecutionProfileDto } from '../execution-profiles/dto/execution-profile.dto.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { AccessService } from '../rbac/access.service.js';
import { parseListQuery, type ListQuery } from '../common/query/list-query.js';
import type { RawQuery } from '../common/query/query-values.js';
import type { DeletedSessionsDto, HeartbeatDto, LinkSessionDto, SessionMessageDto, StartSessionDto } from './dto/link-session.dto.js';
import { SESSION_LIST_QUERY } from './list-queries.js';
import { SessionHeartbeats } from './session-heartbeats.js';
import { LinkSessionsRepository, type SessionRow } from './link-sessions.repository.js';
import { ending, isLive, SessionEngine, SESSION_KEY_PREFIX } from './session-engine.js';
import { configurationObject, FILES_CONFIGURATION, maxRunSecondsOf, SessionConfigurationsService } from './session-configurations.service.js';

/** Sessions delete by filter reads at a time. */
const DELETE_BATCH = 500;
/** The task a session's job runs (ARCHITECTURE.md). */
const SESSION_TASK = 'session';
/** The variables a session process learns its endpoint from (docs/sessions.md). */
const SESSION_ENDPOINT_VARIABLES = { host: 'HUB_SESSION_HOST', port: 'HUB_SESSION_PORT' };
/** CPUs a session's job reserves (ClusterService.run reserves one for every workload today). */
const RESERVED_CPUS = 1;

export function sessionNotFound(id: string): NotFoundError {
  return new NotFoundError(`Link session ${id} not found`);
}

/** The proxy root's path of a session, without a trailing slash (X-Forwarded-Prefix). */
export function proxyPrefix(id: string): string {
  return `/api/v2/linksessions/sessions/${id}/proxy`;
}

/** How a reply is shown: to whom, and the hub's address as the client reached it. */
export interface Viewer {
  readonly caller: Caller;
  /** `https://hub.example.org`: HUB_PUBLIC_URL, else the request's protocol and Host. */
  readonly base: string;
}

/** A session as replies show it; its token and proxy URL only to its owner, once Ready. */
export function toSessionResponse(row: SessionRow, viewer: Viewer, now: Date): LinkSessionDto {
  const owner = row.ownerId === viewer.caller.userId && row.status === 'Ready';
  const end = row.finishedTime ? Date.parse(row.finishedTime) : now.getTime();
  return {
    sessionID: row.id,
    ...(row.clientSessionId !== null && { clientSessionID: row.clientSessionId }),
    ...(row.clientDescription !== null && { clientSessionDescription: row.clientDescription }),
    status: row.status,
    ...(owner && { sessionFilesystemURL: `${viewer.base}${proxyPrefix(row.id)}/`, accessToken: row.accessToken }),
    deathClock: row.deathClock,
    startTime: row.startTime,
    ...(row.finishedTime !== null && { finishedTime: row.finishedTime }),
    ...(row.lastHeartbeatTime !== null && { lastHeartbeatTime: row.lastHeartbeatTime }),
    nextExpectedHeartbeat: row.nextExpectedHeartbeat,
    ownerPrincipal: row.ownerId,
    configurationName: row.configurationName,
    cost: (RESERVED_CPUS * Math.max(0, end - Date.parse(row.startTime))) / 3_600_000,
    events: row.events,
  };
}

/**
 * Link sessions (api-map §8): starting one as a `service` job of its owner's under its
 * configuration's profile and namespace, reading, heartbeats and terminating. Only the owner acts
 * on a session; the sessions administrator (Execute on /LinkSessions in `*`) may also read any.
 */
@Injectable()
export class LinkSessionsService {
  constructor(
    private readonly sessions: LinkSessionsRepository,
    private readonly configurations: SessionConfigurationsService,
    private readonly engine: SessionEngine,
    private readonly heartbeats: SessionHeartbeats,
    private readonly cluster: ClusterService,
    private readonly endpoints: ServiceEndpoints,
    private readonly namespaces: NamespacesService,
    private readonly profiles: ExecutionProfilesService,
    private readonly bindings: ProfileBindingsService,
    private readonly access: AccessService,
    private readonly clock: Clock,
    private readonly config: HubConfig,
  ) {}

  /** Whether the caller administers sessions: Execute on /LinkSessions in `*`. */
  async administers(caller: Caller): Promise<boolean> {
    const [effect] = await this.access.evaluate(caller, [{ object: '/LinkSessions', action: 'Execute', namespace: '*' }]);
    return effect === 'Allow';
  }

  /**
   * Starts a session: Pending at once, its job submitted as the caller's. Refusals create nothing:
   * an unknown configuration (400), no Use on it (403), no usable profile (400/403), the owner's
   * quota (429), a non-root local hub and a caller who is no administrator (403).
   */
  async start(viewer: Viewer, input: StartSessionDto): Promise<LinkSessionDto> {
    const { caller } = viewer;
    const name = input.configuration ?? FILES_CONFIGURATION;
    // The permission first, so that a refusal tells nothing of which configurations exist.
    await this.access.require(caller, configurationObject(name), 'Use', { id: null, name: '*' });
    const configuration = await this.configurations.find(name);
    if (!configuration) throw InvalidInputError.at('/configuration', `No session configuration is named '${name}'`);
    const namespace = await this.namespaces.find({ name: configuration.namespace });
    if (!namespace)
      throw InvalidInputError.at('/configuration', `Session configuration '${name}' names namespace '${configuration.namespace}', which does not exist`);
    const profile = await this.profileOf(caller, configuration.executionProfileId, namespace);
    const maxRun = maxRunSecondsOf(profile);
    if (maxRun !== undefined && configuration.maxLifetimeSeconds > maxRun)
      throw InvalidInputError.at(
        '/configuration',
        `Session configuration '${name}' lives ${configuration.maxLifetimeSeconds} s, above execution profile '${profile.name}''s maxRunSeconds (${maxRun})`,
      );
    const endpoint = await this.endpoints.allocate();
    // Told where to listen: the hub's port on the local driver, the one its launch picks on a Slurm node.
    const launch = this.endpoints.launch(endpoint, this.configurations.launchOf(configuration), SESSION_ENDPOINT_VARIABLES);
    const id = randomUUID();
    const now = this.clock.now();
    const job = await this.cluster.run({
      name: `session ${name} ${id}`,
      type: 'service',
      namespace,
      profile,
      owner: { id: caller.userId, name: caller.userName },
      task: {
        name: SESSION_TASK,
        command: launch.command,
        args: launch.args,
        envVars: [
          ...configuration.envVars.filter((variable) => !variable.name.startsWith('HUB_SESSION_')),
          ...launch.envVars,
          { name: 'HUB_SESSION_ID', value: id },
          { name: 'HUB_SESSION_SECRET', value: endpoint.secret },
        ],
      },
      properties: { sessionId: id, configuration: name },
      key: `${SESSION_KEY_PREFIX}${id}`,
    });
    let row: SessionRow;
    try {
      row = await this.sessions.insert(
        {
          id,
          ownerId: caller.userId,
          ownerName: caller.userName,
          configurationName: name,
          clientSessionId: input.clientSessionID ?? null,
          clientDescription: input.clientDescription ?? null,
          jobId: job.id,
          host: endpoint.host,
          port: endpoint.port,
          secret: endpoint.secret,
          accessToken: randomBytes(32).toString('base64url'),
          readiness: configuration.readiness,
          startTimeoutSeconds: configuration.startTimeoutSeconds,
          startTime: now.toISOString(),
          deathClock: new Date(now.getTime() + configuration.maxLifetimeSeconds * 1000).toISOString(),
          startDeadline: new Date(now.getTime() + configuration.startTimeoutSeconds * 1000).toISOString(),
          nextExpectedHeartbeat: new Date(now.getTime() + this.config.sessionHeartbeatInterval * 1000).toISOString(),
          events: [{ type: 'Pending', when: now.toISOString(), details: { message: `Started as job ${job.id}` } }],
        },
        job.id,
      );
    } catch (error) {
      // Nothing is left of a start that failed: its job goes too.
      await this.cluster.stopWorkload(job.id, 'Its link session could not be recorded').catch(() => undefined);
      throw error;
    }
    this.engine.follow(row);
    return toSessionResponse(row, viewer, now);
  }

  async get(viewer: Viewer, id: string): Promise<LinkSessionDto> {
    const row = await this.sessions.find(id);
    if (!row || (row.ownerId !== viewer.caller.userId && !(await this.administers(viewer.caller)))) throw sessionNotFound(id);
    return toSessionResponse(row, viewer, this.clock.now());
  }

  /** The administrator's query: every session, by the §4.10 filters and sorts. */
  async query(viewer: Viewer, query: ListQuery): Promise<{ totalCount: number; data: LinkSessionDto[] }> {
    const page = await this.sessions.list(query);
    const now = this.clock.now();
    return { totalCount: page.totalCount, data: page.items.map((row) => toSessionResponse(row, viewer, now)) };
  }

  /**
   * Deletes the sessions the filters match (at least one filter, no paging or sort), terminating
   * those still live first (reason `deleted`, their jobs stopped); counts what failed.
   */
  async deleteByFilter(caller: Caller, raw: RawQuery): Promise<DeletedSessionsDto> {
    const misplaced = Object.keys(raw).filter((parameter) => parameter === 'sort' || parameter.startsWith('page['));
    if (misplaced.length > 0) throw InvalidInputError.at(misplaced[0], 'Delete by filter takes filters only: no paging or sort');
    const query = parseListQuery(SESSION_LIST_QUERY, raw);
    if (query.filters.length === 0) throw InvalidInputError.at('filter', 'Delete by filter needs at least one filter');
    let countDeleted = 0;
    let countFailed = 0;
    const failed = new Set<string>();
    for (;;) {
      const ids = (await this.sessions.matching(query, DELETE_BATCH + failed.size)).filter((id) => !failed.has(id));
      if (ids.length === 0) break;
      for (const id of ids) {
        try {
          await this.engine.end(id, ending('Terminated', 'deleted', this.clock.now(), { message: `Deleted by ${caller.userName}` }));
          if (await this.sessions.delete(id)) countDeleted += 1;
        } catch {
          failed.add(id);
          countFailed += 1;
        }
      }
    }
    return { countDeleted, countFailed };
  }

  /** The caller's own sessions (ended ones while retained), newest first. */
  async mine(viewer: Viewer): Promise<{ totalCount: number; data: LinkSessionDto[] }> {
    const rows = await this.sessions.ofOwner(viewer.caller.userId);
    const now = this.clock.now();
    return { totalCount: rows.length, data: rows.map((row) => toSessionResponse(row, viewer, now)) };
  }

  /** Terminates the caller's session in whatever state; one ended already is left as it is. Resolves once its job is dead. */
  async terminate(caller: Caller, id: string): Promise<SessionMessageDto> {
    const row = await this.own(caller, id);
    if (!isLive(row.status)) return { message: `Link session ${id} has ended already (${row.status})` };
    const ended = await this.engine.end(id, ending('Terminated', 'terminated', this.clock.now(), { message: `Terminated by ${caller.userName}` }));
    return { message: ended ? `Link session ${id} terminated` : `Link session ${id} has ended already` };
  }

  async heartbeat(caller: Caller, id: string): Promise<HeartbeatDto> {
    const next = await this.heartbeats.beat(id, caller.userId);
    if (next !== undefined) return { nextExpectedHeartbeat: next };
    // Not taken: another user's session (404), or one that has ended (409).
    const row = await this.own(caller, id);
    throw new ConflictError(`Link session ${id} has ended (${row.status}): it takes no heartbeat`);
  }

  /** A window of the session's stdout or stderr (its latest execution's), as `{message}`. */
  async log(caller: Caller, id: string, logName: string, window: Record<string, unknown>): Promise<ByteWindowReply> {
    parseByteWindow(window.origin, window.offset, window.limit);
    const row = await this.own(caller, id);
    const attempt = row.jobId ? (await this.cluster.latestAttempts([row.jobId])).get(row.jobId) : undefined;
    if (!attempt) return ByteWindowReply.text('').keyed('message');
    return (await this.cluster.readLog(caller, attempt.executionId, SESSION_TASK, logName, window)).keyed('message');
  }

  /** The caller's own session, or 404 (another user's session is 404 to them, administrators included). */
  async own(caller: Caller, id: string): Promise<SessionRow> {
    const row = await this.sessions.find(id);
    if (!row || row.ownerId !== caller.userId) throw sessionNotFound(id);
    return row;
  }

  /** The configuration's profile, or the namespace's default, bound there and usable by the caller (every check of a job's submission). */
  private async profileOf(caller: Caller, profileId: string | null, namespace: { id: string; name: string }): Promise<ExecutionProfileDto> {
    let profile: ExecutionProfileDto | null;
    if (profileId === null) {
      profile = await this.bindings.defaultProfile(caller, namespace.id).catch((error: unknown) => {
        if (error instanceof NotFoundError) throw InvalidInputError.at('/configuration', `Namespace '${namespace.name}' has no default execution profile`);
        throw error;
      });
    } else {
      profile = await this.profiles.find(profileId);
      if (!profile || !(await this.bindings.isBound(profileId, namespace.id)))
        throw InvalidInputError.at('/configuration', `Execution profile ${profileId} is not bound to namespace '${namespace.name}'`);
    }
    await this.access.require(caller, `/ExecutionProfiles/${profile._id}`, 'Use', namespace);
    return profile;
  }
}

import { Injectable, type OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { compileReadinessPattern } from '../cluster/service-endpoints.js';
import { ShippedPrograms } from '../cluster/shipped-programs.js';
import { ConflictError, InvalidInputError, NotFoundError, type FieldError } from '../common/errors/hub-errors.js';
import type { Caller } from '../common/http/caller.js';
import { message, type MessageDto } from '../common/http/message.dto.js';
import { applyJsonPatch, type JsonPatch } from '../common/patch/json-patch.js';
import { invalidBody, validateInput } from '../common/validation/validate-input.js';
import type { ExecutionProfileDto } from '../execution-profiles/dto/execution-profile.dto.js';
import { ExecutionProfilesService } from '../execution-profiles/execution-profiles.service.js';
import { AccessService } from '../rbac/access.service.js';
import {
  DEFAULT_MAX_LIFETIME_SECONDS,
  DEFAULT_START_TIMEOUT_SECONDS,
  SessionConfigurationInputDto,
  toSessionConfigurationResponse,
  type SessionConfigurationDto,
  type SessionConfigurationEntryDto,
  type SessionConfigurationRow,
} from './dto/session-configuration.dto.js';
import { NamespacesService } from '../namespaces/namespaces.service.js';
import { sourceFile } from '../common/source-files.js';
import { SessionConfigurationsRepository, type SessionConfigurationChanges } from './session-configurations.repository.js';

/** The configuration a start that names none uses, shipped with the hub. */
export const FILES_CONFIGURATION = 'files';

/** The `files` server, beside this module in src/ and, copied by the build, in dist/src/ (see nest-cli.json). */
const FILES_SERVER = sourceFile('sessions/programs/files-server.mjs');

export function configurationNotFound(name: string): NotFoundError {
  return new NotFoundError(`Session configuration '${name}' not found`);
}

/** The object a configuration's `Use` is checked on. */
export function configurationObject(name: string): string {
  return `/LinkSessionConfigurations/${name}`;
}

/** A profile's `maxRunSeconds`, when it sets one. */
export function maxRunSecondsOf(profile: ExecutionProfileDto): number | undefined {
  const value = profile.properties.maxRunSeconds;
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/**
 * Link session configurations (api-map §8): what a session runs and how it tells it is ready.
 * Administrators manage them (beyond the interface); the interface's list answers those the caller
 * may Use. The built-in `files` is written at every start, as this release ships it, and is
 * read-only.
 */
@Injectable()
export class SessionConfigurationsService implements OnModuleInit {
  constructor(
    private readonly configurations: SessionConfigurationsRepository,
    private readonly profiles: ExecutionProfilesService,
    private readonly namespaces: NamespacesService,
    private readonly access: AccessService,
    private readonly programs: ShippedPrograms,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.configurations.upsertBuiltIn({
      name: FILES_CONFIGURATION,
      description: 'The session’s working directory over HTTP: a listing at /, files below',
      command: this.programs.node(),
      args: [this.programs.place('files-server.mjs', FILES_SERVER)],
      envVars: [],
      readiness: { type: 'port' },
      executionProfileId: null,
      namespace: 'default',
      maxLifetimeSeconds: DEFAULT_MAX_LIFETIME_SECONDS,
      startTimeoutSeconds: DEFAULT_START_TIMEOUT_SECONDS,
    });
  }

  /**
   * What a session of `row` runs: as stored, except the built-in `files`, whose server this hub
   * places itself (another hub may have written the row with its own paths).
   */
  launchOf(row: SessionConfigurationRow): { command: string; args: string[] } {
    if (row.builtIn && row.name === FILES_CONFIGURATION)
      return { command: this.programs.node(), args: [this.programs.place('files-server.mjs', FILES_SERVER)] };
    return { command: row.command, args: row.args };
  }

  /** `[{name, description}]` of the configurations the caller may Use (in `*`). */
  async listUsable(caller: Caller): Promise<SessionConfigurationEntryDto[]> {
    const all = await this.configurations.all();
    const effects = await this.access.evaluate(
      caller,
      all.map((row) => ({ object: configurationObject(row.name), action: 'Use', namespace: '*' })),
    );
    return all.filter((_, index) => effects[index] === 'Allow').map((row) => ({ name: row.name, description: row.description ?? '' }));
  }

  async list(_caller: Caller): Promise<SessionConfigurationDto[]> {
    return (await this.configurations.all()).map(toSessionConfigurationResponse);
  }

  async create(_caller: Caller, input: SessionConfigurationInputDto): Promise<SessionConfigurationDto> {
    return toSessionConfigurationResponse(await this.configurations.insert(await this.changesFrom(input)));
  }

  async get(_caller: Caller, name: string): Promise<SessionConfigurationDto> {
    const row = await this.configurations.find(name);
    if (!row) throw configurationNotFound(name);
    return toSessionConfigurationResponse(row);
  }

  /** The stored configuration a start uses; undefined when there is none. */
  find(name: string, manager?: EntityManager): Promise<SessionConfigurationRow | undefined> {
    return this.configurations.find(name, manager);
  }

  async replace(caller: Caller, name: string, input: SessionConfigurationInputDto): Promise<SessionConfigurationDto> {
    return this.update(caller, name, () => input);
  }

  async patch(caller: Caller, name: string, patch: JsonPatch): Promise<SessionConfigurationDto> {
    return this.update(caller, name, (current) => validateInput(SessionConfigurationInputDto, applyJsonPatch(toSessionConfigurationResponse(current), patch)));
  }

  async delete(_caller: Caller, name: string): Promise<MessageDto> {
    const deleted = await this.configurations.delete(name, (current) => {
      if (current.builtIn) throw builtIn(name);
    });
    if (!deleted) throw configurationNotFound(name);
    return message(`Session configuration '${name}' deleted`);
  }

  private async update(
    _caller: Caller,
    name: string,
    decide: (current: SessionConfigurationRow) => SessionConfigurationInputDto | Promise<SessionConfigurationInputDto>,
  ): Promise<SessionConfigurationDto> {
    const updated = await this.configurations.update(name, async (current) => {
      if (current.builtIn) throw builtIn(name);
      return this.changesFrom(await decide(current));
    });
    if (!updated) throw configurationNotFound(name);
    return toSessionConfigurationResponse(updated);
  }

  /** What a body stores, once every rule holds: a valid pattern, a namespace and profile that exist, a lifetime within the profile's run time. */
  private async changesFrom(input: SessionConfigurationInputDto): Promise<SessionConfigurationChanges> {
    const errors: FieldError[] = [];
    const readiness = input.readiness.type === 'stdout' ? { type: 'stdout' as const, pattern: input.readiness.pattern ?? '' } : { type: 'port' as const };
    if (readiness.type === 'stdout') {
      if (readiness.pattern === '') errors.push({ path: '/readiness/pattern', message: 'A stdout readiness needs a pattern' });
      else
        try {
          compileReadinessPattern(readiness.pattern, '/readiness/pattern');
        } catch (error) {
          errors.push({ path: '/readiness/pattern', message: (error as InvalidInputError).message });
        }
    }
    const namespaceName = input.namespace ?? 'default';
    const namespace = await this.namespaces.find({ name: namespaceName });
    if (!namespace) errors.push({ path: '/namespace', message: `No namespace is named '${namespaceName}'` });
    const maxLifetimeSeconds = input.maxLifetimeSeconds ?? DEFAULT_MAX_LIFETIME_SECONDS;
    const profileId = input.executionProfileId?.toLowerCase() ?? null;
    if (profileId !== null) {
      const profile = await this.profiles.find(profileId);
      if (!profile) errors.push({ path: '/executionProfileId', message: `No execution profile ${profileId}` });
      else {
        const maxRun = maxRunSecondsOf(profile);
        if (maxRun !== undefined && maxLifetimeSeconds > maxRun)
          errors.push({ path: '/maxLifetimeSeconds', message: `maxLifetimeSeconds ${maxLifetimeSeconds} is above the profile's maxRunSeconds (${maxRun})` });
      }
    }
    if (errors.length > 0) throw invalidBody(errors);
    return {
      name: input.name,
      description: input.description ?? null,
      command: input.command,
      args: input.args ?? [],
      envVars: (input.envVars ?? []).map(({ name, value }) => ({ name, value })),
      readiness,
      executionProfileId: profileId,
      namespace: namespace?.name ?? namespaceName,
      maxLifetimeSeconds,
      startTimeoutSeconds: input.startTimeoutSeconds ?? DEFAULT_START_TIMEOUT_SECONDS,
    };
  }
}

function builtIn(name: string): ConflictError {
  return new ConflictError(`Session configuration '${name}' is built in: the hub keeps it as its release ships it`);
}

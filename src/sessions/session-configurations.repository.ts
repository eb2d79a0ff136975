import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { isUniqueViolation } from '../common/database/postgres-errors.js';
import { ConflictError } from '../common/errors/hub-errors.js';
import type { SessionConfigurationRow } from './dto/session-configuration.dto.js';

/** What a create or a replace writes. */
export type SessionConfigurationChanges = Omit<SessionConfigurationRow, 'builtIn' | 'version'>;

const COLUMNS = `name, description, command, args, env_vars AS "envVars", readiness, execution_profile_id AS "executionProfileId", namespace,
  max_lifetime_seconds AS "maxLifetimeSeconds", start_timeout_seconds AS "startTimeoutSeconds", built_in AS "builtIn", version`;

function values(changes: SessionConfigurationChanges): unknown[] {
  return [
    changes.name,
    changes.description,
    changes.command,
    JSON.stringify(changes.args),
    JSON.stringify(changes.envVars),
    JSON.stringify(changes.readiness),
    changes.executionProfileId,
    changes.namespace,
    changes.maxLifetimeSeconds,
    changes.startTimeoutSeconds,
  ];
}

function exists(name: string): ConflictError {
  return new ConflictError(`A session configuration is named '${name}' already`);
}

@Injectable()
export class SessionConfigurationsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async all(): Promise<SessionConfigurationRow[]> {
    return this.dataSource.query(`SELECT ${COLUMNS} FROM link_session_configurations ORDER BY name`);
  }

  async find(name: string, manager: EntityManager = this.dataSource.manager): Promise<SessionConfigurationRow | undefined> {
    const rows: SessionConfigurationRow[] = await manager.query(`SELECT ${COLUMNS} FROM link_session_configurations WHERE name = $1`, [name]);
    return rows[0];
  }

  async insert(changes: SessionConfigurationChanges): Promise<SessionConfigurationRow> {
    try {
      const rows: SessionConfigurationRow[] = await this.dataSource.query(
        `INSERT INTO link_session_configurations (name, description, command, args, env_vars, readiness, execution_profile_id, namespace, max_lifetime_seconds, start_timeout_seconds)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLUMNS}`,
        values(changes),
      );
      return rows[0];
    } catch (error) {
      if (isUniqueViolation(error)) throw exists(changes.name);
      throw error;
    }
  }

  /** Writes a configuration the hub ships, as this release has it (at each start). */
  async upsertBuiltIn(changes: SessionConfigurationChanges): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO link_session_configurations (name, description, command, args, env_vars, readiness, execution_profile_id, namespace, max_lifetime_seconds, start_timeout_seconds, built_in)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, true)
       ON CONFLICT (name) DO UPDATE SET description = EXCLUDED.description, command = EXCLUDED.command, args = EXCLUDED.args, env_vars = EXCLUDED.env_vars,
         readiness = EXCLUDED.readiness, execution_profile_id = EXCLUDED.execution_profile_id, namespace = EXCLUDED.namespace,
         max_lifetime_seconds = EXCLUDED.max_lifetime_seconds, start_timeout_seconds = EXCLUDED.start_timeout_seconds, built_in = true,
         version = link_session_configurations.version + 1, modified = now()
       WHERE (link_session_configurations.command, link_session_configurations.args, link_session_configurations.readiness) IS DISTINCT FROM (EXCLUDED.command, EXCLUDED.args, EXCLUDED.readiness)`,
      values(changes),
    );
  }

  /**
   * Replaces a configuration under its row lock with what `decide` makes of it (it may throw, and
   * nothing changes); undefined when there is none. A rename that meets another name is 409.
   */
  async update(
    name: string,
    decide: (current: SessionConfigurationRow, manager: EntityManager) => Promise<SessionConfigurationChanges>,
  ): Promise<SessionConfigurationRow | undefined> {
    try {
      return await this.dataSource.transaction(async (manager) => {
        const rows: SessionConfigurationRow[] = await manager.query(`SELECT ${COLUMNS} FROM link_session_configurations WHERE name = $1 FOR UPDATE`, [name]);
        if (!rows[0]) return undefined;
        const changes = await decide(rows[0], manager);
        const updated: SessionConfigurationRow[] = await manager.query(
          `WITH u AS (UPDATE link_session_configurations SET name = $1, description = $2, command = $3, args = $4, env_vars = $5, readiness = $6, execution_profile_id = $7,
             namespace = $8, max_lifetime_seconds = $9, start_timeout_seconds = $10, version = version + 1, modified = now()
           WHERE name = $11 RETURNING *) SELECT ${COLUMNS} FROM u`,
          [...values(changes), name],
        );
        return updated[0];
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new ConflictError('Another session configuration has that name already');
      throw error;
    }
  }

  /** Deletes a configuration once `check` allows it (under its row lock); undefined when there is none. */
  async delete(name: string, check: (current: SessionConfigurationRow) => void): Promise<SessionConfigurationRow | undefined> {
    return this.dataSource.transaction(async (manager) => {
      const rows: SessionConfigurationRow[] = await manager.query(`SELECT ${COLUMNS} FROM link_session_configurations WHERE name = $1 FOR UPDATE`, [name]);
      if (!rows[0]) return undefined;
      check(rows[0]);
      await manager.query('DELETE FROM link_session_configurations WHERE name = $1', [name]);
      return rows[0];
    });
  }
}

import { defineListQuery } from '../common/query/list-query.js';
import { SESSION_STATUSES } from './dto/link-session.dto.js';

/**
 * What the administrator's `GET /linksessions/sessions` accepts (hub-interface §4.10); columns are
 * over the alias `session`. Newest first unless sorted. Delete by filter takes the same filters
 * (and no paging or sort).
 */
export const SESSION_LIST_QUERY = defineListQuery({
  filters: {
    ownerPrincipal: { column: 'session.owner_id', type: 'uuid', operators: ['EQ'] },
    configurationName: { column: 'session.configuration_name', type: 'string', operators: ['EQ'] },
    status: { column: 'session.status', type: SESSION_STATUSES, operators: ['EQ', 'IN'] },
    startTime: { column: 'session.start_time', type: 'datetime', operators: ['LT', 'GT'] },
    deathClock: { column: 'session.death_clock', type: 'datetime', operators: ['LT', 'GT'] },
  },
  sorts: { startTime: 'session.start_time', deathClock: 'session.death_clock', configurationName: 'session.configuration_name' },
  defaultSort: '-startTime',
  tieBreaker: 'session.id',
  indexes: {
    sorts: {
      startTime: 'link_sessions_start_time_idx',
      deathClock: 'link_sessions_death_clock_idx',
      configurationName: 'link_sessions_configuration_idx',
    },
    filters: {
      ownerPrincipal: 'link_sessions_owner_start_time_idx',
      configurationName: ['link_sessions_configuration_start_time_idx', 'link_sessions_configuration_idx'],
      status: 'link_sessions_status_start_time_idx',
      startTime: 'link_sessions_start_time_idx',
      deathClock: 'link_sessions_death_clock_idx',
    },
    ordered: [
      { filter: 'ownerPrincipal', operators: ['EQ'], sorts: ['startTime'] },
      { filter: 'configurationName', operators: ['EQ'], sorts: ['startTime', 'configurationName'] },
      { filter: 'status', operators: ['EQ'], sorts: ['startTime'] },
      { filter: 'startTime', operators: ['LT', 'GT'], sorts: ['startTime'] },
      { filter: 'deathClock', operators: ['LT', 'GT'], sorts: ['deathClock'] },
    ],
  },
});

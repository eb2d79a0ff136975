import type { NamespaceScope } from '../common/http/access-scope.js';
import { defineListQuery, type ListQuery } from '../common/query/list-query.js';
import { PIPELINE_ENTRY_TYPES } from './dto/pipeline-entry.dto.js';
import { RUN_STATES } from './dto/pipeline-run.dto.js';
import { TRIGGER_TYPES } from './dto/pipeline-trigger.dto.js';

/** Names sort and match by prefix lower-cased, byte by byte: one btree index serves both. */
const ENTRY_NAME_KEY = 'lower(entry.name) COLLATE "C"';

/**
 * What `GET /pipelines/entries` accepts (hub-interface §4.7); columns are over the alias `entry`.
 * `namespace` is not a column: the list narrows its namespace scope by it (narrowedToNamespaces),
 * so that it is served like access narrowing, by the indexes led by the namespace. `total` comes
 * from the counts per namespace and type unless another filter is given.
 */
export const PIPELINE_ENTRY_LIST_QUERY = defineListQuery({
  filters: {
    namespace: { type: 'string', operators: ['EQ', 'IN'] },
    name: { column: 'entry.name', type: 'string', operators: ['EQ', 'CO', 'ST'], prefixColumn: ENTRY_NAME_KEY },
    folderId: { column: 'entry.folder_id', type: 'uuid', operators: ['EQ'] },
    folderPath: { column: 'entry.folder_path', type: 'string', operators: ['EQ'] },
    _type: { column: 'entry.type', type: PIPELINE_ENTRY_TYPES, operators: ['EQ'] },
    _id: { column: 'entry.id', type: 'uuid', operators: ['IN'] },
    _created: { column: 'entry.created', type: 'datetime', operators: ['LT', 'GT'] },
    _modified: { column: 'entry.modified', type: 'datetime', operators: ['LT', 'GT'] },
  },
  sorts: { name: ENTRY_NAME_KEY, _created: 'entry.created', _modified: 'entry.modified' },
  defaultSort: 'name',
  tieBreaker: 'entry.id',
  indexes: {
    // A list narrowed to namespaces (by access or by its namespace filter) walks the index led by the namespace in the sort's order.
    sorts: {
      name: ['pipeline_entries_name_lower_idx', 'pipeline_entries_namespace_name_idx'],
      _created: ['pipeline_entries_created_idx', 'pipeline_entries_namespace_created_idx'],
      _modified: 'pipeline_entries_modified_idx',
    },
    filters: {
      name: ['pipeline_entries_name_lower_idx', 'pipeline_entries_name_trgm_idx'],
      folderId: 'pipeline_entries_folder_name_idx',
      folderPath: 'pipeline_entries_folder_path_name_idx',
      _type: { unindexed: 'two values, each a large share of the entries: the index of the sort finds a page sooner' },
      _id: 'PK_835e60d4a0d87280e0bff5c4c8a',
      _created: 'pipeline_entries_created_idx',
      _modified: 'pipeline_entries_modified_idx',
    },
    ordered: [
      { filter: 'name', operators: ['ST'], sorts: ['name'] },
      { filter: 'folderId', operators: ['EQ'], sorts: ['name'] },
      { filter: 'folderPath', operators: ['EQ'], sorts: ['name'] },
      { filter: '_created', operators: ['LT', 'GT'], sorts: ['_created'] },
      { filter: '_modified', operators: ['LT', 'GT'], sorts: ['_modified'] },
    ],
  },
  counts: [{ table: 'pipeline_entry_counts', filters: { _type: 'type' }, namespace: 'namespace_id' }],
});

/** The namespace names a request's `namespace` filter names (EQ or IN), lower-cased; undefined without one. */
export function namespaceFilterOf(query: ListQuery): string[] | undefined {
  const conditions = query.filters.filter((condition) => condition.field === 'namespace');
  if (conditions.length === 0) return undefined;
  const sets = conditions.map(
    (condition) => new Set((typeof condition.value === 'string' ? [condition.value] : (condition.value as string[])).map((name) => name.toLowerCase())),
  );
  return [...sets[0]].filter((name) => sets.every((set) => set.has(name)));
}

/**
 * A list query without its `namespace` filter, and the scope narrowed to the namespaces it named
 * (by id, as found): the filter is then applied as access narrowing is, and served alike.
 */
export function narrowedToNamespaces(
  query: ListQuery,
  scope: NamespaceScope,
  namespaceIds: readonly string[] | undefined,
): { query: ListQuery; scope: NamespaceScope } {
  if (namespaceIds === undefined) return { query, scope };
  const only = scope.all ? namespaceIds.filter((id) => !scope.except.includes(id)) : namespaceIds.filter((id) => scope.only.includes(id));
  return {
    query: { ...query, filters: query.filters.filter((condition) => condition.field !== 'namespace') },
    scope: { all: false, only, ...(scope.items && { items: scope.items }) },
  };
}

/**
 * What `GET /pipelines/runs` accepts (hub-interface §4.7): newest first unless sorted, `{data}`
 * only (no count); columns are over the alias `run`, `namespace` narrows the scope as for entries.
 */
export const PIPELINE_RUN_LIST_QUERY = defineListQuery({
  filters: {
    namespace: { type: 'string', operators: ['EQ', 'IN'] },
    created: { column: 'run.created', type: 'datetime', operators: ['LT', 'GT'] },
    startedAt: { column: 'run.started_at', type: 'datetime', operators: ['LT', 'GT'] },
    finishedAt: { column: 'run.finished_at', type: 'datetime', operators: ['LT', 'GT'] },
    state: { column: 'run.state', type: RUN_STATES, operators: ['EQ', 'IN'] },
    ownerPrincipal: { column: 'run.owner_id', type: 'uuid', operators: ['EQ'] },
    pipelineId: { column: 'run.pipeline_id', type: 'uuid', operators: ['EQ'] },
  },
  sorts: { created: 'run.created' },
  defaultSort: '-created',
  tieBreaker: 'run.id',
  indexes: {
    // A caller narrowed to namespaces (or seeing their own runs besides) walks the indexes led by those in the order of created.
    sorts: { created: ['pipeline_runs_created_idx', 'pipeline_runs_namespace_created_idx', 'pipeline_runs_owner_created_idx'] },
    filters: {
      created: 'pipeline_runs_created_idx',
      startedAt: 'pipeline_runs_started_idx',
      finishedAt: 'pipeline_runs_finished_idx',
      state: 'pipeline_runs_state_created_idx',
      ownerPrincipal: 'pipeline_runs_owner_created_idx',
      pipelineId: 'pipeline_runs_pipeline_created_idx',
    },
    ordered: [
      { filter: 'created', operators: ['LT', 'GT'], sorts: ['created'] },
      { filter: 'state', operators: ['EQ'], sorts: ['created'] },
      { filter: 'ownerPrincipal', operators: ['EQ'], sorts: ['created'] },
      { filter: 'pipelineId', operators: ['EQ'], sorts: ['created'] },
    ],
    sortedShallow:
      'the keys of a page narrowed by access, a state IN or a startedAt or finishedAt range come from walking the index of created and reading each row, as the page itself does: found first, each row would be read twice',
  },
});

/**
 * What `GET /pipelines/entries/{id}/triggers` accepts (hub-interface §4.7): a pipeline's triggers,
 * oldest first unless sorted; columns over the alias `trigger`, the pipeline a condition of the
 * operation's own, which leads every index of the list.
 */
export const TRIGGER_LIST_QUERY = defineListQuery({
  filters: {
    type: { column: 'trigger.type', type: TRIGGER_TYPES, operators: ['EQ'] },
    disabled: { column: 'trigger.disabled', type: 'boolean', operators: ['EQ'] },
    created: { column: 'trigger.created', type: 'datetime', operators: ['LT', 'GT'] },
    modified: { column: 'trigger.modified', type: 'datetime', operators: ['LT', 'GT'] },
  },
  sorts: { created: 'trigger.created', modified: 'trigger.modified' },
  defaultSort: 'created',
  tieBreaker: 'trigger.id',
  // The indexes led by the pipeline (created, modified) read them; which one a plan takes is a coin toss at this size.
  small: 'one pipeline’s triggers: a handful, found by an index led by the pipeline (pipeline_triggers_pipeline_created_idx)',
});

const FIRING_SORTS = { triggerTime: 'firing.trigger_time', triggerId: 'firing.trigger_id' };

/**
 * What `GET /pipelines/triggers/{triggerId}/firings` accepts (hub-interface §4.7): one trigger's
 * firings, newest first unless sorted; the trigger a condition of the operation's own.
 */
export const TRIGGER_FIRING_LIST_QUERY = defineListQuery({
  filters: { triggerTime: { column: 'firing.trigger_time', type: 'datetime', operators: ['LT', 'GT'] } },
  sorts: FIRING_SORTS,
  defaultSort: '-triggerTime',
  tieBreaker: 'firing.id',
  indexes: {
    sorts: { triggerTime: 'pipeline_trigger_firings_trigger_time_idx', triggerId: 'pipeline_trigger_firings_trigger_idx' },
    filters: { triggerTime: 'pipeline_trigger_firings_trigger_time_idx' },
    ordered: [{ filter: 'triggerTime', operators: ['LT', 'GT'], sorts: ['triggerTime'] }],
  },
});

/**
 * What `GET /pipelines/firings` accepts (hub-interface §4.7): the firings of every trigger whose
 * pipeline the caller may read, newest first unless sorted.
 */
export const FIRING_LIST_QUERY = defineListQuery({
  filters: {
    triggerId: { column: 'firing.trigger_id', type: 'uuid', operators: ['EQ'] },
    triggerTime: { column: 'firing.trigger_time', type: 'datetime', operators: ['LT', 'GT'] },
  },
  sorts: FIRING_SORTS,
  defaultSort: '-triggerTime',
  tieBreaker: 'firing.id',
  indexes: {
    // A caller narrowed to namespaces reads the firings of the triggers in scope (a semi-join) through the indexes led by the trigger.
    sorts: {
      triggerTime: ['pipeline_trigger_firings_time_idx', 'pipeline_trigger_firings_trigger_time_idx'],
      triggerId: 'pipeline_trigger_firings_trigger_idx',
    },
    filters: {
      triggerId: ['pipeline_trigger_firings_trigger_time_idx', 'pipeline_trigger_firings_trigger_idx'],
      triggerTime: 'pipeline_trigger_firings_time_idx',
    },
    ordered: [
      { filter: 'triggerTime', operators: ['LT', 'GT'], sorts: ['triggerTime'] },
      { filter: 'triggerId', operators: ['EQ'], sorts: ['triggerId'] },
    ],
  },
});

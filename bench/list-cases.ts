// The list queries whose SQL and plans are committed (bench/list-snapshots.ts): every list of every
// area, each sort, filter and caller kind worth seeing, at a million rows for the lists that grow
// and at a deployment's size for those that stay small (bench/million.ts). A list defined with
// defineListQuery and absent here fails `npm run queries:check` (listsWithoutSnapshot).
import { type GroupsRepository } from '../src/auth/groups.repository.js';
import { GROUP_LIST_QUERY, GROUP_MEMBER_LIST_QUERY, PRINCIPAL_LIST_QUERY, USER_GROUP_LIST_QUERY, USER_LIST_QUERY } from '../src/auth/list-queries.js';
import { type UsersRepository } from '../src/auth/users.repository.js';
import { type AuthDomainsRepository } from '../src/authdomains/auth-domains.repository.js';
import { type CredentialsRepository } from '../src/authdomains/credentials.repository.js';
import { AUTH_DOMAIN_LIST_QUERY, CREDENTIAL_LIST_QUERY, MY_CREDENTIAL_LIST_QUERY } from '../src/authdomains/list-queries.js';
import { type ClusterRepository } from '../src/cluster/cluster.repository.js';
import { EXECUTION_LIST_QUERY, JOB_LIST_QUERY, NODE_LIST_QUERY } from '../src/cluster/list-queries.js';
import type { NamespaceScope } from '../src/common/http/access-scope.js';
import { type parseListQuery, type ListQuerySpec } from '../src/common/query/list-query.js';
import type { RawQuery } from '../src/common/query/query-values.js';
import { type ExecutionProfilesRepository } from '../src/execution-profiles/execution-profiles.repository.js';
import { EXECUTION_PROFILE_LIST_QUERY, PROFILE_BINDING_LIST_QUERY } from '../src/execution-profiles/list-queries.js';
import { type ProfileBindingsRepository } from '../src/execution-profiles/profile-bindings.repository.js';
import { NAMESPACE_LIST_QUERY } from '../src/namespaces/namespace-list.query.js';
import { type NamespacesRepository } from '../src/namespaces/namespaces.repository.js';
import {
  FIRING_LIST_QUERY,
  namespaceFilterOf,
  narrowedToNamespaces,
  PIPELINE_ENTRY_LIST_QUERY,
  PIPELINE_RUN_LIST_QUERY,
  TRIGGER_FIRING_LIST_QUERY,
  TRIGGER_LIST_QUERY,
} from '../src/pipelines/list-queries.js';
import { type PipelineEntriesRepository } from '../src/pipelines/pipeline-entries.repository.js';
import { type PipelineRunsRepository } from '../src/pipelines/pipeline-runs.repository.js';
import { type PipelineTriggersRepository } from '../src/pipelines/pipeline-triggers.repository.js';
import { type LibraryDefinitionsRepository } from '../src/libraries/library-definitions.repository.js';
import { LIBRARY_DEFINITION_LIST_QUERY, PUBLISHED_LIBRARY_LIST_QUERY } from '../src/libraries/list-queries.js';
import { type PublishedLibrariesRepository } from '../src/libraries/published-libraries.repository.js';
import { type LinkSessionsRepository } from '../src/sessions/link-sessions.repository.js';
import { SESSION_LIST_QUERY } from '../src/sessions/list-queries.js';
import { type AuditRepository } from '../src/rbac/audit.repository.js';
import { AUDIT_LIST_QUERY, ROLE_BINDING_DELETE_QUERY, ROLE_BINDING_LIST_QUERY, ROLE_LIST_QUERY } from '../src/rbac/list-queries.js';
import { type RoleBindingsRepository } from '../src/rbac/role-bindings.repository.js';
import { type RolesRepository } from '../src/rbac/roles.repository.js';
import { MILLION, seededEntryTime, seededFiringTime, seededRunTime, seededTime } from './million.js';

/**
 * Who a case lists as: everything (an administrator), one namespace and their own items, or the
 * same with a Deny that hides some of the namespace's jobs (a pattern on their ids).
 */
export type Caller = 'administrator' | 'narrowed' | 'denied';

export interface Seeded {
  readonly namespaceId: string;
  readonly userId: string;
  readonly domainId: string;
  readonly roleId: string;
  readonly nodeId: string;
  readonly jobId: string;
  /** A group with members (team-1), a user in groups (member-1), a namespace with a profile bound as its default (seed-ns-03 is namespaceId). */
  readonly groupId: string;
  readonly memberId: string;
  readonly profileId: string;
  /** A folder of pipeline entries (folder-42, in seed-ns-02) and a pipeline inside it (the first by name, one of those the seeded runs are of). */
  readonly folderId: string;
  readonly pipelineId: string;
  /** The oldest trigger of that pipeline (with a hundred firings). */
  readonly triggerId: string;
}

export interface Repositories {
  readonly cluster: ClusterRepository;
  readonly users: UsersRepository;
  readonly groups: GroupsRepository;
  readonly credentials: CredentialsRepository;
  readonly bindings: RoleBindingsRepository;
  readonly audit: AuditRepository;
  readonly namespaces: NamespacesRepository;
  readonly roles: RolesRepository;
  readonly domains: AuthDomainsRepository;
  readonly profiles: ExecutionProfilesRepository;
  readonly profileBindings: ProfileBindingsRepository;
  readonly pipelineEntries: PipelineEntriesRepository;
  readonly pipelineRuns: PipelineRunsRepository;
  readonly pipelineTriggers: PipelineTriggersRepository;
  readonly sessions: LinkSessionsRepository;
  readonly libraryDefinitions: LibraryDefinitionsRepository;
  readonly publishedLibraries: PublishedLibrariesRepository;
}

export interface ListCase {
  /** src/<area>/queries/<file>.sql */
  readonly area: string;
  readonly file: string;
  readonly spec: ListQuerySpec;
  readonly path: string;
  readonly raw: (seeded: Seeded) => RawQuery;
  readonly caller?: Caller;
  readonly run: (
    repositories: Repositories,
    query: ReturnType<typeof parseListQuery>,
    scope: NamespaceScope,
    callerId: string,
    seeded: Seeded,
  ) => Promise<unknown>;
}

const RECENT = seededTime(MILLION.jobs - 8_640); // the last day of a million jobs
const EARLY = seededTime(100_000);

function jobs(title: string, raw: RawQuery, caller: Caller = 'administrator'): ListCase {
  return {
    area: 'cluster',
    file: 'jobs',
    spec: JOB_LIST_QUERY,
    path: `GET /cluster/jobs${title}`,
    raw: () => raw,
    caller,
    run: (r, q, s, c) => r.cluster.listJobs(q, s, c),
  };
}

function executions(title: string, raw: (seeded: Seeded) => RawQuery, caller: Caller = 'administrator'): ListCase {
  return {
    area: 'cluster',
    file: 'executions',
    spec: EXECUTION_LIST_QUERY,
    path: `GET /cluster/executions${title}`,
    raw,
    caller,
    run: (r, q, s, c) => r.cluster.listExecutions(q, s, c),
  };
}

const ENTRY_RECENT = seededEntryTime(MILLION.others - 1_000); // the last thousand entries
const ENTRY_EARLY = seededEntryTime(50_000);

/** Pipeline entries as the service lists them: a `namespace` filter narrows the scope, by the namespaces' ids. */
async function listEntries(r: Repositories, query: ReturnType<typeof parseListQuery>, scope: NamespaceScope) {
  const names = namespaceFilterOf(query);
  const ids = names && (await r.namespaces.findByNames(names)).map((namespace) => namespace.id);
  const narrowed = narrowedToNamespaces(query, scope, ids);
  return r.pipelineEntries.list(narrowed.query, narrowed.scope);
}

function entries(title: string, raw: (seeded: Seeded) => RawQuery, caller: Caller = 'administrator'): ListCase {
  return {
    area: 'pipelines',
    file: 'pipeline-entries',
    spec: PIPELINE_ENTRY_LIST_QUERY,
    path: `GET /pipelines/entries${title}`,
    raw,
    caller,
    run: (r, q, s) => listEntries(r, q, s),
  };
}

const SESSION_RECENT = seededTime(MILLION.others - 8_640); // the last day of a million sessions
const SESSION_EARLY = seededTime(100_000);

/** The administrator's query of link sessions (every session: it has no narrowed callers). */
function sessions(title: string, raw: (seeded: Seeded) => RawQuery): ListCase {
  return {
    area: 'sessions',
    file: 'link-sessions',
    spec: SESSION_LIST_QUERY,
    path: `GET /linksessions/sessions${title}`,
    raw,
    run: (r, q) => r.sessions.list(q),
  };
}

const RUN_RECENT = seededRunTime(MILLION.others - 8_640); // the last day of a million runs
const RUN_EARLY = seededRunTime(100_000);

/**
 * Pipeline runs as the service lists them: a `namespace` filter is a condition of its own, by the
 * namespaces' ids (the caller's own runs are narrowed by it too, so it does not narrow the scope).
 */
async function listRuns(r: Repositories, query: ReturnType<typeof parseListQuery>, scope: NamespaceScope, callerId: string) {
  const names = namespaceFilterOf(query);
  const ids = names && (await r.namespaces.findByNames(names)).map((namespace) => namespace.id);
  const filtered = { ...query, filters: query.filters.filter((condition) => condition.field !== 'namespace') };
  return r.pipelineRuns.list(filtered, scope, callerId, ids);
}

function runs(title: string, raw: (seeded: Seeded) => RawQuery, caller: Caller = 'administrator'): ListCase {
  return {
    area: 'pipelines',
    file: 'pipeline-runs',
    spec: PIPELINE_RUN_LIST_QUERY,
    path: `GET /pipelines/runs${title}`,
    raw,
    caller,
    run: (r, q, s, c) => listRuns(r, q, s, c),
  };
}

const TRIGGER_LATE = new Date(Date.parse(seededEntryTime(0)) + 75 * 1000).toISOString(); // the last 25 of the pipeline's 100 triggers
const FIRING_RECENT = seededFiringTime(MILLION.others - 8_640); // the last day of a million firings
const FIRING_EARLY = seededFiringTime(100_000);

function triggers(title: string, raw: (seeded: Seeded) => RawQuery): ListCase {
  return {
    area: 'pipelines',
    file: 'pipeline-triggers',
    spec: TRIGGER_LIST_QUERY,
    path: `GET /pipelines/entries/{id}/triggers${title}`,
    raw,
    run: (r, q, _s, _c, seeded) => r.pipelineTriggers.list(seeded.pipelineId, q),
  };
}

function triggerFirings(title: string, raw: (seeded: Seeded) => RawQuery): ListCase {
  return {
    area: 'pipelines',
    file: 'trigger-firings',
    spec: TRIGGER_FIRING_LIST_QUERY,
    path: `GET /pipelines/triggers/{triggerId}/firings${title}`,
    raw,
    run: (r, q, _s, _c, seeded) => r.pipelineTriggers.listFirings(q, { triggerId: seeded.triggerId }),
  };
}

function firings(title: string, raw: (seeded: Seeded) => RawQuery, caller: Caller = 'administrator'): ListCase {
  return {
    area: 'pipelines',
    file: 'trigger-firings',
    spec: FIRING_LIST_QUERY,
    path: `GET /pipelines/firings${title}`,
    raw,
    caller,
    run: (r, q, s) => r.pipelineTriggers.listFirings(q, { scope: s }),
  };
}

function libraryDefinitions(title: string, raw: RawQuery): ListCase {
  return {
    area: 'libraries',
    file: 'library-definitions',
    spec: LIBRARY_DEFINITION_LIST_QUERY,
    path: `GET /libraries/definitions${title}`,
    raw: () => raw,
    run: (r, q) => r.libraryDefinitions.list(q),
  };
}

function publishedLibraries(title: string, raw: RawQuery, caller: Caller = 'administrator'): ListCase {
  return {
    area: 'libraries',
    file: 'published-libraries',
    spec: PUBLISHED_LIBRARY_LIST_QUERY,
    path: `GET /libraries/published${title}`,
    raw: () => raw,
    caller,
    run: (r, q, s) => r.publishedLibraries.list(q, s),
  };
}

export const CASES: ListCase[] = [
  libraryDefinitions('', {}),
  libraryDefinitions('?filter[name][SW]=sal&sort=-_modified', { 'filter[name][SW]': 'sal', sort: '-_modified' }),
  libraryDefinitions('?filter[namespace][IN]=default,other&filter[engine][EQ]=csv', { 'filter[namespace][IN]': 'default,other', 'filter[engine][EQ]': 'csv' }),
  publishedLibraries('', {}),
  publishedLibraries('?filter[name][ST]=sa&sort=-name', { 'filter[name][ST]': 'sa', sort: '-name' }),
  publishedLibraries('', {}, 'narrowed'),
  triggers('', () => ({})),
  triggers('?sort=-modified', () => ({ sort: '-modified' })),
  triggers('?filter[type][EQ]=File', () => ({ 'filter[type][EQ]': 'File' })),
  triggers('?filter[disabled][EQ]=true&sort=-created', () => ({ 'filter[disabled][EQ]': 'true', sort: '-created' })),
  triggers('?filter[created][GT]=<the last 50>', () => ({ 'filter[created][GT]': TRIGGER_LATE })),
  triggerFirings('', () => ({})),
  triggerFirings('?sort=triggerTime', () => ({ sort: 'triggerTime' })),
  triggerFirings('?filter[triggerTime][GT]=<last day>', () => ({ 'filter[triggerTime][GT]': FIRING_RECENT })),
  triggerFirings('?filter[triggerTime][LT]=<early>&sort=-triggerTime', () => ({ 'filter[triggerTime][LT]': FIRING_EARLY, sort: '-triggerTime' })),
  triggerFirings('?page[offset]=50', () => ({ 'page[offset]': '50' })),
  firings('', () => ({})),
  firings('?sort=triggerId', () => ({ sort: 'triggerId' })),
  firings('?filter[triggerId][EQ]=<a trigger>', (s) => ({ 'filter[triggerId][EQ]': s.triggerId })),
  firings('?filter[triggerTime][GT]=<last day>', () => ({ 'filter[triggerTime][GT]': FIRING_RECENT })),
  firings('?filter[triggerTime][LT]=<early>&sort=triggerTime', () => ({ 'filter[triggerTime][LT]': FIRING_EARLY, sort: 'triggerTime' })),
  firings('?page[offset]=900000', () => ({ 'page[offset]': '900000' })),
  firings('', () => ({}), 'narrowed'),
  firings('?filter[triggerId][EQ]=<a trigger>', (s) => ({ 'filter[triggerId][EQ]': s.triggerId }), 'narrowed'),
  jobs('', {}),
  jobs('?page[limit]=1000', { 'page[limit]': '1000' }),
  jobs('?filter[status][EQ]=running', { 'filter[status][EQ]': 'running' }),
  jobs('?filter[status][IN]=pending,running', { 'filter[status][IN]': 'pending,running' }),
  jobs('?filter[name][ST]=bulk-123', { 'filter[name][ST]': 'bulk-123' }),
  jobs('?filter[name][CO]=150000', { 'filter[name][CO]': '150000' }),
  jobs(`?filter[submitTime][GT]=<last day>`, { 'filter[submitTime][GT]': RECENT }),
  jobs(`?filter[submitTime][LT]=<early>`, { 'filter[submitTime][LT]': EARLY }),
  jobs('?sort=name', { sort: 'name' }),
  jobs('?sort=-status', { sort: '-status' }),
  jobs('?sort=type', { sort: 'type' }),
  jobs('?page[offset]=900000', { 'page[offset]': '900000' }),
  jobs('?filter[status][EQ]=dead&filter[type][EQ]=service&filter[submitTime][GT]=<last day>', {
    'filter[status][EQ]': 'dead',
    'filter[type][EQ]': 'service',
    'filter[submitTime][GT]': RECENT,
  }),
  jobs('', {}, 'narrowed'),
  jobs('?filter[status][EQ]=running', { 'filter[status][EQ]': 'running' }, 'narrowed'),
  jobs('?filter[name][ST]=bulk-123', { 'filter[name][ST]': 'bulk-123' }, 'narrowed'),
  jobs('?sort=name', { sort: 'name' }, 'narrowed'),
  jobs('', {}, 'denied'),
  entries('', () => ({})),
  entries('?page[limit]=1000', () => ({ 'page[limit]': '1000' })),
  entries('?filter[name][EQ]=pipeline-424242', () => ({ 'filter[name][EQ]': 'pipeline-424242' })),
  entries('?filter[name][CO]=42424', () => ({ 'filter[name][CO]': '42424' })),
  entries('?filter[name][ST]=pipeline-4242', () => ({ 'filter[name][ST]': 'pipeline-4242' })),
  entries('?filter[folderId][EQ]=<a folder>', (s) => ({ 'filter[folderId][EQ]': s.folderId })),
  entries('?filter[folderPath][EQ]=/', () => ({ 'filter[folderPath][EQ]': '/' })),
  entries('?filter[folderPath][EQ]=/folder-42&sort=-_created', () => ({ 'filter[folderPath][EQ]': '/folder-42', sort: '-_created' })),
  entries('?filter[_type][EQ]=Folder', () => ({ 'filter[_type][EQ]': 'Folder' })),
  entries('?filter[_id][IN]=<a folder and a pipeline>', (s) => ({ 'filter[_id][IN]': `${s.folderId},${s.pipelineId}` })),
  entries('?filter[_created][GT]=<the last thousand>&sort=-_created', () => ({ 'filter[_created][GT]': ENTRY_RECENT, sort: '-_created' })),
  entries('?filter[_modified][LT]=<early>&sort=_modified', () => ({ 'filter[_modified][LT]': ENTRY_EARLY, sort: '_modified' })),
  entries('?sort=-_modified', () => ({ sort: '-_modified' })),
  entries('?page[offset]=900000', () => ({ 'page[offset]': '900000' })),
  entries('?filter[namespace][EQ]=seed-ns-03', () => ({ 'filter[namespace][EQ]': 'seed-ns-03' })),
  entries('?filter[namespace][IN]=seed-ns-03,seed-ns-04&filter[_type][EQ]=Pipeline&sort=-_created', () => ({
    'filter[namespace][IN]': 'seed-ns-03,seed-ns-04',
    'filter[_type][EQ]': 'Pipeline',
    sort: '-_created',
  })),
  entries('', () => ({}), 'narrowed'),
  entries('?sort=-_created', () => ({ sort: '-_created' }), 'narrowed'),
  entries('?filter[folderPath][EQ]=/', () => ({ 'filter[folderPath][EQ]': '/' }), 'narrowed'),
  sessions('', () => ({})),
  sessions('?sort=startTime', () => ({ sort: 'startTime' })),
  sessions('?sort=-deathClock', () => ({ sort: '-deathClock' })),
  sessions('?sort=configurationName', () => ({ sort: 'configurationName' })),
  sessions('?filter[ownerPrincipal][EQ]=<a user>', (s) => ({ 'filter[ownerPrincipal][EQ]': s.userId })),
  sessions('?filter[configurationName][EQ]=notebook', () => ({ 'filter[configurationName][EQ]': 'notebook' })),
  sessions('?filter[status][EQ]=Ready', () => ({ 'filter[status][EQ]': 'Ready' })),
  sessions('?filter[status][IN]=Pending,Ready,Blocked', () => ({ 'filter[status][IN]': 'Pending,Ready,Blocked' })),
  sessions('?filter[startTime][GT]=<last day>', () => ({ 'filter[startTime][GT]': SESSION_RECENT })),
  sessions('?filter[deathClock][LT]=<early>&sort=deathClock', () => ({ 'filter[deathClock][LT]': SESSION_EARLY, sort: 'deathClock' })),
  sessions('?page[offset]=900000', () => ({ 'page[offset]': '900000' })),
  runs('', () => ({})),
  runs('?sort=created', () => ({ sort: 'created' })),
  runs('?filter[state][EQ]=Executing', () => ({ 'filter[state][EQ]': 'Executing' })),
  runs('?filter[state][IN]=Queued,Executing', () => ({ 'filter[state][IN]': 'Queued,Executing' })),
  runs('?filter[ownerPrincipal][EQ]=<a user>', (s) => ({ 'filter[ownerPrincipal][EQ]': s.userId })),
  runs('?filter[pipelineId][EQ]=<a pipeline>', (s) => ({ 'filter[pipelineId][EQ]': s.pipelineId })),
  runs('?filter[namespace][EQ]=seed-ns-03', () => ({ 'filter[namespace][EQ]': 'seed-ns-03' })),
  runs('?filter[created][GT]=<last day>', () => ({ 'filter[created][GT]': RUN_RECENT })),
  runs('?filter[created][LT]=<early>', () => ({ 'filter[created][LT]': RUN_EARLY })),
  runs('?filter[startedAt][GT]=<last day>', () => ({ 'filter[startedAt][GT]': RUN_RECENT })),
  runs('?filter[finishedAt][LT]=<early>', () => ({ 'filter[finishedAt][LT]': RUN_EARLY })),
  runs('?page[offset]=900000', () => ({ 'page[offset]': '900000' })),
  runs('', () => ({}), 'narrowed'),
  runs('?sort=created', () => ({ sort: 'created' }), 'narrowed'),
  runs('?filter[state][EQ]=Executing', () => ({ 'filter[state][EQ]': 'Executing' }), 'narrowed'),
  runs('?filter[namespace][EQ]=seed-ns-03', () => ({ 'filter[namespace][EQ]': 'seed-ns-03' }), 'narrowed'),
  executions('', () => ({})),
  executions('?page[limit]=1000', () => ({ 'page[limit]': '1000' })),
  executions('?filter[status][EQ]=running', () => ({ 'filter[status][EQ]': 'running' })),
  executions('?filter[status][IN]=pending,running', () => ({ 'filter[status][IN]': 'pending,running' })),
  executions('?filter[creationTime][GT]=<last day>', () => ({ 'filter[creationTime][GT]': RECENT })),
  executions('?filter[modifiedTime][LT]=<early>&sort=modifiedTime', () => ({ 'filter[modifiedTime][LT]': EARLY, sort: 'modifiedTime' })),
  executions('?filter[nodeId][EQ]=<a node>', (s) => ({ 'filter[nodeId][EQ]': s.nodeId })),
  executions('?filter[jobId][EQ]=<a job>', (s) => ({ 'filter[jobId][EQ]': s.jobId })),
  executions('?page[offset]=900000', () => ({ 'page[offset]': '900000' })),
  executions('', () => ({}), 'narrowed'),
  executions('?filter[status][EQ]=running', () => ({ 'filter[status][EQ]': 'running' }), 'narrowed'),
  executions('', () => ({}), 'denied'),
  ...(
    [
      ['', {}],
      ['?filter[userName][CO]=ber-12345', { 'filter[userName][CO]': 'ber-12345' }],
      ['?filter[system][EQ]=true', { 'filter[system][EQ]': 'true' }],
      ['?sort=-_created', { sort: '-_created' }],
    ] as const
  ).map(([title, raw]): ListCase => ({
    area: 'auth',
    file: 'users',
    spec: USER_LIST_QUERY,
    path: `GET /auth/users${title}`,
    raw: () => raw,
    run: (r, q) => r.users.list(q, undefined),
  })),
  ...(
    [
      ['', {}],
      ['?filter[name][CO]=am-4242', { 'filter[name][CO]': 'am-4242' }],
    ] as const
  ).map(([title, raw]): ListCase => ({
    area: 'auth',
    file: 'groups',
    spec: GROUP_LIST_QUERY,
    path: `GET /auth/groups${title}`,
    raw: () => raw,
    run: (r, q) => r.groups.list(q, undefined),
  })),
  ...(
    [
      ['', {}],
      ['?filter[displayName][SW]=Member 4242', { 'filter[displayName][SW]': 'Member 4242' }],
    ] as const
  ).map(([title, raw]): ListCase => ({
    area: 'auth',
    file: 'principals',
    spec: PRINCIPAL_LIST_QUERY,
    path: `GET /auth/principals${title}`,
    raw: () => raw,
    run: (r, q) => r.groups.listPrincipals(q),
  })),
  ...(
    [
      ['?filter[authDomain][EQ]=<the domain>', {}],
      ['?filter[authDomain][EQ]=<the domain>&sort=-_created', { sort: '-_created' }],
    ] as const
  ).map(([title, raw]): ListCase => ({
    area: 'authdomains',
    file: 'credentials',
    spec: CREDENTIAL_LIST_QUERY,
    path: `GET /authdomains/credentials${title}`,
    raw: (s) => ({ 'filter[authDomain][EQ]': s.domainId, ...raw }),
    run: (r, q, s) => r.credentials.list(q, s),
  })),
  ...(
    [
      ['', () => ({})],
      ['?filter[role][EQ]=<a role>', (s: Seeded) => ({ 'filter[role][EQ]': s.roleId })],
    ] as const
  ).map(([title, raw]): ListCase => ({
    area: 'rbac',
    file: 'role-bindings',
    spec: ROLE_BINDING_LIST_QUERY,
    path: `GET /rbac/rolebindings${title}`,
    raw,
    run: (r, q, s) => r.bindings.list(q, s),
  })),
  ...(
    [
      ['', () => ({})],
      ['?filter[userId][EQ]=<a user>', (s: Seeded) => ({ 'filter[userId][EQ]': s.userId })],
      ['?filter[object][SW]=cluster/jobs/bulk-4242', () => ({ 'filter[object][SW]': 'cluster/jobs/bulk-4242' })],
      ['?filter[decision][EQ]=Deny', () => ({ 'filter[decision][EQ]': 'Deny' })],
    ] as const
  ).map(([title, raw]): ListCase => ({
    area: 'rbac',
    file: 'audit',
    spec: AUDIT_LIST_QUERY,
    path: `GET /rbac/audit${title}`,
    raw,
    run: (r, q) => r.audit.list(q),
  })),
  ...small('namespaces', 'namespaces', NAMESPACE_LIST_QUERY, 'GET /namespaces', (r, q, s) => r.namespaces.list(q, s), [
    ['', () => ({})],
    ['?filter[name][CO]=data&sort=-_created&page[limit]=50', () => ({ 'filter[name][CO]': 'data', sort: '-_created', 'page[limit]': '50' })],
    ['?filter[name][CO]=00042-data', () => ({ 'filter[name][CO]': '00042-data' })],
    ['?filter[name][SW]=team-0004', () => ({ 'filter[name][SW]': 'team-0004' })],
    ['?filter[_created][GT]=<the last thousand>&sort=-_created', () => ({ 'filter[_created][GT]': seededTime(900), sort: '-_created' })],
    ['?sort=-_modified', () => ({ sort: '-_modified' })],
    ['?page[offset]=9000', () => ({ 'page[offset]': '9000' })],
  ]),
  ...small('namespaces', 'namespaces', NAMESPACE_LIST_QUERY, 'GET /namespaces', (r, q, s) => r.namespaces.list(q, s), [['', () => ({})]], 'narrowed'),
  ...small('rbac', 'roles', ROLE_LIST_QUERY, 'GET /rbac/roles', (r, q) => r.roles.list(q, undefined), [
    ['', () => ({})],
    ['?filter[name][CO]=042', () => ({ 'filter[name][CO]': '042' })],
    ['?filter[system][EQ]=false&sort=-created', () => ({ 'filter[system][EQ]': 'false', sort: '-created' })],
  ]),
  ...small('rbac', 'role-bindings-delete', ROLE_BINDING_DELETE_QUERY, 'DELETE /rbac/rolebindings', (r, q) => r.bindings.deleteWhere(q.filters), [
    ['?principal=<a user bound nowhere>', (s) => ({ 'filter[principal][EQ]': s.userId })],
  ]),
  ...small('authdomains', 'auth-domains', AUTH_DOMAIN_LIST_QUERY, 'GET /authdomains/authdomains', (r, q, s) => r.domains.list(q, s), [
    ['', () => ({})],
    ['?filter[name][CO]=042', () => ({ 'filter[name][CO]': '042' })],
    ['?filter[namespace][EQ]=team-00042-data&sort=-_created', () => ({ 'filter[namespace][EQ]': 'team-00042-data', sort: '-_created' })],
  ]),
  ...small(
    'authdomains',
    'auth-domains',
    AUTH_DOMAIN_LIST_QUERY,
    'GET /authdomains/authdomains',
    (r, q, s) => r.domains.list(q, s),
    [['', () => ({})]],
    'narrowed',
  ),
  ...small(
    'authdomains',
    'my-credentials',
    MY_CREDENTIAL_LIST_QUERY,
    'GET /authdomains/me/credentials',
    (r, q, _s, c) => r.credentials.listOf(c, q),
    [['', () => ({})]],
    'narrowed',
  ),
  ...small(
    'execution-profiles',
    'execution-profiles',
    EXECUTION_PROFILE_LIST_QUERY,
    'GET /execution-profiles/execprofiles',
    (r, q) => r.profiles.list(q, NO_CONDITIONS, undefined),
    [
      ['', () => ({})],
      ['?filter[name][CO]=042', () => ({ 'filter[name][CO]': '042' })],
      ['?sort=-_created', () => ({ sort: '-_created' })],
    ],
  ),
  ...small(
    'execution-profiles',
    'execution-profiles',
    EXECUTION_PROFILE_LIST_QUERY,
    'GET /execution-profiles/execprofiles?hasBindingTo=<a namespace>',
    (r, q, s) => r.profiles.list(q, { ...NO_CONDITIONS, boundToAny: [s.all ? [] : s.only] }, undefined),
    [['', () => ({})]],
    'narrowed',
  ),
  ...small(
    'execution-profiles',
    'profile-bindings',
    PROFILE_BINDING_LIST_QUERY,
    'GET /execution-profiles/bindings',
    (r, q, s) => r.profileBindings.list(q, s),
    [
      ['', () => ({})],
      ['?filter[executionProfileId][EQ]=<a profile>', (s) => ({ 'filter[executionProfileId][EQ]': s.profileId })],
      ['?filter[namespaceId][EQ]=<a namespace>&sort=executionProfileId', (s) => ({ 'filter[namespaceId][EQ]': s.namespaceId, sort: 'executionProfileId' })],
    ],
  ),
  ...small('cluster', 'nodes', NODE_LIST_QUERY, 'GET /cluster/nodes', (r, q) => r.cluster.listNodes(q, undefined), [
    ['', () => ({})],
    ['?filter[status][EQ]=down', () => ({ 'filter[status][EQ]': 'down' })],
    ['?filter[nodeLabels][ANY]=gpu&sort=address', () => ({ 'filter[nodeLabels][ANY]': 'gpu', sort: 'address' })],
  ]),
  ...small(
    'auth',
    'group-members',
    GROUP_MEMBER_LIST_QUERY,
    'GET /auth/groups/<team-1>/members',
    (r, q, _s, _c, seeded) => r.groups.members(seeded.groupId, q),
    [
      ['', () => ({})],
      ['?filter[principalType][EQ]=User', () => ({ 'filter[principalType][EQ]': 'User' })],
    ],
  ),
  ...small('auth', 'user-groups', USER_GROUP_LIST_QUERY, 'GET /auth/users/<member-1>/groups', (r, q, _s, _c, seeded) => r.users.groupsOf(seeded.memberId, q), [
    ['', () => ({})],
  ]),
];

const NO_CONDITIONS = { permitted: [], boundToAny: [], boundToAll: [], defaultFor: [] };

/** Cases of a list that stays small, taken at a deployment's size (bench/million.ts DEPLOYMENT). */
function small(
  area: string,
  file: string,
  spec: ListQuerySpec,
  path: string,
  run: ListCase['run'],
  requests: readonly (readonly [string, (seeded: Seeded) => RawQuery])[],
  caller: Caller = 'administrator',
): ListCase[] {
  return requests.map(([title, raw]) => ({ area, file, spec, path: `${path}${title}`, raw, caller, run }));
}

/**
 * The lists (among `lists`, by default every one defined) that no case snapshots, each described
 * by what it sorts and filters: `npm run queries:check` fails while there is one.
 */
export function listsWithoutSnapshot(lists: Iterable<ListQuerySpec>, cases: readonly Pick<ListCase, 'spec'>[] = CASES): string[] {
  const covered = new Set(cases.map((listCase) => listCase.spec));
  return [...lists]
    .filter((spec) => !covered.has(spec))
    .map((spec) => `the list over ${spec.tieBreaker} (sorts ${Object.keys(spec.sorts).join(', ')}; filters ${Object.keys(spec.filters).join(', ') || 'none'})`);
}

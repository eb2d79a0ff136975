import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RequestMethod } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { ACTIONS, ROUTE_OPTIONS, type Action, type HttpMethod, type RouteAccess, type RouteOptions } from '../../src/common/http/route.decorator.js';
import { ADMIN_PASSWORD, ADMIN_USER, bearer, enterableTempDir, startTestHub, type InjectResponse, type TestHub } from '../support/test-hub.js';
import { writeData } from '../libraries/support.js';

/**
 * Every route of the hub is guarded (api-map §0, §6): a table with one row per route, each with a
 * request that succeeds for an authorised caller, tried without credentials, by a user without
 * bindings, by a user with every action on the route's object but the one it needs, and by a user
 * with exactly the permission the route declares. A route missing from the table fails the spec.
 */

const PASSWORD = 'a-long-enough-password';
const OTHER_PASSWORD = 'another-long-enough-password';
const PROBLEM_KEYS = ['detail', 'msg', 'requestId', 'status', 'title', 'type'];

interface Fixtures {
  readonly user: string;
  readonly doomedUser: string;
  readonly boundUser: string;
  readonly group: string;
  readonly doomedGroup: string;
  readonly role: string;
  readonly doomedRole: string;
  readonly namespace: string;
  readonly doomedNamespace: string;
  readonly invitationToken: string;
  readonly spareNamespace: string;
  readonly authDomain: string;
  readonly doomedAuthDomain: string;
  readonly credential: string;
  readonly doomedCredential: string;
  readonly executionProfile: string;
  readonly doomedProfile: string;
  readonly standardProfile: string;
  readonly binding: string;
  readonly doomedBinding: string;
  readonly node: string;
  readonly job: string;
  readonly execution: string;
  readonly pipelineEntry: string;
  readonly libraryDefinition: string;
  readonly doomedLibraryDefinition: string;
  readonly publishableDefinition: string;
  readonly publishedLibrary: string;
  readonly doomedPublishedLibrary: string;
  readonly doomedPipelineEntry: string;
  readonly run: string;
  readonly doomedRun: string;
  readonly cancellableRun: string;
  readonly trigger: string;
  readonly doomedTrigger: string;
  /** A link session of the administrator's (its configuration runs `true` and fails at once). */
  readonly session: string;
}

/** Names and values of the fixtures, which no denial may reveal. */
const FIXTURE_NAMES = {
  user: 'rbac-target',
  userDisplayName: 'Target Person',
  userEmail: 'target@example.com',
  doomedUser: 'rbac-doomed-user',
  boundUser: 'rbac-bound-user',
  invitee: 'rbac-invitee',
  group: 'rbac-fixture-group',
  doomedGroup: 'rbac-doomed-group',
  role: 'rbac-fixture-role',
  doomedRole: 'rbac-doomed-role',
  namespace: 'rbac-fixture-ns',
  doomedNamespace: 'rbac-doomed-ns',
  spareNamespace: 'rbac-spare-ns',
  authDomain: 'rbac-fixture-domain',
  doomedAuthDomain: 'rbac-doomed-domain',
  credential: 'rbac-fixture-credential',
  doomedCredential: 'rbac-doomed-credential',
  executionProfile: 'rbac-fixture-profile',
  doomedProfile: 'rbac-doomed-profile',
  pipelineEntry: 'rbac-fixture-pipeline',
  doomedPipelineEntry: 'rbac-doomed-pipeline',
  libraryDefinition: 'rbac-fixture-library',
  doomedLibraryDefinition: 'rbac-doomed-library',
  publishableDefinition: 'rbac-publishable-library',
  doomedPublishedLibrary: 'rbac-doomed-published',
} as const;

/** The directory of the fixture libraries (one CSV file, `orders`), under the hub's HUB_LIBRARY_ROOTS. */
const LIBRARY_ROOT = enterableTempDir('hub-rbac-libraries-');
const LIBRARY_PATH = join(LIBRARY_ROOT, 'sales');
const LIBRARY_BODY = (name: string) => ({ name, namespace: FIXTURE_NAMES.namespace, engine: 'csv', path: LIBRARY_PATH });
/** An asynchronous operation no library has: its routes answer 404 once access is granted. */
const NO_OPERATION = '00000000-0000-4000-8000-000000000000';
const LIBRARY_READ = { object: '/PublishedLibraries/{id}', action: 'Read', namespace: { resource: 'publishedLibrary', param: 'id' } } as const;
const DEFINITION_ACCESS = (action: Action) =>
  ({ object: '/LibraryDefinitions/{id}', action, namespace: { resource: 'libraryDefinition', param: 'id' } }) as const;
/** A route of the fixture library, read as it. */
const libraryRoute = (method: HttpMethod, path: string, extra: Partial<RouteCase> = {}): RouteCase => ({
  method,
  path: `/api/v2/libraries/published/:id${path}`,
  access: LIBRARY_READ,
  resource: FIXTURE_NAMES.libraryDefinition,
  params: (f) => ({ id: f.publishedLibrary, name: 'orders', operationId: NO_OPERATION, workerIndex: '0' }),
  allowed: 200,
  ...extra,
});

/** A link session configuration of the fixtures (named: configurations are not ids). */
const SESSION_CONFIG = 'rbac-session-config';

const PIPELINE_SPEC = { nodes: [{ name: 'only', task: { type: 'rawexec', command: 'true' } }] };
/** A trigger of the fixture pipeline that is never due within the spec (1 January). */
const TRIGGER_BODY = (f: Fixtures) => ({
  pipelineId: f.pipelineEntry,
  disabled: false,
  trigger: { type: 'Cron', cronExpression: '0 0 1 1 *' },
  executionProfileId: f.executionProfile,
});

interface Caller {
  readonly id: string;
  readonly userName: string;
  readonly token: string;
}

interface RouteCase {
  readonly method: HttpMethod;
  /** As the application registers it, with `:param` placeholders. */
  readonly path: string;
  /** What the route must declare in its `@Route`. */
  readonly access: RouteAccess;
  readonly params?: (f: Fixtures) => Record<string, string>;
  /** The name of the fixture a single-resource route acts on. */
  readonly resource?: string;
  readonly query?: (f: Fixtures) => string;
  readonly payload?: (f: Fixtures) => unknown;
  /** Headers the request carries besides the caller's (a body's type). */
  readonly headers?: Record<string, string>;
  /** The status an authorised caller gets. */
  readonly allowed: number;
  /** The object the permission is checked on when it is not the route's, filled in (an execution is checked as its job). */
  readonly checks?: (f: Fixtures) => string;
  /** Fixture names a denial may show to a caller who may read the resource (its namespace). */
  readonly reveals?: readonly string[];
  /** Permissions the operation itself checks beyond the route's (granting a role needs Use on it). */
  readonly alsoNeeds?: (f: Fixtures) => { object: string; actions: Action[] }[];
}

const ROUTES: readonly RouteCase[] = [
  // Authentication
  { method: 'POST', path: '/api/v2/auth/login', access: { public: true }, payload: () => ({ username: ADMIN_USER, password: ADMIN_PASSWORD }), allowed: 200 },
  {
    method: 'POST',
    path: '/api/v2/auth/accounts',
    access: { public: true },
    payload: (f) => ({ token: f.invitationToken, userName: FIXTURE_NAMES.invitee, displayName: 'Invitee', password: PASSWORD }),
    allowed: 200,
  },
  { method: 'GET', path: '/api/v2/auth/me', access: { self: true }, allowed: 200 },
  { method: 'GET', path: '/api/v2/auth/claims', access: { self: true }, allowed: 200 },
  {
    method: 'PUT',
    path: '/api/v2/auth/me/password',
    access: { self: true },
    payload: () => ({ currentPassword: PASSWORD, newPassword: OTHER_PASSWORD }),
    allowed: 200,
  },
  // Users
  { method: 'GET', path: '/api/v2/auth/users', access: { object: '/Users', action: 'Read' }, allowed: 200 },
  {
    method: 'POST',
    path: '/api/v2/auth/users',
    access: { object: '/Users', action: 'Create' },
    payload: () => ({ userName: 'rbac-created-user', password: PASSWORD }),
    allowed: 201,
  },
  {
    method: 'GET',
    path: '/api/v2/auth/users/:userId',
    access: { object: '/Users/{userId}', action: 'Read', self: 'userId' },
    resource: FIXTURE_NAMES.user,
    params: (f) => ({ userId: f.user }),
    allowed: 200,
  },
  {
    method: 'PUT',
    path: '/api/v2/auth/users/:userId',
    access: { object: '/Users/{userId}', action: 'Update', self: 'userId' },
    resource: FIXTURE_NAMES.user,
    params: (f) => ({ userId: f.user }),
    payload: () => ({ userName: FIXTURE_NAMES.user, displayName: 'Replaced Person', email: FIXTURE_NAMES.userEmail }),
    allowed: 200,
  },
  {
    method: 'PATCH',
    path: '/api/v2/auth/users/:userId',
    access: { object: '/Users/{userId}', action: 'Update', self: 'userId' },
    resource: FIXTURE_NAMES.user,
    params: (f) => ({ userId: f.user }),
    payload: () => [{ op: 'replace', path: '/displayName', value: 'Patched Person' }],
    allowed: 200,
  },
  {
    method: 'DELETE',
    path: '/api/v2/auth/users/:userId',
    access: { object: '/Users/{userId}', action: 'Delete' },
    resource: FIXTURE_NAMES.doomedUser,
    params: (f) => ({ userId: f.doomedUser }),
    allowed: 200,
  },
  {
    method: 'POST',
    path: '/api/v2/auth/users/:userId/unlock',
    access: { object: '/Users/{userId}', action: 'Update' },
    resource: FIXTURE_NAMES.user,
    params: (f) => ({ userId: f.user }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/auth/users/:userId/groups',
    access: { object: '/Users/{userId}', action: 'Read', self: 'userId' },
    resource: FIXTURE_NAMES.user,
    params: (f) => ({ userId: f.user }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/auth/users/:userId/unix',
    access: { object: '/Users/{userId}', action: 'Read', self: 'userId' },
    resource: FIXTURE_NAMES.user,
    params: (f) => ({ userId: f.user }),
    allowed: 200,
  },
  // Groups and principals
  { method: 'GET', path: '/api/v2/auth/groups', access: { object: '/Groups', action: 'Read' }, allowed: 200 },
  {
    method: 'POST',
    path: '/api/v2/auth/groups',
    access: { object: '/Groups', action: 'Create' },
    payload: () => ({ name: 'rbac-created-group' }),
    allowed: 201,
  },
  {
    method: 'GET',
    path: '/api/v2/auth/groups/:groupId',
    access: { object: '/Groups/{groupId}', action: 'Read' },
    resource: FIXTURE_NAMES.group,
    params: (f) => ({ groupId: f.group }),
    allowed: 200,
  },
  {
    method: 'PUT',
    path: '/api/v2/auth/groups/:groupId',
    access: { object: '/Groups/{groupId}', action: 'Update' },
    resource: FIXTURE_NAMES.group,
    params: (f) => ({ groupId: f.group }),
    payload: () => ({ name: FIXTURE_NAMES.group, externalId: 'rbac-external-group' }),
    allowed: 200,
  },
  {
    method: 'PATCH',
    path: '/api/v2/auth/groups/:groupId',
    access: { object: '/Groups/{groupId}', action: 'Update' },
    resource: FIXTURE_NAMES.group,
    params: (f) => ({ groupId: f.group }),
    payload: () => [{ op: 'add', path: '/externalId', value: 'rbac-patched-group' }],
    allowed: 200,
  },
  {
    method: 'DELETE',
    path: '/api/v2/auth/groups/:groupId',
    access: { object: '/Groups/{groupId}', action: 'Delete' },
    resource: FIXTURE_NAMES.doomedGroup,
    params: (f) => ({ groupId: f.doomedGroup }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/auth/groups/:groupId/members',
    access: { object: '/Groups/{groupId}', action: 'Read' },
    resource: FIXTURE_NAMES.group,
    params: (f) => ({ groupId: f.group }),
    allowed: 200,
  },
  {
    method: 'PATCH',
    path: '/api/v2/auth/groups/:groupId/members',
    access: { object: '/Groups/{groupId}', action: 'Update' },
    resource: FIXTURE_NAMES.group,
    params: (f) => ({ groupId: f.group }),
    payload: (f) => [{ op: 'add', id: f.user }],
    allowed: 200,
  },
  { method: 'GET', path: '/api/v2/auth/principals', access: { object: '/Users', action: 'Read' }, allowed: 200 },
  // Namespaces
  { method: 'GET', path: '/api/v2/namespaces', access: { object: '/Namespaces', action: 'Read', namespaced: true }, allowed: 200 },
  {
    method: 'POST',
    path: '/api/v2/namespaces',
    access: { object: '/Namespaces', action: 'Create' },
    payload: () => ({ name: 'rbac-created-ns' }),
    allowed: 201,
  },
  {
    method: 'GET',
    path: '/api/v2/namespaces/:id',
    access: { object: '/Namespaces/{id}', action: 'Read', namespace: { param: 'id' } },
    resource: FIXTURE_NAMES.namespace,
    params: (f) => ({ id: f.namespace }),
    allowed: 200,
  },
  {
    method: 'PUT',
    path: '/api/v2/namespaces/:id',
    access: { object: '/Namespaces/{id}', action: 'Update', namespace: { param: 'id' } },
    resource: FIXTURE_NAMES.namespace,
    params: (f) => ({ id: f.namespace }),
    payload: () => ({ name: FIXTURE_NAMES.namespace, description: 'replaced' }),
    allowed: 200,
  },
  {
    method: 'PATCH',
    path: '/api/v2/namespaces/:id',
    access: { object: '/Namespaces/{id}', action: 'Update', namespace: { param: 'id' } },
    resource: FIXTURE_NAMES.namespace,
    params: (f) => ({ id: f.namespace }),
    payload: () => [{ op: 'add', path: '/description', value: 'patched' }],
    allowed: 200,
  },
  {
    method: 'DELETE',
    path: '/api/v2/namespaces/:id',
    access: { object: '/Namespaces/{id}', action: 'Delete', namespace: { param: 'id' } },
    resource: FIXTURE_NAMES.doomedNamespace,
    params: (f) => ({ id: f.doomedNamespace }),
    allowed: 200,
  },
  // Access control
  { method: 'GET', path: '/api/v2/rbac/roles', access: { object: '/Roles', action: 'Read' }, allowed: 200 },
  {
    method: 'POST',
    path: '/api/v2/rbac/roles',
    access: { object: '/Roles', action: 'Create' },
    payload: () => ({ name: 'rbac-created-role', permissions: [{ object: '/Groups', objectMatcher: 'simple', actions: ['Read'], effect: 'Allow' }] }),
    allowed: 201,
  },
  {
    method: 'GET',
    path: '/api/v2/rbac/roles/:roleId',
    access: { object: '/Roles/{roleId}', action: 'Read' },
    resource: FIXTURE_NAMES.role,
    params: (f) => ({ roleId: f.role }),
    allowed: 200,
  },
  {
    method: 'PUT',
    path: '/api/v2/rbac/roles/:roleId',
    access: { object: '/Roles/{roleId}', action: 'Update' },
    resource: FIXTURE_NAMES.role,
    params: (f) => ({ roleId: f.role }),
    payload: () => ({ name: FIXTURE_NAMES.role, description: 'replaced', permissions: [] }),
    allowed: 200,
  },
  {
    method: 'PATCH',
    path: '/api/v2/rbac/roles/:roleId',
    access: { object: '/Roles/{roleId}', action: 'Update' },
    resource: FIXTURE_NAMES.role,
    params: (f) => ({ roleId: f.role }),
    payload: () => [{ op: 'add', path: '/description', value: 'patched' }],
    allowed: 200,
  },
  {
    method: 'DELETE',
    path: '/api/v2/rbac/roles/:roleId',
    access: { object: '/Roles/{roleId}', action: 'Delete' },
    resource: FIXTURE_NAMES.doomedRole,
    params: (f) => ({ roleId: f.doomedRole }),
    allowed: 200,
  },
  { method: 'GET', path: '/api/v2/rbac/rolebindings', access: { object: '/RoleBindings', action: 'Read', namespaced: true }, allowed: 200 },
  {
    method: 'POST',
    path: '/api/v2/rbac/rolebindings',
    access: { object: '/RoleBindings', action: 'Create', namespace: { body: 'namespace' } },
    payload: (f) => ({ role: f.role, principal: f.user, namespace: FIXTURE_NAMES.namespace }),
    allowed: 201,
    alsoNeeds: (f) => [{ object: `/Roles/${f.role}`, actions: ['Use'] }],
  },
  {
    method: 'DELETE',
    path: '/api/v2/rbac/rolebindings',
    access: { object: '/RoleBindings', action: 'Delete', namespace: { query: 'filter[namespace][EQ]' } },
    query: (f) => `filter[principal][EQ]=${f.boundUser}`,
    allowed: 200,
  },
  {
    method: 'POST',
    path: '/api/v2/rbac/evaluate',
    access: { self: true },
    payload: () => [{ object: '/Groups', action: 'Read' }],
    allowed: 200,
  },
  {
    method: 'POST',
    path: '/api/v2/rbac/explain',
    access: { object: '/RoleBindings', action: 'Read' },
    payload: (f) => [{ user: f.user, object: '/Groups', action: 'Read' }],
    allowed: 200,
  },
  { method: 'GET', path: '/api/v2/rbac/audit', access: { object: '/Audit', action: 'Read' }, allowed: 200 },
  // Auth domains and credentials
  { method: 'GET', path: '/api/v2/authdomains/authdomains', access: { object: '/AuthDomains', action: 'Read', namespaced: true }, allowed: 200 },
  {
    method: 'POST',
    path: '/api/v2/authdomains/authdomains',
    access: { object: '/AuthDomains', action: 'Create', namespace: { body: 'namespace' } },
    payload: () => ({ name: 'rbac-created-domain', namespace: FIXTURE_NAMES.namespace }),
    allowed: 201,
  },
  {
    method: 'GET',
    path: '/api/v2/authdomains/authdomains/:id',
    access: { object: '/AuthDomains/{id}', action: 'Read', namespace: { resource: 'authDomain', param: 'id' } },
    resource: FIXTURE_NAMES.authDomain,
    params: (f) => ({ id: f.authDomain }),
    allowed: 200,
  },
  {
    method: 'PUT',
    path: '/api/v2/authdomains/authdomains/:id',
    access: { object: '/AuthDomains/{id}', action: 'Update', namespace: { resource: 'authDomain', param: 'id' } },
    resource: FIXTURE_NAMES.authDomain,
    params: (f) => ({ id: f.authDomain }),
    payload: () => ({ name: FIXTURE_NAMES.authDomain, namespace: FIXTURE_NAMES.namespace, description: 'replaced', allowPersonalCredentials: true }),
    allowed: 200,
  },
  {
    method: 'PATCH',
    path: '/api/v2/authdomains/authdomains/:id',
    access: { object: '/AuthDomains/{id}', action: 'Update', namespace: { resource: 'authDomain', param: 'id' } },
    resource: FIXTURE_NAMES.authDomain,
    params: (f) => ({ id: f.authDomain }),
    payload: () => [{ op: 'add', path: '/description', value: 'patched' }],
    allowed: 200,
  },
  {
    method: 'DELETE',
    path: '/api/v2/authdomains/authdomains/:id',
    access: { object: '/AuthDomains/{id}', action: 'Delete', namespace: { resource: 'authDomain', param: 'id' } },
    resource: FIXTURE_NAMES.doomedAuthDomain,
    params: (f) => ({ id: f.doomedAuthDomain }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/authdomains/authdomains/:id/credential',
    access: { object: '/AuthDomains/{id}', action: 'Use', namespace: { resource: 'authDomain', param: 'id' } },
    resource: FIXTURE_NAMES.authDomain,
    params: (f) => ({ id: f.authDomain }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/authdomains/credentials',
    access: { object: '/Credentials', action: 'Read', namespaced: true },
    query: (f) => `filter[authDomain][EQ]=${f.authDomain}`,
    allowed: 200,
  },
  { method: 'GET', path: '/api/v2/authdomains/me/credentials', access: { self: true }, allowed: 200 },
  {
    method: 'POST',
    path: '/api/v2/authdomains/credentials',
    access: { object: '/Credentials', action: 'Create', namespace: { resource: 'authDomain', body: 'authDomainId' }, self: { body: 'principal' } },
    payload: (f) => ({ authDomainId: f.authDomain, principal: f.user, label: 'rbac-created-credential', type: 'Internal', data: { password: 'secret' } }),
    allowed: 201,
  },
  {
    method: 'GET',
    path: '/api/v2/authdomains/credentials/:id',
    access: { object: '/Credentials/{id}', action: 'Read', namespace: { resource: 'credential', param: 'id' }, self: { owner: true } },
    resource: FIXTURE_NAMES.credential,
    params: (f) => ({ id: f.credential }),
    allowed: 200,
  },
  {
    method: 'PUT',
    path: '/api/v2/authdomains/credentials/:id',
    access: { object: '/Credentials/{id}', action: 'Update', namespace: { resource: 'credential', param: 'id' }, self: { owner: true } },
    resource: FIXTURE_NAMES.credential,
    params: (f) => ({ id: f.credential }),
    payload: (f) => ({ authDomainId: f.authDomain, principal: f.group, label: FIXTURE_NAMES.credential, type: 'Internal', disabled: true }),
    allowed: 200,
  },
  {
    method: 'PATCH',
    path: '/api/v2/authdomains/credentials/:id',
    access: { object: '/Credentials/{id}', action: 'Update', namespace: { resource: 'credential', param: 'id' }, self: { owner: true } },
    resource: FIXTURE_NAMES.credential,
    params: (f) => ({ id: f.credential }),
    payload: () => [{ op: 'replace', path: '/disabled', value: false }],
    allowed: 200,
  },
  {
    method: 'PUT',
    path: '/api/v2/authdomains/credentials/:id/rank',
    access: { object: '/Credentials/{id}', action: 'Update', namespace: { resource: 'credential', param: 'id' }, self: { owner: true } },
    resource: FIXTURE_NAMES.credential,
    params: (f) => ({ id: f.credential }),
    payload: () => ({ position: 'Low' }),
    allowed: 200,
  },
  {
    method: 'DELETE',
    path: '/api/v2/authdomains/credentials/:id',
    access: { object: '/Credentials/{id}', action: 'Delete', namespace: { resource: 'credential', param: 'id' }, self: { owner: true } },
    resource: FIXTURE_NAMES.doomedCredential,
    params: (f) => ({ id: f.doomedCredential }),
    allowed: 200,
  },
  // Execution profiles and their bindings
  { method: 'GET', path: '/api/v2/execution-profiles/execprofiles', access: { object: '/ExecutionProfiles', action: 'Read' }, allowed: 200 },
  {
    method: 'POST',
    path: '/api/v2/execution-profiles/execprofiles',
    access: { object: '/ExecutionProfiles', action: 'Create' },
    payload: () => ({ name: 'rbac-created-profile' }),
    allowed: 201,
  },
  {
    method: 'GET',
    path: '/api/v2/execution-profiles/execprofiles/name-availability',
    access: { object: '/ExecutionProfiles', action: 'Read' },
    query: () => 'name=rbac-free-name',
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/execution-profiles/execprofiles/:id',
    access: { object: '/ExecutionProfiles/{id}', action: 'Read' },
    resource: FIXTURE_NAMES.executionProfile,
    params: (f) => ({ id: f.executionProfile }),
    allowed: 200,
  },
  {
    method: 'PUT',
    path: '/api/v2/execution-profiles/execprofiles/:id',
    access: { object: '/ExecutionProfiles/{id}', action: 'Update' },
    resource: FIXTURE_NAMES.executionProfile,
    params: (f) => ({ id: f.executionProfile }),
    payload: () => ({ name: FIXTURE_NAMES.executionProfile, environment: { REPLACED: '1' } }),
    allowed: 200,
  },
  {
    method: 'PATCH',
    path: '/api/v2/execution-profiles/execprofiles/:id',
    access: { object: '/ExecutionProfiles/{id}', action: 'Update' },
    resource: FIXTURE_NAMES.executionProfile,
    params: (f) => ({ id: f.executionProfile }),
    payload: () => [{ op: 'add', path: '/description', value: 'patched' }],
    allowed: 200,
  },
  {
    method: 'DELETE',
    path: '/api/v2/execution-profiles/execprofiles/:id',
    access: { object: '/ExecutionProfiles/{id}', action: 'Delete' },
    resource: FIXTURE_NAMES.doomedProfile,
    params: (f) => ({ id: f.doomedProfile }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/execution-profiles/bindings',
    access: { object: '/ExecutionProfileBindings', action: 'Read', namespaced: true },
    allowed: 200,
  },
  {
    method: 'POST',
    path: '/api/v2/execution-profiles/bindings',
    access: { object: '/ExecutionProfileBindings', action: 'Create', namespace: { resource: 'namespace', body: 'namespaceId' } },
    payload: (f) => ({ executionProfileId: f.standardProfile, namespaceId: f.namespace }),
    alsoNeeds: (f) => [{ object: `/ExecutionProfiles/${f.standardProfile}`, actions: ['Use'] }],
    allowed: 201,
  },
  {
    method: 'GET',
    path: '/api/v2/execution-profiles/bindings/:id',
    access: { object: '/ExecutionProfileBindings/{id}', action: 'Read', namespace: { resource: 'profileBinding', param: 'id' } },
    resource: FIXTURE_NAMES.executionProfile,
    params: (f) => ({ id: f.binding }),
    allowed: 200,
  },
  {
    method: 'PUT',
    path: '/api/v2/execution-profiles/bindings/:id',
    access: { object: '/ExecutionProfileBindings/{id}', action: 'Update', namespace: { resource: 'profileBinding', param: 'id' } },
    resource: FIXTURE_NAMES.executionProfile,
    params: (f) => ({ id: f.binding }),
    payload: (f) => ({ executionProfileId: f.executionProfile, namespaceId: f.namespace, isDefault: true }),
    allowed: 200,
  },
  {
    method: 'PATCH',
    path: '/api/v2/execution-profiles/bindings/:id',
    access: { object: '/ExecutionProfileBindings/{id}', action: 'Update', namespace: { resource: 'profileBinding', param: 'id' } },
    resource: FIXTURE_NAMES.executionProfile,
    params: (f) => ({ id: f.binding }),
    payload: () => [{ op: 'replace', path: '/isDefault', value: true }],
    allowed: 200,
  },
  {
    method: 'POST',
    path: '/api/v2/execution-profiles/bindings/:id/default',
    access: { object: '/ExecutionProfileBindings/{id}', action: 'Update', namespace: { resource: 'profileBinding', param: 'id' } },
    resource: FIXTURE_NAMES.executionProfile,
    params: (f) => ({ id: f.binding }),
    allowed: 200,
  },
  {
    method: 'DELETE',
    path: '/api/v2/execution-profiles/bindings/:id',
    access: { object: '/ExecutionProfileBindings/{id}', action: 'Delete', namespace: { resource: 'profileBinding', param: 'id' } },
    resource: FIXTURE_NAMES.executionProfile,
    params: (f) => ({ id: f.doomedBinding }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/execution-profiles/namespaces/:namespaceId/default',
    access: { object: '/Namespaces/{namespaceId}', action: 'Read', namespace: { param: 'namespaceId' } },
    resource: FIXTURE_NAMES.namespace,
    params: (f) => ({ namespaceId: f.namespace }),
    reveals: [FIXTURE_NAMES.executionProfile],
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/execution-profiles/namespaces/:namespaceId/bindings/:executionProfileId',
    access: { object: '/Namespaces/{namespaceId}', action: 'Read', namespace: { param: 'namespaceId' } },
    resource: FIXTURE_NAMES.namespace,
    params: (f) => ({ namespaceId: f.namespace, executionProfileId: f.executionProfile }),
    allowed: 200,
  },
  // Cluster
  { method: 'GET', path: '/api/v2/cluster/version', access: { public: true }, allowed: 200 },
  { method: 'GET', path: '/api/v2/cluster/nodes', access: { object: '/ClusterNodes', action: 'Read' }, allowed: 200 },
  {
    method: 'GET',
    path: '/api/v2/cluster/nodes/:nodeId',
    access: { object: '/ClusterNodes/{nodeId}', action: 'Read' },
    resource: 'node',
    params: (f) => ({ nodeId: f.node }),
    allowed: 200,
  },
  {
    method: 'POST',
    path: '/api/v2/cluster/nodes/:nodeId/drain',
    access: { object: '/ClusterNodes/{nodeId}', action: 'Update' },
    resource: 'node',
    params: (f) => ({ nodeId: f.node }),
    payload: () => ({ enable: false }),
    allowed: 200,
  },
  { method: 'GET', path: '/api/v2/cluster/node-labels', access: { object: '/ClusterNodes', action: 'Read' }, allowed: 200 },
  { method: 'GET', path: '/api/v2/cluster/operating-systems', access: { object: '/ClusterNodes', action: 'Read' }, allowed: 200 },
  {
    method: 'GET',
    path: '/api/v2/cluster/jobs',
    access: { object: '/ClusterJobs', action: 'Read', namespaced: true, self: { owned: true } },
    allowed: 200,
  },
  {
    method: 'POST',
    path: '/api/v2/cluster/jobs',
    access: { object: '/ClusterJobs', action: 'Create', namespace: { body: 'namespace' } },
    payload: (f) => ({ name: 'rbac-created-job', namespace: 'default', executionProfileId: f.standardProfile, task: { command: 'true' } }),
    alsoNeeds: (f) => [{ object: `/ExecutionProfiles/${f.standardProfile}`, actions: ['Use'] }],
    allowed: 201,
  },
  {
    method: 'GET',
    path: '/api/v2/cluster/jobs/:jobId',
    access: { object: '/ClusterJobs/{jobId}', action: 'Read', namespace: { resource: 'clusterJob', param: 'jobId' }, self: { owner: true } },
    resource: 'rbac-fixture-job',
    params: (f) => ({ jobId: f.job }),
    allowed: 200,
  },
  {
    method: 'POST',
    path: '/api/v2/cluster/jobs/:jobId/stop',
    access: { object: '/ClusterJobs/{jobId}', action: 'Update', namespace: { resource: 'clusterJob', param: 'jobId' }, self: { owner: true } },
    resource: 'rbac-fixture-job',
    params: (f) => ({ jobId: f.job }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/cluster/executions',
    access: { object: '/ClusterJobs', action: 'Read', namespaced: true, self: { owned: true } },
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/cluster/executions/:jobExecutionId',
    access: {
      object: '/ClusterJobs/{jobExecutionId}',
      action: 'Read',
      namespace: { resource: 'jobExecution', param: 'jobExecutionId' },
      self: { owner: true },
    },
    resource: 'rbac-fixture-job',
    params: (f) => ({ jobExecutionId: f.execution }),
    checks: (f) => `/ClusterJobs/${f.job}`,
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/cluster/executions/:jobExecutionId/tasks/:taskName/logs/:logname',
    access: {
      object: '/ClusterJobs/{jobExecutionId}',
      action: 'Read',
      namespace: { resource: 'jobExecution', param: 'jobExecutionId' },
      self: { owner: true },
    },
    resource: 'rbac-fixture-job',
    params: (f) => ({ jobExecutionId: f.execution, taskName: 'main', logname: 'stdout' }),
    checks: (f) => `/ClusterJobs/${f.job}`,
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/cluster/executions/:jobExecutionId/files',
    access: {
      object: '/ClusterJobs/{jobExecutionId}',
      action: 'Read',
      namespace: { resource: 'jobExecution', param: 'jobExecutionId' },
      self: { owner: true },
    },
    resource: 'rbac-fixture-job',
    params: (f) => ({ jobExecutionId: f.execution }),
    query: () => 'path=',
    checks: (f) => `/ClusterJobs/${f.job}`,
    allowed: 200,
  },
  // Pipelines
  { method: 'GET', path: '/api/v2/pipelines/entries', access: { object: '/Pipelines', action: 'Read', namespaced: true }, allowed: 200 },
  {
    method: 'POST',
    path: '/api/v2/pipelines/entries',
    access: { object: '/Pipelines', action: 'Create', namespace: { body: 'namespace' } },
    payload: () => ({ name: 'rbac-created-pipeline', namespace: FIXTURE_NAMES.namespace, spec: PIPELINE_SPEC }),
    allowed: 201,
  },
  {
    method: 'POST',
    path: '/api/v2/pipelines/entries/validate',
    access: { object: '/Pipelines', action: 'Read', namespace: { body: 'namespace' } },
    payload: () => ({ namespace: FIXTURE_NAMES.namespace, spec: PIPELINE_SPEC }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/pipelines/entries/:id',
    access: { object: '/Pipelines/{id}', action: 'Read', namespace: { resource: 'pipelineEntry', param: 'id' } },
    resource: FIXTURE_NAMES.pipelineEntry,
    params: (f) => ({ id: f.pipelineEntry }),
    allowed: 200,
  },
  {
    method: 'PUT',
    path: '/api/v2/pipelines/entries/:id',
    access: { object: '/Pipelines/{id}', action: 'Update', namespace: { resource: 'pipelineEntry', param: 'id' } },
    resource: FIXTURE_NAMES.pipelineEntry,
    params: (f) => ({ id: f.pipelineEntry }),
    payload: () => ({ name: FIXTURE_NAMES.pipelineEntry, namespace: FIXTURE_NAMES.namespace, spec: PIPELINE_SPEC }),
    allowed: 200,
  },
  {
    method: 'PATCH',
    path: '/api/v2/pipelines/entries/:id',
    access: { object: '/Pipelines/{id}', action: 'Update', namespace: { resource: 'pipelineEntry', param: 'id' } },
    resource: FIXTURE_NAMES.pipelineEntry,
    params: (f) => ({ id: f.pipelineEntry }),
    payload: () => [{ op: 'add', path: '/spec/keepGoing', value: true }],
    allowed: 200,
  },
  {
    method: 'DELETE',
    path: '/api/v2/pipelines/entries/:id',
    access: { object: '/Pipelines/{id}', action: 'Delete', namespace: { resource: 'pipelineEntry', param: 'id' } },
    resource: FIXTURE_NAMES.doomedPipelineEntry,
    params: (f) => ({ id: f.doomedPipelineEntry }),
    allowed: 200,
  },
  {
    method: 'POST',
    path: '/api/v2/pipelines/entries/:id/submit',
    access: { object: '/Pipelines/{id}', action: 'Execute', namespace: { resource: 'pipelineEntry', param: 'id' } },
    resource: FIXTURE_NAMES.pipelineEntry,
    params: (f) => ({ id: f.pipelineEntry }),
    payload: (f) => ({ executionProfileId: f.executionProfile }),
    alsoNeeds: (f) => [{ object: `/ExecutionProfiles/${f.executionProfile}`, actions: ['Use'] }],
    allowed: 201,
  },
  // Triggers, checked as their pipeline
  {
    method: 'GET',
    path: '/api/v2/pipelines/entries/:id/triggers',
    access: { object: '/Pipelines/{id}', action: 'Read', namespace: { resource: 'pipelineEntry', param: 'id' } },
    resource: FIXTURE_NAMES.pipelineEntry,
    params: (f) => ({ id: f.pipelineEntry }),
    allowed: 200,
  },
  {
    method: 'POST',
    path: '/api/v2/pipelines/entries/:id/triggers',
    access: { object: '/Pipelines/{id}', action: 'Update', namespace: { resource: 'pipelineEntry', param: 'id' } },
    resource: FIXTURE_NAMES.pipelineEntry,
    params: (f) => ({ id: f.pipelineEntry }),
    payload: (f) => TRIGGER_BODY(f),
    alsoNeeds: (f) => [
      { object: `/Pipelines/${f.pipelineEntry}`, actions: ['Execute'] },
      { object: `/ExecutionProfiles/${f.executionProfile}`, actions: ['Use'] },
    ],
    allowed: 201,
  },
  {
    method: 'GET',
    path: '/api/v2/pipelines/triggers/:triggerId',
    access: { object: '/PipelineTriggers/{triggerId}', action: 'Read', namespace: { resource: 'pipelineTrigger', param: 'triggerId' } },
    resource: FIXTURE_NAMES.pipelineEntry,
    params: (f) => ({ triggerId: f.trigger }),
    checks: (f) => `/Pipelines/${f.pipelineEntry}`,
    allowed: 200,
  },
  {
    method: 'POST',
    path: '/api/v2/pipelines/triggers/:triggerId/run-as-me',
    access: { object: '/PipelineTriggers/{triggerId}', action: 'Update', namespace: { resource: 'pipelineTrigger', param: 'triggerId' } },
    resource: FIXTURE_NAMES.pipelineEntry,
    params: (f) => ({ triggerId: f.trigger }),
    checks: (f) => `/Pipelines/${f.pipelineEntry}`,
    alsoNeeds: (f) => [
      { object: `/Pipelines/${f.pipelineEntry}`, actions: ['Execute'] },
      { object: `/ExecutionProfiles/${f.executionProfile}`, actions: ['Use'] },
    ],
    allowed: 200,
  },
  {
    method: 'PUT',
    path: '/api/v2/pipelines/triggers/:triggerId',
    access: { object: '/PipelineTriggers/{triggerId}', action: 'Update', namespace: { resource: 'pipelineTrigger', param: 'triggerId' } },
    resource: FIXTURE_NAMES.pipelineEntry,
    params: (f) => ({ triggerId: f.trigger }),
    checks: (f) => `/Pipelines/${f.pipelineEntry}`,
    payload: (f) => TRIGGER_BODY(f),
    allowed: 200,
  },
  {
    method: 'PATCH',
    path: '/api/v2/pipelines/triggers/:triggerId',
    access: { object: '/PipelineTriggers/{triggerId}', action: 'Update', namespace: { resource: 'pipelineTrigger', param: 'triggerId' } },
    resource: FIXTURE_NAMES.pipelineEntry,
    params: (f) => ({ triggerId: f.trigger }),
    checks: (f) => `/Pipelines/${f.pipelineEntry}`,
    payload: () => [{ op: 'replace', path: '/disabled', value: true }],
    allowed: 200,
  },
  {
    method: 'DELETE',
    path: '/api/v2/pipelines/triggers/:triggerId',
    access: { object: '/PipelineTriggers/{triggerId}', action: 'Update', namespace: { resource: 'pipelineTrigger', param: 'triggerId' } },
    resource: FIXTURE_NAMES.pipelineEntry,
    params: (f) => ({ triggerId: f.doomedTrigger }),
    checks: (f) => `/Pipelines/${f.pipelineEntry}`,
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/pipelines/triggers/:triggerId/firings',
    access: { object: '/PipelineTriggers/{triggerId}', action: 'Read', namespace: { resource: 'pipelineTrigger', param: 'triggerId' } },
    resource: FIXTURE_NAMES.pipelineEntry,
    params: (f) => ({ triggerId: f.trigger }),
    checks: (f) => `/Pipelines/${f.pipelineEntry}`,
    allowed: 200,
  },
  { method: 'GET', path: '/api/v2/pipelines/firings', access: { object: '/Pipelines', action: 'Read', namespaced: true }, allowed: 200 },
  // Pipeline runs (the fixtures run in namespace default)
  { method: 'GET', path: '/api/v2/pipelines/runs', access: { object: '/PipelineRuns', action: 'Read', namespaced: true, self: { owned: true } }, allowed: 200 },
  {
    method: 'POST',
    path: '/api/v2/pipelines/runs',
    access: { object: '/Pipelines', action: 'Execute', namespace: { body: 'namespace', default: 'default' } },
    payload: (f) => ({ spec: PIPELINE_SPEC, executionProfileId: f.standardProfile }),
    alsoNeeds: (f) => [{ object: `/ExecutionProfiles/${f.standardProfile}`, actions: ['Use'] }],
    allowed: 201,
  },
  {
    method: 'GET',
    path: '/api/v2/pipelines/runs/:pipelineRunId',
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: { resource: 'pipelineRun', param: 'pipelineRunId' }, self: { owner: true } },
    resource: 'rbac-fixture-run',
    params: (f) => ({ pipelineRunId: f.run }),
    allowed: 200,
  },
  {
    method: 'DELETE',
    path: '/api/v2/pipelines/runs/:pipelineRunId',
    access: {
      object: '/PipelineRuns/{pipelineRunId}',
      action: 'Delete',
      namespace: { resource: 'pipelineRun', param: 'pipelineRunId' },
      self: { owner: true },
    },
    resource: 'rbac-fixture-run',
    params: (f) => ({ pipelineRunId: f.doomedRun }),
    allowed: 200,
  },
  {
    method: 'POST',
    path: '/api/v2/pipelines/runs/:pipelineRunId/cancel',
    access: {
      object: '/PipelineRuns/{pipelineRunId}',
      action: 'Update',
      namespace: { resource: 'pipelineRun', param: 'pipelineRunId' },
      self: { owner: true },
    },
    resource: 'rbac-fixture-run',
    params: (f) => ({ pipelineRunId: f.cancellableRun }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/pipelines/runs/:pipelineRunId/status',
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: { resource: 'pipelineRun', param: 'pipelineRunId' }, self: { owner: true } },
    resource: 'rbac-fixture-run',
    params: (f) => ({ pipelineRunId: f.run }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/pipelines/runs/:pipelineRunId/results',
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: { resource: 'pipelineRun', param: 'pipelineRunId' }, self: { owner: true } },
    resource: 'rbac-fixture-run',
    params: (f) => ({ pipelineRunId: f.run }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/pipelines/runs/:pipelineRunId/nodes/:nodeName/status',
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: { resource: 'pipelineRun', param: 'pipelineRunId' }, self: { owner: true } },
    resource: 'rbac-fixture-run',
    params: (f) => ({ pipelineRunId: f.run, nodeName: 'only' }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/pipelines/runs/:pipelineRunId/nodes/:nodeName/logs/:logType',
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: { resource: 'pipelineRun', param: 'pipelineRunId' }, self: { owner: true } },
    resource: 'rbac-fixture-run',
    params: (f) => ({ pipelineRunId: f.run, nodeName: 'only', logType: 'stdout' }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/pipelines/runs/:pipelineRunId/nodes/:nodeName/results',
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: { resource: 'pipelineRun', param: 'pipelineRunId' }, self: { owner: true } },
    resource: 'rbac-fixture-run',
    params: (f) => ({ pipelineRunId: f.run, nodeName: 'only' }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/pipelines/runs/:pipelineRunId/nodes/:nodeName/results/:resultName',
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: { resource: 'pipelineRun', param: 'pipelineRunId' }, self: { owner: true } },
    resource: 'rbac-fixture-run',
    params: (f) => ({ pipelineRunId: f.run, nodeName: 'only', resultName: 'out' }),
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/pipelines/runs/:pipelineRunId/nodes/:nodeName/results/:resultName/metadata',
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: { resource: 'pipelineRun', param: 'pipelineRunId' }, self: { owner: true } },
    resource: 'rbac-fixture-run',
    params: (f) => ({ pipelineRunId: f.run, nodeName: 'only', resultName: 'out' }),
    allowed: 200,
  },
  // Link sessions (their configurations are named, not ids: permissions are on the collection)
  { method: 'GET', path: '/api/v2/linksessions/configurations', access: { self: true }, allowed: 200 },
  {
    method: 'POST',
    path: '/api/v2/linksessions/configurations',
    access: { object: '/LinkSessionConfigurations', action: 'Create' },
    payload: () => ({ name: 'rbac-new-config', command: 'true', readiness: { type: 'port' } }),
    allowed: 201,
  },
  {
    method: 'GET',
    path: '/api/v2/linksessions/configurations/:name',
    access: { object: '/LinkSessionConfigurations', action: 'Read' },
    params: () => ({ name: SESSION_CONFIG }),
    allowed: 200,
  },
  {
    method: 'PUT',
    path: '/api/v2/linksessions/configurations/:name',
    access: { object: '/LinkSessionConfigurations', action: 'Update' },
    params: () => ({ name: SESSION_CONFIG }),
    payload: () => ({ name: SESSION_CONFIG, command: 'true', readiness: { type: 'port' } }),
    allowed: 200,
  },
  {
    method: 'PATCH',
    path: '/api/v2/linksessions/configurations/:name',
    access: { object: '/LinkSessionConfigurations', action: 'Update' },
    params: () => ({ name: SESSION_CONFIG }),
    payload: () => [{ op: 'add', path: '/description', value: 'patched' }],
    allowed: 200,
  },
  {
    method: 'DELETE',
    path: '/api/v2/linksessions/configurations/:name',
    access: { object: '/LinkSessionConfigurations', action: 'Delete' },
    params: () => ({ name: 'rbac-doomed-config' }),
    allowed: 200,
  },
  {
    method: 'POST',
    path: '/api/v2/linksessions/sessions',
    access: { object: '/LinkSessions', action: 'Create' },
    payload: () => ({ configuration: SESSION_CONFIG }),
    alsoNeeds: (f) => [
      { object: `/LinkSessionConfigurations/${SESSION_CONFIG}`, actions: ['Use'] },
      { object: `/ExecutionProfiles/${f.standardProfile}`, actions: ['Use'] },
    ],
    allowed: 201,
  },
  { method: 'GET', path: '/api/v2/linksessions/me/sessions', access: { self: true }, allowed: 200 },
  { method: 'GET', path: '/api/v2/linksessions/sessions', access: { object: '/LinkSessions', action: 'Execute' }, allowed: 200 },
  {
    method: 'DELETE',
    path: '/api/v2/linksessions/sessions',
    access: { object: '/LinkSessions', action: 'Execute' },
    query: () => 'filter[configurationName][EQ]=rbac-nothing-uses-this',
    allowed: 200,
  },
  {
    method: 'GET',
    path: '/api/v2/linksessions/sessions/:sessionId/logs/:logname',
    access: { self: true },
    params: (f) => ({ sessionId: f.session, logname: 'stdout' }),
    allowed: 404,
  },
  // Acting on a session is its owner's alone (api-map §8): to anyone else, the administrator's session is not found.
  { method: 'GET', path: '/api/v2/linksessions/sessions/:sessionId', access: { self: true }, params: (f) => ({ sessionId: f.session }), allowed: 404 },
  { method: 'DELETE', path: '/api/v2/linksessions/sessions/:sessionId', access: { self: true }, params: (f) => ({ sessionId: f.session }), allowed: 404 },
  {
    method: 'PUT',
    path: '/api/v2/linksessions/sessions/:sessionId/heartbeat',
    access: { self: true },
    params: (f) => ({ sessionId: f.session }),
    allowed: 404,
  },
  // Library definitions and published libraries (a published library is checked in its definition's namespace)
  { method: 'GET', path: '/api/v2/libraries/definitions', access: { object: '/LibraryDefinitions', action: 'Read' }, allowed: 200 },
  {
    method: 'POST',
    path: '/api/v2/libraries/definitions',
    access: { object: '/LibraryDefinitions', action: 'Create', namespace: { body: 'namespace' } },
    payload: () => LIBRARY_BODY('rbac-created-library'),
    allowed: 201,
  },
  {
    method: 'GET',
    path: '/api/v2/libraries/definitions/:id',
    access: DEFINITION_ACCESS('Read'),
    resource: FIXTURE_NAMES.libraryDefinition,
    params: (f) => ({ id: f.libraryDefinition }),
    allowed: 200,
  },
  {
    method: 'PUT',
    path: '/api/v2/libraries/definitions/:id',
    access: DEFINITION_ACCESS('Update'),
    resource: FIXTURE_NAMES.libraryDefinition,
    params: (f) => ({ id: f.libraryDefinition }),
    payload: () => LIBRARY_BODY(FIXTURE_NAMES.libraryDefinition),
    allowed: 200,
  },
  {
    method: 'PATCH',
    path: '/api/v2/libraries/definitions/:id',
    access: DEFINITION_ACCESS('Update'),
    resource: FIXTURE_NAMES.libraryDefinition,
    params: (f) => ({ id: f.libraryDefinition }),
    payload: () => [{ op: 'replace', path: '/path', value: LIBRARY_PATH }],
    allowed: 200,
  },
  {
    method: 'DELETE',
    path: '/api/v2/libraries/definitions/:id',
    access: DEFINITION_ACCESS('Delete'),
    resource: FIXTURE_NAMES.doomedLibraryDefinition,
    params: (f) => ({ id: f.doomedLibraryDefinition }),
    allowed: 200,
  },
  { method: 'GET', path: '/api/v2/libraries/published', access: { object: '/PublishedLibraries', action: 'Read', namespaced: true }, allowed: 200 },
  {
    method: 'POST',
    path: '/api/v2/libraries/published',
    access: { object: '/PublishedLibraries', action: 'Create', namespace: { resource: 'libraryDefinition', body: 'libraryDefinitionId' } },
    payload: (f) => ({ libraryDefinitionId: f.publishableDefinition, executionProfileId: f.executionProfile, workers: 1 }),
    reveals: [FIXTURE_NAMES.publishableDefinition],
    alsoNeeds: (f) => [{ object: `/ExecutionProfiles/${f.executionProfile}`, actions: ['Use'] }],
    allowed: 201,
  },
  libraryRoute('GET', ''),
  libraryRoute('GET', '/members'),
  libraryRoute('GET', '/datasets/:name'),
  libraryRoute('GET', '/datasets/:name/records'),
  libraryRoute('POST', '/datasets/:name/validate-filter', { payload: () => 'amount > 1', headers: { 'content-type': 'text/plain' } }),
  libraryRoute('GET', '/datasets/:name/distinct-values'),
  libraryRoute('GET', '/status'),
  libraryRoute('GET', '/operations'),
  libraryRoute('GET', '/operations/:operationId', { allowed: 404 }),
  libraryRoute('GET', '/operations/:operationId/result', { allowed: 404 }),
  libraryRoute('DELETE', '/operations/:operationId', { allowed: 404 }),
  // Last of the library's: the restarted worker is not ready at once.
  libraryRoute('POST', '/workers/:workerIndex/restart', { access: { ...LIBRARY_READ, action: 'Update' } }),
  libraryRoute('DELETE', '', {
    access: { ...LIBRARY_READ, action: 'Delete' },
    resource: FIXTURE_NAMES.doomedPublishedLibrary,
    params: (f) => ({ id: f.doomedPublishedLibrary }),
  }),
  // Operations
  { method: 'GET', path: '/health/live', access: { public: true }, allowed: 200 },
  { method: 'GET', path: '/health/ready', access: { public: true }, allowed: 200 },
  { method: 'GET', path: '/metrics', access: { object: '/Metrics', action: 'Read' }, allowed: 200 },
];

type PermissionRoute = RouteCase & { readonly access: Extract<RouteAccess, { object: string }> };

const keyOf = (route: { method: string; path: string }) => `${route.method} ${route.path}`;
const isPermissionRoute = (route: RouteCase): route is PermissionRoute => 'object' in route.access;
const PERMISSION_ROUTES = ROUTES.filter(isPermissionRoute);
const SELF_ROUTES = ROUTES.filter((route) => 'self' in route.access && route.access.self === true);
const PUBLIC_ROUTES = ROUTES.filter((route) => 'public' in route.access);
/** A route on one resource: its object names a path parameter. */
const isSingleResource = (route: PermissionRoute) => route.access.object.includes('{');
/** A list anyone may call for the items they own, narrowed to them without the permission. */
const listsOwnItems = (route: PermissionRoute) => typeof route.access.self === 'object' && 'owned' in route.access.self;

function joinPath(...parts: string[]): string {
  return `/${parts
    .map((part) => part.replace(/^\/+|\/+$/g, ''))
    .filter(Boolean)
    .join('/')}`;
}

/** Every handler the application routes to, as `METHOD /path/:param`, with its `@Route` options. */
function applicationRoutes(hub: TestHub): Map<string, RouteOptions | undefined> {
  const routes = new Map<string, RouteOptions | undefined>();
  for (const module of hub.app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const metatype = wrapper.metatype as { prototype: object } | null | undefined;
      if (!metatype) continue;
      const bases = [Reflect.getMetadata('path', metatype) as string | string[] | undefined].flat().map((base) => base ?? '');
      for (let prototype = metatype.prototype; prototype && prototype !== Object.prototype; prototype = Object.getPrototypeOf(prototype) as object) {
        for (const name of Object.getOwnPropertyNames(prototype)) {
          const handler = (prototype as Record<string, unknown>)[name];
          if (name === 'constructor' || typeof handler !== 'function') continue;
          const method = Reflect.getMetadata('method', handler) as RequestMethod | undefined;
          if (method === undefined) continue;
          const paths = [Reflect.getMetadata('path', handler) as string | string[] | undefined].flat().map((path) => path ?? '');
          for (const base of bases) {
            for (const path of paths)
              routes.set(`${RequestMethod[method]} ${joinPath(base, path)}`, Reflect.getMetadata(ROUTE_OPTIONS, handler) as RouteOptions);
          }
        }
      }
    }
  }
  return routes;
}

describe('route access control', () => {
  let hub: TestHub;
  let fixtures: Fixtures;
  let nobody: Caller;
  /** Per route: a user with exactly its permission (self routes: no binding at all). */
  const allowedCallers = new Map<string, Caller>();
  /** Per permission route: a user with every action on its object but the one it needs. */
  const otherActionCallers = new Map<string, Caller>();
  let snapshot: unknown;
  let userCount = 0;

  const asAdmin = async (method: HttpMethod, url: string, payload?: unknown, expected = method === 'POST' ? 201 : 200) => {
    const response = await hub.inject({ method, url, headers: bearer(hub.adminToken), ...(payload !== undefined && { payload: payload as object }) });
    if (response.statusCode !== expected) throw new Error(`${method} ${url} answered ${response.statusCode}, not ${expected}: ${response.body}`);
    return response.json<Record<string, unknown> & { _id: string; id: string }>();
  };

  const createUser = async (userName: string) => (await asAdmin('POST', '/api/v2/auth/users', { userName, password: PASSWORD }))._id;
  const createRole = async (name: string, permissions: object[]) => (await asAdmin('POST', '/api/v2/rbac/roles', { name, permissions })).id;
  const bind = (role: string, principal: string, namespace: string) => asAdmin('POST', '/api/v2/rbac/rolebindings', { role, principal, namespace });
  const createNamespace = async (name: string) => (await asAdmin('POST', '/api/v2/namespaces', { name }))._id;

  /** A new user, given `actions` on `object` in `namespace` through a role of its own, logged in. */
  const createCaller = async (prefix: string, grant?: { object: string; actions: readonly string[]; namespace?: string }[]): Promise<Caller> => {
    userCount += 1;
    const userName = `${prefix}-${userCount}`;
    const id = await createUser(userName);
    if (grant) {
      for (const [index, { object, actions, namespace = '*' }] of grant.entries()) {
        const role = await createRole(`${userName}-role-${index}`, [{ object, objectMatcher: 'simple', actions, effect: 'Allow' }]);
        await bind(role, id, namespace);
      }
    }
    return { id, userName, token: await hub.login(userName, PASSWORD) };
  };

  const requestOf = (route: RouteCase) => {
    const params = route.params?.(fixtures) ?? {};
    const url = route.path.replace(/:(\w+)/g, (_match, name: string) => params[name]) + (route.query ? `?${route.query(fixtures)}` : '');
    const payload = route.payload?.(fixtures);
    return { method: route.method, url, ...(payload !== undefined && { payload: payload as object }) };
  };
  const call = (route: RouteCase, headers: Record<string, string> = {}) => hub.inject({ ...requestOf(route), headers: { ...route.headers, ...headers } });
  /** The object a route's permission is checked on, its parameters filled in. */
  const objectOf = (route: PermissionRoute) => {
    if (route.checks) return route.checks(fixtures);
    const params = route.params?.(fixtures) ?? {};
    return route.access.object.replace(/\{(\w+)\}/g, (_match, name: string) => params[name]);
  };

  /** A denial: a problem that reveals nothing of the fixtures beyond what the request said and the caller may read. */
  const expectDenial = (route: RouteCase, response: InjectResponse, status: number, detail?: string, readable: readonly string[] = []) => {
    expect([keyOf(route), response.statusCode]).toEqual([keyOf(route), status]);
    expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    const body = response.json<Record<string, unknown>>();
    expect(Object.keys(body).sort()).toEqual(PROBLEM_KEYS);
    expect(body.status).toBe(status);
    if (detail) expect(body.detail).toContain(detail);
    const request = JSON.stringify(requestOf(route));
    const revealed = Object.values(FIXTURE_NAMES).filter((value) => !request.includes(value) && !readable.includes(value) && response.body.includes(value));
    expect(revealed).toEqual([]);
  };

  /** What admin sees of everything the table's routes change. */
  const takeSnapshot = async () =>
    Promise.all(
      [
        '/api/v2/auth/users?page[limit]=1000',
        '/api/v2/auth/groups?page[limit]=1000',
        `/api/v2/auth/groups/${fixtures.group}/members`,
        '/api/v2/rbac/roles?page[limit]=1000',
        '/api/v2/rbac/rolebindings?page[limit]=1000',
        '/api/v2/namespaces?page[limit]=1000',
        '/api/v2/authdomains/authdomains?page[limit]=1000',
        `/api/v2/authdomains/credentials?filter[authDomain][EQ]=${fixtures.authDomain}&page[limit]=1000`,
        '/api/v2/execution-profiles/execprofiles?page[limit]=1000',
        '/api/v2/execution-profiles/bindings?page[limit]=1000',
        '/api/v2/cluster/nodes',
        '/api/v2/cluster/jobs?page[limit]=1000',
        '/api/v2/pipelines/entries?page[limit]=1000',
        '/api/v2/pipelines/runs?page[limit]=1000',
        `/api/v2/pipelines/entries/${fixtures.pipelineEntry}/triggers?page[limit]=1000`,
        '/api/v2/libraries/definitions?page[limit]=1000',
        '/api/v2/libraries/published?page[limit]=1000',
      ].map((url) => asAdmin('GET', url)),
    );

  /** The hub's own node, and a finished job of the administrator's with its execution. */
  const clusterFixtures = async (standardProfile: string) => {
    const nodes = await asAdmin('GET', '/api/v2/cluster/nodes');
    const job = await asAdmin('POST', '/api/v2/cluster/jobs', {
      name: 'rbac-fixture-job',
      namespace: 'default',
      executionProfileId: standardProfile,
      task: { command: 'true' },
    });
    const executions = await asAdmin('GET', `/api/v2/cluster/executions?filter[jobId][EQ]=${job.id}`);
    return { node: (nodes.data as { id: string }[])[0].id, job: job.id, execution: (executions.data as { id: string }[])[0].id };
  };

  /** Runs of the administrator's in namespace default: two that have ended (one to delete), and one running to cancel. */
  const runFixtures = async (standardProfile: string) => {
    const start = async (script: string) =>
      (
        await asAdmin(
          'POST',
          '/api/v2/pipelines/runs',
          {
            spec: {
              nodes: [{ name: 'only', outputs: { artifacts: { out: { path: 'out.txt' } } }, task: { type: 'rawexec', command: 'sh', args: ['-c', script] } }],
            },
            executionProfileId: standardProfile,
          },
          201,
        )
      ).id;
    const ended = async (id: string) => {
      const deadline = Date.now() + 20_000;
      while (!['Succeeded', 'Failed'].includes(String((await asAdmin('GET', `/api/v2/pipelines/runs/${id}/status`)).state)))
        if (Date.now() > deadline) throw new Error(`Run ${id} did not end`);
        else await new Promise((resolve) => setTimeout(resolve, 50));
      return id;
    };
    return {
      run: await ended(await start('echo fixture > out.txt')),
      doomedRun: await ended(await start('echo doomed > out.txt')),
      cancellableRun: await start('sleep 300'),
    };
  };

  beforeAll(async () => {
    writeData(LIBRARY_PATH, 'orders.csv', 'id,amount\n1,2\n2,5\n');
    hub = await startTestHub({ env: { HUB_LIBRARY_ROOTS: LIBRARY_ROOT } });
    const user = await asAdmin('POST', '/api/v2/auth/users', {
      userName: FIXTURE_NAMES.user,
      password: PASSWORD,
      displayName: FIXTURE_NAMES.userDisplayName,
      email: FIXTURE_NAMES.userEmail,
    });
    const invitation = await asAdmin('POST', '/api/v2/auth/users', { userName: FIXTURE_NAMES.invitee, invitationPending: true });
    const role = (await asAdmin('POST', '/api/v2/rbac/roles', { name: FIXTURE_NAMES.role, permissions: [] })).id;
    const boundUser = await createUser(FIXTURE_NAMES.boundUser);
    await bind(role, boundUser, '*');
    const namespace = await createNamespace(FIXTURE_NAMES.namespace);
    const spareNamespace = await createNamespace(FIXTURE_NAMES.spareNamespace);
    const group = (await asAdmin('POST', '/api/v2/auth/groups', { name: FIXTURE_NAMES.group }))._id;
    const createDomain = async (name: string) => (await asAdmin('POST', '/api/v2/authdomains/authdomains', { name, namespace: FIXTURE_NAMES.namespace }))._id;
    const authDomain = await createDomain(FIXTURE_NAMES.authDomain);
    const createCredential = async (label: string) =>
      (
        await asAdmin('POST', '/api/v2/authdomains/credentials', {
          authDomainId: authDomain,
          principal: group,
          label,
          type: 'Internal',
          data: { password: 'fixture' },
        })
      )._id;
    const createProfile = async (name: string) => (await asAdmin('POST', '/api/v2/execution-profiles/execprofiles', { name }))._id;
    const executionProfile = await createProfile(FIXTURE_NAMES.executionProfile);
    const bindProfile = async (namespaceId: string, isDefault: boolean) =>
      (await asAdmin('POST', '/api/v2/execution-profiles/bindings', { executionProfileId: executionProfile, namespaceId, isDefault })).id;
    const profiles = await asAdmin('GET', '/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard');
    const createPipelineEntry = async (name: string) =>
      (await asAdmin('POST', '/api/v2/pipelines/entries', { name, namespace: FIXTURE_NAMES.namespace, spec: PIPELINE_SPEC }))._id;
    for (const name of [SESSION_CONFIG, 'rbac-doomed-config'])
      await asAdmin('POST', '/api/v2/linksessions/configurations', { name, command: 'true', readiness: { type: 'port' } });
    fixtures = {
      session: (await asAdmin('POST', '/api/v2/linksessions/sessions', { configuration: SESSION_CONFIG })).sessionID as string,
      user: user._id,
      doomedUser: await createUser(FIXTURE_NAMES.doomedUser),
      boundUser,
      group,
      doomedGroup: (await asAdmin('POST', '/api/v2/auth/groups', { name: FIXTURE_NAMES.doomedGroup }))._id,
      role,
      doomedRole: await createRole(FIXTURE_NAMES.doomedRole, []),
      namespace,
      doomedNamespace: await createNamespace(FIXTURE_NAMES.doomedNamespace),
      invitationToken: invitation.invitationToken as string,
      spareNamespace,
      authDomain,
      doomedAuthDomain: await createDomain(FIXTURE_NAMES.doomedAuthDomain),
      credential: await createCredential(FIXTURE_NAMES.credential),
      doomedCredential: await createCredential(FIXTURE_NAMES.doomedCredential),
      executionProfile,
      doomedProfile: await createProfile(FIXTURE_NAMES.doomedProfile),
      standardProfile: (profiles.data as { _id: string }[])[0]._id,
      binding: await bindProfile(namespace, true),
      doomedBinding: await bindProfile(spareNamespace, false),
      ...(await clusterFixtures((profiles.data as { _id: string }[])[0]._id)),
      pipelineEntry: await createPipelineEntry(FIXTURE_NAMES.pipelineEntry),
      doomedPipelineEntry: await createPipelineEntry(FIXTURE_NAMES.doomedPipelineEntry),
      ...(await runFixtures((profiles.data as { _id: string }[])[0]._id)),
      trigger: '',
      doomedTrigger: '',
      libraryDefinition: '',
      doomedLibraryDefinition: '',
      publishableDefinition: '',
      publishedLibrary: '',
      doomedPublishedLibrary: '',
    };
    const createTrigger = async () => (await asAdmin('POST', `/api/v2/pipelines/entries/${fixtures.pipelineEntry}/triggers`, TRIGGER_BODY(fixtures), 201)).id;
    fixtures = { ...fixtures, trigger: await createTrigger(), doomedTrigger: await createTrigger() };
    const define = async (name: string) => (await asAdmin('POST', '/api/v2/libraries/definitions', LIBRARY_BODY(name)))._id;
    const publish = async (definition: string) =>
      (await asAdmin('POST', '/api/v2/libraries/published', { libraryDefinitionId: definition, executionProfileId: fixtures.executionProfile, workers: 1 })).id;
    fixtures = {
      ...fixtures,
      libraryDefinition: await define(FIXTURE_NAMES.libraryDefinition),
      doomedLibraryDefinition: await define(FIXTURE_NAMES.doomedLibraryDefinition),
      publishableDefinition: await define(FIXTURE_NAMES.publishableDefinition),
    };
    fixtures = {
      ...fixtures,
      publishedLibrary: await publish(fixtures.libraryDefinition),
      doomedPublishedLibrary: await publish(await define(FIXTURE_NAMES.doomedPublishedLibrary)),
    };
    // The data routes need the fixture library's worker ready.
    const deadline = Date.now() + 60_000;
    while ((await asAdmin('GET', `/api/v2/libraries/published/${fixtures.publishedLibrary}/status`)).workers?.['0' as never]?.['state' as never] !== 'ready') {
      if (Date.now() > deadline) throw new Error('the fixture library’s worker was not ready within 60 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    nobody = await createCaller('nobody');
    for (const route of SELF_ROUTES) allowedCallers.set(keyOf(route), await createCaller('self'));
    for (const route of PERMISSION_ROUTES) {
      const action: Action = route.access.action;
      const also = route.alsoNeeds?.(fixtures) ?? [];
      allowedCallers.set(keyOf(route), await createCaller('allowed', [{ object: objectOf(route), actions: [action] }, ...also]));
      const others = ACTIONS.filter((other) => other !== action);
      otherActionCallers.set(keyOf(route), await createCaller('others', [{ object: objectOf(route), actions: others }]));
    }
    // Resolving a credential answers 404 to a caller who holds none: give the allowed one its own.
    const resolver = allowedCallers.get('GET /api/v2/authdomains/authdomains/:id/credential') as Caller;
    await asAdmin('POST', '/api/v2/authdomains/credentials', { authDomainId: authDomain, principal: resolver.id, label: 'resolvable', type: 'Internal' });
    snapshot = await takeSnapshot();
  }, 180_000);
  afterAll(() => hub?.close());

  describe('the table', () => {
    it('holds every route of the application, and nothing else', () => {
      const routes = [...applicationRoutes(hub).keys()].sort();
      const table = ROUTES.map(keyOf).sort();
      expect(routes.filter((route) => !table.includes(route))).toEqual([]);
      expect(table.filter((route) => !routes.includes(route))).toEqual([]);
      expect(new Set(table).size).toBe(table.length);
    });

    it('holds every operation of the OpenAPI document, with the permission it shows', async () => {
      const response = await hub.inject({ method: 'GET', url: '/api/openapi.json' });
      expect(response.statusCode).toBe(200);
      const paths = response.json<{ paths: Record<string, Record<string, { 'x-hub-permission'?: unknown }>> }>().paths;
      const documented = Object.entries(paths).flatMap(([path, operations]) =>
        Object.entries(operations).map(([method, operation]) => ({
          // A parameter the document spells otherwise (`worker-index`) is the route's in camel case.
          key: `${method.toUpperCase()} ${path.replace(/\{([\w-]+)\}/g, (_match, name: string) => `:${name.replace(/-(\w)/g, (_dash, letter: string) => letter.toUpperCase())}`)}`,
          permission: operation['x-hub-permission'],
        })),
      );
      expect(documented.map(({ key }) => key).sort()).toEqual(ROUTES.map(keyOf).sort());
      for (const { key, permission } of documented) {
        const route = ROUTES.find((candidate) => keyOf(candidate) === key) as RouteCase;
        const expected =
          'public' in route.access
            ? undefined
            : 'object' in route.access
              ? { object: route.access.object, action: route.access.action, ...(route.access.self && { self: true }) }
              : { self: true };
        expect([key, permission]).toEqual([key, expected]);
      }
    });

    it.each(ROUTES.map((route) => [keyOf(route), route] as const))('%s declares the access the table expects', (_key, route) => {
      const options = applicationRoutes(hub).get(keyOf(route));
      expect(options?.access).toEqual(route.access);
      // A single-resource row names the fixture it acts on, through a path parameter.
      if (isPermissionRoute(route) && isSingleResource(route))
        expect([route.resource, objectOf(route)]).toEqual([expect.any(String), expect.stringMatching(/\/[0-9a-f-]{36}$/)]);
      expect(hub.app.getHttpAdapter().getInstance().hasRoute({ method: route.method, url: route.path })).toBe(true);
    });
  });

  describe('without credentials', () => {
    it.each([...PERMISSION_ROUTES, ...SELF_ROUTES].map((route) => [keyOf(route), route] as const))('%s is 401', async (_key, route) => {
      expectDenial(route, await call(route), 401, 'credentials are required');
    });

    it.each([...PERMISSION_ROUTES, ...SELF_ROUTES].map((route) => [keyOf(route), route] as const))('%s is 401 with a forged token', async (_key, route) => {
      const [header, payload] = hub.adminToken.split('.');
      expectDenial(route, await call(route, { authorization: `Bearer ${header}.${payload}.${'A'.repeat(43)}` }), 401);
    });

    it('serves the OpenAPI document and its UI, which are not @Route routes', async () => {
      expect((await hub.inject({ method: 'GET', url: '/api/openapi.json' })).statusCode).toBe(200);
      const docs = await hub.inject({ method: 'GET', url: '/api/docs' });
      expect(docs.statusCode).toBe(200);
      expect(docs.headers['content-type']).toMatch(/^text\/html/);
    });
  });

  describe('as a user without bindings', () => {
    it.each(PERMISSION_ROUTES.filter((route) => !isSingleResource(route) && !listsOwnItems(route)).map((route) => [keyOf(route), route] as const))(
      '%s is 403, naming the action and the object',
      async (_key, route) => {
        const response = await call(route, bearer(nobody.token));
        expectDenial(route, response, 403, `Not allowed: ${route.access.action} on ${route.access.object} in `);
      },
    );

    it.each(PERMISSION_ROUTES.filter(isSingleResource).map((route) => [keyOf(route), route] as const))(
      '%s is 404 on a resource the user may not read, as if it did not exist',
      async (_key, route) => {
        expectDenial(route, await call(route, bearer(nobody.token)), 404, 'not found');
      },
    );

    it.each(PERMISSION_ROUTES.filter(listsOwnItems).map((route) => [keyOf(route), route] as const))(
      '%s lists only what the user owns: nothing',
      async (_key, route) => {
        const response = await call(route, bearer(nobody.token));
        // Cluster lists carry their count as total; the runs list has none.
        const body = response.json<{ total?: number; data: unknown[] }>();
        expect([keyOf(route), response.statusCode, body.data, body.total ?? 0]).toEqual([keyOf(route), 200, [], 0]);
      },
    );
  });

  describe('as a user with every action on the object but the one the route needs', () => {
    it.each(PERMISSION_ROUTES.filter((route) => !listsOwnItems(route)).map((route) => [keyOf(route), route] as const))('%s is denied', async (_key, route) => {
      const caller = otherActionCallers.get(keyOf(route)) as Caller;
      const response = await call(route, bearer(caller.token));
      if (isSingleResource(route) && route.access.action === 'Read') expectDenial(route, response, 404, 'not found');
      // A caller that may read the resource may see its name.
      else
        expectDenial(
          route,
          response,
          403,
          `Not allowed: ${route.access.action} on ${objectOf(route)} in `,
          route.resource ? [route.resource, ...(route.reveals ?? [])] : [],
        );
    });
  });

  it('denied requests changed nothing', async () => {
    expect(await takeSnapshot()).toEqual(snapshot);
  });

  describe('with exactly the permission the route declares', () => {
    it.each(PERMISSION_ROUTES.map((route) => [keyOf(route), route] as const))('%s is allowed', async (_key, route) => {
      const caller = allowedCallers.get(keyOf(route)) as Caller;
      const response = await call(route, bearer(caller.token));
      expect([keyOf(route), response.statusCode, response.body]).toEqual([keyOf(route), route.allowed, response.body]);
    });

    it.each(SELF_ROUTES.map((route) => [keyOf(route), route] as const))('%s is allowed to a user without bindings', async (_key, route) => {
      const caller = allowedCallers.get(keyOf(route)) as Caller;
      const response = await call(route, bearer(caller.token));
      expect([keyOf(route), response.statusCode, response.body]).toEqual([keyOf(route), route.allowed, response.body]);
    });

    it.each(PUBLIC_ROUTES.map((route) => [keyOf(route), route] as const))('%s is allowed without credentials', async (_key, route) => {
      const response = await call(route);
      expect([keyOf(route), response.statusCode, response.body]).toEqual([keyOf(route), route.allowed, response.body]);
    });

    it('answered the self routes about the caller itself', async () => {
      const caller = await createCaller('self');
      const me = await hub.inject({ method: 'GET', url: '/api/v2/auth/me', headers: bearer(caller.token) });
      expect(me.json()).toMatchObject({ _id: caller.id, userName: caller.userName });
      const claims = await hub.inject({ method: 'GET', url: '/api/v2/auth/claims', headers: bearer(caller.token) });
      expect(claims.json()).toMatchObject({ claims: { sub: caller.id, userName: caller.userName } });
      const evaluation = await hub.inject({
        method: 'POST',
        url: '/api/v2/rbac/evaluate',
        headers: bearer(caller.token),
        payload: [{ object: '/Groups', action: 'Read' }],
      });
      expect(evaluation.json()).toEqual(['Deny']);
    });
  });

  describe("a user's own record, without bindings", () => {
    let self: Caller;
    const url = () => `/api/v2/auth/users/${self.id}`;
    const asSelf = (method: HttpMethod, path: string, payload?: object) =>
      hub.inject({ method, url: path, headers: bearer(self.token), ...(payload !== undefined && { payload }) });

    beforeAll(async () => {
      self = await createCaller('selfie');
    });

    it('may be read, with its groups and unix details', async () => {
      const user = await asSelf('GET', url());
      expect(user.statusCode).toBe(200);
      expect(user.json()).toMatchObject({ _id: self.id, userName: self.userName });
      const groups = await asSelf('GET', `${url()}/groups`);
      expect(groups.statusCode).toBe(200);
      expect(groups.json()).toEqual([]);
      const unix = await asSelf('GET', `${url()}/unix`);
      expect(unix.statusCode).toBe(200);
      expect(unix.json()).toMatchObject({ userName: self.userName });
    });

    it('may have its displayName and email changed by PATCH and by PUT', async () => {
      const patched = await asSelf('PATCH', url(), [
        { op: 'add', path: '/displayName', value: 'Self Patched' },
        { op: 'add', path: '/email', value: 'patched@example.com' },
      ]);
      expect([patched.statusCode, patched.body]).toEqual([200, patched.body]);
      expect(patched.json()).toMatchObject({ displayName: 'Self Patched', email: 'patched@example.com' });
      const replaced = await asSelf('PUT', url(), { userName: self.userName, displayName: 'Self Replaced', email: 'replaced@example.com' });
      expect([replaced.statusCode, replaced.body]).toEqual([200, replaced.body]);
      expect((await asSelf('GET', url())).json()).toMatchObject({ displayName: 'Self Replaced', email: 'replaced@example.com' });
    });

    it.each([
      ['active', { op: 'replace', path: '/active', value: false }],
      ['system', { op: 'replace', path: '/system', value: true }],
      ['externalId', { op: 'add', path: '/externalId', value: 'self-external' }],
      ['userName', { op: 'replace', path: '/userName', value: 'selfie-renamed' }],
      ['unixHomeDirectory', { op: 'add', path: '/unixHomeDirectory', value: '/home/selfie' }],
      ['password', { op: 'add', path: '/password', value: OTHER_PASSWORD }],
    ])('may not have its %s changed by PATCH (403), and nothing changes', async (_field, operation) => {
      const before = await asSelf('GET', url());
      const response = await asSelf('PATCH', url(), [{ op: 'add', path: '/displayName', value: 'Sneaked In' }, operation]);
      expect([response.statusCode, response.body]).toEqual([403, response.body]);
      expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      const after = await asSelf('GET', url());
      expect(after.json()).toEqual(before.json());
      expect(after.headers.etag).toBe(before.headers.etag);
    });

    it('still logs in with its password after the refused password change', async () => {
      await expect(hub.login(self.userName, PASSWORD)).resolves.toEqual(expect.any(String));
    });

    it("sees another user's record as not found", async () => {
      const other = `/api/v2/auth/users/${fixtures.user}`;
      const requests: [HttpMethod, string, object?][] = [
        ['GET', other],
        ['GET', `${other}/groups`],
        ['GET', `${other}/unix`],
        ['PUT', other, { userName: FIXTURE_NAMES.user, displayName: 'Hijacked' }],
        ['PATCH', other, [{ op: 'replace', path: '/displayName', value: 'Hijacked' }]],
        ['DELETE', other],
      ];
      for (const [method, path, payload] of requests) {
        const response = await asSelf(method, path, payload);
        expect([method, path, response.statusCode]).toEqual([method, path, 404]);
        expect(response.body).not.toContain(FIXTURE_NAMES.user);
      }
      expect((await asAdmin('GET', other)).displayName).not.toBe('Hijacked');
    });
  });

  describe('namespaced routes', () => {
    let a: string;
    let b: string;
    let reader: Caller;
    const asReader = (method: HttpMethod, url: string, payload?: object) =>
      hub.inject({ method, url, headers: bearer(reader.token), ...(payload !== undefined && { payload }) });

    beforeAll(async () => {
      a = await createNamespace('a');
      b = await createNamespace('b');
      reader = await createCaller('reader', [
        { object: '/Namespaces', actions: ['Read'], namespace: 'a' },
        { object: '/Namespaces/*', actions: ['Read'], namespace: 'a' },
      ]);
    });

    it('lists only the namespaces where the user may read', async () => {
      const response = await asReader('GET', '/api/v2/namespaces');
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ totalCount: 1, data: [{ _id: a, name: 'a' }] });
    });

    it('reads its namespace, and not another', async () => {
      expect((await asReader('GET', `/api/v2/namespaces/${a}`)).json()).toMatchObject({ _id: a, name: 'a' });
      const other = await asReader('GET', `/api/v2/namespaces/${b}`);
      expect(other.statusCode).toBe(404);
      expect(other.body).not.toContain('"b"');
      expect((await asReader('GET', `/api/v2/namespaces/${fixtures.namespace}`)).statusCode).toBe(404);
    });

    it('is refused (403, not 404) a change to the namespace it may read, and 404 for the other', async () => {
      const deleted = await asReader('DELETE', `/api/v2/namespaces/${a}`);
      expect(deleted.statusCode).toBe(403);
      expect(deleted.json().detail).toBe(`Not allowed: Delete on /Namespaces/${a} in namespace 'a'`);
      const replaced = await asReader('PUT', `/api/v2/namespaces/${a}`, { name: 'a', description: 'mine now' });
      expect(replaced.statusCode).toBe(403);
      expect((await asReader('DELETE', `/api/v2/namespaces/${b}`)).statusCode).toBe(404);
      expect((await asAdmin('GET', `/api/v2/namespaces/${a}`)).description).toBeUndefined();
    });

    it("lets Delete on '/Namespaces/*' in 'a' through to the operation, which keeps 'a' while it holds bindings (409)", async () => {
      const deleter = await createCaller('deleter', [{ object: '/Namespaces/*', actions: ['Delete'], namespace: 'a' }]);
      expect((await hub.inject({ method: 'DELETE', url: `/api/v2/namespaces/${b}`, headers: bearer(deleter.token) })).statusCode).toBe(404);
      // The bindings that give the permission live in 'a', so the hub refuses with its own 409
      // (a namespace holding role bindings is not deleted): the access check let it through.
      const held = await hub.inject({ method: 'DELETE', url: `/api/v2/namespaces/${a}`, headers: bearer(deleter.token) });
      expect([held.statusCode, held.json().detail]).toEqual([409, expect.stringMatching(/^Namespace 'a' still holds \d+ role bindings/)]);
      // Only the deleter's own binding is left in 'a' then, and it still holds the namespace.
      await asAdmin('DELETE', `/api/v2/rbac/rolebindings?filter[principal][EQ]=${reader.id}`);
      const still = await hub.inject({ method: 'DELETE', url: `/api/v2/namespaces/${a}`, headers: bearer(deleter.token) });
      expect([still.statusCode, still.json().detail]).toEqual([409, expect.stringMatching(/^Namespace 'a' still holds 1 role bindings/)]);
    });
  });
});

import type { PermissionValue } from './entities/role.entity.js';

/** A permission on a collection and on every item of it (`/X` and `/X/*`). */
function onCollection(collection: string, actions: string[]): PermissionValue[] {
  return [
    { object: `/${collection}`, objectMatcher: 'simple', actions, effect: 'Allow' },
    { object: `/${collection}/*`, objectMatcher: 'simple', actions, effect: 'Allow' },
  ];
}

/**
 * The built-in roles of api-map §6, kept in step with this release at every start; they are
 * `system` and read-only. Bind them in a namespace to give their permissions there, or in `*`.
 */
export const BUILT_IN_ROLES: readonly { name: string; description: string; permissions: PermissionValue[] }[] = [
  {
    name: 'HubAdministrator',
    description: 'Everything, everywhere',
    permissions: [{ object: '/**', objectMatcher: 'glob', actions: ['*'], effect: 'Allow' }],
  },
  {
    name: 'NamespaceUser',
    description: 'Sees the namespace and what is in it, uses its execution profiles, and resolves credentials in its auth domains',
    permissions: [
      ...onCollection('Namespaces', ['Read']),
      ...onCollection('AuthDomains', ['Read', 'Use']),
      ...onCollection('ExecutionProfiles', ['Read', 'Use']),
      ...onCollection('ExecutionProfileBindings', ['Read']),
      ...onCollection('Pipelines', ['Read']),
      ...onCollection('PublishedLibraries', ['Read']),
    ],
  },
  {
    name: 'PipelineDeveloper',
    description: 'Writes and runs pipelines',
    permissions: [
      ...onCollection('Pipelines', ['Read', 'Create', 'Update', 'Delete', 'Execute']),
      ...onCollection('PipelineRuns', ['Read', 'Update', 'Delete']),
      ...onCollection('ExecutionProfiles', ['Read', 'Use']),
      ...onCollection('AuthDomains', ['Read', 'Use']),
    ],
  },
  {
    name: 'SessionUser',
    description: 'Starts, uses and ends link sessions',
    permissions: [
      ...onCollection('LinkSessions', ['Read', 'Create', 'Update', 'Delete']),
      ...onCollection('ExecutionProfiles', ['Read', 'Use']),
      // Every configuration, never Execute on /LinkSessions (the sessions administrator's: api-map §8).
      { object: '/LinkSessionConfigurations/*', objectMatcher: 'simple', actions: ['Use'], effect: 'Allow' },
    ],
  },
  {
    name: 'PublishedLibraryConsumer',
    description: 'Queries published libraries of datasets',
    permissions: [...onCollection('PublishedLibraries', ['Read', 'Use'])],
  },
  {
    name: 'ClusterAdministrator',
    description: 'Manages cluster nodes and every job',
    permissions: [...onCollection('ClusterNodes', ['*']), ...onCollection('ClusterJobs', ['*'])],
  },
];

export const ADMINISTRATOR_ROLE = 'HubAdministrator';

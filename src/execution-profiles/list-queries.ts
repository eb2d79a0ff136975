import { defineListQuery } from '../common/query/list-query.js';

/** The actions `hasPermission` asks about (hub-interface §4.9). */
export const PROFILE_PERMISSIONS = ['Read', 'Use', 'Delete', 'Update'] as const;

/**
 * What `GET /execution-profiles/execprofiles` accepts (hub-interface §4.9); columns are over the
 * alias `profile`. hasPermission, hasBindingTo and isDefaultFor are not columns: the service
 * applies them, and takes them as plain parameters too, as the interface names them.
 */
export const EXECUTION_PROFILE_LIST_QUERY = defineListQuery({
  filters: {
    name: { column: 'profile.name', type: 'string', operators: ['EQ', 'CO', 'SW'] },
    created: { column: 'profile.created', type: 'datetime', operators: ['LT', 'GT'] },
    modified: { column: 'profile.modified', type: 'datetime', operators: ['LT', 'GT'] },
    hasPermission: { type: PROFILE_PERMISSIONS, operators: ['EQ'], plain: 'EQ' },
    hasBindingTo: { type: 'string[]', operators: ['ANY', 'ALL'], plain: 'ANY' },
    isDefaultFor: { type: 'string', operators: ['EQ'], plain: 'EQ' },
  },
  sorts: { name: 'lower(profile.name)', _created: 'profile.created', _modified: 'profile.modified' },
  defaultSort: 'name',
  tieBreaker: 'profile.id',
  small: 'execution profiles an administrator defines: tens',
});

/** What `GET /execution-profiles/bindings` accepts: bindings as the derived table `binding`. */
export const PROFILE_BINDING_LIST_QUERY = defineListQuery({
  filters: {
    executionProfileId: { column: 'binding."executionProfileId"', type: 'uuid', operators: ['EQ'] },
    namespaceId: { column: 'binding."namespaceId"', type: 'uuid', operators: ['EQ'] },
  },
  sorts: { executionProfileId: 'lower(binding."profileName")', namespaceId: 'lower(binding."namespaceName")' },
  defaultSort: 'namespaceId',
  tieBreaker: 'binding."id"',
  small: 'at most one per execution profile and namespace: a few thousand',
});

import { defineListQuery } from '../common/query/list-query.js';
import { AUDIT_PURPOSES } from './dto/audit.dto.js';
import { EFFECTS } from './dto/role.dto.js';

/** What `GET /rbac/roles` accepts (hub-interface §4.8); columns are over the alias `role`. */
export const ROLE_LIST_QUERY = defineListQuery({
  filters: {
    name: { column: 'role.name', type: 'string', operators: ['EQ', 'CO'] },
    system: { column: 'role.system', type: 'boolean', operators: ['EQ'] },
    created: { column: 'role.created', type: 'datetime', operators: ['LT', 'GT'] },
    modified: { column: 'role.modified', type: 'datetime', operators: ['LT', 'GT'] },
  },
  sorts: { name: 'lower(role.name)', created: 'role.created', modified: 'role.modified' },
  defaultSort: 'name',
  tieBreaker: 'role.id',
  small: 'roles an administrator defines: tens',
});

/** What `GET /rbac/rolebindings` accepts: bindings as the derived table `binding`. */
export const ROLE_BINDING_LIST_QUERY = defineListQuery({
  filters: {
    role: { column: 'binding."role"', type: 'uuid', operators: ['EQ'] },
    principal: { column: 'binding."principal"', type: 'uuid', operators: ['EQ', 'IN'] },
  },
  sorts: { role: 'lower(binding."roleName")', principal: 'lower(binding."principalName")', created: 'binding."created"' },
  defaultSort: 'created',
  tieBreaker: 'binding."id"',
  indexes: {
    sorts: {
      role: { unindexed: "the role's name, joined: the matching bindings are sorted (see docs/api-conventions.md)" },
      principal: { unindexed: "the principal's name, from users or groups: the matching bindings are sorted (see docs/api-conventions.md)" },
      created: 'role_bindings_created_idx',
    },
    filters: { role: 'role_bindings_unique_key', principal: 'role_bindings_principal_id_idx' },
  },
});

/** What `DELETE /rbac/rolebindings` accepts: at least one of these filters. */
export const ROLE_BINDING_DELETE_QUERY = defineListQuery({
  filters: {
    role: { column: 'binding."role"', type: 'uuid', operators: ['EQ'] },
    namespace: { column: 'binding."namespace"', type: 'string', operators: ['EQ'] },
    principal: { column: 'binding."principal"', type: 'uuid', operators: ['EQ'] },
  },
  sorts: { created: 'binding."created"' },
  defaultSort: 'created',
  tieBreaker: 'binding."id"',
  paged: false,
  small: 'the bindings a delete removes, answered whole: the cost is that of the answer',
});

/** What `GET /rbac/audit` accepts; a page of records as a plain array, newest first by default. */
export const AUDIT_LIST_QUERY = defineListQuery({
  filters: {
    userId: { column: 'audit.user_id', type: 'uuid', operators: ['EQ'] },
    object: { column: 'audit.object', type: 'string', operators: ['EQ', 'SW'], prefixColumn: 'lower(audit.object) COLLATE "C"' },
    action: { column: 'audit.action', type: 'string', operators: ['EQ'] },
    namespace: { column: 'audit.namespace', type: 'string', operators: ['EQ'] },
    decision: { column: 'audit.decision', type: EFFECTS, operators: ['EQ'] },
    purpose: { column: 'audit.purpose', type: AUDIT_PURPOSES, operators: ['EQ'] },
    when: { column: 'audit."when"', type: 'datetime', operators: ['LT', 'GT'] },
  },
  sorts: { object: 'audit.object', when: 'audit."when"' },
  defaultSort: '-when',
  tieBreaker: 'audit.id',
  indexes: {
    sorts: { object: 'audit_records_object_idx', when: 'audit_records_when_idx' },
    filters: {
      userId: 'audit_records_user_id_idx',
      object: ['audit_records_object_idx', 'audit_records_object_prefix_idx'],
      action: { unindexed: 'a handful of actions, each a large share of the records: the index of the sort finds a page sooner' },
      namespace: { unindexed: 'namespaces hold large shares of the records: the index of the sort finds a page sooner' },
      decision: 'audit_records_decision_idx',
      purpose: { unindexed: 'two purposes, each a large share of the records: the index of the sort finds a page sooner' },
      when: 'audit_records_when_idx',
    },
    // Each of these indexes is led by the filter's column and then holds the sort's.
    ordered: [
      { filter: 'when', operators: ['LT', 'GT'], sorts: ['when'] },
      { filter: 'userId', operators: ['EQ'], sorts: ['when'] },
      { filter: 'decision', operators: ['EQ'], sorts: ['when'] },
      { filter: 'object', operators: ['EQ'], sorts: ['object'] },
    ],
    sortedShallow: "no index holds an object prefix's matches with their time: their keys found first are the same rows, read twice",
  },
});

import { defineListQuery } from '../common/query/list-query.js';
import { GROUP_FIELDS, MEMBERSHIP_TYPES, PRINCIPAL_TYPES } from './dto/group.dto.js';
import { USER_FIELDS } from './dto/user.dto.js';

/** What `GET /auth/users` accepts (hub-interface §4.2); columns are over the alias `users`. */
export const USER_LIST_QUERY = defineListQuery({
  filters: {
    _id: { column: 'users.id', type: 'uuid', operators: ['EQ', 'IN'] },
    userName: { column: 'users.user_name', type: 'string', operators: ['EQ', 'CO'] },
    displayName: { column: 'users.display_name', type: 'string', operators: ['EQ', 'CO'] },
    email: { column: 'users.email', type: 'string', operators: ['EQ', 'CO'] },
    active: { column: 'users.active', type: 'boolean', operators: ['EQ'] },
    externalId: { column: 'users.external_id', type: 'string', operators: ['PR'] },
    system: { column: 'users.system', type: 'boolean', operators: ['EQ'] },
    invitationPending: { column: 'users.invitation_pending', type: 'boolean', operators: ['EQ'] },
    _created: { column: 'users.created', type: 'datetime', operators: ['LT', 'GT'] },
    _modified: { column: 'users.modified', type: 'datetime', operators: ['LT', 'GT'] },
  },
  sorts: { userName: 'lower(users.user_name)', displayName: 'lower(users.display_name)', _created: 'users.created', _modified: 'users.modified' },
  defaultSort: 'userName',
  tieBreaker: 'users.id',
  projection: USER_FIELDS,
  indexes: {
    sorts: {
      userName: 'users_user_name_lower_key',
      displayName: 'users_display_name_lower_idx',
      _created: 'users_created_idx',
      _modified: 'users_modified_idx',
    },
    filters: {
      _id: 'PK_a3ffb1c0c8416b9fc6f907b7433',
      userName: 'users_user_name_trgm_idx',
      displayName: 'users_display_name_trgm_idx',
      email: 'users_email_trgm_idx',
      active: 'users_inactive_idx',
      externalId: 'users_external_id_key',
      system: 'users_system_idx',
      invitationPending: 'users_invitation_pending_idx',
      _created: 'users_created_idx',
      _modified: 'users_modified_idx',
    },
    ordered: [
      { filter: '_created', operators: ['LT', 'GT'], sorts: ['_created'] },
      { filter: '_modified', operators: ['LT', 'GT'], sorts: ['_modified'] },
    ],
  },
});

/** What `GET /auth/groups` accepts; columns are over the alias `groups`. */
export const GROUP_LIST_QUERY = defineListQuery({
  filters: {
    _id: { column: 'groups.id', type: 'uuid', operators: ['EQ', 'IN'] },
    name: { column: 'groups.name', type: 'string', operators: ['EQ', 'CO'] },
    externalId: { column: 'groups.external_id', type: 'string', operators: ['PR'] },
    system: { column: 'groups.system', type: 'boolean', operators: ['EQ'] },
    _created: { column: 'groups.created', type: 'datetime', operators: ['LT', 'GT'] },
    _modified: { column: 'groups.modified', type: 'datetime', operators: ['LT', 'GT'] },
  },
  sorts: { name: 'lower(groups.name)', _created: 'groups.created', _modified: 'groups.modified' },
  defaultSort: 'name',
  tieBreaker: 'groups.id',
  projection: GROUP_FIELDS,
  indexes: {
    sorts: { name: 'groups_name_lower_key', _created: 'groups_created_idx', _modified: 'groups_modified_idx' },
    filters: {
      _id: 'PK_659d1483316afb28afd3a90646e',
      name: 'groups_name_trgm_idx',
      externalId: 'groups_external_id_key',
      system: 'groups_system_idx',
      _created: 'groups_created_idx',
      _modified: 'groups_modified_idx',
    },
    ordered: [
      { filter: '_created', operators: ['LT', 'GT'], sorts: ['_created'] },
      { filter: '_modified', operators: ['LT', 'GT'], sorts: ['_modified'] },
    ],
  },
});

/** What `GET /auth/principals` accepts: users and groups as one derived table `principal`. */
export const PRINCIPAL_LIST_QUERY = defineListQuery({
  filters: {
    _id: { column: 'principal."id"', type: 'uuid', operators: ['EQ', 'IN'] },
    _type: { column: 'principal."type"', type: PRINCIPAL_TYPES, operators: ['EQ'] },
    displayName: { column: 'principal."displayName"', type: 'string', operators: ['EQ', 'CO', 'SW'] },
    external: { column: 'principal."external"', type: 'boolean', operators: ['EQ'] },
    system: { column: 'principal."system"', type: 'boolean', operators: ['EQ'] },
  },
  sorts: { displayName: 'lower(principal."displayName")' },
  defaultSort: 'displayName',
  tieBreaker: 'principal."id"',
  indexes: {
    sorts: { displayName: ['users_principal_name_lower_idx', 'groups_name_lower_key'] },
    filters: {
      _id: ['PK_a3ffb1c0c8416b9fc6f907b7433', 'PK_659d1483316afb28afd3a90646e'],
      _type: { unindexed: 'a constant of each branch of the union: the other branch is left out whole' },
      displayName: ['users_principal_name_trgm_idx', 'groups_name_trgm_idx'],
      external: ['users_external_id_key', 'groups_external_id_key'],
      system: ['users_system_idx', 'groups_system_idx'],
    },
  },
});

/** What `GET /auth/groups/{groupId}/members` accepts; the reply is a plain array, by name. */
export const GROUP_MEMBER_LIST_QUERY = defineListQuery({
  filters: {
    membershipType: { column: 'member."membershipType"', type: MEMBERSHIP_TYPES, operators: ['EQ'] },
    principalType: { column: 'member."principalType"', type: PRINCIPAL_TYPES, operators: ['EQ'] },
  },
  sorts: { name: 'lower(member."name")' },
  defaultSort: 'name',
  tieBreaker: 'member."id"',
  paged: false,
  small: "one group's direct members, answered whole: the cost is that of the answer",
});

/** What `GET /auth/users/{userId}/groups` accepts; the reply is a plain array, by name. */
export const USER_GROUP_LIST_QUERY = defineListQuery({
  filters: {
    membershipType: { column: 'membership."membershipType"', type: MEMBERSHIP_TYPES, operators: ['EQ'] },
  },
  sorts: { name: 'lower(membership."name")' },
  defaultSort: 'name',
  tieBreaker: 'membership."id"',
  paged: false,
  small: "one user's groups, answered whole: the cost is that of the answer",
});

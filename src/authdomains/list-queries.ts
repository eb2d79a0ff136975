import { defineListQuery } from '../common/query/list-query.js';

/** What `GET /authdomains/authdomains` accepts (hub-interface §4.4): domains as the derived table `domain`. */
export const AUTH_DOMAIN_LIST_QUERY = defineListQuery({
  filters: {
    namespace: { column: 'domain."namespaceName"', type: 'string', operators: ['EQ', 'IN'] },
    name: { column: 'domain."name"', type: 'string', operators: ['EQ', 'CO', 'SW'] },
    created: { column: 'domain."created"', type: 'datetime', operators: ['LT', 'GT'] },
    modified: { column: 'domain."modified"', type: 'datetime', operators: ['LT', 'GT'] },
  },
  sorts: { name: 'lower(domain."name")', _created: 'domain."created"', _modified: 'domain."modified"' },
  defaultSort: 'name',
  tieBreaker: 'domain."id"',
  small: 'authentication domains: a few per namespace',
});

const CREDENTIAL_FILTERS = {
  namespace: { column: 'credential."namespaceName"', type: 'string', operators: ['EQ', 'IN'] },
  created: { column: 'credential."created"', type: 'datetime', operators: ['LT', 'GT'] },
  modified: { column: 'credential."modified"', type: 'datetime', operators: ['LT', 'GT'] },
} as const;

const CREDENTIAL_SORTS = {
  _created: 'credential."created"',
  _modified: 'credential."modified"',
  rank: 'credential."rank"',
  authDomainId: 'lower(credential."authDomainName")',
} as const;

/** What `GET /authdomains/credentials` accepts (hub-interface §4.5): credentials as the derived table `credential`. */
export const CREDENTIAL_LIST_QUERY = defineListQuery({
  filters: {
    ...CREDENTIAL_FILTERS,
    authDomain: { column: 'credential."authDomainId"', type: 'uuid', operators: ['EQ'], required: true },
    principal: { column: 'credential."principalId"', type: 'uuid', operators: ['EQ', 'IN'] },
  },
  sorts: { ...CREDENTIAL_SORTS, principal: 'lower(credential."principalName")' },
  defaultSort: 'rank',
  tieBreaker: 'credential."id"',
  indexes: {
    sorts: {
      _created: 'credentials_created_idx',
      _modified: 'credentials_modified_idx',
      rank: 'credentials_domain_rank_key',
      authDomainId: { unindexed: 'one domain per request (its filter is required): the name is the same for every item' },
      principal: { unindexed: "the principal's name, from users or groups: the domain's credentials are sorted (see docs/api-conventions.md)" },
    },
    filters: {
      namespace: { unindexed: 'one domain per request: its namespace is the same for every item' },
      created: 'credentials_created_idx',
      modified: 'credentials_modified_idx',
      authDomain: 'credentials_domain_rank_key',
      principal: 'credentials_principal_id_idx',
    },
  },
});

/** What `GET /authdomains/me/credentials` accepts: the caller's own credentials, in any domain. */
export const MY_CREDENTIAL_LIST_QUERY = defineListQuery({
  filters: { ...CREDENTIAL_FILTERS, authDomain: { column: 'credential."authDomainId"', type: 'uuid', operators: ['EQ'] } },
  sorts: CREDENTIAL_SORTS,
  defaultSort: 'rank',
  tieBreaker: 'credential."id"',
  small: "the caller's own credentials: a few per domain",
});

import { defineListQuery, type ListQuerySpec } from '../common/query/list-query.js';

/** What `GET /libraries/definitions` accepts (api-map §5 "Settled details"): definitions as the derived table `definition`. */
export const LIBRARY_DEFINITION_LIST_QUERY = defineListQuery({
  filters: {
    name: { column: 'definition."name"', type: 'string', operators: ['EQ', 'CO', 'SW'] },
    namespace: { column: 'definition."namespaceName"', type: 'string', operators: ['EQ', 'IN'] },
    engine: { column: 'definition."engine"', type: 'string', operators: ['EQ'] },
  },
  sorts: { name: 'definition."name"', _created: 'definition."created"', _modified: 'definition."modified"' },
  defaultSort: 'name',
  tieBreaker: 'definition."id"',
  small: 'library definitions: a few per namespace, each a directory or database a team keeps',
});

/** What `queryPublishedLibraries` accepts (hub-interface §4.6): published libraries as the derived table `library`. */
export const PUBLISHED_LIBRARY_LIST_QUERY = defineListQuery({
  filters: {
    namespace: { column: 'library."namespaceName"', type: 'string', operators: ['EQ', 'IN'] },
    name: { column: 'library."name"', type: 'string', operators: ['EQ', 'CO', 'ST'] },
  },
  sorts: { name: 'library."name"' },
  defaultSort: 'name',
  tieBreaker: 'library."id"',
  small: 'published libraries: at most one per definition, each running its pool of workers',
});

/**
 * What `queryLibraryMembers` accepts (hub-interface §4.6), applied by the hub to the member list a
 * worker answers (library-members.ts): parsed like every list, but no SQL of the hub's reads it, so
 * it is not one of the lists whose statements are committed (defineListQuery).
 */
export const LIBRARY_MEMBER_LIST_QUERY: ListQuerySpec = {
  filters: {
    name: { type: 'string', operators: ['EQ', 'CO', 'ST'] },
    type: { type: ['DATA', 'VIEW', 'CATALOG'], operators: ['EQ', 'IN'] },
  },
  sorts: { name: 'name', type: 'type' },
  defaultSort: 'name',
  tieBreaker: 'name',
  small: 'the files of one directory or the tables of one database, listed by a worker',
};

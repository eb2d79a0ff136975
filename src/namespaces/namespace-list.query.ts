import { defineListQuery } from '../common/query/list-query.js';
import { NAMESPACE_FIELDS } from './dto/namespace.dto.js';

/** What `GET /namespaces` accepts; columns are over the alias `namespace`. */
export const NAMESPACE_LIST_QUERY = defineListQuery({
  filters: {
    _id: { column: 'namespace.id', type: 'uuid', operators: ['EQ', 'IN'] },
    name: { column: 'namespace.name', type: 'string', operators: ['EQ', 'IN', 'CO', 'SW', 'ST'] },
    description: { column: 'namespace.description', type: 'string', operators: ['CO', 'PR'] },
    isDefault: { column: 'namespace.is_default', type: 'boolean', operators: ['EQ'] },
    _created: { column: 'namespace.created', type: 'datetime', operators: ['LT', 'GT'] },
    _modified: { column: 'namespace.modified', type: 'datetime', operators: ['LT', 'GT'] },
  },
  sorts: { name: 'lower(namespace.name)', _created: 'namespace.created', _modified: 'namespace.modified' },
  defaultSort: 'name',
  tieBreaker: 'namespace.id',
  projection: NAMESPACE_FIELDS,
  small: 'namespaces: hundreds, a few thousand at most',
});

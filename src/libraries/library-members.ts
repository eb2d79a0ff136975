import type { ListEnvelope } from '../common/http/list-envelope.js';
import type { FilterCondition, ListQuery } from '../common/query/list-query.js';
import type { LibraryMemberDto } from './dto/published-library.dto.js';

/**
 * Whether a member passes one filter of the shared parser's, with the operators' meanings of
 * api-map §0 (EQ exact; CO and ST/SW ignore case; IN any of): the shared list machinery turns
 * filters into SQL, and a library's members come from a worker, not a table.
 */
function passes(member: LibraryMemberDto, filter: FilterCondition): boolean {
  const value = member[filter.field as keyof LibraryMemberDto];
  const given = filter.value;
  switch (filter.operator) {
    case 'EQ':
      return value === given;
    case 'IN':
      return (given as readonly string[]).includes(value);
    case 'CO':
      return value.toLowerCase().includes(String(given).toLowerCase());
    case 'SW':
    case 'ST':
      return value.toLowerCase().startsWith(String(given).toLowerCase());
    default:
      return false;
  }
}

/** By code point, so that the order is the same whatever the hub's locale. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A page of a worker's member list, filtered and sorted as `query` (LIBRARY_MEMBER_LIST_QUERY) says; ties by name. */
export function pageOfMembers(members: readonly LibraryMemberDto[], query: ListQuery): ListEnvelope<LibraryMemberDto> {
  const kept = members.filter((member) => query.filters.every((filter) => passes(member, filter)));
  const key = query.sort.key as keyof LibraryMemberDto;
  const direction = query.sort.descending ? -1 : 1;
  kept.sort((a, b) => direction * (compare(a[key], b[key]) || compare(a.name, b.name)));
  return {
    totalCount: kept.length,
    data: kept.slice(query.offset, query.offset + query.limit).map((member) => ({ name: member.name, type: member.type })),
  };
}

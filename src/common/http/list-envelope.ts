import type { Type } from '@nestjs/common';
import { ApiProperty, PartialSchema } from './openapi-decorators.js';
import { applyProjection } from '../query/projection.js';
import type { ListPage } from '../query/list-page.js';
import type { ListQuery } from '../query/list-query.js';

/** The `{totalCount, data}` envelope of list replies (hub-interface §4.1). */
export interface ListEnvelope<T> {
  totalCount: number;
  data: Partial<T>[];
}

/** The item type of each class `ListOf` made, for `Projected`. */
const LIST_ITEMS = new WeakMap<object, Type<unknown>>();

/** The named OpenAPI schema of a list of `item`s: `class NamespaceListDto extends ListOf(NamespaceDto) {}`. */
export function ListOf<T>(item: Type<T>): Type<ListEnvelope<T>> {
  class ListDto {
    @ApiProperty({ description: 'Number of items matching the filters, whatever the page', example: 1 })
    totalCount!: number;

    @ApiProperty({ type: [item] })
    data!: T[];
  }
  LIST_ITEMS.set(ListDto, item);
  return ListDto;
}

/** The item type of a `ListOf` class or a class extending one. */
function listItemOf(type: Type<unknown>): Type<unknown> | undefined {
  for (let base: object | null = type; base; base = Object.getPrototypeOf(base) as object | null) {
    const item = LIST_ITEMS.get(base);
    if (item) return item;
  }
  return undefined;
}

const PROJECTED = new Map<Type<unknown>, Type<unknown>>();

/**
 * The reply schema of an operation that takes `fields`/`excludeFields`, named `Projected<Name>`:
 * `fields` keeps only the fields it names, so a projection can leave out any field of an entity and
 * the projected schema requires none (a list still has its `totalCount` and `data`, whose items
 * require none). The schema of the whole entity stays as strict as it is true for every other
 * operation. `@Route` documents every projected reply with it, so no area declares it.
 */
export function Projected(type: Type<unknown>): Type<unknown> {
  let projected = PROJECTED.get(type);
  if (!projected) {
    const item = listItemOf(type);
    projected = item ? ListOf(Projected(item)) : PartialSchema(type);
    Object.defineProperty(projected, 'name', { value: `Projected${type.name}` });
    PROJECTED.set(type, projected);
  }
  return projected;
}

/** The `{total, data}` envelope of cluster lists (hub-interface §4.1 names their count `total`). */
export interface TotalEnvelope<T> {
  total: number;
  data: T[];
}

/** The named OpenAPI schema of a cluster list of `item`s. */
export function TotalListOf<T>(item: Type<T>): Type<TotalEnvelope<T>> {
  class ListDto {
    @ApiProperty({ description: 'Number of items matching the filters, whatever the page', example: 1 })
    total!: number;

    @ApiProperty({ type: [item] })
    data!: T[];
  }
  return ListDto;
}

/** Maps one page of entities to the envelope, applying the query's projection to each item. */
export function toListEnvelope<E, T extends object>(page: ListPage<E>, query: ListQuery, toItem: (entity: E) => T): ListEnvelope<T> {
  return { totalCount: page.totalCount, data: page.items.map((entity) => applyProjection(toItem(entity), query.projection)) };
}

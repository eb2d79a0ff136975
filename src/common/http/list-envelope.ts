import type { Type } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { applyProjection } from '../query/projection.js';
import type { ListPage } from '../query/list-page.js';
import type { ListQuery } from '../query/list-query.js';

/** The `{totalCount, data}` envelope of list replies (hub-interface §4.1). */
export interface ListEnvelope<T> {
  totalCount: number;
  data: Partial<T>[];
}

/** The named OpenAPI schema of a list of `item`s: `class NamespaceListDto extends ListOf(NamespaceDto) {}`. */
export function ListOf<T>(item: Type<T>): Type<ListEnvelope<T>> {
  class ListDto {
    @ApiProperty({ description: 'Number of items matching the filters, whatever the page', example: 1 })
    totalCount!: number;

    @ApiProperty({ type: [item] })
    data!: T[];
  }
  return ListDto;
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

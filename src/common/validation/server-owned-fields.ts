import { ApiHideProperty } from '../http/openapi-decorators.js';
import { Allow } from 'class-validator';

/**
 * Base of input DTOs whose resource carries `_id`, `_created` and `_modified`: a client may send
 * back what it read, and the server ignores these fields (api-map §0).
 */
export abstract class ServerOwnedFields {
  @Allow() @ApiHideProperty() _id?: unknown;
  @Allow() @ApiHideProperty() _created?: unknown;
  @Allow() @ApiHideProperty() _modified?: unknown;
}

/** The same, for resources that spell them `id`, `created` and `modified` (roles, bindings). */
export abstract class PlainServerOwnedFields {
  @Allow() @ApiHideProperty() id?: unknown;
  @Allow() @ApiHideProperty() created?: unknown;
  @Allow() @ApiHideProperty() modified?: unknown;
}

export const SERVER_OWNED_FIELDS = ['_id', '_created', '_modified', 'id', 'created', 'modified'] as const;

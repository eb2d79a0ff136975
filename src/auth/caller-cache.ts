import { Injectable } from '@nestjs/common';
import { ChangeFeed, RowCache } from '../common/database/change-feed.js';
import type { Caller } from '../common/http/caller.js';

/**
 * Callers (and their token versions) by user id, so that a request costs no query to know who makes it. An entry depends on
 * the user's row and on group memberships (a caller carries its transitive groups): a change to
 * the row drops it, any membership change drops them all, from any replica through the change
 * feed, and at once for this process's own writes.
 */
/** A caller as its user row stands, with the token version a bearer token must carry to act as them. */
export interface AuthenticatedUser {
  readonly caller: Caller;
  readonly tokenVersion: number;
}

@Injectable()
export class CallerCache extends RowCache<AuthenticatedUser> {
  constructor(changes: ChangeFeed) {
    super(changes, 'users');
    this.clearOn('group_user_members').clearOn('group_group_members');
  }
}

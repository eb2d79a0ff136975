import { Injectable } from '@nestjs/common';
import { ChangeFeed, RowCache } from '../common/database/change-feed.js';
import type { Caller } from '../common/http/caller.js';

/**
 * Callers by user id, so that a request costs no query to know who makes it. An entry depends on
 * the user's row and on group memberships (a caller carries its transitive groups): a change to
 * the row drops it, any membership change drops them all, from any replica through the change
 * feed, and at once for this process's own writes.
 */
@Injectable()
export class CallerCache extends RowCache<Caller> {
  constructor(changes: ChangeFeed) {
    super(changes, 'users');
    this.clearOn('group_user_members').clearOn('group_group_members');
  }
}

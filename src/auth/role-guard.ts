import { Injectable } from '@nestjs/common';
import type { Caller } from '../common/http/caller.js';

/** What the access-control area implements for identity: see {@link RoleGuard}. */
export interface EscalationChecks {
  /**
   * 403 unless the caller holds `Use` on every role bound to any of `principalIds`, in the
   * namespace of each binding (`*` for a binding in every namespace), as binding it would need.
   * `change` says what was refused ("changing the password of user 'ada'").
   */
  requireUseOfRolesBoundTo(caller: Caller, principalIds: readonly string[], change: string): Promise<void>;
  /** 403 unless the caller is an administrator: one who may bind the built-in HubAdministrator role in every namespace. */
  requireAdministrator(caller: Caller, change: string): Promise<void>;
}

/**
 * The escalation guard (api-map §6), as identity sees it: changing who a principal is (another
 * user's password, `active`, `externalId`, `unixUserName`) or who gets a group's roles (its
 * members) hands out the roles bound to it, so it needs what binding those roles needs. Access
 * control, which builds on identity and so cannot be imported by it, registers the checks at
 * start (as areas register namespace usage checks); until then every check fails closed.
 */
@Injectable()
export class RoleGuard implements EscalationChecks {
  private checks?: EscalationChecks;

  register(checks: EscalationChecks): void {
    this.checks = checks;
  }

  requireUseOfRolesBoundTo(caller: Caller, principalIds: readonly string[], change: string): Promise<void> {
    return this.registered().requireUseOfRolesBoundTo(caller, principalIds, change);
  }

  requireAdministrator(caller: Caller, change: string): Promise<void> {
    return this.registered().requireAdministrator(caller, change);
  }

  private registered(): EscalationChecks {
    if (!this.checks) throw new Error('No escalation guard is registered: the access-control module registers it at start');
    return this.checks;
  }
}

import { Ability, type MatchConditions } from '@casl/ability';
import { Injectable } from '@nestjs/common';
import { ChangeFeed, RowCache } from '../common/database/change-feed.js';
import { ForbiddenError, InvalidInputError } from '../common/errors/hub-errors.js';
import type { HiddenItems, ItemDenials, NamespaceScope } from '../common/http/access-scope.js';
import type { Caller } from '../common/http/caller.js';
import type { PermissionValue } from './entities/role.entity.js';
import {
  ANY_SUBJECT,
  compileObjectMatcher,
  globToRegex,
  literalFirstSegment,
  MAX_OBJECT_PATH_LENGTH,
  subjectTypeOf,
  type ObjectMatcher,
} from './object-matcher.js';
import { RoleBindingsRepository } from './role-bindings.repository.js';

export type Effect = 'Allow' | 'Deny';

/** A namespace a decision is made in: a null id for `*`; its name (or what was asked for) for messages and the audit. */
export interface DecisionNamespace {
  readonly id: string | null;
  readonly name: string;
}

/**
 * The 403 of a denied decision: it names the action, the object and where (a namespace, or words
 * such as "the namespace of authDomain <id>" that name no namespace), never any data.
 */
export function notAllowed(action: string, object: string, namespace: DecisionNamespace | 'anywhere' | { readonly where: string }): ForbiddenError {
  const where =
    namespace === 'anywhere'
      ? 'any namespace'
      : 'where' in namespace
        ? namespace.where
        : namespace.id === null
          ? 'every namespace'
          : `namespace '${namespace.name}'`;
  return new ForbiddenError(`Not allowed: ${action} on ${object} in ${where}`);
}

/** How a denial names the namespace of a resource found by id, without naming the namespace itself. */
export function namespaceOfResource(kind: string, id: string): { readonly where: string } {
  return { where: kind === 'namespace' ? `namespace ${id}` : `the namespace of ${kind} ${id}` };
}

/** What a decision is about: an object path and an action, in a namespace (null: `*`). */
export interface AccessQuestion {
  readonly object: string;
  readonly action: string;
  readonly namespaceId: string | null;
}

/** A permission as one binding gives it to a principal. */
export interface BoundPermission {
  readonly bindingId: string;
  readonly roleId: string;
  readonly roleName: string;
  readonly principalId: string;
  readonly principalType: 'User' | 'Group';
  readonly principalName: string;
  /** Null: the binding is for every namespace. */
  readonly namespaceId: string | null;
  readonly namespaceName: string;
  /** Its position in the role's permissions, from 0. */
  readonly permissionIndex: number;
  readonly permission: PermissionValue;
  readonly matcher: ObjectMatcher;
}

/** The thing CASL decides about: an object path, typed by its first segment. */
class AccessTarget {
  constructor(
    readonly type: string,
    readonly path: string,
  ) {}
}

type Rule = { action: string[]; subject: string; conditions: ObjectMatcher; inverted: boolean };
type ObjectAbility = Ability<[string, string | AccessTarget], ObjectMatcher>;

const matchObject =
  (matcher: ObjectMatcher): MatchConditions =>
  (target) =>
    matcher.matches((target as AccessTarget).path);
/**
 * The namespace id decisions use for a namespace that does not exist: no binding is in it, so
 * only those of `*` apply (one id for all such names, so that asking about many cannot grow the
 * per-namespace cache).
 */
export const NO_SUCH_NAMESPACE = 'no-such-namespace';

/** The action of a permission that covers every action. */
export const ANY_ACTION = '*';

/** CASL's name for "any action" is `manage`; the hub's is `*`. */
function caslActions(actions: readonly string[]): string[] {
  return actions.map((action) => (action === ANY_ACTION ? 'manage' : action));
}

/**
 * A regex that RE2 and PostgreSQL read alike: no `(?` but `(?:`, no escapes but `\d \w \s`
 * (and their negations) and escaped punctuation, no repetition count above 255.
 */
function isPortableRegex(source: string): boolean {
  const unescaped = source.replace(/\\./g, '');
  // PostgreSQL counts repetitions up to 255 (RE2 up to 1,000).
  const counts = [...unescaped.matchAll(/\{(\d+)(?:,(\d*))?\}/g)].flatMap((match) => [Number(match[1]), Number(match[2] || 0)]);
  return /^(?:[^\\]|\\[dwsDWS!-/:-@[-`{-~])*$/.test(source) && !/\((?!\?:)\?/.test(unescaped) && counts.every((count) => count <= 255);
}

/**
 * Which items `<prefix><id>` a Deny permission covers, as a list's SQL can tell: none, some ids,
 * those matching a pattern, or (`{}`) all. A pattern SQL could read otherwise than RE2 (a regex
 * beyond the syntax both share, a stored glob that no longer compiles) covers them all: a list
 * may then hide more than single reads, never show more.
 */
function itemsCovered(permission: PermissionValue, prefix: string): Omit<HiddenItems, 'namespaceId'> | 'none' {
  const { object } = permission;
  switch (permission.objectMatcher) {
    case 'simple': {
      if (object.endsWith('/*')) return prefix.startsWith(object.slice(0, -1)) ? {} : 'none';
      const id = object.startsWith(prefix) ? object.slice(prefix.length) : '';
      return id !== '' && !id.includes('/') ? { ids: [id] } : 'none';
    }
    case 'glob':
      try {
        return { pattern: `^(?:${globToRegex(object)})$` };
      } catch {
        return {};
      }
    case 'regex':
      return isPortableRegex(object) ? { pattern: `^(?:${object})$` } : {};
  }
}

/**
 * The permissions a caller has through its bindings and its groups' bindings, with a CASL
 * ability per namespace built on first use. Allow rules come first and Deny rules last: CASL
 * lets the last matching rule decide, so any matching Deny wins, then any Allow, else Deny.
 */
export class PrincipalPermissions {
  private readonly abilities = new Map<string | null, ObjectAbility>();
  /** Scopes already worked out (a list asks the same question on every call). */
  private readonly scopes = new Map<string, NamespaceScope | null>();

  constructor(readonly bound: readonly BoundPermission[]) {}

  /** Bindings in `namespaceId` and in `*`, which apply to a decision there. */
  applicable(namespaceId: string | null): BoundPermission[] {
    return this.bound.filter((entry) => entry.namespaceId === null || entry.namespaceId === namespaceId);
  }

  decide({ object, action, namespaceId }: AccessQuestion): Effect {
    if (object.length > MAX_OBJECT_PATH_LENGTH)
      throw InvalidInputError.at('/object', `An object path is at most ${MAX_OBJECT_PATH_LENGTH} characters; this one has ${object.length}`);
    return this.ability(namespaceId).can(action, new AccessTarget(subjectTypeOf(object), object)) ? 'Allow' : 'Deny';
  }

  /**
   * Where the caller may do `action` on `object`: everywhere but some namespaces (allowed in
   * `*`), only some, or nowhere (null).
   */
  scope(object: string, action: string): NamespaceScope | null {
    const key = `${action} ${object}`;
    if (!this.scopes.has(key)) this.scopes.set(key, this.computeScope(object, action));
    return this.scopes.get(key) ?? null;
  }

  private computeScope(object: string, action: string): NamespaceScope | null {
    const namespaces = [...new Set(this.bound.flatMap((entry) => (entry.namespaceId === null ? [] : [entry.namespaceId])))];
    const allowedIn = (namespaceId: string) => this.decide({ object, action, namespaceId }) === 'Allow';
    if (this.decide({ object, action, namespaceId: null }) === 'Allow') return { all: true, except: namespaces.filter((id) => !allowedIn(id)) };
    const only = namespaces.filter(allowedIn);
    return only.length > 0 ? { all: false, only } : null;
  }

  /**
   * What item-level Denies hide from a list of `collection` (its items are `<collection>/<id>`),
   * so that a list leaves out exactly what single reads refuse for a Deny; undefined when none do.
   * With `inNamespace`, only the Denies that apply there (a list of items outside namespaces: `*`).
   */
  itemDenials(collection: string, action: string, inNamespace?: string | null): ItemDenials | undefined {
    const prefix = `${collection}/`;
    const type = subjectTypeOf(collection);
    const bound = inNamespace === undefined ? this.bound : this.applicable(inNamespace);
    const hidden = bound.flatMap(({ permission, matcher, namespaceId }): HiddenItems[] => {
      if (permission.effect !== 'Deny' || !(permission.actions.includes(action) || permission.actions.includes(ANY_ACTION))) return [];
      if (matcher.subjectType !== type && matcher.subjectType !== ANY_SUBJECT) return [];
      const covered = itemsCovered(permission, prefix);
      return covered === 'none' ? [] : [{ namespaceId, ...covered }];
    });
    return hidden.length > 0 ? { prefix, hidden } : undefined;
  }

  /** A scope in words, for the audit: `*`, `* except a, b`, or `a, b` (namespace names). */
  describeScope(scope: NamespaceScope): string {
    const names = new Map(this.bound.map((entry) => [entry.namespaceId, entry.namespaceName]));
    const list = (ids: readonly string[]) => ids.map((id) => names.get(id) ?? id).join(', ');
    if (scope.all) return scope.except.length > 0 ? `* except ${list(scope.except)}` : '*';
    return list(scope.only);
  }

  private ability(namespaceId: string | null): ObjectAbility {
    let ability = this.abilities.get(namespaceId);
    if (!ability) {
      const rules = this.applicable(namespaceId).map((entry): Rule => ({
        action: caslActions(entry.permission.actions),
        subject: entry.matcher.subjectType,
        conditions: entry.matcher,
        inverted: entry.permission.effect === 'Deny',
      }));
      rules.sort((a, b) => Number(a.inverted) - Number(b.inverted));
      ability = new Ability<[string, string | AccessTarget], ObjectMatcher>(rules, {
        conditionsMatcher: matchObject,
        detectSubjectType: (target) => target.type,
      });
      this.abilities.set(namespaceId, ability);
    }
    return ability;
  }
}

/**
 * The matcher of a stored permission. A pattern stored before the hub refused it (an extglob)
 * no longer compiles: it then fails closed, an Allow matching nothing and a Deny everything of
 * its subject type, until the role is corrected.
 */
function storedMatcher(permission: PermissionValue): ObjectMatcher {
  try {
    return compileObjectMatcher(permission.objectMatcher, permission.object);
  } catch {
    const deny = permission.effect === 'Deny';
    return { subjectType: deny ? literalFirstSegment(permission.object) : ANY_SUBJECT, matches: () => deny };
  }
}

/**
 * Evaluates access (api-map §6) for callers, or for any user and groups (explain). A caller's
 * permissions are loaded once and cached by user and groups, so a membership change (which
 * changes the caller's groups) takes effect on the next request; any change to roles or
 * bindings, from any process, clears the cache.
 */
@Injectable()
export class AccessEvaluator {
  private readonly cache: RowCache<PrincipalPermissions>;

  constructor(
    private readonly bindings: RoleBindingsRepository,
    changes: ChangeFeed,
  ) {
    this.cache = new RowCache<PrincipalPermissions>(changes, 'roles').clearOn('role_bindings');
  }

  /** The permissions of a caller (cached). */
  async permissionsOf(caller: Pick<Caller, 'userId' | 'groups'>): Promise<PrincipalPermissions> {
    const key = `${caller.userId}:${[...caller.groups].sort().join(',')}`;
    const permissions = await this.cache.get(key, () => this.load([caller.userId, ...caller.groups]));
    return permissions ?? new PrincipalPermissions([]);
  }

  /** Drops every cached permission set; for this process's own changes to roles and bindings. */
  forgetAll(): void {
    this.cache.clear();
  }

  private async load(principalIds: readonly string[]): Promise<PrincipalPermissions> {
    const rows = await this.bindings.ofPrincipals(principalIds);
    const bound = rows.flatMap((row) =>
      row.permissions.map((permission, permissionIndex): BoundPermission => ({
        bindingId: row.id,
        roleId: row.role,
        roleName: row.roleName,
        principalId: row.principal,
        principalType: row.principalType,
        principalName: row.principalName,
        namespaceId: row.namespaceId,
        namespaceName: row.namespace,
        permissionIndex,
        permission,
        matcher: storedMatcher(permission),
      })),
    );
    return new PrincipalPermissions(bound);
  }
}

import { describe, expect, it } from '@jest/globals';
import { PrincipalPermissions, type BoundPermission, type Effect } from './access-evaluator.js';
import type { PermissionValue } from './entities/role.entity.js';
import { compileObjectMatcher } from './object-matcher.js';

const NS_A = '11111111-1111-4111-8111-111111111111';
const NS_B = '22222222-2222-4222-8222-222222222222';
const NS_C = '33333333-3333-4333-8333-333333333333';
const NAMESPACE_NAMES: Record<string, string> = { [NS_A]: 'alpha', [NS_B]: 'beta', [NS_C]: 'gamma' };

/** A permission as written in a role. */
interface Grant {
  effect: PermissionValue['effect'];
  object: string;
  actions: string[];
  matcher?: PermissionValue['objectMatcher'];
  /** The binding's namespace; null (the default) is `*`. */
  namespaceId?: string | null;
}

const allow = (object: string, actions: string[], options: Omit<Grant, 'effect' | 'object' | 'actions'> = {}): Grant => ({
  effect: 'Allow',
  object,
  actions,
  ...options,
});
const deny = (object: string, actions: string[], options: Omit<Grant, 'effect' | 'object' | 'actions'> = {}): Grant => ({
  effect: 'Deny',
  object,
  actions,
  ...options,
});

/** Binds a grant to a user, as the evaluator's loader does. */
function bind(grant: Grant, index = 0): BoundPermission {
  const permission: PermissionValue = {
    object: grant.object,
    objectMatcher: grant.matcher ?? 'simple',
    actions: grant.actions,
    effect: grant.effect,
  };
  const namespaceId = grant.namespaceId ?? null;
  return {
    bindingId: `binding-${index}`,
    roleId: `role-${index}`,
    roleName: `Role${index}`,
    principalId: 'user-1',
    principalType: 'User',
    principalName: 'alice',
    namespaceId,
    namespaceName: namespaceId === null ? '*' : NAMESPACE_NAMES[namespaceId],
    permissionIndex: 0,
    permission,
    matcher: compileObjectMatcher(permission.objectMatcher, permission.object),
  };
}

const permissionsOf = (grants: readonly Grant[]): PrincipalPermissions => new PrincipalPermissions(grants.map(bind));

/** The grants in the given order and reversed: a decision must not depend on their order. */
const ORDERS = [
  ['in order', <T>(grants: readonly T[]): T[] => [...grants]],
  ['reversed', <T>(grants: readonly T[]): T[] => [...grants].reverse()],
] as const;

describe('PrincipalPermissions', () => {
  describe('decide', () => {
    type Case = [string, Grant[], string, string, string | null, Effect];
    const cases: Case[] = [
      // [name, grants, object, action, namespace, decision]
      ['no permission', [], '/Pipelines', 'Read', null, 'Deny'],
      ['no permission in a namespace', [], '/Pipelines', 'Read', NS_A, 'Deny'],
      ['an exact Allow', [allow('/Pipelines', ['Read'])], '/Pipelines', 'Read', null, 'Allow'],
      ['an exact Allow of another object', [allow('/Pipelines', ['Read'])], '/Pipelines/1', 'Read', null, 'Deny'],
      ['an Allow of another subject type', [allow('/Users', ['Read'])], '/Pipelines', 'Read', null, 'Deny'],
      ['an Allow of another action', [allow('/Pipelines', ['Read'])], '/Pipelines', 'Delete', null, 'Deny'],
      ['one of several actions', [allow('/Pipelines', ['Read', 'Update'])], '/Pipelines', 'Update', null, 'Allow'],
      ['action * covers every action', [allow('/Pipelines', ['*'])], '/Pipelines', 'Execute', null, 'Allow'],
      ['action * does not cover another object', [allow('/Pipelines', ['*'])], '/Users', 'Read', null, 'Deny'],
      ['an exact Deny', [deny('/Pipelines', ['Read'])], '/Pipelines', 'Read', null, 'Deny'],
      ['a Deny beats an Allow', [allow('/Pipelines', ['Read']), deny('/Pipelines', ['Read'])], '/Pipelines', 'Read', null, 'Deny'],
      ['a Deny of * beats an Allow', [allow('/Pipelines', ['Read']), deny('/Pipelines', ['*'])], '/Pipelines', 'Read', null, 'Deny'],
      ['a Deny beats an Allow of *', [allow('/Pipelines', ['*']), deny('/Pipelines', ['Delete'])], '/Pipelines', 'Delete', null, 'Deny'],
      ['a Deny of another action', [allow('/Pipelines', ['*']), deny('/Pipelines', ['Delete'])], '/Pipelines', 'Read', null, 'Allow'],
      ['a Deny of another object', [allow('/Pipelines/*', ['Read']), deny('/Pipelines/2', ['Read'])], '/Pipelines/1', 'Read', null, 'Allow'],
      ['a Deny of another subject type', [allow('/Pipelines/*', ['Read']), deny('/Users/*', ['*'])], '/Pipelines/1', 'Read', null, 'Allow'],
      ['a Deny of one item beats an Allow below', [allow('/Pipelines/*', ['Read']), deny('/Pipelines/1', ['Read'])], '/Pipelines/1', 'Read', null, 'Deny'],
      ['a Deny below beats an Allow of one item', [allow('/Pipelines/1', ['Read']), deny('/Pipelines/*', ['Read'])], '/Pipelines/1', 'Read', null, 'Deny'],
      ['simple /* covers an item', [allow('/Pipelines/*', ['Read'])], '/Pipelines/1', 'Read', null, 'Allow'],
      ['simple /* covers any depth', [allow('/Pipelines/*', ['Read'])], '/Pipelines/1/logs', 'Read', null, 'Allow'],
      ['simple /* does not cover the collection', [allow('/Pipelines/*', ['Read'])], '/Pipelines', 'Read', null, 'Deny'],
      ['simple /* does not cover a longer name', [allow('/Pipelines/*', ['Read'])], '/PipelinesX/1', 'Read', null, 'Deny'],
      ['glob * covers an item', [allow('/Pipelines/*', ['Read'], { matcher: 'glob' })], '/Pipelines/1', 'Read', null, 'Allow'],
      ['glob * stays in a segment', [allow('/Pipelines/*', ['Read'], { matcher: 'glob' })], '/Pipelines/1/logs', 'Read', null, 'Deny'],
      ['glob ** crosses segments', [allow('/Pipelines/**', ['Read'], { matcher: 'glob' })], '/Pipelines/1/logs', 'Read', null, 'Allow'],
      ['glob /** covers everything', [allow('/**', ['*'], { matcher: 'glob' })], '/ClusterNodes/n1', 'Delete', null, 'Allow'],
      ['glob /*/1 covers any type', [allow('/*/1', ['Read'], { matcher: 'glob' })], '/Users/1', 'Read', null, 'Allow'],
      ['glob /*/1 does not cover another id', [allow('/*/1', ['Read'], { matcher: 'glob' })], '/Users/2', 'Read', null, 'Deny'],
      // picomatch reads a top-level `|` as an alternation, so this glob matches `/Pipelines` and `/Users`.
      ['a glob alternation covers each of its types', [allow('/Pipelines|/Users', ['Read'], { matcher: 'glob' })], '/Users', 'Read', null, 'Allow'],
      ['regex covers any type', [allow('/(Users|Groups)/.+', ['Read'], { matcher: 'regex' })], '/Groups/7', 'Read', null, 'Allow'],
      ['regex is anchored', [allow('Pipe', ['Read'], { matcher: 'regex' })], '/Pipelines', 'Read', null, 'Deny'],
      ['regex .* after a prefix', [allow('/Pipe.*', ['Read'], { matcher: 'regex' })], '/Pipelines/1', 'Read', null, 'Allow'],
      // An `all` matcher and a typed one meet in the same decision, whichever denies.
      [
        'an all-glob Deny beats a typed Allow',
        [allow('/Pipelines/*', ['Read']), deny('/**', ['Read'], { matcher: 'glob' })],
        '/Pipelines/1',
        'Read',
        null,
        'Deny',
      ],
      [
        'a typed Deny beats an all-glob Allow',
        [allow('/**', ['*'], { matcher: 'glob' }), deny('/Pipelines/1', ['Read'])],
        '/Pipelines/1',
        'Read',
        null,
        'Deny',
      ],
      [
        'a regex Deny beats a typed Allow',
        [allow('/Pipelines/*', ['*']), deny('/Pipelines/[0-9]+', ['Delete'], { matcher: 'regex' })],
        '/Pipelines/1',
        'Delete',
        null,
        'Deny',
      ],
      ['a typed Deny beats a regex Allow', [allow('.*', ['*'], { matcher: 'regex' }), deny('/Pipelines/*', ['*'])], '/Pipelines/1', 'Read', null, 'Deny'],
      [
        'a typed Deny of another type leaves an all Allow',
        [allow('.*', ['*'], { matcher: 'regex' }), deny('/Pipelines/*', ['*'])],
        '/Users/1',
        'Read',
        null,
        'Allow',
      ],
      [
        'an all Deny that does not match leaves a typed Allow',
        [allow('/Pipelines/*', ['Read']), deny('/*/2', ['Read'], { matcher: 'glob' })],
        '/Pipelines/1',
        'Read',
        null,
        'Allow',
      ],
      // Namespaces: `*` applies everywhere, a namespace only there.
      ['an Allow in * applies in a namespace', [allow('/Pipelines', ['Read'])], '/Pipelines', 'Read', NS_A, 'Allow'],
      ['an Allow in a namespace applies there', [allow('/Pipelines', ['Read'], { namespaceId: NS_A })], '/Pipelines', 'Read', NS_A, 'Allow'],
      ['an Allow in a namespace not in another', [allow('/Pipelines', ['Read'], { namespaceId: NS_A })], '/Pipelines', 'Read', NS_B, 'Deny'],
      ['an Allow in a namespace not in *', [allow('/Pipelines', ['Read'], { namespaceId: NS_A })], '/Pipelines', 'Read', null, 'Deny'],
      [
        'a Deny in a namespace beats an Allow in * there',
        [allow('/Pipelines/*', ['Read']), deny('/Pipelines/*', ['Read'], { namespaceId: NS_A })],
        '/Pipelines/1',
        'Read',
        NS_A,
        'Deny',
      ],
      [
        'a Deny in a namespace leaves an Allow in * elsewhere',
        [allow('/Pipelines/*', ['Read']), deny('/Pipelines/*', ['Read'], { namespaceId: NS_A })],
        '/Pipelines/1',
        'Read',
        NS_B,
        'Allow',
      ],
      [
        'a Deny in a namespace leaves an Allow in * in *',
        [allow('/Pipelines/*', ['Read']), deny('/Pipelines/*', ['Read'], { namespaceId: NS_A })],
        '/Pipelines/1',
        'Read',
        null,
        'Allow',
      ],
      [
        'a Deny in * beats an Allow in a namespace',
        [allow('/Pipelines/*', ['Read'], { namespaceId: NS_A }), deny('/Pipelines/*', ['*'])],
        '/Pipelines/1',
        'Read',
        NS_A,
        'Deny',
      ],
    ];

    describe.each(ORDERS)('with the permissions %s', (_order, arrange) => {
      it.each(cases)('%s', (_name, grants, object, action, namespaceId, expected) => {
        const permissions = permissionsOf(arrange(grants));
        expect(permissions.decide({ object, action, namespaceId })).toBe(expected);
      });
    });

    it('decides each namespace on its own permissions, whichever is asked first', () => {
      const grants = [allow('/Pipelines/*', ['Read']), deny('/Pipelines/*', ['Read'], { namespaceId: NS_A })];
      const question = { object: '/Pipelines/1', action: 'Read' };
      const first = permissionsOf(grants);
      const second = permissionsOf(grants);
      expect([NS_A, NS_B, null, NS_A].map((namespaceId) => first.decide({ ...question, namespaceId }))).toEqual(['Deny', 'Allow', 'Allow', 'Deny']);
      expect([null, NS_B, NS_A].map((namespaceId) => second.decide({ ...question, namespaceId }))).toEqual(['Allow', 'Allow', 'Deny']);
    });
  });

  describe('applicable', () => {
    const grants = [
      allow('/Pipelines', ['Read']),
      allow('/Pipelines/*', ['Read'], { namespaceId: NS_A }),
      deny('/Pipelines/*', ['Delete'], { namespaceId: NS_B }),
      allow('/Users', ['Read']),
    ];

    it.each([
      [null, ['/Pipelines', '/Users']],
      [NS_A, ['/Pipelines', '/Pipelines/*', '/Users']],
      [NS_B, ['/Pipelines', '/Pipelines/*', '/Users']],
      [NS_C, ['/Pipelines', '/Users']],
    ])('in %s: the bindings of * and of that namespace', (namespaceId, objects) => {
      const applicable = permissionsOf(grants).applicable(namespaceId);
      expect(applicable.map((entry) => entry.permission.object)).toEqual(objects);
      expect(applicable.every((entry) => entry.namespaceId === null || entry.namespaceId === namespaceId)).toBe(true);
    });
  });

  describe('scope', () => {
    type ScopeCase = [string, Grant[], string, string, ReturnType<PrincipalPermissions['scope']>];
    const cases: ScopeCase[] = [
      ['no permission', [], '/Pipelines', 'Read', null],
      ['allowed in *', [allow('/Pipelines', ['Read'])], '/Pipelines', 'Read', { all: true, except: [] }],
      [
        'allowed in *, denied in one namespace',
        [allow('/Pipelines', ['Read']), deny('/Pipelines', ['Read'], { namespaceId: NS_A })],
        '/Pipelines',
        'Read',
        { all: true, except: [NS_A] },
      ],
      [
        'allowed in * and again in a namespace',
        [allow('/Pipelines', ['Read']), allow('/Pipelines', ['*'], { namespaceId: NS_A }), deny('/Pipelines', ['Read'], { namespaceId: NS_B })],
        '/Pipelines',
        'Read',
        { all: true, except: [NS_B] },
      ],
      [
        'allowed in *, a Deny of another action in a namespace',
        [allow('/Pipelines', ['*']), deny('/Pipelines', ['Delete'], { namespaceId: NS_A })],
        '/Pipelines',
        'Read',
        { all: true, except: [] },
      ],
      [
        'allowed in *, denied in two namespaces',
        [deny('/Pipelines', ['*'], { namespaceId: NS_B }), allow('/**', ['Read'], { matcher: 'glob' }), deny('/Pipelines', ['Read'], { namespaceId: NS_A })],
        '/Pipelines',
        'Read',
        { all: true, except: [NS_B, NS_A] },
      ],
      ['allowed in one namespace', [allow('/Pipelines', ['Read'], { namespaceId: NS_A })], '/Pipelines', 'Read', { all: false, only: [NS_A] }],
      [
        'allowed in two namespaces',
        [allow('/Pipelines', ['Read'], { namespaceId: NS_A }), allow('/Pipelines', ['*'], { namespaceId: NS_C })],
        '/Pipelines',
        'Read',
        { all: false, only: [NS_A, NS_C] },
      ],
      [
        'allowed in a namespace, denied in another',
        [allow('/Pipelines', ['Read'], { namespaceId: NS_A }), deny('/Pipelines', ['Read'], { namespaceId: NS_B })],
        '/Pipelines',
        'Read',
        { all: false, only: [NS_A] },
      ],
      ['allowed in a namespace, denied in *', [allow('/Pipelines', ['Read'], { namespaceId: NS_A }), deny('/Pipelines', ['Read'])], '/Pipelines', 'Read', null],
      ['allowed for another action', [allow('/Pipelines', ['Read'])], '/Pipelines', 'Delete', null],
      ['allowed for another object', [allow('/Pipelines/*', ['Read'], { namespaceId: NS_A })], '/Pipelines', 'Read', null],
      [
        'denied in the only namespace that allows',
        [allow('/Pipelines', ['Read'], { namespaceId: NS_A }), deny('/Pipelines', ['*'], { namespaceId: NS_A })],
        '/Pipelines',
        'Read',
        null,
      ],
    ];

    it.each(cases)('%s', (_name, grants, object, action, expected) => {
      const scope = permissionsOf(grants).scope(object, action);
      if (expected === null || scope === null) {
        expect(scope).toEqual(expected);
        return;
      }
      // The order of namespace ids is not part of the contract.
      const ids = (value: NonNullable<typeof scope>) => ('except' in value ? [...value.except] : [...value.only]).sort();
      expect(scope.all).toBe(expected.all);
      expect(ids(scope)).toEqual(ids(expected));
    });

    it.each(ORDERS)('does not depend on the order of permissions (%s)', (_order, arrange) => {
      const grants = [
        allow('/Pipelines/*', ['Read'], { namespaceId: NS_A }),
        deny('/Pipelines/*', ['Read'], { namespaceId: NS_B }),
        allow('/Pipelines/*', ['*'], { namespaceId: NS_B }),
        allow('/Pipelines/[0-9]+', ['Read'], { matcher: 'regex', namespaceId: NS_C }),
      ];
      const scope = permissionsOf(arrange(grants)).scope('/Pipelines/1', 'Read');
      expect(scope).toMatchObject({ all: false });
      expect(scope && 'only' in scope ? [...scope.only].sort() : scope).toEqual([NS_A, NS_C]);
    });
  });

  describe('itemDenials', () => {
    const ID = '44444444-4444-4444-8444-444444444444';
    it.each<[string, Grant[], unknown]>([
      ['none without a Deny', [allow('/ClusterJobs/*', ['Read'])], undefined],
      ['an exact Deny of one item, in its namespace', [deny(`/ClusterJobs/${ID}`, ['Read'], { namespaceId: NS_A })], [{ namespaceId: NS_A, ids: [ID] }]],
      ['a Deny of every action', [deny(`/ClusterJobs/${ID}`, ['*'])], [{ namespaceId: null, ids: [ID] }]],
      ['none for a Deny of another action', [deny(`/ClusterJobs/${ID}`, ['Update'])], undefined],
      ['none for a Deny of another collection', [deny(`/Pipelines/${ID}`, ['Read'])], undefined],
      ['none for a Deny of the collection alone (the guard refuses the list)', [deny('/ClusterJobs', ['Read'])], undefined],
      ['none for a Deny below an item', [deny(`/ClusterJobs/${ID}/logs`, ['Read']), deny(`/ClusterJobs/${ID}/*`, ['Read'])], undefined],
      ['every item for simple /X/*', [deny('/ClusterJobs/*', ['Read'])], [{ namespaceId: null }]],
      ['every item for simple /*', [deny('/*', ['Read'])], [{ namespaceId: null }]],
      [
        'a pattern for a glob',
        [deny('/ClusterJobs/4444*', ['Read'], { matcher: 'glob' })],
        [{ namespaceId: null, pattern: '^(?:\\/ClusterJobs\\/4444[^/]*)$' }],
      ],
      [
        'a pattern for a regex both engines read alike',
        [deny('/ClusterJobs/4{4}[0-9a-f-]+', ['Read'], { matcher: 'regex' })],
        [{ namespaceId: null, pattern: '^(?:/ClusterJobs/4{4}[0-9a-f-]+)$' }],
      ],
      ['every item for a regex beyond that syntax (fails closed)', [deny('/ClusterJobs/\\pL+', ['Read'], { matcher: 'regex' })], [{ namespaceId: null }]],
      [
        'every item for a regex repeating more than PostgreSQL counts (fails closed)',
        [deny('/ClusterJobs/a{256}', ['Read'], { matcher: 'regex' })],
        [{ namespaceId: null }],
      ],
      ['every item for a regex with a flag group (fails closed)', [deny('/ClusterJobs/(?i)A.*', ['Read'], { matcher: 'regex' })], [{ namespaceId: null }]],
    ])('%s', (_name, grants, hidden) => {
      const denials = permissionsOf(grants).itemDenials('/ClusterJobs', 'Read');
      expect(denials).toEqual(hidden === undefined ? undefined : { prefix: '/ClusterJobs/', hidden });
    });
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { AuditLog } from '../../src/rbac/audit-log.js';
import { bearer, type InjectResponse, problemPaths, startTestHub, type TestHub } from '../support/test-hub.js';
import { freezeClock } from '../support/test-clock.js';

type Effect = 'Allow' | 'Deny';
type Matcher = 'simple' | 'glob' | 'regex';

interface Permission {
  object: string;
  objectMatcher: Matcher;
  actions: string[];
  effect: Effect;
}

interface Question {
  object: string;
  action: string;
  namespace?: string;
}

interface Explanation {
  matches: boolean;
  source: string;
  effect: Effect;
}

interface ExplainResult {
  effect: Effect;
  explanation: Explanation[];
}

interface AuditRecord {
  object: string;
  namespace: string;
  action: string;
  userId: string;
  groups: string[];
  decision: Effect;
  purpose: 'Request' | 'Filter';
  when: string;
}

interface TestUser {
  id: string;
  userName: string;
  token: string;
}

const API = '/api/v2';
const EVALUATE = `${API}/rbac/evaluate`;
const EXPLAIN = `${API}/rbac/explain`;
const AUDIT = `${API}/rbac/audit`;
const ROLES = `${API}/rbac/roles`;
const BINDINGS = `${API}/rbac/rolebindings`;
const USERS = `${API}/auth/users`;
const GROUPS = `${API}/auth/groups`;
const NAMESPACES = `${API}/namespaces`;
const PASSWORD = 'an-access-password';
const UNKNOWN_ID = '6f1c4b1e-0000-4000-8000-000000000000';

const SECOND = 1000;
const HOUR = 3600 * SECOND;
const DAY = 24 * HOUR;

const allow = (object: string, actions: string[] = ['Read'], objectMatcher: Matcher = 'simple'): Permission => ({
  object,
  objectMatcher,
  actions,
  effect: 'Allow',
});
const deny = (object: string, actions: string[] = ['Read'], objectMatcher: Matcher = 'simple'): Permission => ({
  object,
  objectMatcher,
  actions,
  effect: 'Deny',
});

let sequence = 0;
/** A name no other test uses. */
function unique(prefix: string): string {
  sequence += 1;
  return `${prefix}-${sequence}`;
}

/** Set-up and questions through the API of one hub, as its administrator unless told otherwise. */
function client(hub: () => TestHub) {
  const admin = () => bearer(hub().adminToken);
  const created = (response: InjectResponse, idField: '_id' | 'id'): string => {
    expect(response.statusCode).toBe(201);
    return response.json()[idField] as string;
  };
  return {
    async user(prefix = 'user'): Promise<TestUser> {
      const userName = unique(prefix);
      const response = await hub().inject({ method: 'POST', url: USERS, headers: admin(), payload: { userName, password: PASSWORD } });
      const id = created(response, '_id');
      return { id, userName, token: await hub().login(userName, PASSWORD) };
    },
    async group(prefix = 'group'): Promise<{ id: string; name: string }> {
      const name = unique(prefix);
      return { id: created(await hub().inject({ method: 'POST', url: GROUPS, headers: admin(), payload: { name } }), '_id'), name };
    },
    async members(groupId: string, op: 'add' | 'remove', memberId: string): Promise<void> {
      const response = await hub().inject({ method: 'PATCH', url: `${GROUPS}/${groupId}/members`, headers: admin(), payload: [{ op, id: memberId }] });
      expect(response.statusCode).toBe(200);
    },
    async namespace(prefix = 'ns', description?: string): Promise<{ id: string; name: string }> {
      const name = unique(prefix);
      const payload = description === undefined ? { name } : { name, description };
      return { id: created(await hub().inject({ method: 'POST', url: NAMESPACES, headers: admin(), payload }), '_id'), name };
    },
    async role(permissions: Permission[], prefix = 'role'): Promise<{ id: string; name: string }> {
      const name = unique(prefix);
      return { id: created(await hub().inject({ method: 'POST', url: ROLES, headers: admin(), payload: { name, permissions } }), 'id'), name };
    },
    async bind(role: string, principal: string, namespace: string): Promise<string> {
      return created(await hub().inject({ method: 'POST', url: BINDINGS, headers: admin(), payload: { role, principal, namespace } }), 'id');
    },
    /** A new role with `permissions`, bound to `principal` in `namespace`. */
    async grant(principal: string, namespace: string, permissions: Permission[]): Promise<{ roleId: string; roleName: string; bindingId: string }> {
      const role = await this.role(permissions);
      return { roleId: role.id, roleName: role.name, bindingId: await this.bind(role.id, principal, namespace) };
    },
    async unbind(principal: string): Promise<number> {
      const response = await hub().inject({ method: 'DELETE', url: `${BINDINGS}?filter[principal][EQ]=${principal}`, headers: admin() });
      expect(response.statusCode).toBe(200);
      return response.json().count as number;
    },
    evaluateAs: (token: string, payload: unknown) =>
      hub().inject({ method: 'POST', url: EVALUATE, headers: { ...bearer(token), 'content-type': 'application/json' }, payload: JSON.stringify(payload) }),
    async decisions(token: string, questions: Question[]): Promise<Effect[]> {
      const response = await this.evaluateAs(token, questions);
      expect(response.statusCode).toBe(200);
      return response.json();
    },
    explainAs: (token: string, payload: unknown) =>
      hub().inject({ method: 'POST', url: EXPLAIN, headers: { ...bearer(token), 'content-type': 'application/json' }, payload: JSON.stringify(payload) }),
    async explain(items: object[]): Promise<ExplainResult[]> {
      const response = await this.explainAs(hub().adminToken, items);
      expect(response.statusCode).toBe(200);
      return response.json();
    },
    auditAs: (token: string, query = '') => hub().inject({ method: 'GET', url: `${AUDIT}${query ? `?${query}` : ''}`, headers: bearer(token) }),
    async audit(query: string): Promise<AuditRecord[]> {
      const response = await this.auditAs(hub().adminToken, query);
      expect(response.statusCode).toBe(200);
      return response.json();
    },
  };
}

describe('access evaluation, explanation and audit', () => {
  let hub: TestHub;
  const api = client(() => hub);
  const as = (user: TestUser, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) =>
    hub.inject({ method, url, headers: bearer(user.token), payload });

  beforeAll(async () => {
    hub = await startTestHub();
  });
  afterAll(() => hub.close());
  afterEach(() => {
    jest.restoreAllMocks();
  });

  describe('POST /rbac/evaluate', () => {
    it.each<[string, Matcher, string, [string, Effect][]]>([
      [
        'simple, exact',
        'simple',
        '/Pipelines',
        [
          ['/Pipelines', 'Allow'],
          ['/Pipelines/1', 'Deny'],
          ['/PipelinesX', 'Deny'],
          ['/Users', 'Deny'],
        ],
      ],
      [
        'simple, ending in /*: every path below but not the path itself',
        'simple',
        '/Pipelines/*',
        [
          ['/Pipelines/1', 'Allow'],
          ['/Pipelines/1/x', 'Allow'],
          ['/Pipelines', 'Deny'],
          ['/PipelinesX/1', 'Deny'],
        ],
      ],
      [
        'glob, * within one segment',
        'glob',
        '/Pipelines/*',
        [
          ['/Pipelines/1', 'Allow'],
          ['/Pipelines/1/x', 'Deny'],
          ['/Pipelines', 'Deny'],
        ],
      ],
      [
        'glob, ** across segments',
        'glob',
        '/Pipelines/**',
        [
          ['/Pipelines/1', 'Allow'],
          ['/Pipelines/1/x/y', 'Allow'],
          ['/Users/1', 'Deny'],
        ],
      ],
      [
        'glob, * in the first segment',
        'glob',
        '/*/1',
        [
          ['/Pipelines/1', 'Allow'],
          ['/Users/1', 'Allow'],
          ['/Users/2', 'Deny'],
          ['/Users/x/1', 'Deny'],
        ],
      ],
      [
        'regex, anchored at both ends',
        'regex',
        'Pipe',
        [
          ['/Pipelines', 'Deny'],
          ['/Pipe', 'Deny'],
        ],
      ],
      [
        'regex with a character class',
        'regex',
        '/Pipelines/[0-9]+',
        [
          ['/Pipelines/42', 'Allow'],
          ['/Pipelines/x', 'Deny'],
          ['/Pipelines/42/x', 'Deny'],
          ['/x/Pipelines/42', 'Deny'],
        ],
      ],
      [
        'regex with an alternation, anchored as a whole',
        'regex',
        '/Users|/Groups',
        [
          ['/Users', 'Allow'],
          ['/Groups', 'Allow'],
          ['/Users/1', 'Deny'],
          ['/x/Groups', 'Deny'],
        ],
      ],
      [
        'regex over several first segments',
        'regex',
        '/(Users|Groups)/.*',
        [
          ['/Users/1', 'Allow'],
          ['/Groups/2', 'Allow'],
          ['/Pipelines/1', 'Deny'],
        ],
      ],
    ])('matches objects with a %s matcher', async (_case, objectMatcher, object, expectations) => {
      const user = await api.user('matcher');
      await api.grant(user.id, '*', [allow(object, ['Read'], objectMatcher)]);
      const questions = expectations.map(([path]) => ({ object: path, action: 'Read' }));
      expect(await api.decisions(user.token, questions)).toEqual(expectations.map(([, effect]) => effect));
    });

    it('answers one decision per item, in order, Deny by default for a user without bindings', async () => {
      const user = await api.user('unbound');
      expect(await api.decisions(user.token, [{ object: '/Users', action: 'Read' }])).toEqual(['Deny']);
      const mixed = await api.user('mixed');
      await api.grant(mixed.id, '*', [allow('/Users'), allow('/Groups', ['Update'])]);
      expect(
        await api.decisions(mixed.token, [
          { object: '/Groups', action: 'Read' },
          { object: '/Users', action: 'Read' },
          { object: '/Groups', action: 'Update' },
          { object: '/Users', action: 'Update' },
          { object: '/Users', action: 'Read', namespace: '*' },
        ]),
      ).toEqual(['Deny', 'Allow', 'Allow', 'Deny', 'Allow']);
    });

    it("lets the action '*' of a permission match every action", async () => {
      const user = await api.user('any-action');
      await api.grant(user.id, '*', [allow('/Credentials', ['*'])]);
      const actions = ['Read', 'Create', 'Update', 'Delete', 'Use', 'Execute'];
      expect(
        await api.decisions(
          user.token,
          actions.map((action) => ({ object: '/Credentials', action })),
        ),
      ).toEqual(actions.map(() => 'Allow'));
      expect(await api.decisions(user.token, [{ object: '/Users', action: 'Read' }])).toEqual(['Deny']);
    });

    it('denies when any matching permission denies, whatever the order of the permissions and roles', async () => {
      const user = await api.user('deny-wins');
      await api.grant(user.id, '*', [deny('/Pipelines/secret'), allow('/Pipelines/*', ['Read', 'Update'])]);
      await api.grant(user.id, '*', [allow('/Pipelines/**', ['Read'], 'glob')]);
      await api.grant(user.id, '*', [deny('/Pipelines/locked/*', ['*'])]);
      expect(
        await api.decisions(user.token, [
          { object: '/Pipelines/secret', action: 'Read' },
          { object: '/Pipelines/secret', action: 'Update' },
          { object: '/Pipelines/open', action: 'Read' },
          { object: '/Pipelines/locked/1', action: 'Read' },
          { object: '/Pipelines/locked', action: 'Read' },
        ]),
      ).toEqual(['Deny', 'Allow', 'Allow', 'Deny', 'Allow']);
    });

    it.each<[string, Permission[]]>([
      ['a regex Deny over a simple Allow', [allow('/Pipelines/*', ['*']), deny('/Pipelines/x', ['Read'], 'regex')]],
      ['a simple Deny over a regex Allow', [allow('/Pipelines/.*', ['Read'], 'regex'), deny('/Pipelines/x')]],
      ['a glob Deny of every action over a simple Allow', [allow('/Pipelines/x'), deny('/*/x', ['*'], 'glob')]],
      ['a simple Deny over a glob Allow of every action', [allow('/**', ['*'], 'glob'), deny('/Pipelines/x', ['Read'])]],
    ])('lets %s win, whichever first segment each is indexed by', async (_case, permissions) => {
      const user = await api.user('mixed-deny');
      await api.grant(user.id, '*', permissions);
      expect(await api.decisions(user.token, [{ object: '/Pipelines/x', action: 'Read' }])).toEqual(['Deny']);
    });

    it("applies a binding in namespace 'a' only in 'a', and a binding in '*' in every namespace", async () => {
      const [a, b] = [await api.namespace('eval-a'), await api.namespace('eval-b')];
      const inA = await api.user('bound-in-a');
      await api.grant(inA.id, a.name, [allow('/Pipelines')]);
      const everywhere = await api.user('bound-everywhere');
      await api.grant(everywhere.id, '*', [allow('/Pipelines')]);
      const questions = [a.name, b.name, undefined, '*'].map((namespace) => ({ object: '/Pipelines', action: 'Read', namespace }));
      expect(await api.decisions(inA.token, questions)).toEqual(['Allow', 'Deny', 'Deny', 'Deny']);
      expect(await api.decisions(everywhere.token, questions)).toEqual(['Allow', 'Allow', 'Allow', 'Allow']);
    });

    it("lets a Deny in namespace 'a' beat an Allow in '*' in 'a' only", async () => {
      const [a, b] = [await api.namespace('deny-a'), await api.namespace('deny-b')];
      const user = await api.user('denied-in-a');
      await api.grant(user.id, '*', [allow('/Pipelines/*')]);
      await api.grant(user.id, a.name, [deny('/Pipelines/*')]);
      const questions = [a.name, b.name, undefined, '*'].map((namespace) => ({ object: '/Pipelines/7', action: 'Read', namespace }));
      expect(await api.decisions(user.token, questions)).toEqual(['Deny', 'Allow', 'Allow', 'Allow']);
    });

    it("gives the permissions of the user's groups, directly and through nested groups", async () => {
      const user = await api.user('nested');
      const [inner, outer, unrelated] = [await api.group('inner'), await api.group('outer'), await api.group('unrelated')];
      await api.members(inner.id, 'add', user.id);
      await api.members(outer.id, 'add', inner.id);
      await api.grant(inner.id, '*', [allow('/Groups')]);
      await api.grant(outer.id, '*', [allow('/Users')]);
      await api.grant(unrelated.id, '*', [allow('/Roles')]);
      const objects = ['/Groups', '/Users', '/Roles'];
      expect(
        await api.decisions(
          user.token,
          objects.map((object) => ({ object, action: 'Read' })),
        ),
      ).toEqual(['Allow', 'Allow', 'Deny']);
    });

    it('sees a removed binding on the very next request, without logging in again', async () => {
      const user = await api.user('unbound-later');
      await api.grant(user.id, '*', [allow('/Pipelines')]);
      const question = [{ object: '/Pipelines', action: 'Read' }];
      expect(await api.decisions(user.token, question)).toEqual(['Allow']);
      expect(await api.unbind(user.id)).toBe(1);
      expect(await api.decisions(user.token, question)).toEqual(['Deny']);
    });

    it('sees an added and a removed group membership on the very next request, without logging in again', async () => {
      const user = await api.user('member-later');
      const group = await api.group('member-later');
      await api.grant(group.id, '*', [allow('/Pipelines')]);
      const question = [{ object: '/Pipelines', action: 'Read' }];
      expect(await api.decisions(user.token, question)).toEqual(['Deny']);
      await api.members(group.id, 'add', user.id);
      expect(await api.decisions(user.token, question)).toEqual(['Allow']);
      await api.members(group.id, 'remove', user.id);
      expect(await api.decisions(user.token, question)).toEqual(['Deny']);
    });

    it("sees a patched role's permissions on the very next request", async () => {
      const user = await api.user('patched-role');
      const { roleId } = await api.grant(user.id, '*', [allow('/Pipelines')]);
      const questions = [
        { object: '/Pipelines', action: 'Read' },
        { object: '/Users', action: 'Read' },
      ];
      expect(await api.decisions(user.token, questions)).toEqual(['Allow', 'Deny']);
      const patched = await hub.inject({
        method: 'PATCH',
        url: `${ROLES}/${roleId}`,
        headers: { ...bearer(hub.adminToken), 'content-type': 'application/json-patch+json' },
        payload: JSON.stringify([{ op: 'replace', path: '/permissions', value: [allow('/Users')] }]),
      });
      expect(patched.statusCode).toBe(200);
      expect(await api.decisions(user.token, questions)).toEqual(['Deny', 'Allow']);
    });

    it('answers up to 1000 items', async () => {
      const user = await api.user('thousand');
      await api.grant(user.id, '*', [allow('/Pipelines/*')]);
      const questions = Array.from({ length: 1000 }, (_, n) => ({ object: n % 2 === 0 ? `/Pipelines/${n}` : `/Users/${n}`, action: 'Read' }));
      expect(await api.decisions(user.token, questions)).toEqual(questions.map((_, n) => (n % 2 === 0 ? 'Allow' : 'Deny')));
    });

    it.each<[string, unknown, string[]]>([
      ['an object', { object: '/Users', action: 'Read' }, ['']],
      ['a string', '/Users', ['']],
      ['null', null, ['']],
      ['an empty array', [], ['']],
      ['an array of 1001 items', Array.from({ length: 1001 }, () => ({ object: '/Users', action: 'Read' })), ['']],
      ['an item that is not an object', [{ object: '/Users', action: 'Read' }, 'Read'], ['/1']],
      ['an item without object', [{ action: 'Read' }], ['/0/object']],
      ['an item without action', [{ object: '/Users', action: 'Read' }, { object: '/Users' }], ['/1/action']],
      [
        'items with an empty object and a numeric action',
        [
          { object: '', action: 'Read' },
          { object: '/Users', action: 7 },
        ],
        ['/0/object', '/1/action'],
      ],
    ])('refuses a body that is %s with 400', async (_case, payload, paths) => {
      const user = await api.user('bad-body');
      const response = await api.evaluateAs(user.token, payload);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(problemPaths(response)).toEqual(paths);
    });

    it('decides in an unknown namespace with the bindings of * alone, saying nothing of which namespaces exist', async () => {
      const user = await api.user('unknown-ns');
      const known = await api.namespace('known-ns');
      await api.grant(user.id, '*', [allow('/Users')]);
      await api.grant(user.id, known.name, [allow('/Groups')]);
      const response = await api.evaluateAs(user.token, [
        { object: '/Users', action: 'Read', namespace: 'no-such-namespace' },
        { object: '/Groups', action: 'Read', namespace: 'no-such-namespace' },
        { object: '/Groups', action: 'Read', namespace: known.name.toUpperCase() },
      ]);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual(['Allow', 'Deny', 'Allow']);
    });

    it('needs credentials', async () => {
      const response = await hub.inject({ method: 'POST', url: EVALUATE, payload: [{ object: '/Users', action: 'Read' }] });
      expect(response.statusCode).toBe(401);
    });
  });

  describe('POST /rbac/explain', () => {
    let subject: TestUser;
    let own: { id: string; name: string };
    let other: { id: string; name: string };
    let namespace: { id: string; name: string };
    let inNamespace: { roleId: string; roleName: string; bindingId: string };
    let throughGroup: { roleId: string; roleName: string; bindingId: string };
    let throughOther: { roleId: string; roleName: string; bindingId: string };
    let elsewhere: { roleId: string; roleName: string; bindingId: string };

    beforeAll(async () => {
      subject = await api.user('explained');
      own = await api.group('explained-own');
      other = await api.group('explained-other');
      await api.members(own.id, 'add', subject.id);
      namespace = await api.namespace('explain-a');
      const b = await api.namespace('explain-b');
      inNamespace = await api.grant(subject.id, namespace.name, [allow('/Pipelines/*', ['Read', 'Update']), deny('/Pipelines/secret', ['*'])]);
      throughGroup = await api.grant(own.id, '*', [allow('/Users')]);
      throughOther = await api.grant(other.id, '*', [allow('/Groups', ['*'])]);
      elsewhere = await api.grant(subject.id, b.name, [allow('/Pipelines/**', ['*'], 'glob')]);
    });

    /**
     * The explanation as `<role name>#<permission number> <effect> matches|-`, sorted, after
     * checking that each source names the role (name and id), the binding, the principal and the
     * namespace of one of the bindings given.
     */
    const summarize = (explanation: Explanation[], bindings: [{ roleId: string; roleName: string; bindingId: string }, string, string][]): string[] =>
      explanation
        .map(({ matches, source, effect }) => {
          const found = bindings.find(([binding]) => source.includes(binding.bindingId));
          if (!found) throw new Error(`The source names none of the bindings expected: ${source}`);
          const [binding, principal, namespaceName] = found;
          expect(source).toContain(binding.roleName);
          expect(source).toContain(binding.roleId);
          expect(source).toContain(principal);
          expect(source).toContain(namespaceName);
          const number = /permission (\d+)/.exec(source)?.[1];
          return `${binding.roleName}#${number} ${effect} ${matches ? 'matches' : '-'}`;
        })
        .sort();

    it("explains a decision in a namespace with every permission of the bindings there and in '*', matching or not", async () => {
      const [result] = await api.explain([{ user: subject.id, object: '/Pipelines/secret', action: 'Read', namespace: namespace.name }]);
      expect(result.effect).toBe('Deny');
      const bindings: [typeof inNamespace, string, string][] = [
        [inNamespace, subject.userName, namespace.name],
        [throughGroup, own.name, '*'],
      ];
      expect(summarize(result.explanation, bindings)).toEqual(
        [`${inNamespace.roleName}#1 Allow matches`, `${inNamespace.roleName}#2 Deny matches`, `${throughGroup.roleName}#1 Allow -`].sort(),
      );
    });

    // Namespace 'A' stands for the namespace of the subject's own binding; ns and group for the two roles that apply there.
    it.each<[string, Question, Effect, string[]]>([
      [
        'allowed by the namespace binding',
        { object: '/Pipelines/1', action: 'Update', namespace: 'A' },
        'Allow',
        ['ns#1 Allow matches', 'ns#2 Deny -', 'group#1 Allow -'],
      ],
      ['allowed through the group', { object: '/Users', action: 'Read', namespace: 'A' }, 'Allow', ['ns#1 Allow -', 'ns#2 Deny -', 'group#1 Allow matches']],
      ['denied by default', { object: '/Pipelines/1', action: 'Delete', namespace: 'A' }, 'Deny', ['ns#1 Allow -', 'ns#2 Deny -', 'group#1 Allow -']],
      ['in every namespace, where only the bindings in * apply', { object: '/Users', action: 'Read' }, 'Allow', ['group#1 Allow matches']],
      ['in every namespace, given as *', { object: '/Pipelines/1', action: 'Read', namespace: '*' }, 'Deny', ['group#1 Allow -']],
    ])('explains a question %s', async (_case, question, effect, expected) => {
      const item = { user: subject.id, ...question, ...(question.namespace === 'A' ? { namespace: namespace.name } : {}) };
      const [result] = await api.explain([item]);
      expect(result.effect).toBe(effect);
      const bindings: [typeof inNamespace, string, string][] = [
        [inNamespace, subject.userName, namespace.name],
        [throughGroup, own.name, '*'],
      ];
      const short = (line: string) => line.replace(inNamespace.roleName, 'ns').replace(throughGroup.roleName, 'group');
      expect(summarize(result.explanation, bindings).map(short).sort()).toEqual([...expected].sort());
    });

    it("uses the groups given instead of the user's own groups", async () => {
      const question = { user: subject.id, object: '/Groups', action: 'Delete' };
      const [ownGroups, noGroups, otherGroups] = await api.explain([
        { ...question, object: '/Users', action: 'Read' },
        { ...question, object: '/Users', action: 'Read', groups: [] },
        { ...question, groups: [other.id] },
      ]);
      expect(ownGroups.effect).toBe('Allow');
      expect(noGroups).toEqual({ effect: 'Deny', explanation: [] });
      expect(otherGroups.effect).toBe('Allow');
      expect(summarize(otherGroups.explanation, [[throughOther, other.name, '*']])).toEqual([`${throughOther.roleName}#1 Allow matches`]);
    });

    it("counts the user's own groups at every depth", async () => {
      const nested = await api.user('explained-nested');
      const [inner, outer] = [await api.group('explained-inner'), await api.group('explained-outer')];
      await api.members(inner.id, 'add', nested.id);
      await api.members(outer.id, 'add', inner.id);
      const grant = await api.grant(outer.id, '*', [allow('/Roles')]);
      const [result] = await api.explain([{ user: nested.id, object: '/Roles', action: 'Read' }]);
      expect(result.effect).toBe('Allow');
      expect(summarize(result.explanation, [[grant, outer.name, '*']])).toEqual([`${grant.roleName}#1 Allow matches`]);
    });

    it('answers one result per item, in order', async () => {
      const results = await api.explain([
        { user: subject.id, object: '/Users', action: 'Read' },
        { user: subject.id, object: '/Users', action: 'Delete' },
        { user: subject.id, object: '/Pipelines/x', action: 'Read', namespace: namespace.name },
      ]);
      expect(results.map((result) => result.effect)).toEqual(['Allow', 'Deny', 'Allow']);
      expect(results.map((result) => result.explanation.length)).toEqual([1, 1, 3]);
      expect(results.flatMap((result) => result.explanation).some((entry) => entry.source.includes(elsewhere.bindingId))).toBe(false);
    });

    it.each<[string, (ids: { user: string; group: string }) => object[], string[]]>([
      ['an unknown user', () => [{ user: UNKNOWN_ID, object: '/Users', action: 'Read' }], ['/0/user']],
      [
        'a group id as the user',
        ({ group }) => [
          { user: UNKNOWN_ID.replace('6f', '7f'), object: '/Users', action: 'Read' },
          { user: group, object: '/Users', action: 'Read' },
        ],
        ['/0/user', '/1/user'],
      ],
      ['a user that is not a UUID', () => [{ user: 'someone', object: '/Users', action: 'Read' }], ['/0/user']],
      ['no user', () => [{ object: '/Users', action: 'Read' }], ['/0/user']],
      ['groups that are not UUIDs', ({ user }) => [{ user, groups: ['analysts'], object: '/Users', action: 'Read' }], ['/0/groups']],
      ['an unknown namespace', ({ user }) => [{ user, object: '/Users', action: 'Read', namespace: 'no-such-namespace' }], ['/0/namespace']],
    ])('refuses %s with 400 at the item', async (_case, items, paths) => {
      const response = await api.explainAs(hub.adminToken, items({ user: subject.id, group: own.id }));
      expect(response.statusCode).toBe(400);
      expect(problemPaths(response)).toEqual(paths);
    });

    it("is refused with 403 to a user without Read on /RoleBindings in '*', even with it in a namespace", async () => {
      const item = [{ user: subject.id, object: '/Users', action: 'Read' }];
      const unbound = await api.user('explain-unbound');
      const namespaced = await api.user('explain-namespaced');
      await api.grant(namespaced.id, namespace.name, [allow('/RoleBindings')]);
      const reader = await api.user('explain-reader');
      await api.grant(reader.id, '*', [allow('/RoleBindings')]);
      for (const user of [unbound, namespaced]) {
        const response = await api.explainAs(user.token, item);
        expect(response.statusCode).toBe(403);
        expect(response.json().detail).toContain('/RoleBindings');
      }
      const allowed = await api.explainAs(reader.token, item);
      expect(allowed.statusCode).toBe(200);
      expect(allowed.json<ExplainResult[]>().map((result) => result.effect)).toEqual(['Allow']);
    });
  });

  describe('GET /rbac/audit', () => {
    const label = (record: AuditRecord) => `${record.purpose} ${record.decision} ${record.action} ${record.object} in ${record.namespace}`;
    const labels = async (query: string) => (await api.audit(query)).map(label);

    it('records a denied request of a user without bindings, with every field', async () => {
      const user = await api.user('audited');
      const start = new Date(Math.floor(Date.now() / SECOND) * SECOND);
      freezeClock(hub, start);
      expect((await as(user, 'GET', USERS)).statusCode).toBe(403);
      const response = await api.auditAs(hub.adminToken, `filter[userId][EQ]=${user.id}`);
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toContain('application/json');
      expect(response.json()).toEqual([
        { object: '/Users', namespace: '*', action: 'Read', userId: user.id, groups: [], decision: 'Deny', purpose: 'Request', when: start.toISOString() },
      ]);
    });

    it("records the user's groups at every depth", async () => {
      const user = await api.user('audited-grouped');
      const [inner, outer] = [await api.group('audit-inner'), await api.group('audit-outer')];
      await api.members(inner.id, 'add', user.id);
      await api.members(outer.id, 'add', inner.id);
      expect((await as(user, 'GET', GROUPS)).statusCode).toBe(403);
      const [record] = await api.audit(`filter[userId][EQ]=${user.id}`);
      expect(record).toMatchObject({ object: '/Groups', action: 'Read', decision: 'Deny', userId: user.id });
      expect([...record.groups].sort()).toEqual([inner.id, outer.id].sort());
    });

    it("records a namespaced list as a Request and a Filter, and a single resource by its id in the resource's namespace", async () => {
      const user = await api.user('audited-reader');
      const namespace = await api.namespace('audit-read');
      await api.grant(user.id, namespace.name, [allow('/Namespaces'), allow('/Namespaces/*')]);
      const listed = await as(user, 'GET', NAMESPACES);
      expect(listed.statusCode).toBe(200);
      expect(listed.json().data.map((item: { name: string }) => item.name)).toEqual([namespace.name]);
      expect((await labels(`filter[userId][EQ]=${user.id}`)).sort()).toEqual([
        `Filter Allow Read /Namespaces in ${namespace.name}`,
        `Request Allow Read /Namespaces in ${namespace.name}`,
      ]);
      expect((await as(user, 'GET', `${NAMESPACES}/${namespace.id}`)).statusCode).toBe(200);
      expect(await labels(`filter[userId][EQ]=${user.id}&filter[object][SW]=/Namespaces/`)).toEqual([
        `Request Allow Read /Namespaces/${namespace.id} in ${namespace.name}`,
      ]);
    });

    it('records a denied list as a Request only', async () => {
      const user = await api.user('audited-list-denied');
      expect((await as(user, 'GET', NAMESPACES)).statusCode).toBe(403);
      expect(await labels(`filter[userId][EQ]=${user.id}`)).toEqual(['Request Deny Read /Namespaces in *']);
    });

    it('returns 100 records by default, and as many as page[limit] says', async () => {
      const user = await api.user('audited-often');
      for (let n = 0; n < 101; n++) expect((await as(user, 'GET', USERS)).statusCode).toBe(403);
      expect(await api.audit(`filter[userId][EQ]=${user.id}`)).toHaveLength(100);
      expect(await api.audit(`filter[userId][EQ]=${user.id}&page[limit]=1000`)).toHaveLength(101);
      expect(await api.audit(`filter[userId][EQ]=${user.id}&page[offset]=100`)).toHaveLength(1);
    });

    it('is refused with 403 to a user without Read on /Audit, and allowed with it', async () => {
      const user = await api.user('audit-reader');
      const denied = await api.auditAs(user.token);
      expect(denied.statusCode).toBe(403);
      expect(denied.json().detail).toContain('/Audit');
      await api.grant(user.id, '*', [allow('/Audit')]);
      const allowed = await api.auditAs(user.token, `filter[userId][EQ]=${user.id}`);
      expect(allowed.statusCode).toBe(200);
      expect(allowed.json<AuditRecord[]>().map(label)).toEqual(['Request Allow Read /Audit in *', 'Request Deny Read /Audit in *']);
    });

    describe('queries', () => {
      let user: TestUser;
      let namespace: { id: string; name: string };
      let at: (offset: number) => Date;
      let own: string;
      const R1 = () => 'Request Deny Read /Users in *';
      const R2 = () => `Request Allow Read /Namespaces/${namespace.id} in ${namespace.name}`;
      const R3 = () => 'Request Deny Create /Namespaces in *';
      // A narrowed list is recorded in the namespaces it was narrowed to.
      const R4 = () => `Request Allow Read /Namespaces in ${namespace.name}`;
      const F4 = () => `Filter Allow Read /Namespaces in ${namespace.name}`;
      const R5 = () => 'Request Deny Read /Groups in *';

      /** One request a second from `start`: R1 at +0s, R2 at +1s, R3 at +2s, R4 and F4 at +3s, R5 at +4s. */
      beforeAll(async () => {
        user = await api.user('audit-queries');
        namespace = await api.namespace('audit-queries');
        await api.grant(user.id, namespace.name, [allow('/Namespaces'), allow('/Namespaces/*')]);
        const clock = freezeClock(hub, new Date(Math.floor(Date.now() / SECOND) * SECOND));
        at = clock.at;
        const requests: [string, 'GET' | 'POST', string, number][] = [
          ['R1', 'GET', USERS, 403],
          ['R2', 'GET', `${NAMESPACES}/${namespace.id}`, 200],
          ['R3', 'POST', NAMESPACES, 403],
          ['R4', 'GET', NAMESPACES, 200],
          ['R5', 'GET', GROUPS, 403],
        ];
        for (const [, method, url, status] of requests) {
          expect((await as(user, method, url, method === 'POST' ? { name: 'never-created' } : undefined)).statusCode).toBe(status);
          clock.advance(SECOND);
        }
        jest.restoreAllMocks();
        own = `filter[userId][EQ]=${user.id}`;
      });

      it('lists every record of the user, newest first by default, with when exactly as decided', async () => {
        const records = await api.audit(`${own}&filter[purpose][EQ]=Request`);
        expect(records.map(label)).toEqual([R5(), R4(), R3(), R2(), R1()]);
        expect(records.map((record) => record.when)).toEqual([4, 3, 2, 1, 0].map((n) => at(n * SECOND).toISOString()));
        expect((await labels(own)).sort()).toEqual([R1(), R2(), R3(), R4(), F4(), R5()].sort());
      });

      it.each<[string, string, () => string[]]>([
        ['object EQ', 'filter[object][EQ]=/Namespaces&filter[purpose][EQ]=Request', () => [R4(), R3()]],
        ['object SW', 'filter[object][SW]=/Namespaces&filter[purpose][EQ]=Request', () => [R4(), R3(), R2()]],
        ['object SW, ignoring case', 'filter[object][SW]=/namespaces/', () => [R2()]],
        ['action EQ', 'filter[action][EQ]=Create', () => [R3()]],
        ['namespace EQ', 'filter[namespace][EQ]=NAMESPACE', () => [F4(), R4(), R2()]],
        ['decision EQ Deny', 'filter[decision][EQ]=Deny', () => [R5(), R3(), R1()]],
        ['decision EQ Allow', 'filter[decision][EQ]=Allow&filter[purpose][EQ]=Request', () => [R4(), R2()]],
        ['purpose EQ Filter', 'filter[purpose][EQ]=Filter', () => [F4()]],
        ['when LT, exclusive', 'filter[when][LT]=AT2', () => [R2(), R1()]],
        ['when GT, exclusive', 'filter[when][GT]=AT2&filter[purpose][EQ]=Request', () => [R5(), R4()]],
        ['when GT and LT', 'filter[when][GT]=AT0&filter[when][LT]=AT3', () => [R3(), R2()]],
        ['sort when', 'sort=when&filter[purpose][EQ]=Request', () => [R1(), R2(), R3(), R4(), R5()]],
        ['sort -when', 'sort=-when&filter[purpose][EQ]=Request', () => [R5(), R4(), R3(), R2(), R1()]],
        ['sort object', 'sort=object&filter[purpose][EQ]=Request&filter[action][EQ]=Read', () => [R5(), R4(), R2(), R1()]],
        ['sort -object', 'sort=-object&filter[purpose][EQ]=Request&filter[action][EQ]=Read', () => [R1(), R2(), R4(), R5()]],
        ['page[limit]', 'page[limit]=2&filter[purpose][EQ]=Request', () => [R5(), R4()]],
        ['page[offset] and page[limit]', 'page[offset]=1&page[limit]=2&filter[purpose][EQ]=Request', () => [R4(), R3()]],
        ['page[offset] past the end', 'page[offset]=10', () => []],
      ])('filters, sorts and pages: %s', async (_case, query, expected) => {
        const resolved = query
          .replace('NAMESPACE', namespace.name)
          .replace(/AT(\d)/g, (_match, n: string) => encodeURIComponent(at(Number(n) * SECOND).toISOString()));
        expect(await labels(`${own}&${resolved}`)).toEqual(expected());
      });

      it.each([
        ['a decision that is neither Allow nor Deny', 'filter[decision][EQ]=Maybe'],
        ['a purpose that is neither Request nor Filter', 'filter[purpose][EQ]=Other'],
        ['a when that is not a date-time', 'filter[when][LT]=yesterday'],
        ['a userId that is not a UUID', 'filter[userId][EQ]=someone'],
        ['an operator the field does not take', 'filter[object][CO]=Namespaces'],
        ['a field that cannot be filtered', 'filter[groups][EQ]=x'],
        ['a sort that is not offered', 'sort=action'],
        ['a page limit over 1000', 'page[limit]=1001'],
      ])('refuses %s with 400', async (_case, query) => {
        const response = await api.auditAs(hub.adminToken, `${own}&${query}`);
        expect(response.statusCode).toBe(400);
        expect(response.headers['content-type']).toContain('application/problem+json');
      });
    });
  });

  describe('denied requests', () => {
    it('decide an id in upper case exactly as the same id in lower case, so a Deny on it holds', async () => {
      const namespace = await api.namespace('case-guarded');
      const user = await api.user('case-probe');
      await api.grant(user.id, '*', [allow('/Namespaces/*', ['Read', 'Update']), deny(`/Namespaces/${namespace.id}`, ['Update'])]);
      for (const id of [namespace.id, namespace.id.toUpperCase()]) {
        const response = await hub.inject({
          method: 'PATCH',
          url: `${NAMESPACES}/${id}`,
          headers: bearer(user.token),
          payload: [{ op: 'add', path: '/description', value: 'changed' }],
        });
        expect([id, response.statusCode]).toEqual([id, 403]);
      }
      const records = await api.audit(`filter[userId][EQ]=${user.id}&filter[action][EQ]=Update`);
      expect(records.map((record) => record.object)).toEqual([`/Namespaces/${namespace.id}`, `/Namespaces/${namespace.id}`]);
    });

    it("answer 403, not 404, to deleting one's own user record, which one may read", async () => {
      const user = await api.user('self-deleter');
      const response = await as(user, 'DELETE', `${USERS}/${user.id}`);
      expect(response.statusCode).toBe(403);
      expect(response.json().detail).toBe(`Not allowed: Delete on /Users/${user.id} in every namespace`);
    });

    it('record a request served to a user acting on themself as allowed', async () => {
      const user = await api.user('self-reader');
      expect((await as(user, 'GET', `${USERS}/${user.id}`)).statusCode).toBe(200);
      const records = await api.audit(`filter[userId][EQ]=${user.id}`);
      expect(records.map(({ purpose, decision, action, object, namespace }) => ({ purpose, decision, action, object, namespace }))).toEqual([
        { purpose: 'Request', decision: 'Allow', action: 'Read', object: `/Users/${user.id}`, namespace: '*' },
      ]);
    });

    it('answer 403 naming the action, the object with its id and the namespace, without the resource data', async () => {
      const namespace = await api.namespace('guarded', 'a-confidential-description');
      const user = await api.user('reader-only');
      await api.grant(user.id, namespace.name, [allow('/Namespaces/*')]);
      expect((await as(user, 'GET', `${NAMESPACES}/${namespace.id}`)).json().description).toBe('a-confidential-description');
      const response = await as(user, 'DELETE', `${NAMESPACES}/${namespace.id}`);
      expect(response.statusCode).toBe(403);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json()).toMatchObject({ status: 403, detail: `Not allowed: Delete on /Namespaces/${namespace.id} in namespace '${namespace.name}'` });
      expect(response.body).not.toContain('a-confidential-description');
      expect((await hub.inject({ method: 'GET', url: `${NAMESPACES}/${namespace.id}`, headers: bearer(hub.adminToken) })).statusCode).toBe(200);
    });

    it('answer 403 to a replace without echoing the resource or the body', async () => {
      const namespace = await api.namespace('guarded-put', 'another-confidential-description');
      const user = await api.user('reader-not-writer');
      await api.grant(user.id, namespace.name, [allow('/Namespaces/*')]);
      const response = await as(user, 'PUT', `${NAMESPACES}/${namespace.id}`, { name: namespace.name, description: 'an-attempted-change' });
      expect(response.statusCode).toBe(403);
      expect(response.json().detail).toBe(`Not allowed: Update on /Namespaces/${namespace.id} in namespace '${namespace.name}'`);
      expect(response.body).not.toContain('another-confidential-description');
      expect(response.body).not.toContain('an-attempted-change');
    });

    it('answer 403 for a collection naming its object and action', async () => {
      const target = await api.user('unlisted-target');
      const user = await api.user('no-users-read');
      const response = await as(user, 'GET', USERS);
      expect(response.statusCode).toBe(403);
      expect(response.json().detail).toMatch(/^Not allowed: Read on \/Users\b/);
      expect(response.body).not.toContain(target.userName);
    });

    it('answer 404 for a single resource the caller may not even read', async () => {
      const namespace = await api.namespace('hidden');
      const user = await api.user('no-read');
      const response = await as(user, 'DELETE', `${NAMESPACES}/${namespace.id}`);
      expect(response.statusCode).toBe(404);
      expect(response.body).not.toContain(namespace.name);
    });
  });

  describe('audit retention', () => {
    it('prunes records older than 30 days by default, keeping younger ones', async () => {
      const auditLog = hub.app.get(AuditLog);
      const clock = freezeClock(hub, new Date(Math.floor(Date.now() / SECOND) * SECOND - 60 * DAY));
      const user = await api.user('pruned');
      expect((await as(user, 'GET', USERS)).statusCode).toBe(403);
      clock.advance(2 * DAY);
      expect((await as(user, 'GET', GROUPS)).statusCode).toBe(403);
      const own = `filter[userId][EQ]=${user.id}`;
      const whens = async () => (await api.audit(own)).map((record) => `${record.object} ${record.when}`);
      expect(await whens()).toEqual([`/Groups ${clock.at(2 * DAY).toISOString()}`, `/Users ${clock.at(0).toISOString()}`]);
      clock.advance(27 * DAY);
      expect(await auditLog.prune()).toBe(0);
      expect(await whens()).toEqual([`/Groups ${clock.at(2 * DAY).toISOString()}`, `/Users ${clock.at(0).toISOString()}`]);
      clock.advance(2 * DAY);
      expect(await auditLog.prune()).toBeGreaterThanOrEqual(1);
      expect(await whens()).toEqual([`/Groups ${clock.at(2 * DAY).toISOString()}`]);
    });

    it('prunes after HUB_AUDIT_RETENTION_DAYS days', async () => {
      const short = await startTestHub({ env: { HUB_AUDIT_RETENTION_DAYS: '1' } });
      try {
        const shortApi = client(() => short);
        const clock = freezeClock(short, new Date(Math.floor(Date.now() / SECOND) * SECOND - 10 * DAY));
        const user = await shortApi.user('short-lived');
        expect((await short.inject({ method: 'GET', url: USERS, headers: bearer(user.token) })).statusCode).toBe(403);
        const own = `filter[userId][EQ]=${user.id}`;
        expect((await shortApi.audit(own)).map((record) => record.when)).toEqual([clock.at(0).toISOString()]);
        clock.advance(23 * HOUR);
        expect(await short.app.get(AuditLog).prune()).toBe(0);
        expect(await shortApi.audit(own)).toHaveLength(1);
        clock.advance(2 * HOUR);
        expect(await short.app.get(AuditLog).prune()).toBeGreaterThanOrEqual(1);
        expect(await shortApi.audit(own)).toEqual([]);
      } finally {
        await short.close();
      }
    });
  });
});

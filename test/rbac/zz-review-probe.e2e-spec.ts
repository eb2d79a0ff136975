import { afterAll, beforeAll, describe, it } from '@jest/globals';
import pg from 'pg';
import { bearer, startTestHub, type TestHub } from '../support/test-hub.js';

const API = '/api/v2';
let hub: TestHub;
let seq = 0;
const u = (p: string) => `${p}-${++seq}`;
const log = (...args: unknown[]) => process.stdout.write(`PROBE ${args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ')}\n`);

async function req(token: string, method: string, url: string, payload?: unknown) {
  const r = await hub.inject({ method: method as 'GET', url: `${API}${url}`, headers: bearer(token), payload: payload as object });
  let body: unknown = r.body;
  try {
    body = r.json();
  } catch {
    /* */
  }
  return { status: r.statusCode, body };
}
const admin = (m: string, url: string, p?: unknown) => req(hub.adminToken, m, url, p);
async function user() {
  const userName = u('pu');
  const r = await admin('POST', '/auth/users', { userName, password: 'a-probe-password-1' });
  const id = (r.body as { _id: string })._id;
  return { id, userName, token: await hub.login(userName, 'a-probe-password-1') };
}
async function ns() {
  const name = u('pns');
  const r = await admin('POST', '/namespaces', { name });
  return { id: (r.body as { _id: string })._id, name };
}
async function role(permissions: object[]) {
  const r = await admin('POST', '/rbac/roles', { name: u('prole'), permissions });
  if (r.status !== 201) log('role create failed', r);
  return (r.body as { id: string }).id;
}
async function bind(roleId: string, principal: string, namespace: string) {
  const r = await admin('POST', '/rbac/rolebindings', { role: roleId, principal, namespace });
  if (r.status !== 201) log('bind failed', r);
  return r;
}
const A = (object: string, actions: string[], objectMatcher = 'simple') => ({ object, objectMatcher, actions, effect: 'Allow' });
const D = (object: string, actions: string[], objectMatcher = 'simple') => ({ object, objectMatcher, actions, effect: 'Deny' });

describe('review probe', () => {
  beforeAll(async () => {
    hub = await startTestHub();
  });
  afterAll(async () => {
    try {
      await hub.close();
    } catch (e) {
      log('close error', String(e));
    }
  });

  it('uppercase uuid bypasses a Deny on a specific object', async () => {
    const target = await role([A('/X', ['Read'])]);
    const me = await user();
    await bind(await role([A('/Roles/*', ['Read', 'Update']), D(`/Roles/${target}`, ['Update'])]), me.id, '*');
    const lower = await req(me.token, 'PATCH', `/rbac/roles/${target}`, [{ op: 'replace', path: '/description', value: 'lower' }]);
    const upper = await req(me.token, 'PATCH', `/rbac/roles/${target.toUpperCase()}`, [{ op: 'replace', path: '/description', value: 'upper' }]);
    log('deny-bypass lower', lower.status, 'upper', upper.status, upper.body);
    // users too
    const victim = await user();
    const me2 = await user();
    await bind(await role([A('/Users/*', ['Read', 'Update']), D(`/Users/${victim.id}`, ['Update'])]), me2.id, '*');
    const up2 = await req(me2.token, 'PATCH', `/auth/users/${victim.id.toUpperCase()}`, [{ op: 'replace', path: '/displayName', value: 'pwned' }]);
    log('deny-bypass users upper', up2.status, up2.body);
    const audit = await admin('GET', `/rbac/audit?filter[userId][EQ]=${me2.id}`);
    log('audit of bypass', audit.body);
  });

  it('namespace-scoped binding manager escalates', async () => {
    const a = await ns();
    const me = await user();
    await bind(await role([A('/RoleBindings', ['Create', 'Read', 'Delete'])]), me.id, a.name);
    const roles = await admin('GET', '/rbac/roles?filter[name][EQ]=HubAdministrator');
    const hubAdmin = (roles.body as { data: { id: string }[] }).data[0].id;
    const inStar = await req(me.token, 'POST', '/rbac/rolebindings', { role: hubAdmin, principal: me.id, namespace: '*' });
    const inA = await req(me.token, 'POST', '/rbac/rolebindings', { role: hubAdmin, principal: me.id, namespace: a.name });
    const inAupper = await req(me.token, 'POST', '/rbac/rolebindings', { role: hubAdmin, principal: me.id, namespace: a.name.toUpperCase() });
    log('escalate in * ', inStar.status, 'in a', inA.status, 'in A upper', inAupper.status, inAupper.body);
    const patchNs = await req(me.token, 'PATCH', `/namespaces/${a.id}`, [{ op: 'replace', path: '/description', value: 'mine' }]);
    log('after self-bind, patch namespace a', patchNs.status);
    // delete with mismatching case
    const del = await req(me.token, 'DELETE', `/rbac/rolebindings?filter[namespace][EQ]=${a.name.toUpperCase()}&filter[principal][EQ]=${me.id}`);
    log('delete upper-case ns filter', del.status, del.body);
    const del2 = await req(me.token, 'DELETE', `/rbac/rolebindings?filter[namespace][EQ]=${a.name}&filter[namespace][EQ]=*&filter[principal][EQ]=${me.id}`);
    log('delete repeated ns filter', del2.status, del2.body);
  });

  it('role editor edits a role they are bound to', async () => {
    const me = await user();
    const r = await role([A('/Roles', ['Read']), A('/Roles/*', ['Read', 'Update'])]);
    await bind(r, me.id, '*');
    const before = await req(me.token, 'GET', '/auth/users');
    const p = await req(me.token, 'PATCH', `/rbac/roles/${r}`, [{ op: 'add', path: '/permissions/-', value: A('/**', ['*'], 'glob') }]);
    const after = await req(me.token, 'GET', '/auth/users');
    log('role self-edit', before.status, p.status, after.status);
  });

  it('ReDoS regex evaluated on every request', async () => {
    const me = await user();
    await bind(await role([A('/Roles/(a+)+', ['Read'], 'regex')]), me.id, '*');
    for (const n of [18, 22, 24, 26]) {
      const t = Date.now();
      const r = await req(me.token, 'GET', `/rbac/roles/${'a'.repeat(n)}!`);
      log('redos n', n, r.status, Date.now() - t, 'ms');
    }
  });

  it('matcher edge cases via evaluate', async () => {
    const me = await user();
    await bind(
      await role([A('/Pipelines/**', ['Read'], 'glob'), A('/Users/*', ['Read'], 'glob'), A('/Reg/.*', ['Read'], 'regex'), A('/Simple/*', ['Read'])]),
      me.id,
      '*',
    );
    const objs = [
      '/Pipelines',
      '/Pipelines/',
      '/Pipelines/a/b',
      '/Pipelines/../Users',
      '/Users/a/b',
      '/Users/',
      '/Users/.hidden',
      '/Reg/x',
      '/Reg/x\n',
      '/Simple/',
      '/Simple/x',
      '/__proto__',
      '/constructor',
      '/hasOwnProperty',
      'Pipelines/x',
      '',
    ];
    const r = await req(
      me.token,
      'POST',
      '/rbac/evaluate',
      objs.map((object) => ({ object, action: 'Read' })),
    );
    log('edge', r.status, JSON.stringify(objs.map((o, i) => [o, (r.body as string[])[i]])), r.status !== 200 ? r.body : '');
    const r2 = await req(me.token, 'POST', '/rbac/evaluate', [
      { object: '/Pipelines/x', action: 'manage' },
      { object: '/Pipelines/x', action: '*' },
      { object: '/Pipelines/x', action: 'read' },
    ]);
    log('actions', r2.status, r2.body);
    const adminR = await admin('POST', '/rbac/evaluate', [
      { object: '/__proto__', action: 'Read' },
      { object: '/constructor', action: 'Read' },
      { object: '/', action: 'Read' },
      { object: 'x', action: 'Read' },
    ]);
    log('admin edge', adminR.status, adminR.body);
    // weird roles
    for (const p of [
      A('(', ['Read'], 'regex'),
      A('/a/[', ['Read'], 'glob'),
      A('/a', ['Read'], 'weird'),
      { ...A('/a', ['Read']), effect: 'Maybe' },
      A('/a', ['Fly']),
      A('/a', [], 'simple'),
      A('(?<=a)b', ['Read'], 'regex'),
      A('\\', ['Read'], 'regex'),
      A('x{99999999999}', ['Read'], 'regex'),
      A('/**/+(a|b)', ['Read'], 'glob'),
    ]) {
      const rr = await admin('POST', '/rbac/roles', { name: u('weird'), permissions: [p] });
      log('weird role', JSON.stringify(p), rr.status, rr.status >= 400 ? (rr.body as { detail: string }).detail : '');
    }
  });

  it('evaluate large arrays', async () => {
    const me = await user();
    const items = Array.from({ length: 1000 }, (_, i) => ({ object: '/X', action: 'Read', namespace: `nope${i}` }));
    let t = Date.now();
    let r = await req(me.token, 'POST', '/rbac/evaluate', items);
    log('evaluate 1000 unknown ns', r.status, Date.now() - t, 'ms', JSON.stringify(r.body).slice(0, 200));
    t = Date.now();
    r = await req(me.token, 'POST', '/rbac/evaluate', Array.from({ length: 1001 }, () => ({ object: '/X', action: 'Read' })));
    log('evaluate 1001', r.status, Date.now() - t, 'ms', JSON.stringify(r.body).slice(0, 200));
    r = await req(me.token, 'POST', '/rbac/evaluate', { object: '/X', action: 'Read' });
    log('evaluate object body', r.status, JSON.stringify(r.body).slice(0, 200));
    r = await req(me.token, 'POST', '/rbac/evaluate', [null]);
    log('evaluate [null]', r.status, JSON.stringify(r.body).slice(0, 200));
    r = await req(me.token, 'POST', '/rbac/evaluate', [{ object: '/X', action: 'Read', namespace: 5 }]);
    log('evaluate ns number', r.status, JSON.stringify(r.body).slice(0, 200));
    r = await req(me.token, 'POST', '/rbac/explain', [{ user: me.id, object: '/X', action: 'Read' }]);
    log('explain as plain user', r.status);
    r = await admin('POST', '/rbac/explain', [{ user: me.id.toUpperCase(), object: '/X', action: 'Read', groups: ['00000000-0000-0000-0000-000000000000'] }]);
    log('explain upper user + unknown group', r.status, JSON.stringify(r.body).slice(0, 300));
  });

  it('self service', async () => {
    const me = await user();
    const tries: [string, string, unknown][] = [
      ['PATCH', `/auth/users/${me.id}`, [{ op: 'replace', path: '/displayName', value: 'Me' }]],
      ['PATCH', `/auth/users/${me.id.toUpperCase()}`, [{ op: 'replace', path: '/email', value: 'me@example.com' }]],
      ['PATCH', `/auth/users/${me.id}`, [{ op: 'replace', path: '/active', value: false }]],
      ['PATCH', `/auth/users/${me.id}`, [{ op: 'replace', path: '/system', value: true }]],
      ['PATCH', `/auth/users/${me.id}`, [{ op: 'add', path: '/externalId', value: 'x' }]],
      ['PATCH', `/auth/users/${me.id}`, [{ op: 'replace', path: '/userName', value: me.userName.toUpperCase() }]],
      ['PATCH', `/auth/users/${me.id}`, [{ op: 'add', path: '/password', value: 'another-password-123' }]],
      ['PATCH', `/auth/users/${me.id}`, [{ op: 'add', path: '/unixUserName', value: 'root' }]],
      ['PUT', `/auth/users/${me.id}`, { userName: me.userName, displayName: 'Put' }],
      ['PUT', `/auth/users/${me.id}`, { userName: me.userName, active: false }],
      ['PUT', `/auth/users/${me.id}`, { userName: me.userName, userPrincipalName: 'x@y' }],
      ['DELETE', `/auth/users/${me.id}`, undefined],
      ['GET', `/auth/users/${me.id}/groups`, undefined],
      ['GET', `/auth/users/${me.id}/unix`, undefined],
      ['GET', `/auth/users`, undefined],
      ['GET', `/auth/me`, undefined],
      ['GET', `/auth/claims`, undefined],
      ['GET', `/rbac/rolebindings?filter[principal][EQ]=${me.id}`, undefined],
      ['GET', `/rbac/audit?filter[userId][EQ]=${me.id}`, undefined],
      ['GET', `/namespaces`, undefined],
      ['GET', `/metrics`, undefined],
    ];
    for (const [m, url, p] of tries) {
      const r = await req(me.token, m, url, p);
      log('self', m, url.replace(me.id, 'ME').replace(me.id.toUpperCase(), 'MEUP'), JSON.stringify(p ?? ''), r.status, r.status >= 400 ? (r.body as { detail: string }).detail : '');
    }
  });

  it('list narrowing and totalCount', async () => {
    const a = await ns();
    const b = await ns();
    const me = await user();
    const other = await user();
    const r = await role([A('/RoleBindings', ['Read'])]);
    await bind(r, me.id, a.name);
    const r2 = await role([A('/Namespaces', ['Read'])]);
    await bind(r2, me.id, a.name);
    await bind(r2, other.id, b.name);
    await bind(r, other.id, b.name);
    const list = await req(me.token, 'GET', '/rbac/rolebindings');
    log('bindings list', list.status, JSON.stringify(list.body));
    const list2 = await req(me.token, 'GET', `/rbac/rolebindings?filter[principal][EQ]=${other.id}`);
    log('bindings of other', list2.status, JSON.stringify(list2.body));
    const nsl = await req(me.token, 'GET', '/namespaces');
    log('namespaces list', nsl.status, JSON.stringify(nsl.body));
    const one = await req(me.token, 'GET', `/namespaces/${b.id}`);
    const none = await req(me.token, 'GET', `/namespaces/00000000-0000-4000-8000-000000000000`);
    log('ns b', one.status, 'ns unknown', none.status, one.body, none.body);
    const audit = await admin('GET', `/rbac/audit?filter[userId][EQ]=${me.id}&sort=when`);
    log('audit me', JSON.stringify(audit.body));
  });

  it('cache staleness through SQL from another process', async () => {
    const me = await user();
    const client = new pg.Client({ connectionString: hub.databaseUrl });
    await client.connect();
    try {
      const before = await req(me.token, 'GET', '/auth/users');
      const [{ id: adminRole }] = (await client.query("SELECT id FROM roles WHERE name = 'HubAdministrator'")).rows as { id: string }[];
      const g = await admin('POST', '/auth/groups', { name: u('pg') });
      const gid = (g.body as { _id: string })._id;
      await client.query("INSERT INTO role_bindings (role_id, principal_id, principal_type, namespace_id) VALUES ($1, $2, 'Group', NULL)", [adminRole, gid]);
      await new Promise((r) => setTimeout(r, 300));
      const mid = await req(me.token, 'GET', '/auth/users');
      const cols = (await client.query("SELECT column_name FROM information_schema.columns WHERE table_name = 'group_user_members'")).rows;
      log('gum columns', cols);
      await client.query('INSERT INTO group_user_members (group_id, user_id) VALUES ($1, $2)', [gid, me.id]);
      await new Promise((r) => setTimeout(r, 300));
      const after = await req(me.token, 'GET', '/auth/users');
      await client.query('DELETE FROM group_user_members WHERE group_id = $1', [gid]);
      await new Promise((r) => setTimeout(r, 300));
      const after2 = await req(me.token, 'GET', '/auth/users');
      // role change by SQL
      const r = await role([A('/Users', ['Read'])]);
      await bind(r, me.id, '*');
      const x1 = await req(me.token, 'GET', '/auth/users');
      await client.query(`UPDATE roles SET permissions = '[]' WHERE id = $1`, [r]);
      await new Promise((r) => setTimeout(r, 300));
      const x2 = await req(me.token, 'GET', '/auth/users');
      log('cache', before.status, mid.status, after.status, after2.status, 'role via sql', x1.status, x2.status);
    } finally {
      await client.end();
    }
  });

  it('audit flush on shutdown and db indexes', async () => {
    const client = new pg.Client({ connectionString: hub.databaseUrl });
    await client.connect();
    const plan = await client.query(
      `EXPLAIN SELECT * FROM audit_records WHERE decision = 'Deny' AND namespace = 'x' ORDER BY "when" DESC, id DESC LIMIT 100`,
    );
    log('plan', plan.rows.map((r) => r['QUERY PLAN']).join(' | '));
    const rows0 = await client.query('SELECT count(*)::int AS c FROM audit_records');
    for (let i = 0; i < 30; i++) await admin('GET', '/auth/users');
    await hub.app.close();
    const rows1 = await client.query('SELECT count(*)::int AS c FROM audit_records');
    log('audit rows before', rows0.rows[0].c, 'after 30 requests + close', rows1.rows[0].c);
    await client.end();
  });
});

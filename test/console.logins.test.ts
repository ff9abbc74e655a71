import assert from 'node:assert/strict';
import { it } from 'node:test';
import { buildApp } from '../src/app.js';
import { createOperator } from '../src/console/accounts.js';
import { reapConsoleSessions } from '../src/console/sessions.js';
import { codeAt, stepOf } from '../src/console/totp.js';
import { OPERATOR_ROLES } from '../src/db/schema.js';
import { runVerb } from '../src/runner.js';
import { testConfig } from './helpers/app.js';
import { buildConsole, type ConsoleHarness, consoleGet, consolePost, formBody, hidden, login, makeOperator } from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';
import { testLogging } from './helpers/log-audit.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** A login form posted from `from` (the client's address as the service sees it). */
function attempt(app: ConsoleHarness['app'], from: string, fields: Record<string, string>) {
  return app.inject({
    method: 'POST',
    url: '/console/login',
    headers: FORM,
    remoteAddress: from,
    payload: formBody({ next: '/console', ...fields }),
  });
}

async function failures(h: ConsoleHarness) {
  return h.db.database.db
    .selectFrom('audit_events')
    .selectAll()
    .where('action', '=', 'operator.login_failed')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

// Issue 26: findings 6 (the per-/64 limit), 7 (failed logins recorded), 8 (TOTP for every role in
// production) and 10 (a set-up link is for the role it was issued for).
eachDialect('console logins and set-up links (issue 26)', (dialect) => {
  it('one IPv6 /64 is one client however its addresses are written, and its 20 attempts hold across instances', async (t) => {
    const h = await buildConsole(t, dialect);
    // A second instance of the service on the same database: it keeps no count of its own.
    const other = await buildApp(testConfig(h.db.dataDir, { console: true, masterKey: h.app.svc.config.masterKey }), {
      database: h.db.database,
      ...testLogging(),
      clock: () => h.now.ms,
    });
    try {
      const sameSlash64 = [
        '2001:db8::1',
        '2001:db8::2',
        '2001:db8:0:0::3',
        '2001:0db8:0000:0000:0000:0000:0000:0004',
        '2001:db8::a:b:c:d',
        '2001:db8:0:0:ffff::6',
        '2001:DB8::7',
      ];
      for (let i = 0; i < 20; i++) {
        const app = i % 2 === 0 ? h.app : other;
        const res = await attempt(app, sameSlash64[i % sameSlash64.length] as string, {
          email: `guess${i}@example.com`,
          password: 'a wrong guess',
        });
        assert.equal(res.statusCode, 401, `attempt ${i + 1}`);
      }
      for (const from of ['2001:db8::99', '2001:db8:0:0:1234:5678:9abc:def0']) {
        for (const app of [h.app, other]) {
          const res = await attempt(app, from, { email: 'guess@example.com', password: 'a wrong guess' });
          assert.equal(res.statusCode, 429, `${from}: the /64 has had its 20 attempts, on either instance`);
        }
      }
      // Another /64 (and an IPv4 address) has its own.
      assert.equal((await attempt(h.app, '2001:db8:0:1::1', { email: 'guess@example.com', password: 'x' })).statusCode, 401);
      assert.equal((await attempt(other, '198.51.100.7', { email: 'guess@example.com', password: 'x' })).statusCode, 401);
      // The window is over after 10 minutes.
      h.advance(10 * 60_000 + 1);
      assert.equal((await attempt(h.app, '2001:db8::1', { email: 'guess@example.com', password: 'x' })).statusCode, 401);
    } finally {
      await other.close();
    }
  });

  it('every failed login is recorded with the e-mail tried, the address and the reason, never the password', async (t) => {
    const h = await buildConsole(t, dialect);
    const admin = await makeOperator(h, 'ada@example.com', 'admin');
    const viewer = await makeOperator(h, 'vic@example.com', 'viewer', { totp: false });
    await runVerb(h.app.svc, createOperator, { input: { email: 'new@example.com', role: 'viewer' }, actor: 'test' });
    const code = () => codeAt(admin.secret as string, stepOf(h.now.ms));
    const wrongCode = () => (code() === '000000' ? '111111' : '000000');
    const tried: string[] = [admin.password, viewer.password];
    const guess = (n: number) => {
      const p = `guessed-password-${n}-Zq`;
      tried.push(p);
      return p;
    };
    h.advance();
    // The clock moves a millisecond before each attempt: the records' order is the attempts'.
    const send = (from: string, fields: Record<string, string>) => {
      h.advance(1);
      return attempt(h.app, from, fields);
    };
    const sent: Array<[string, string, Record<string, string>]> = [
      ['unknown_account', '203.0.113.1', { email: 'nobody@example.com', password: guess(1) }],
      ['not_set_up', '203.0.113.2', { email: 'new@example.com', password: guess(2) }],
      ['bad_password', '203.0.113.3', { email: admin.email, password: guess(3), code: code() }],
      ['code_missing', '203.0.113.4', { email: admin.email, password: admin.password }],
      ['bad_code', '203.0.113.5', { email: admin.email, password: admin.password, code: wrongCode() }],
      ['bad_password', '2001:db8::5', { email: 'VIC@example.com', password: guess(4) }],
    ];
    for (const [reason, from, fields] of sent) assert.equal((await send(from, fields)).statusCode, 401, reason);
    // Three more failures lock the admin's account (five in a row); the next, right password and code, is refused as locked.
    for (let i = 5; i < 7; i++) await send('203.0.113.6', { email: admin.email, password: guess(i) });
    assert.equal((await send('203.0.113.7', { email: admin.email, password: admin.password, code: code() })).statusCode, 401);
    // A client past its 20 attempts.
    for (let i = 0; i < 21; i++) await send('198.51.100.9', { email: 'spray@example.com', password: guess(100 + i) });

    const rows = await failures(h);
    const seen = rows.map((r) => [JSON.parse(r.after_json ?? 'null').reason, r.origin, r.actor, r.target]);
    assert.deepEqual(seen.slice(0, 6), [
      ['unknown_account', '203.0.113.1', 'nobody@example.com', 'nobody@example.com'],
      ['not_set_up', '203.0.113.2', 'new@example.com', 'new@example.com'],
      ['bad_password', '203.0.113.3', admin.email, admin.email],
      ['code_missing', '203.0.113.4', admin.email, admin.email],
      ['bad_code', '203.0.113.5', admin.email, admin.email],
      ['bad_password', '2001:db8::5', viewer.email, viewer.email],
    ]);
    assert.deepEqual(
      seen.slice(6, 9).map((s) => s[0]),
      ['bad_password', 'bad_password', 'locked'],
    );
    const spray = seen.filter((s) => s[1] === '198.51.100.9').map((s) => s[0]);
    assert.deepEqual(spray, [...Array(20).fill('unknown_account'), 'throttled']);
    for (const r of rows) assert.equal(r.source, 'console');

    // No password (tried or real) anywhere in the trail, nor in any stored row of the attempt.
    const stored = JSON.stringify(await h.db.database.db.selectFrom('audit_events').selectAll().execute());
    for (const p of tried) assert.ok(!stored.includes(p), `the password ${p} is not stored`);

    // Every role reads them on the audit page.
    const s = await login(h, viewer);
    const page = await consoleGet(h, s, '/console/audit?action=operator.login_failed&actor=nobody');
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /nobody@example\.com/);
    assert.match(page.body, /unknown_account/);
  });

  // After an attack pass: every throttled (or busy) refusal wrote a record, ~25 GB a day from one
  // address. Attempts whose credentials were checked are each recorded; refusals are not checks.
  it('500 throttled attempts write at most 2 audit rows: the first refusal, then one summary with the count', async (t) => {
    const h = await buildConsole(t, dialect);
    const db = h.db.database.db;
    const trail = async (from: string) => {
      const rows = await db
        .selectFrom('audit_events')
        .selectAll()
        .where('origin', 'in', [from, `v4:${from}`])
        .orderBy('created_at')
        .execute();
      return rows.map((r) => [r.action, JSON.parse(r.after_json ?? 'null')]);
    };
    const flood = async (from: string, n: number) => {
      for (let done = 0; done < n; done += 50) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(50, n - done) }, (_, i) =>
            attempt(h.app, from, { email: `spray${done + i}@example.com`, password: 'a guess' }),
          ),
        );
        for (const r of batch) assert.equal(r.statusCode, 429);
      }
    };
    const from = '192.0.2.9';
    for (let i = 0; i < 20; i++)
      assert.equal((await attempt(h.app, from, { email: `try${i}@example.com`, password: 'a guess' })).statusCode, 401);
    await flood(from, 500);
    const during = await trail(from);
    assert.equal(during.length, 20 + 1, 'twenty checked attempts, one record each; then the first refusal');
    assert.equal(during.filter(([, a]) => a?.reason === 'unknown_account').length, 20);
    assert.deepEqual(
      during.filter(([, a]) => a?.reason !== 'unknown_account'),
      [['operator.login_failed', { reason: 'throttled' }]],
    );
    const row = await db.selectFrom('console_login_throttle').selectAll().where('client_key', '=', `v4:${from}`).executeTakeFirstOrThrow();
    assert.deepEqual([Number(row.attempts), Number(row.refusals)], [520, 500], 'the refusals counted on the throttle row');
    // The window over, the client's next attempt writes the summary, then its own (checked) record.
    h.advance(10 * 60_000 + 1);
    assert.equal((await attempt(h.app, from, { email: 'later@example.com', password: 'a guess' })).statusCode, 401);
    const after = await trail(from);
    const summary = after.filter(([action]) => action === 'operator.login_throttled');
    assert.equal(summary.length, 1);
    assert.equal(summary[0]?.[1].refusals, 500);
    assert.equal(after.length - 20, 1 + 1 + 1, 'the 500 refusals wrote 2 rows; the later attempt its own');
    const refusalRows = after.filter(([action, a]) => action === 'operator.login_throttled' || a?.reason === 'throttled');
    assert.ok(refusalRows.length <= 2);

    // A window nobody touches again is summed up by the reaper; busy refusals count the same way.
    const other = '192.0.2.10';
    for (let i = 0; i < 20; i++) await attempt(h.app, other, { email: `t${i}@example.com`, password: 'a guess' });
    await flood(other, 30);
    h.advance(10 * 60_000 + 1);
    await reapConsoleSessions(h.app.svc, h.now.ms);
    const reaped = (await trail(other)).filter(([action]) => action === 'operator.login_throttled');
    assert.deepEqual(
      reaped.map(([, a]) => a.refusals),
      [30],
    );
    assert.equal(
      await db.selectFrom('console_login_throttle').select('client_key').where('client_key', '=', `v4:${other}`).executeTakeFirst(),
      undefined,
    );
    // The audit page shows the summary to every role.
    const viewer = await makeOperator(h, 'vic@example.com', 'viewer', { totp: false });
    const s = await login(h, viewer);
    const page = await consoleGet(h, s, '/console/audit?action=operator.login_throttled');
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /192\.0\.2\.10/);
  });

  // After an attack pass: a right-to-left override in the e-mail reached the record and the audit
  // page unchanged, displaying another address than the one typed.
  it('format characters (bidi overrides, zero-width) and line separators are taken out of the e-mail tried', async (t) => {
    const h = await buildConsole(t, dialect);
    const typed = 'x\u202Emoc.tset.spo@1reweiv\u202C\u200B\u2028\u2029\u2066\uFEFF';
    const res = await attempt(h.app, '203.0.113.9', { email: typed, password: 'whatever-whatever' });
    assert.equal(res.statusCode, 401);
    const [row] = await failures(h);
    assert.deepEqual([row?.actor, row?.target], ['xmoc.tset.spo@1reweiv', 'xmoc.tset.spo@1reweiv']);
    const formats = /[\p{Cf}\u2028\u2029]/u;
    assert.doesNotMatch(res.body, formats, 'nor on the login page shown again');
    const viewer = await makeOperator(h, 'vic@example.com', 'viewer', { totp: false });
    const page = await consoleGet(h, await login(h, viewer), '/console/audit?action=operator.login_failed');
    assert.match(page.body, /xmoc\.tset\.spo@1reweiv/);
    assert.doesNotMatch(page.body, formats);
  });

  it('production: every role must enrol a second factor at set-up and log in with it; the sandbox asks it of admins only', async (t) => {
    const prod = await buildConsole(t, dialect, { env: 'production' });
    const good = 'a long enough passphrase';
    for (const role of OPERATOR_ROLES) {
      const email = `${role}@example.com`;
      const made = await runVerb(prod.app.svc, createOperator, { input: { email, role }, actor: 'test' });
      const page = await consoleGet(prod, null, `/console/setup?token=${made.setupToken}`);
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /Second factor \(required\)/, role);
      assert.match(page.body, /name="code"[^>]* required/, `${role}: the code field is required`);
      const secret = hidden(page.body, 'secret');
      const setup = (code: string) =>
        prod.app.inject({
          method: 'POST',
          url: '/console/setup',
          headers: FORM,
          payload: formBody({ token: made.setupToken, secret, password: good, password2: good, code }),
        });
      const without = await setup('');
      assert.equal(without.statusCode, 400, `${role} without a code`);
      assert.match(without.body, /must set up the second factor/);
      const row = await prod.db.database.db.selectFrom('operators').selectAll().where('email', '=', email).executeTakeFirstOrThrow();
      assert.equal(row.password_hash, null, `${role}: nothing stored`);
      assert.equal((await setup(codeAt(secret, stepOf(prod.now.ms)))).statusCode, 200, `${role} with a code`);
      await login(prod, { email, role, password: good, secret });
    }
    // An account set up without one (before this rule) cannot log in with its password alone.
    await prod.db.database.db
      .updateTable('operators')
      .set({ totp_enc: null, totp_last_step: null })
      .where('email', '=', 'viewer@example.com')
      .execute();
    prod.advance();
    const refused = await attempt(prod.app, '203.0.113.1', { email: 'viewer@example.com', password: good });
    assert.equal(refused.statusCode, 401);
    const last = (await failures(prod)).at(-1);
    assert.equal(JSON.parse(last?.after_json ?? 'null').reason, 'code_missing');

    // The sandbox: optional for a viewer, support or reviewer, required of an admin.
    const sandbox = await buildConsole(t, dialect);
    for (const role of ['viewer', 'support', 'reviewer'] as const) {
      const made = await runVerb(sandbox.app.svc, createOperator, { input: { email: `${role}@example.com`, role }, actor: 'test' });
      const page = await consoleGet(sandbox, null, `/console/setup?token=${made.setupToken}`);
      assert.match(page.body, /Second factor \(recommended\)/);
      const op = await makeOperator(sandbox, `${role}2@example.com`, role, { totp: false });
      await login(sandbox, op);
    }
  });

  it('a set-up link is for the role it was issued for: a role change ends it, so a viewer’s link never sets up an admin', async (t) => {
    const h = await buildConsole(t, dialect);
    const db = h.db.database.db;
    const admin = await makeOperator(h, 'ada@example.com', 'admin');
    const s = await login(h, admin);
    const created = await consolePost(h, s, '/console/operators', { email: 'vic@example.com', role: 'viewer' });
    assert.equal(created.statusCode, 200);
    const token = /\/console\/setup\?token=([A-Za-z0-9_-]{43})/.exec(created.body)?.[1];
    assert.ok(token, 'the set-up link is shown');
    const vic = await db.selectFrom('operators').select('id').where('email', '=', 'vic@example.com').executeTakeFirstOrThrow();
    assert.equal((await consoleGet(h, null, `/console/setup?token=${token}`)).statusCode, 200, 'open while the role is the same');

    // A status change that leaves the role as it is keeps the link.
    assert.equal((await consolePost(h, s, `/console/operators/${vic.id}/update`, { status: 'active' })).statusCode, 303);
    assert.equal((await consoleGet(h, null, `/console/setup?token=${token}`)).statusCode, 200);

    assert.equal((await consolePost(h, s, `/console/operators/${vic.id}/update`, { role: 'admin' })).statusCode, 303);
    assert.equal((await consoleGet(h, null, `/console/setup?token=${token}`)).statusCode, 410, 'the viewer’s link is over');
    const good = 'a long enough passphrase';
    const post = await h.app.inject({
      method: 'POST',
      url: '/console/setup',
      headers: FORM,
      payload: formBody({ token, secret: 'A'.repeat(32), password: good, password2: good, code: codeAt('A'.repeat(32), stepOf(h.now.ms)) }),
    });
    assert.equal(post.statusCode, 410);
    const row = await db.selectFrom('operators').selectAll().where('id', '=', vic.id).executeTakeFirstOrThrow();
    assert.deepEqual([row.role, row.password_hash, row.setup_hash], ['admin', null, null], 'not set up, the link gone');
    const operators = await consoleGet(h, s, '/console/operators');
    assert.equal(operators.statusCode, 200);

    // A demotion ends it too; the admin issues a new link for the account as it is now.
    const reset = await consolePost(h, s, `/console/operators/${vic.id}/reset`);
    const fresh = /\/console\/setup\?token=([A-Za-z0-9_-]{43})/.exec(reset.body)?.[1];
    assert.ok(fresh);
    assert.equal((await consolePost(h, s, `/console/operators/${vic.id}/update`, { role: 'viewer' })).statusCode, 303);
    assert.equal((await consoleGet(h, null, `/console/setup?token=${fresh}`)).statusCode, 410);
  });
});

import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createOperator } from '../src/console/accounts.js';
import { can, PERMISSIONS, type Permission } from '../src/console/roles.js';
import { codeAt, stepOf } from '../src/console/totp.js';
import { OPERATOR_ROLES } from '../src/db/schema.js';
import { redactedUrl } from '../src/http/options.js';
import { updateMerchant } from '../src/merchants/manage.js';
import { runVerb } from '../src/runner.js';
import { build, holderBody, kycBody, randomStr } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import {
  buildConsole,
  type ConsoleHarness,
  type ConsoleSessionCookies,
  consoleGet,
  consolePost,
  formBody,
  hidden,
  login,
  makeOperator,
} from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';
import { receiver } from './helpers/receiver.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** What an operator's change could touch: a refused request must leave all of it as it was. */
async function state(h: ConsoleHarness) {
  const db = h.db.database.db;
  return {
    audit: (await db.selectFrom('audit_events').select('action').execute()).map((r) => r.action).sort(),
    holders: await db.selectFrom('cardholders').select(['id', 'audit_status', 'err_msg']).orderBy('id').execute(),
    kyc: await db.selectFrom('kyc_requests').select(['id', 'status']).orderBy('id').execute(),
    cards: await db.selectFrom('cards').select(['id', 'status', 'status_source']).orderBy('id').execute(),
    callbacks: await db.selectFrom('callback_events').select(['id', 'status', 'next_attempt_at']).orderBy('id').execute(),
    merchants: await db.selectFrom('merchants').select(['id', 'status']).orderBy('id').execute(),
    funding: await db
      .selectFrom('merchant_balances')
      .select(['merchant_id', 'currency', 'available'])
      .orderBy('merchant_id')
      .orderBy('currency')
      .execute(),
    operators: await db.selectFrom('operators').select(['email', 'role', 'status']).orderBy('email').execute(),
  };
}

async function lastAudit(h: ConsoleHarness) {
  return h.db.database.db
    .selectFrom('audit_events')
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow();
}

eachDialect('the operators’ console', (dialect) => {
  it('answers nothing when it is not turned on', async (t) => {
    const h = await build(t, dialect);
    for (const url of ['/console', '/console/login', '/console/setup?token=x', '/console/merchants']) {
      const res = await h.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 404, url);
      assert.equal(res.json().code, '1004', 'the API’s own 404 envelope');
    }
    const post = await h.app.inject({ method: 'POST', url: '/console/login', headers: FORM, payload: 'email=a%40b.c&password=x' });
    assert.equal(post.statusCode, 404);
  });

  it('sets an account up once, logs in with password and TOTP, and logs out for good', async (t) => {
    const h = await buildConsole(t, dialect);
    const admin = await makeOperator(h, 'Ada@Example.com', 'admin');
    assert.equal(admin.email, 'Ada@Example.com');
    const row = await h.db.database.db.selectFrom('operators').selectAll().executeTakeFirstOrThrow();
    assert.equal(row.email, 'ada@example.com');
    assert.match(row.password_hash ?? '', /^scrypt\$32768\$8\$1\$/, 'scrypt, with its parameters');
    assert.ok(!(row.password_hash ?? '').includes(admin.password));
    assert.ok(row.totp_enc && !row.totp_enc.includes(admin.secret ?? '-'), 'the TOTP key is sealed');
    assert.equal(row.setup_hash, null, 'the link is spent');

    // Not logged in: every page sends to the login page.
    const anon = await consoleGet(h, null, '/console/merchants');
    assert.equal(anon.statusCode, 303);
    assert.equal(anon.headers.location, '/console/login?next=%2Fconsole%2Fmerchants');

    const s = await login(h, { ...admin, email: 'ada@example.com' });
    assert.match(s.cookie, /^cp_console=[A-Za-z0-9_-]{43}$/);
    const overview = await consoleGet(h, s, '/console');
    assert.equal(overview.statusCode, 200);
    assert.match(String(overview.headers['content-security-policy']), /default-src 'none'; style-src 'sha256-/);
    assert.equal(overview.headers['x-frame-options'], 'DENY');
    assert.equal(overview.headers['cache-control'], 'no-store');
    assert.ok(!overview.body.includes('<script'), 'no script');

    const out = await consolePost(h, s, '/console/logout');
    assert.equal(out.statusCode, 303);
    assert.match(String(out.headers['set-cookie']), /Max-Age=0/);
    assert.equal(
      (await h.db.database.db.selectFrom('operator_sessions').selectAll().execute()).length,
      0,
      'the session is gone from the database',
    );
    assert.equal((await consoleGet(h, s, '/console')).statusCode, 303, 'the old cookie opens nothing');
  });

  it('the set-up link: once, for 24 hours; an admin must enrol TOTP; a weak password or a wrong code is refused', async (t) => {
    const h = await buildConsole(t, dialect);
    const { createOperator } = await import('../src/console/accounts.js');
    const made = await runVerb(h.app.svc, createOperator, { input: { email: 'root@example.com', role: 'admin' }, actor: 'test' });
    const page = await consoleGet(h, null, `/console/setup?token=${made.setupToken}`);
    const secret = hidden(page.body, 'secret');
    const setup = (fields: Record<string, string>) =>
      h.app.inject({
        method: 'POST',
        url: '/console/setup',
        headers: FORM,
        payload: formBody({ token: made.setupToken, secret, ...fields }),
      });
    const good = 'a long enough passphrase';
    assert.match((await setup({ password: 'short', password2: 'short', code: '' })).body, /at least 12 characters/);
    assert.match((await setup({ password: good, password2: `${good}!`, code: '' })).body, /two passwords differ/);
    assert.match((await setup({ password: good, password2: good, code: '' })).body, /An admin must set up the second factor/);
    assert.match(
      (await setup({ password: good, password2: good, code: '000000' === codeAt(secret, stepOf(h.now.ms)) ? '111111' : '000000' })).body,
      /does not match/,
    );
    const row = await h.db.database.db.selectFrom('operators').selectAll().executeTakeFirstOrThrow();
    assert.equal(row.password_hash, null, 'nothing stored by the refusals');
    const setups = () => h.db.database.db.selectFrom('audit_events').select('after_json').where('action', '=', 'operator.setup').execute();
    assert.deepEqual(await setups(), [], 'a refused set-up is not in the trail');
    const done = await setup({ password: good, password2: good, code: codeAt(secret, stepOf(h.now.ms)) });
    assert.equal(done.statusCode, 200);
    assert.equal((await setup({ password: good, password2: good, code: codeAt(secret, stepOf(h.now.ms)) })).statusCode, 410, 'spent');
    assert.deepEqual(
      (await setups()).map((r) => JSON.parse(r.after_json ?? 'null')),
      [{ role: 'admin', totp: true }],
      'the set-up that happened, once',
    );
    assert.equal((await consoleGet(h, null, `/console/setup?token=${made.setupToken}`)).statusCode, 410);

    const late = await runVerb(h.app.svc, createOperator, { input: { email: 'late@example.com', role: 'viewer' }, actor: 'test' });
    h.advance(24 * 3_600_000 + 1);
    assert.equal((await consoleGet(h, null, `/console/setup?token=${late.setupToken}`)).statusCode, 410, 'expired after 24 hours');
  });

  it('locks an account after 5 failed logins for 15 minutes; a TOTP code works once; the failures are per account', async (t) => {
    const h = await buildConsole(t, dialect);
    const admin = await makeOperator(h, 'ada@example.com', 'admin');
    const attempt = (fields: Record<string, string>) =>
      h.app.inject({
        method: 'POST',
        url: '/console/login',
        headers: FORM,
        payload: formBody({ email: admin.email, next: '/console', ...fields }),
      });
    const code = () => codeAt(admin.secret as string, stepOf(h.now.ms));

    h.advance();
    const once = await attempt({ password: admin.password, code: code() });
    assert.equal(once.statusCode, 303);
    const replay = await attempt({ password: admin.password, code: code() });
    assert.equal(replay.statusCode, 401, 'the same code again is refused');
    assert.equal((await attempt({ password: admin.password, code: '' })).statusCode, 401, 'an admin needs the code');
    h.advance();
    for (let i = 0; i < 3; i++) assert.equal((await attempt({ password: 'wrong password!', code: code() })).statusCode, 401);
    // That is 5 failures in a row (the replay, the missing code, three wrong passwords): locked.
    const locked = await attempt({ password: admin.password, code: code() });
    assert.equal(locked.statusCode, 401, 'locked: even the right password and code are refused');
    assert.match(locked.body, /locked for a while/);
    const row = await h.db.database.db.selectFrom('operators').select(['locked_until']).executeTakeFirstOrThrow();
    assert.ok(Number(row.locked_until) > h.now.ms);
    assert.ok(
      (await h.db.database.db.selectFrom('audit_events').select('action').where('action', '=', 'operator.locked').execute()).length === 1,
    );
    h.advance(15 * 60_000 + 1);
    assert.equal((await attempt({ password: admin.password, code: code() })).statusCode, 303, 'open again after 15 minutes');
    // An unknown e-mail answers exactly as a wrong password does.
    const unknown = await h.app.inject({
      method: 'POST',
      url: '/console/login',
      headers: FORM,
      payload: formBody({ email: 'nobody@example.com', password: 'x', code: '123456' }),
    });
    assert.equal(unknown.statusCode, 401);
    assert.equal(unknown.body.replace(/value="[^"]*"/g, ''), locked.body.replace(/value="[^"]*"/g, ''));
  });

  it('a session ends after 30 idle minutes, and when its operator is disabled or demoted', async (t) => {
    const h = await buildConsole(t, dialect);
    const admin = await makeOperator(h, 'ada@example.com', 'admin');
    const support = await makeOperator(h, 'sam@example.com', 'support', { totp: false });
    const a = await login(h, admin);
    let s = await login(h, support);
    h.advance(29 * 60_000);
    assert.equal((await consoleGet(h, s, '/console')).statusCode, 200, 'still alive, and touched');
    h.advance(29 * 60_000);
    assert.equal((await consoleGet(h, s, '/console')).statusCode, 200);
    h.advance(31 * 60_000);
    assert.equal((await consoleGet(h, s, '/console')).statusCode, 303, 'idle for 31 minutes');
    const a2 = await login(h, admin);
    s = await login(h, support);
    const supportRow = await h.db.database.db
      .selectFrom('operators')
      .select('id')
      .where('email', '=', support.email)
      .executeTakeFirstOrThrow();
    const demoted = await consolePost(h, a2, `/console/operators/${supportRow.id}/update`, { role: 'viewer' });
    assert.equal(demoted.statusCode, 303);
    assert.equal((await consoleGet(h, s, '/console')).statusCode, 303, 'demoted: the session ended');
    const promoted = await consolePost(h, a2, `/console/operators/${supportRow.id}/update`, { role: 'admin' });
    assert.equal(promoted.statusCode, 400, 'an account without a second factor cannot become admin');
    assert.match(promoted.body, /has no second factor/);
    s = await login(h, support);
    assert.equal((await consolePost(h, a2, `/console/operators/${supportRow.id}/update`, { status: 'disabled' })).statusCode, 303);
    assert.equal((await consoleGet(h, s, '/console')).statusCode, 303, 'disabled: the session ended');
    h.advance();
    const refused = await h.app.inject({
      method: 'POST',
      url: '/console/login',
      headers: FORM,
      payload: formBody({ email: support.email, password: support.password }),
    });
    assert.equal(refused.statusCode, 401, 'a disabled account cannot log in');
    // The last admin cannot be demoted or disabled.
    const adminRow = await h.db.database.db.selectFrom('operators').select('id').where('email', '=', admin.email).executeTakeFirstOrThrow();
    const last = await consolePost(h, a2, `/console/operators/${adminRow.id}/update`, { role: 'viewer' });
    assert.equal(last.statusCode, 400);
    assert.match(last.body, /last active admin/);
    void a;
  });

  it('refuses a form without its CSRF token or from another site, and writes nothing', async (t) => {
    const h = await buildConsole(t, dialect);
    const admin = await makeOperator(h, 'ada@example.com', 'admin');
    const s = await login(h, admin);
    const { cardId } = await fundedCard(h);
    const before = await state(h);
    const url = `/console/cards/${cardId}/freeze`;
    assert.equal((await consolePost(h, { ...s, csrf: 'forged' }, url)).statusCode, 403);
    assert.equal((await consolePost(h, s, url, {}, { 'sec-fetch-site': 'cross-site' })).statusCode, 403);
    assert.equal((await consolePost(h, s, url, {}, { origin: 'https://evil.example' })).statusCode, 403);
    const other = await makeOperator(h, 'bob@example.com', 'admin');
    const s2 = await login(h, other);
    assert.equal((await consolePost(h, { cookie: s2.cookie, csrf: s.csrf }, url)).statusCode, 403, 'another session’s token');
    const after = await state(h);
    assert.deepEqual({ ...after, operators: before.operators, audit: before.audit }, before);
    assert.deepEqual(
      after.audit.filter((a) => a !== 'operator.login' && a !== 'operator.setup'),
      before.audit.filter((a) => a !== 'operator.login' && a !== 'operator.setup'),
    );
    assert.equal((await consolePost(h, s, url)).statusCode, 303, 'the same form with its token and origin goes through');
  });

  it('each role is refused what it may not do (403, nothing written) and does what it may, recorded in the audit trail', async (t) => {
    const h = await buildConsole(t, dialect);
    const rx = await receiver(t, h.merchant.webhookSecret);
    await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, notifyUrl: rx.url }, actor: 'test' });
    const { cardId } = await fundedCard(h, { topUp: 20 });
    const pending = await h.call('/api/network/holderCreate.html', holderBody({ email: 'pending@example.com' }));
    const kyc = kycBody();
    assert.equal((await h.call('/open/api/kyc/share/information', kyc)).status, 200);
    const db = h.db.database.db;
    const kycId = (await db.selectFrom('kyc_requests').select('id').executeTakeFirstOrThrow()).id;
    const eventId = (await db.selectFrom('callback_events').select('id').orderBy('created_at').executeTakeFirstOrThrow()).id;
    const other = await h.newMerchant();

    const sessions = new Map<string, ConsoleSessionCookies>();
    for (const role of OPERATOR_ROLES) sessions.set(role, await login(h, await makeOperator(h, `${role}@example.com`, role)));

    const actions: Array<{ name: string; permission: Permission; url: string; fields: Record<string, string>; audit: string }> = [
      {
        name: 'approve a cardholder',
        permission: 'review',
        url: `/console/holders/${pending.body.holderId}/review`,
        fields: { decision: 'approve' },
        audit: 'holder.review',
      },
      {
        name: 'decide a KYC request',
        permission: 'review',
        url: `/console/kyc/${kycId}/decide`,
        fields: { decision: 'reviewing' },
        audit: 'kyc.review',
      },
      {
        name: 'freeze a card',
        permission: 'cards',
        url: `/console/cards/${cardId}/freeze`,
        fields: { reason: 'fraud suspected' },
        audit: 'card.freeze',
      },
      {
        name: 'resend a callback',
        permission: 'callbacks',
        url: `/console/callbacks/${eventId}/resend`,
        fields: {},
        audit: 'callbacks.retry',
      },
      {
        name: 'disable a merchant',
        permission: 'merchants',
        url: `/console/merchants/${other.appId}/status`,
        fields: { status: 'disabled' },
        audit: 'merchant.update',
      },
      {
        name: 'fund a merchant',
        permission: 'funding',
        url: `/console/merchants/${h.merchant.appId}/fund`,
        fields: { amount: '125.50', currency: 'EUR', reference: 'wire 42', once: '0123456789abcdef0123456789abcdef' },
        audit: 'merchant.fund',
      },
      {
        name: 'create an operator',
        permission: 'operators',
        url: '/console/operators',
        fields: { email: 'new@example.com', role: 'viewer' },
        audit: 'operator.create',
      },
    ];
    for (const action of actions) {
      for (const role of OPERATOR_ROLES.filter((r) => !can(r, action.permission))) {
        const before = await state(h);
        const res = await consolePost(h, sessions.get(role) as ConsoleSessionCookies, action.url, action.fields);
        assert.equal(res.statusCode, 403, `${role} may not ${action.name}`);
        assert.match(res.body, new RegExp(`Your role, <b>${role}</b>, may not`));
        assert.deepEqual(await state(h), before, `${role} trying to ${action.name} wrote nothing`);
      }
      const minimal = PERMISSIONS[action.permission];
      h.advance(1000); // its audit record is the newest
      const res = await consolePost(h, sessions.get(minimal) as ConsoleSessionCookies, action.url, action.fields);
      assert.ok([200, 303].includes(res.statusCode), `${minimal} may ${action.name}: ${res.statusCode} ${res.body.slice(0, 300)}`);
      const record = await lastAudit(h);
      assert.equal(record.action, action.audit);
      assert.equal(record.actor, `${minimal}@example.com`);
      assert.equal(record.source, 'console');
      assert.equal(record.origin, '127.0.0.1');
    }
    // What the changes did.
    assert.equal(
      (await db.selectFrom('cardholders').select('audit_status').where('id', '=', pending.body.holderId).executeTakeFirstOrThrow())
        .audit_status,
      2,
    );
    assert.equal((await db.selectFrom('kyc_requests').select('status').executeTakeFirstOrThrow()).status, 'reviewing');
    const card = await db.selectFrom('cards').selectAll().where('id', '=', cardId).executeTakeFirstOrThrow();
    assert.deepEqual([card.status, card.status_source, card.status_reason], ['frozen', 'operator', 'fraud suspected']);
    assert.equal(
      (await db.selectFrom('merchants').select('status').where('id', '=', other.appId).executeTakeFirstOrThrow()).status,
      'disabled',
    );
    const freeze = await db.selectFrom('audit_events').selectAll().where('action', '=', 'card.freeze').executeTakeFirstOrThrow();
    assert.deepEqual(JSON.parse(freeze.before_json ?? ''), { status: 'active', statusSource: null, statusReason: null });
    assert.equal(JSON.parse(freeze.after_json ?? '').status, 'frozen');
    const created = await db.selectFrom('audit_events').selectAll().where('action', '=', 'operator.create').executeTakeFirstOrThrow();
    assert.equal(JSON.parse(created.after_json ?? '').setupToken, '[redacted]', 'the set-up token never reaches the trail');
    // Reading pages is every role's; the operators page only the admin's.
    for (const role of OPERATOR_ROLES) {
      const s = sessions.get(role) as ConsoleSessionCookies;
      for (const url of [
        '/console',
        '/console/reviews',
        `/console/cards/${cardId}`,
        '/console/callbacks',
        '/console/merchants',
        '/console/audit',
      ]) {
        assert.equal((await consoleGet(h, s, url)).statusCode, 200, `${role} reads ${url}`);
      }
      assert.equal((await consoleGet(h, s, '/console/operators')).statusCode, role === 'admin' ? 200 : 403);
    }
    // The audit page shows (and filters) what was done.
    const trail = await consoleGet(h, sessions.get('viewer') as ConsoleSessionCookies, '/console/audit?action=card.freeze');
    assert.match(trail.body, /support@example\.com/);
    assert.ok(!trail.body.includes('merchant.fund'), 'filtered');
  });

  it('the queues, search and the card page; opening sealed data is recorded; no page shows a full card number or CVV', async (t) => {
    const h = await buildConsole(t, dialect);
    const viewer = await login(h, await makeOperator(h, 'vic@example.com', 'viewer'));
    const { cardId, cardNo, holderId } = await fundedCard(h, { topUp: 100 });
    const auth = await ok(h, '/sandbox/network/authorize', { cardId, amount: 12.34, remark: 'Bookshop' });
    await ok(h, '/sandbox/network/clear', { tradeId: auth.tradeId });
    const declined = await h.call('/sandbox/network/authorize', { cardId, amount: 5000, randomStr: randomStr() });
    assert.equal(declined.status, 409);
    const details = (await h.call('/sandbox/network/cardDetails', { cardId, randomStr: randomStr() })).body.model;
    const waiting = await h.call(
      '/api/network/holderCreate.html',
      holderBody({ email: 'zoe.waiting@example.com', firstName: Buffer.from('Zoë').toString('base64') }),
    );
    const kyc = kycBody();
    await h.call('/open/api/kyc/share/information', kyc);

    const reviews = await consoleGet(h, viewer, '/console/reviews');
    assert.match(reviews.body, new RegExp(`/console/holders/${waiting.body.holderId}`));
    assert.ok(!reviews.body.includes(`/console/holders/${holderId}"`), 'an approved cardholder is not waiting');
    assert.match(reviews.body, new RegExp(String(kyc.requestNo)));
    assert.ok(!reviews.body.includes('zoe.waiting@example.com'), 'the queue shows no sealed data');

    h.advance(1000); // the view's record is the newest
    const holderPage = await consoleGet(h, viewer, `/console/holders/${waiting.body.holderId}`);
    assert.match(holderPage.body, /zoe\.waiting@example\.com/, 'the detail page opens the sealed data');
    assert.ok(!holderPage.body.includes('<button type="submit">Approve'), 'a viewer is offered no decision');
    const view = await lastAudit(h);
    assert.deepEqual([view.action, view.target, view.actor], ['holder.view', waiting.body.holderId, 'vic@example.com']);

    // One match opens it (303 to its page); more are listed.
    const find = async (q: string) => {
      const res = await consoleGet(h, viewer, `/console/search?q=${encodeURIComponent(q)}`);
      return res.statusCode === 303 ? String(res.headers.location) : res.body;
    };
    assert.match(await find('ZOE.WAITING@example.com'), new RegExp(`/console/holders/${waiting.body.holderId}`), 'by e-mail');
    assert.match(await find('zoë'), new RegExp(`/console/holders/${waiting.body.holderId}`), 'by name');
    assert.match(await find(`${cardNo.slice(0, 6)} ${cardNo.slice(-4)}`), new RegExp(`/console/cards/${cardId}`), 'by BIN and last four');
    assert.match(await find(auth.tradeId), new RegExp(`/console/cards/${cardId}`), 'a transaction by id');
    assert.match(await find(String(kyc.requestNo)), /^\/console\/kyc\/kyc_/);
    assert.match(await find('no such thing at all'), /0 results/);
    assert.match(await find(details.cardNo), new RegExp(`/console/cards/${cardId}`), 'by the full number (its keyed hash)');
    assert.match(await find(cardNo.slice(-4)), new RegExp(`/console/cards/${cardId}`), 'by last four alone');
    const masked = (await consoleGet(h, viewer, `/console/search?q=${encodeURIComponent(`${details.cardNo.slice(0, 12)}0000`)}`)).body;
    assert.ok(!masked.includes(details.cardNo.slice(0, 12)), 'a typed card number is shown back masked');
    // …whatever separates its digits (a no-break space, dots).
    for (const sep of ['\u00a0', '.', '\u202f']) {
      const typed = `${details.cardNo.slice(0, 4)}${sep}${details.cardNo.slice(4, 8)}${sep}${details.cardNo.slice(8, 12)}${sep}0000`;
      const body = (await consoleGet(h, viewer, `/console/search?q=${encodeURIComponent(typed)}`)).body;
      assert.ok(!body.replace(/\D/g, '').includes(details.cardNo.slice(6, 12)), `masked with ${JSON.stringify(sep)} between the digits`);
    }
    // What an operator searched for never reaches the log, however the parameter's name is written.
    for (const url of [
      `/console/search?q=${details.cardNo}`,
      `/console/search?%71=${details.cardNo}`,
      `/console/audit?%61ctor=a%40b.c&x=1`,
      '/console/setup?%74oken=abc',
    ]) {
      const logged = redactedUrl(url);
      assert.ok(!logged.includes(details.cardNo) && !logged.includes('a%40b.c') && !logged.includes('abc'), `${url} → ${logged}`);
    }
    assert.equal(redactedUrl('/console/search?page=2&q=x'), '/console/search?page=2&q=[redacted]');

    const card = await consoleGet(h, viewer, `/console/cards/${cardId}`);
    assert.equal(card.statusCode, 200);
    assert.match(card.body, /87\.66 EUR/, 'available balance');
    assert.match(card.body, /Bookshop/);
    assert.match(card.body, /insufficient/i, 'the decline and its reason');
    assert.match(card.body, /page 1 of 1, 3 in all/, 'the top-up, the authorization and its clearing');
    assert.match(card.body, /insufficient_funds/, 'the decline and its reason');

    const pages = [
      '/console',
      '/console/reviews',
      `/console/holders/${holderId}`,
      `/console/cards/${cardId}`,
      '/console/callbacks',
      `/console/merchants/${h.merchant.appId}`,
      '/console/audit',
      `/console/search?q=${cardId}`,
    ];
    for (const url of pages) {
      const body = (await consoleGet(h, viewer, url)).body;
      assert.ok(!body.includes(details.cardNo), `${url} shows no full card number`);
      // As a word: the ids on a page are random base32 (Crockford's, lower case), and one holds
      // `cvv` or `cvc` inside it now and then (this check once failed on such an id).
      assert.ok(!/\b(cvv|cvc)/i.test(body), `${url} shows no CVV`);
    }
  });

  it('holds against what an attack review tried: no session or identity data in the trail, guesses sent together, NUL bytes, merchants’ hosts, revived links', async (t) => {
    const h = await buildConsole(t, dialect);
    const db = h.db.database.db;
    const admin = await makeOperator(h, 'ada@example.com', 'admin');
    const s = await login(h, admin);
    const sessionValue = s.cookie.split('=')[1] as string;
    const cookie = await h.app.inject({ method: 'GET', url: '/console', headers: { cookie: s.cookie } });
    assert.equal(cookie.statusCode, 200);

    // A login's record names the account and the address, never the session; a review's never the
    // cardholder's sealed identity data.
    const pending = await h.call('/api/network/holderCreate.html', holderBody({ mobile: '+4915199990000', idno: 'X99TRAIL77' }));
    assert.equal((await consolePost(h, s, `/console/holders/${pending.body.holderId}/review`, { decision: 'approve' })).statusCode, 303);
    const trail = JSON.stringify(await db.selectFrom('audit_events').selectAll().execute());
    assert.ok(!trail.includes(sessionValue), 'no session id in the trail');
    assert.ok(!trail.includes('X99TRAIL77') && !trail.includes('+4915199990000'), 'no identity data in the trail');
    const auditPage = await consoleGet(h, s, '/console/audit');
    assert.ok(!auditPage.body.includes(sessionValue));

    // The cookie lives as long as the session may (12 h); the server ends it after 30 idle minutes.
    h.advance();
    const res = await h.app.inject({
      method: 'POST',
      url: '/console/login',
      headers: FORM,
      payload: formBody({ email: admin.email, password: admin.password, code: codeAt(admin.secret as string, stepOf(h.now.ms)) }),
    });
    assert.match(String(res.headers['set-cookie']), /Max-Age=43200; HttpOnly|HttpOnly.*Max-Age=43200|Max-Age=43200/);

    // Guesses sent together: each is counted before its password is checked, so no more than 5 are
    // tried, and the right password in the same burst does not get in once the account is locked.
    const victim = await makeOperator(h, 'vic@example.com', 'viewer', { totp: false });
    const burst = await Promise.all(
      Array.from({ length: 13 }, (_, i) =>
        h.app.inject({
          method: 'POST',
          url: '/console/login',
          headers: FORM,
          // From as many networks: one network holds one place in the hashing queue at a time.
          remoteAddress: `198.51.${i}.1`,
          payload: formBody({ email: victim.email, password: i === 12 ? victim.password : `wrong guess number ${i}` }),
        }),
      ),
    );
    assert.deepEqual(
      burst.map((r) => r.statusCode),
      Array.from({ length: 13 }, () => 401),
    );
    const locked = await db.selectFrom('operators').select('locked_until').where('email', '=', victim.email).executeTakeFirstOrThrow();
    assert.ok(Number(locked.locked_until) > h.now.ms, 'locked');
    assert.equal((await db.selectFrom('audit_events').select('id').where('action', '=', 'operator.locked').execute()).length, 1);
    assert.equal(
      (await db.selectFrom('audit_events').select('id').where('actor', '=', victim.email).where('action', '=', 'operator.login').execute())
        .length,
      0,
    );

    // A NUL byte anywhere is text like any other: no 500 (PostgreSQL refuses it in a parameter).
    const nul = [
      await h.app.inject({ method: 'POST', url: '/console/login', headers: FORM, payload: 'email=a%00b%40example.com&password=x' }),
      await consoleGet(h, s, '/console/search?q=%C3%A9%00'),
      await consoleGet(h, s, '/console/audit?actor=%00&target=%00x'),
      await consolePost(h, s, `/console/merchants/${h.merchant.appId}/domains/remove`, { host: '\u0000' }),
    ];
    assert.deepEqual(
      nul.map((r) => r.statusCode),
      [401, 200, 200, 404],
    );

    // Not on a merchant's mapped card-page host: that host's DNS and TLS are the merchant's.
    await db
      .insertInto('merchant_domains')
      .values({
        host: 'pay.merchant.example',
        merchant_id: h.merchant.appId,
        cert_pem: null,
        key_enc: null,
        cert_not_after: null,
        created_at: h.now.ms,
      })
      .execute();
    h.app.svc.domains.forget();
    const onMerchant = await h.app.inject({ method: 'GET', url: '/console/login', headers: { host: 'pay.merchant.example' } });
    assert.equal(onMerchant.statusCode, 404);
    const postOnMerchant = await h.app.inject({
      method: 'POST',
      url: '/console/login',
      headers: { ...FORM, host: 'pay.merchant.example' },
      payload: formBody({ email: admin.email, password: admin.password }),
    });
    assert.equal(postOnMerchant.statusCode, 404);

    // A disabled account's set-up link does not come back when the account is enabled again.
    const made = await runVerb(h.app.svc, createOperator, { input: { email: 'late@example.com', role: 'viewer' }, actor: 'test' });
    const late = await db.selectFrom('operators').select('id').where('email', '=', 'late@example.com').executeTakeFirstOrThrow();
    const a2 = await login(h, admin);
    assert.equal((await consolePost(h, a2, `/console/operators/${late.id}/update`, { status: 'disabled' })).statusCode, 303);
    assert.equal((await consolePost(h, a2, `/console/operators/${late.id}/update`, { status: 'active' })).statusCode, 303);
    assert.equal((await consoleGet(h, null, `/console/setup?token=${made.setupToken}`)).statusCode, 410);

    // Another method on a console path: the console's own 404 page, not the API's envelope.
    const del = await h.app.inject({ method: 'DELETE', url: '/console/operators', headers: { cookie: a2.cookie } });
    assert.equal(del.statusCode, 404);
    assert.match(String(del.headers['content-type']), /text\/html/);
  });

  it('callbacks: failed ones per merchant with each attempt, resent one or all', async (t) => {
    const h = await buildConsole(t, dialect, {
      callbacks: { worker: false, retryScheduleMs: [20], maxAgeMs: 400, timeoutMs: 500, pollMs: 20 },
    });
    const rx = await receiver(t, h.merchant.webhookSecret);
    rx.respond(...Array.from({ length: 100 }, () => (res: import('node:http').ServerResponse) => res.writeHead(503).end('down')));
    await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, notifyUrl: rx.url }, actor: 'test' });
    await fundedCard(h, { topUp: 10 });
    const { CallbackWorker } = await import('../src/callbacks/worker.js');
    const worker = new CallbackWorker(h.app.svc);
    const db = h.db.database.db;
    const deadline = Date.now() + 10_000;
    while ((await db.selectFrom('callback_events').select('id').where('status', '=', 'pending').execute()).length > 0) {
      assert.ok(Date.now() < deadline, 'the events settle');
      h.advance(100);
      await worker.pass();
      await new Promise((r) => setTimeout(r, 10));
    }
    const failed = await db.selectFrom('callback_events').selectAll().where('status', '=', 'failed').execute();
    assert.ok(failed.length >= 1);
    const support = await login(h, await makeOperator(h, 'sam@example.com', 'support'));
    const list = await consoleGet(h, support, '/console/callbacks?status=failed');
    for (const e of failed) assert.match(list.body, new RegExp(e.id));
    const one = failed[0] as (typeof failed)[number];
    const detail = await consoleGet(h, support, `/console/callbacks/${one.id}`);
    assert.match(detail.body, /503/);
    assert.match(detail.body, /\d+ ms/);
    rx.reset();
    assert.equal((await consolePost(h, support, `/console/callbacks/${one.id}/resend`)).statusCode, 303);
    assert.equal(
      (await db.selectFrom('callback_events').select('status').where('id', '=', one.id).executeTakeFirstOrThrow()).status,
      'pending',
    );
    const all = await consolePost(h, support, '/console/callbacks/resend-failed', { merchant: h.merchant.appId });
    assert.equal(all.statusCode, 303);
    assert.equal((await db.selectFrom('callback_events').select('id').where('status', '=', 'failed').execute()).length, 0);
    await worker.pass();
    assert.ok(
      rx.received.some((r) => r.body.eventId === one.id && r.verified),
      'delivered once resent',
    );
  });

  it('callbacks: an endpoint whose circuit breaker is open is shown with its state; resending its events closes it', async (t) => {
    const h = await buildConsole(t, dialect);
    const db = h.db.database.db;
    const url = 'http://127.0.0.1:9/hooks';
    const { emitEvent } = await import('../src/callbacks/outbox.js');
    const id = await h.db.database.withTx((tx) =>
      emitEvent(tx, { merchantId: h.merchant.appId, type: 'holder.audit', subject: 'holder:x', url, body: {}, now: Date.now() }),
    );
    await db.updateTable('callback_events').set({ status: 'failed' }).where('id', '=', id).execute();
    await db
      .insertInto('callback_endpoints')
      .values({
        merchant_id: h.merchant.appId,
        endpoint: 'http://127.0.0.1:9',
        state: 'open',
        failures: 7,
        trips: 2,
        opened_at: Date.now(),
        open_until: Date.now() + 20_000,
        probe_owner: null,
        probe_until: null,
        last_error: 'connect ECONNREFUSED 127.0.0.1:9',
        changed_at: Date.now(),
      })
      .execute();
    const support = await login(h, await makeOperator(h, 'sue@example.com', 'support'));
    const page = await consoleGet(h, support, '/console/callbacks');
    assert.match(page.body, /<h2>Endpoints<\/h2>/);
    assert.match(page.body, /http:\/\/127\.0\.0\.1:9/);
    assert.match(page.body, />open</);
    assert.match(page.body, /ECONNREFUSED/);
    assert.equal((await consolePost(h, support, '/console/callbacks/resend-failed', { merchant: h.merchant.appId })).statusCode, 303);
    assert.deepEqual(await db.selectFrom('callback_endpoints').selectAll().execute(), [], 'the operator resent: the breaker closed');
    assert.doesNotMatch((await consoleGet(h, support, '/console/callbacks')).body, /<h2>Endpoints<\/h2>/);
  });
});

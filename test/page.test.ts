import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sha256 } from '../src/page/links.js';
import { build, type Harness, holderBody, randomStr, rowCounts } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

const LINK = '/open/merchant/api/v2';

async function open(h: Harness, webUrl: string) {
  const url = new URL(webUrl);
  return h.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
}

eachDialect('login-free page (interface 4.4)', (dialect) => {
  it('a signed request gets a one-time webUrl; opening it starts a session and shows the holder’s card and transactions', async (t) => {
    const h = await build(t, dialect);
    const { cardId, cardNo } = await fundedCard(h, { topUp: 42.5 });
    await ok(h, '/sandbox/network/authorize', { cardId, amount: 2.25, remark: 'Corner café' });
    const res = await h.call(LINK, { email: 'alice@example.com' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.code, '0');
    const webUrl: string = res.body.model.webUrl;
    assert.match(webUrl, /^http:\/\/127\.0\.0\.1:8080\/page\/open\?token=[A-Za-z0-9_-]{43}$/);
    // Only a hash of the token is stored.
    const token = new URL(webUrl).searchParams.get('token') ?? '';
    const row = await h.db.database.db.selectFrom('page_links').selectAll().executeTakeFirstOrThrow();
    assert.equal(row.token_hash, sha256(token));
    assert.ok(!JSON.stringify(row).includes(token));

    const first = await open(h, webUrl);
    assert.equal(first.statusCode, 303);
    assert.equal(first.headers.location, '/page', 'redirects to an address without the token');
    const cookie = String(first.headers['set-cookie']);
    assert.match(cookie, /^cp_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=900$/);
    const page = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie: cookie.split(';')[0] ?? '' } });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(String(page.headers['content-security-policy']), /default-src 'none'; style-src 'sha256-/);
    assert.equal(page.headers['referrer-policy'], 'no-referrer');
    assert.equal(page.headers['cache-control'], 'no-store');
    assert.match(page.body, /<h1>Alice Schmidt<\/h1>/);
    assert.ok(page.body.includes(cardNo.slice(-4)));
    assert.match(page.body, /40\.25 EUR/, 'available balance');
    assert.match(page.body, /Corner café/);
    assert.doesNotMatch(page.body, /<script/i);
    // The full card number is not on the page.
    const pan = (await h.call('/sandbox/network/cardDetails', { cardId, randomStr: randomStr() })).body.model.cardNo;
    assert.ok(!page.body.includes(pan));

    const second = await open(h, webUrl);
    assert.equal(second.statusCode, 410);
    assert.match(second.body, /Link expired or already used/);
    assert.doesNotMatch(second.body, /Alice|Schmidt|EUR/);
  });

  it('no e-mail: a product page without personal data; an e-mail without a cardholder: "no card yet"', async (t) => {
    const h = await build(t, dialect);
    await h.call('/api/network/holderCreate.html', holderBody());
    const anon = await h.call(LINK, {});
    const page = await open(h, anon.body.model.webUrl);
    const view = await h.app.inject({
      method: 'GET',
      url: '/page',
      headers: { cookie: String(page.headers['set-cookie']).split(';')[0] ?? '' },
    });
    assert.match(view.body, /Your virtual card/);
    assert.doesNotMatch(view.body, /Alice|Schmidt/);
    // An empty e-mail is no e-mail (empty values are not signed either).
    const empty = await h.call(LINK, { email: '' });
    const p0 = await open(h, empty.body.model.webUrl);
    const v0 = await h.app.inject({
      method: 'GET',
      url: '/page',
      headers: { cookie: String(p0.headers['set-cookie']).split(';')[0] ?? '' },
    });
    assert.match(v0.body, /Open this page from your account/);
    const unknown = await h.call(LINK, { email: 'nobody@example.com' });
    const p2 = await open(h, unknown.body.model.webUrl);
    const v2 = await h.app.inject({
      method: 'GET',
      url: '/page',
      headers: { cookie: String(p2.headers['set-cookie']).split(';')[0] ?? '' },
    });
    assert.match(v2.body, /No card yet/);
    const none = await h.app.inject({ method: 'GET', url: '/page' });
    assert.equal(none.statusCode, 401);
    assert.match(none.body, /Your session has ended/);
  });

  it('an expired link opens nothing; a forged or malformed token neither', async (t) => {
    const h = await build(t, dialect);
    const res = await h.call(LINK, { email: 'alice@example.com' });
    await h.db.database.db
      .updateTable('page_links')
      .set({ expires_at: Date.now() - 1 })
      .execute();
    assert.equal((await open(h, res.body.model.webUrl)).statusCode, 410);
    for (const q of ['', '?token=', `?token=${'A'.repeat(43)}`, '?token=%00', '?token[]=x']) {
      const r = await h.app.inject({ method: 'GET', url: `/page/open${q}` });
      assert.equal(r.statusCode, 410, q);
    }
  });

  it('every bad input: long e-mail, bad e-mail, long appId, long sign, wrong sign (exact body), unknown appId, no permission, rate limit', async (t) => {
    const h = await build(t, dialect);
    const before = await rowCounts(h);
    const long = await h.call(LINK, { email: `${'a'.repeat(53)}@example.com` });
    assert.deepEqual([long.status, long.body.code], [400, '1002']);
    assert.match(long.body.msg, /^email: .*at most 64/);
    assert.equal((await h.call(LINK, { email: 'not-an-email' })).body.code, '1002');
    const longApp = await h.call(LINK, { appId: 'm'.repeat(33), sign: 'x' }, { raw: true });
    assert.match(longApp.body.msg, /^appId: must be at most 32/);
    const longSign = await h.call(LINK, { appId: h.merchant.appId, sign: 'a'.repeat(513) }, { raw: true });
    assert.equal(longSign.body.code, '1006');
    const wrong = await h.call(LINK, { appId: h.merchant.appId, email: 'alice@example.com', sign: 'f'.repeat(64) }, { raw: true });
    assert.equal(wrong.status, 401);
    const { traceId, ...rest } = wrong.body;
    assert.deepEqual(rest, { code: '1006', msg: 'Signature error', model: null, error: true, success: false });
    assert.match(traceId, /^[0-9a-f]{32}$/);
    assert.equal((await h.call(LINK, { appId: 'mch_unknown' })).body.code, '2601');
    const noPermission = await h.newMerchant({ loginFree: false });
    const denied = await h.call(LINK, { email: 'alice@example.com' }, { merchant: noPermission });
    assert.deepEqual([denied.status, denied.body.code], [403, '2605']);
    assert.equal((await h.db.database.db.selectFrom('page_links').select('token_hash').execute()).length, 0, 'no link was made');
    assert.equal((await rowCounts(h)).idempotency_keys, before.idempotency_keys);
    for (let i = 0; i < 10; i++) assert.equal((await h.call(LINK, { email: 'alice@example.com' })).status, 200);
    const limited = await h.call(LINK, { email: 'alice@example.com' });
    assert.deepEqual([limited.status, limited.body.code], [429, '1009']);
    assert.match(String(limited.headers['retry-after']), /^\d+$/);
    assert.equal((await h.call(LINK, { email: 'bob@example.com' })).status, 200, 'another e-mail is not limited');
  });
});

import assert from 'node:assert/strict';
import { it } from 'node:test';
import { addDomain } from '../src/domains/store.js';
import { sha256 } from '../src/page/links.js';
import { runVerb } from '../src/runner.js';
import { build, type Harness, holderBody, randomStr, rowCounts, type TestMerchant } from './helpers/app.js';
import { balances, fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

const LINK = '/open/merchant/api/v2';

async function open(h: Harness, webUrl: string) {
  const url = new URL(webUrl);
  return h.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
}

/** Opens a fresh link for the e-mail and returns the session cookie and the page's form token. */
async function signIn(h: Harness, email = 'alice@example.com', merchant?: TestMerchant) {
  const res = await h.call(LINK, { email }, merchant ? { merchant } : {});
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const opened = await open(h, res.body.model.webUrl);
  const cookie = String(opened.headers['set-cookie']).split(';')[0] ?? '';
  const page = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } });
  const form = /name="form" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
  return { cookie, form, page };
}

function post(h: Harness, url: string, cookie: string, payload: string, headers: Record<string, string> = {}) {
  return h.app.inject({
    method: 'POST',
    url,
    payload,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
  });
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

  it('show card details: the full number, expiry and CVV for 30 seconds, each reveal recorded; never without the form token, cross-site or for another card', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 10 });
    const details = (await h.call('/sandbox/network/cardDetails', { cardId, randomStr: randomStr() })).body.model;
    const { cookie, form, page } = await signIn(h);
    assert.match(form, /^[A-Za-z0-9_-]{43}$/);
    assert.ok(!page.body.includes(details.cardNo));
    const url = `/page/cards/${cardId}/reveal`;
    const reveals = async () => (await h.db.database.db.selectFrom('card_reveals').selectAll().execute()).length;

    // Refused: no form token, a wrong one, a cross-site post, a JSON body, no session.
    const refused = [
      await post(h, url, cookie, ''),
      await post(h, url, cookie, `form=${'A'.repeat(43)}`),
      await post(h, url, cookie, `form=${form}`, { origin: 'https://evil.example' }),
      await post(h, url, cookie, `form=${form}`, { 'sec-fetch-site': 'cross-site' }),
      await post(h, url, cookie, `form=${form}`, { origin: 'null' }),
      await post(h, url, cookie, `form=${form}`, { origin: 'null', 'sec-fetch-site': 'same-site' }),
      await h.app.inject({ method: 'POST', url, payload: { form }, headers: { cookie } }),
    ];
    for (const r of refused) {
      assert.equal(r.statusCode, 403);
      assert.ok(!r.body.includes(details.cardNo));
    }
    assert.equal((await post(h, url, '', `form=${form}`)).statusCode, 401);
    assert.equal(await reveals(), 0);

    // What Chromium sends under Referrer-Policy: no-referrer: a null origin, same-origin metadata.
    const shown = await post(h, url, cookie, `form=${form}`, { origin: 'null', 'sec-fetch-site': 'same-origin' });
    assert.equal(shown.statusCode, 200, shown.body);
    assert.equal(shown.headers['cache-control'], 'no-store');
    assert.ok(shown.body.includes(details.cardNo.replace(/(.{4})/g, '$1 ').trim()), 'the full number');
    assert.ok(shown.body.includes(details.expiry) && shown.body.includes(`aria-label="CVV">${details.cvv}<`));
    assert.match(shown.body, /<meta http-equiv="refresh" content="30;url=\/page">/);
    const [record] = await h.db.database.db.selectFrom('card_reveals').selectAll().execute();
    assert.equal(record?.card_id, cardId);
    assert.equal(record?.session_hash, sha256(cookie.split('=')[1] ?? ''));
    assert.equal((await post(h, url, cookie, `form=${form}`, { origin: 'http://localhost:80' })).statusCode, 200);
    assert.equal(await reveals(), 2, 'every reveal is recorded');
    // The page after the refresh is masked again.
    const after = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } });
    assert.ok(!after.body.includes(details.cardNo));

    // Another merchant's card, or one that does not exist: not found, nothing shown.
    const other = await h.newMerchant({ loginFree: true });
    const foreign = await fundedCard(h, { merchant: other });
    for (const id of [foreign.cardId, 'card_nope']) {
      const r = await post(h, `/page/cards/${id}/reveal`, cookie, `form=${form}`);
      assert.equal(r.statusCode, 404);
    }
    assert.equal(await reveals(), 2);
  });

  it('freeze and unfreeze from the page: the card declines while frozen and the merchant gets card.status callbacks', async (t) => {
    const h = await build(t, dialect);
    await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
    const { cardId, cardNo } = await fundedCard(h, { topUp: 20 });
    const { cookie, form } = await signIn(h);

    const frozen = await post(h, `/page/cards/${cardId}/freeze`, cookie, `form=${form}`);
    assert.equal(frozen.statusCode, 303);
    assert.equal(frozen.headers.location, '/page?done=frozen');
    assert.equal((await balances(h, cardId)).status, 'frozen');
    const declined = await h.call('/sandbox/network/authorize', { cardId, amount: 1, randomStr: randomStr() });
    assert.equal(declined.body.code, '2724');
    const page = await h.app.inject({ method: 'GET', url: '/page?done=frozen', headers: { cookie } });
    assert.match(page.body, /Your card is frozen/);
    assert.match(page.body, />Unfreeze card</);
    assert.doesNotMatch(page.body, />Show card details</);
    assert.equal((await post(h, `/page/cards/${cardId}/reveal`, cookie, `form=${form}`)).statusCode, 409);
    // Freezing twice changes nothing and sends nothing more.
    assert.equal((await post(h, `/page/cards/${cardId}/freeze`, cookie, `form=${form}`)).statusCode, 303);
    assert.equal((await post(h, `/page/cards/${cardId}/freeze`, cookie, 'form=x')).statusCode, 403);

    assert.equal((await post(h, `/page/cards/${cardId}/unfreeze`, cookie, `form=${form}`)).headers.location, '/page?done=unfrozen');
    assert.equal((await balances(h, cardId)).status, 'active');
    await ok(h, '/sandbox/network/authorize', { cardId, amount: 1 });

    const events = await h.db.database.db
      .selectFrom('callback_events')
      .select(['payload', 'sequence'])
      .where('type', '=', 'card.status')
      .orderBy('sequence')
      .execute();
    const bodies = events.map((e) => JSON.parse(e.payload));
    assert.deepEqual(
      bodies.map((b) => [b.type, b.cardId, b.cardNo, b.status, b.actor]),
      [
        ['card.status', cardId, cardNo, 'frozen', 'cardholder'],
        ['card.status', cardId, cardNo, 'active', 'cardholder'],
      ],
    );
    assert.ok(Number(events[1]?.sequence) > Number(events[0]?.sequence), 'ordered with the card’s trade events');
  });

  it('a mapped host: links use https://HOST; another merchant’s token or session there is refused, and the token stays unspent', async (t) => {
    const h = await build(t, dialect);
    const other = await h.newMerchant({ loginFree: true });
    await runVerb(h.app.svc, addDomain, { input: { appId: h.merchant.appId, host: 'cards.alpha.test' }, actor: 'test' });
    await runVerb(h.app.svc, addDomain, { input: { appId: other.appId, host: 'pay.beta.test' }, actor: 'test' });
    const mine = (await h.call(LINK, { email: 'alice@example.com' })).body.model.webUrl as string;
    assert.match(mine, /^https:\/\/cards\.alpha\.test\/page\/open\?token=/, 'TLS ended in front: no port');
    const theirs = new URL((await h.call(LINK, { email: 'alice@example.com' }, { merchant: other })).body.model.webUrl);
    const at = (host: string, url: string, cookie?: string) =>
      h.app.inject({ method: 'GET', url, headers: { host, ...(cookie ? { cookie } : {}) } });
    const path = `${theirs.pathname}${theirs.search}`;
    assert.equal((await at('cards.alpha.test', path)).statusCode, 403);
    const opened = await at('pay.beta.test', path);
    assert.equal(opened.statusCode, 303, 'still unspent after the refusal');
    const cookie = String(opened.headers['set-cookie']).split(';')[0] ?? '';
    assert.equal((await at('pay.beta.test', '/page', cookie)).statusCode, 200);
    assert.equal((await at('cards.alpha.test', '/page', cookie)).statusCode, 403);
    // An unmapped host (the public address) takes any merchant's session.
    assert.equal((await at('127.0.0.1:8080', '/page', cookie)).statusCode, 200);
  });
});

import assert from 'node:assert/strict';
import { it } from 'node:test';
import { updateMerchant } from '../src/merchants/manage.js';
import { rollCredentials } from '../src/merchants/roll.js';
import { runVerb } from '../src/runner.js';
import { createServices } from '../src/services.js';
import { build, type Harness, randomStr } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

const LINK = '/open/merchant/api/v2';

/** A page link for the e-mail, not opened: its path and query. */
async function link(h: Harness, email = 'alice@example.com'): Promise<string> {
  const res = await h.call(LINK, { email });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const url = new URL(res.body.model.webUrl);
  return `${url.pathname}${url.search}`;
}

/** Opens a fresh link and returns the session cookie and the page's form token. */
async function signIn(h: Harness) {
  const opened = await h.app.inject({ method: 'GET', url: await link(h) });
  assert.equal(opened.statusCode, 303);
  const cookie = String(opened.headers['set-cookie']).split(';')[0] ?? '';
  const page = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } });
  const form = /name="form" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
  return { cookie, form };
}

const post = (h: Harness, cookie: string, cardId: string, action: string, form: string) =>
  h.app.inject({
    method: 'POST',
    url: `/page/cards/${cardId}/${action}`,
    payload: `form=${form}`,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
  });

/** What a page action could write: reveal records, card states, callback events, sessions. */
async function footprint(h: Harness) {
  const db = h.db.database.db;
  return {
    reveals: (await db.selectFrom('card_reveals').select('id').execute()).length,
    cards: (await db.selectFrom('cards').select(['id', 'status', 'updated_at']).orderBy('id').execute()).map((c) => JSON.stringify(c)),
    events: (await db.selectFrom('callback_events').select('id').execute()).length,
    sessions: (await db.selectFrom('page_sessions').select('id_hash').execute()).length,
  };
}

eachDialect('the card page: access ends with the merchant, the cardholder or the card', (dialect) => {
  for (const [what, change, undo] of [
    ['disabled', { status: 'disabled' }, { status: 'active' }],
    ['loses the login-free permission', { loginFree: false }, { loginFree: true }],
  ] as const) {
    it(`a merchant ${what} by another process: its open sessions and unopened links end at once, for good`, async (t) => {
      let now = Date.now();
      const h = await build(t, dialect, { merchantCacheMs: 5000 }, { clock: () => now });
      await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
      const { cardId } = await fundedCard(h, { topUp: 10 });
      const { cookie, form } = await signIn(h);
      const unopened = await link(h);
      // The CLI's verb in another process (its own services): this instance's merchant cache still
      // holds the old state until its bound passes.
      const cli = createServices(h.config, h.db.database, h.app.log, () => now);
      const set = (v: typeof change | typeof undo) =>
        runVerb(cli, updateMerchant, { input: { appId: h.merchant.appId, ...v }, actor: 'test' });
      await set(change);
      // Ended in the same transaction as the change: not even this instance's merchant cache, which
      // still holds the old state for its bound, keeps a session going.
      const before = await footprint(h);
      assert.equal(before.sessions, 0, 'the sessions are gone');
      const page = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } });
      assert.equal(page.statusCode, 401);
      assert.match(page.body, /Your session has ended/);
      assert.doesNotMatch(page.body, /Alice|EUR/);
      for (const action of ['reveal', 'freeze']) {
        const r = await post(h, cookie, cardId, action, form);
        assert.equal(r.statusCode, 401, action);
        assert.match(r.body, /Your session has ended/);
      }
      const opened = await h.app.inject({ method: 'GET', url: unopened });
      assert.equal(opened.statusCode, 410);
      assert.equal(opened.headers['set-cookie'], undefined);
      assert.deepEqual(await footprint(h), before, 'nothing revealed, frozen, sent or started');
      // Access given back: nothing comes back with it (ended, not suspended); a new link works.
      await set(undo);
      now += 5001;
      assert.equal((await h.app.inject({ method: 'GET', url: unopened })).statusCode, 410);
      assert.equal((await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } })).statusCode, 401);
      assert.equal((await h.app.inject({ method: 'GET', url: await link(h) })).statusCode, 303);
    });
  }

  it('a card id in the address that no card could have (NUL, control characters, too long) is 404, never a 500', async (t) => {
    const h = await build(t, dialect);
    await fundedCard(h, { topUp: 10 });
    const { cookie, form } = await signIn(h);
    for (const id of ['%00', 'card_%00x', 'card_%1b', 'x'.repeat(65), '%C2%9B']) {
      for (const action of ['reveal', 'freeze', 'unfreeze']) {
        const r = await post(h, cookie, id, action, form);
        assert.equal(r.statusCode, 404, `${action} ${id}: ${r.body.slice(0, 200)}`);
      }
      const page = await h.app.inject({ method: 'GET', url: `/page?card=${id}&older=1`, headers: { cookie } });
      assert.equal(page.statusCode, 200, id);
    }
  });

  it('a merchant whose credentials are rolled (after a leak): every open session and unopened link ends', async (t) => {
    const h = await build(t, dialect);
    await fundedCard(h, { topUp: 10 });
    const { cookie } = await signIn(h);
    const unopened = await link(h);
    const cli = createServices(h.config, h.db.database, h.app.log, Date.now);
    await runVerb(cli, rollCredentials, { input: { appId: h.merchant.appId, webhookSecret: true }, actor: 'test' });
    assert.equal((await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } })).statusCode, 401);
    assert.equal((await h.app.inject({ method: 'GET', url: unopened })).statusCode, 410);
  });

  for (const status of [0, 1, 4]) {
    it(`a cardholder whose auditStatus leaves 2 (now ${status}): its cards leave the page, and no form post reaches them`, async (t) => {
      const h = await build(t, dialect);
      const active = await fundedCard(h, { topUp: 10 });
      const frozen = await h.call('/api/network/cardApply.html', {
        holderId: active.holderId,
        currency: 'EUR',
        randomStr: randomStr(),
      });
      const frozenId = frozen.body.model.cardId as string;
      const { cookie, form } = await signIn(h);
      assert.equal((await post(h, cookie, frozenId, 'freeze', form)).statusCode, 303);
      const shown = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } });
      assert.ok(shown.body.includes(active.cardId) && shown.body.includes(frozenId), 'shown while approved');

      await h.db.database.db.updateTable('cardholders').set({ audit_status: status }).where('id', '=', active.holderId).execute();
      const before = await footprint(h);
      const page = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } });
      assert.equal(page.statusCode, 200);
      assert.ok(!page.body.includes(active.cardId) && !page.body.includes(frozenId), 'no card on the page');
      assert.doesNotMatch(page.body, /name="form"/, 'no form at all');
      for (const [cardId, action] of [
        [active.cardId, 'reveal'],
        [active.cardId, 'freeze'],
        [frozenId, 'unfreeze'],
        [frozenId, 'reveal'],
      ] as const) {
        const r = await post(h, cookie, cardId, action, form);
        assert.equal(r.statusCode, 404, `${action} ${r.body}`);
      }
      assert.deepEqual(await footprint(h), before, 'nothing revealed or changed');
    });
  }

  it('a closed card is not shown and cannot be revealed, frozen or unfrozen from the page', async (t) => {
    const h = await build(t, dialect);
    const { cardId, holderId } = await fundedCard(h, { topUp: 10 });
    const other = await h.call('/api/network/cardApply.html', { holderId, currency: 'EUR', randomStr: randomStr() });
    const openId = other.body.model.cardId as string;
    const { cookie, form } = await signIn(h);
    await h.db.database.db.updateTable('cards').set({ status: 'closed' }).where('id', '=', cardId).execute();
    const before = await footprint(h);
    const page = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } });
    assert.ok(!page.body.includes(cardId), 'the closed card is gone');
    assert.ok(page.body.includes(openId), 'the holder’s other card is still there');
    for (const action of ['reveal', 'freeze', 'unfreeze']) {
      assert.equal((await post(h, cookie, cardId, action, form)).statusCode, 404, action);
    }
    assert.deepEqual(await footprint(h), before);
  });
});

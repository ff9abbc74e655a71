// "I don't recognise this" on the card page (issue 29.7) through the real app on both databases: an
// unsubmitted fraudulent dispute for the merchant, the card frozen when asked, the dispute's status
// shown on the purchase afterwards, the audit record naming the cardholder; and refusals (another
// holder's purchase, an ended session, a session of a rolled credential generation, a forged form)
// that write nothing.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { checkLedger } from '../src/ledger/check.js';
import { PAGE_EXPLANATION } from '../src/page/card-disputes.js';
import { build, type Harness, holderBody } from './helpers/app.js';
import { balances } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';
import { clearedPurchase, disputeOk } from './helpers/disputes.js';

const LINK = '/open/merchant/api/v2';

/** Opens a fresh link for the e-mail: the session cookie, the page's form token, the page. */
async function signIn(h: Harness, email = 'alice@example.com') {
  const res = await h.call(LINK, { email });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const url = new URL(res.body.model.webUrl);
  const opened = await h.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
  const cookie = String(opened.headers['set-cookie']).split(';')[0] ?? '';
  const page = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } });
  const form = /name="form" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
  return { cookie, form, page };
}

function report(h: Harness, s: { cookie: string; form: string }, cardId: string, purchaseId: string, fields: Record<string, string> = {}) {
  return h.app.inject({
    method: 'POST',
    url: `/page/cards/${cardId}/purchases/${purchaseId}/dispute`,
    payload: new URLSearchParams({ form: s.form, ...fields }).toString(),
    headers: { cookie: s.cookie, 'content-type': 'application/x-www-form-urlencoded' },
  });
}

/** Everything a report could write. */
async function written(h: Harness) {
  const db = h.db.database.db;
  return {
    disputes: await db.selectFrom('disputes').select(['id', 'status']).orderBy('id').execute(),
    events: (await db.selectFrom('dispute_events').select('id').execute()).length,
    audit: (await db.selectFrom('audit_events').select('id').execute()).length,
    cards: await db.selectFrom('cards').select(['id', 'status', 'status_source']).orderBy('id').execute(),
  };
}

eachDialect('the card page: “I don’t recognise this”', (dialect) => {
  it('reports a cleared purchase: an unsubmitted fraudulent dispute, the card frozen, the status shown, audited', async (t) => {
    const h = await build(t, dialect);
    const { cardId, tradeId, authId } = await clearedPurchase(h, { topUp: 100, amount: 40 });
    const pending = await h.call('/sandbox/network/authorize', { cardId, amount: 5, remark: 'Still pending', randomStr: 'p'.repeat(32) });
    const s = await signIn(h);
    // The cleared purchase offers it; the pending one does not.
    assert.ok(s.page.body.includes(`/page/cards/${cardId}/purchases/${authId}/dispute`));
    assert.ok(!s.page.body.includes(`/purchases/${pending.body.model.tradeId}/dispute`));
    assert.match(s.page.body, /<summary>I don’t recognise this<\/summary>/);

    // Posted to the pending one anyway: refused, nothing written.
    const untouched = await written(h);
    const early = await report(h, s, cardId, pending.body.model.tradeId, { freeze: 'on' });
    assert.equal(early.statusCode, 409);
    assert.match(early.body, /cannot be disputed/);
    assert.deepEqual(await written(h), untouched);

    const res = await report(h, s, cardId, authId, { freeze: 'on' });
    assert.equal(res.statusCode, 303, res.body);
    assert.equal(res.headers.location, '/page?done=reported-frozen');
    const d = await h.db.database.db.selectFrom('disputes').selectAll().executeTakeFirstOrThrow();
    assert.deepEqual(
      [d.trade_id, d.reason, d.status, Number(d.amount), d.merchant_id],
      [tradeId, 'fraudulent', 'unsubmitted', 4000, h.merchant.appId],
    );
    // The merchant sees it as any dispute of its own, with the page's explanation.
    const model = await disputeOk(h, 'query', { disputeId: d.id });
    assert.equal(model.explanation, PAGE_EXPLANATION);
    // Frozen by the cardholder: it may unfreeze it itself.
    const card = await h.db.database.db
      .selectFrom('cards')
      .select(['status', 'status_source'])
      .where('id', '=', cardId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(card, { status: 'frozen', status_source: 'cardholder' });
    assert.equal((await balances(h, cardId)).available, 55, 'no money moves at creation');
    const history = await h.db.database.db.selectFrom('dispute_events').selectAll().executeTakeFirstOrThrow();
    assert.deepEqual([history.kind, history.actor], ['created', 'cardholder']);
    const holder = await h.db.database.db.selectFrom('cards').select('holder_id').where('id', '=', cardId).executeTakeFirstOrThrow();
    const audit = await h.db.database.db.selectFrom('audit_events').selectAll().executeTakeFirstOrThrow();
    assert.deepEqual(
      [audit.action, audit.target, audit.actor, audit.source, audit.origin],
      ['dispute.report', authId, holder.holder_id, 'page', 'localhost'],
    );
    assert.deepEqual(JSON.parse(audit.after_json ?? ''), { purchaseId: authId, disputeIds: [d.id], frozen: true });
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);

    // Afterwards: the notice, the status on the purchase, no second report.
    const after = await h.app.inject({ method: 'GET', url: '/page?done=reported-frozen', headers: { cookie: s.cookie } });
    assert.match(after.body, /the purchase is reported, and your card is frozen/);
    assert.match(after.body, /<small class="dispute">Reported: your card provider is looking into it<\/small>/);
    assert.ok(!after.body.includes(`/purchases/${authId}/dispute`));
    const before = await written(h);
    const again = await report(h, s, cardId, authId);
    assert.equal(again.statusCode, 409);
    assert.match(again.body, /already reported/);
    assert.deepEqual(await written(h), before);
    // Its status follows the dispute: submitted by the merchant.
    await disputeOk(h, 'update', { disputeId: d.id, explanation: 'Cardholder confirmed by phone' });
    await disputeOk(h, 'submit', { disputeId: d.id });
    const later = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie: s.cookie } });
    assert.match(later.body, /Disputed: sent to the card network/);
  });

  it('without the checkbox the card stays active; a frozen card is not offered the freeze', async (t) => {
    const h = await build(t, dialect);
    const { cardId, authId } = await clearedPurchase(h, { amount: 10 });
    const s = await signIn(h);
    assert.match(s.page.body, /name="freeze" value="on"/);
    const res = await report(h, s, cardId, authId);
    assert.equal(res.headers.location, '/page?done=reported');
    assert.equal((await balances(h, cardId)).status, 'active');
    const second = await clearedPurchase(h, { amount: 5, cardId });
    const old = await clearedPurchase(h, {
      amount: 5,
      cardId,
      businessDate: new Date(Date.now() - 130 * 86_400_000).toISOString().slice(0, 10),
    });
    await h.call('/api/network/cardFreeze.html', { cardId, randomStr: 'f'.repeat(32) });
    const page = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie: s.cookie } });
    assert.ok(page.body.includes(`/purchases/${second.authId}/dispute`));
    assert.ok(!page.body.includes('name="freeze"'), 'nothing to freeze');
    assert.equal((await report(h, s, cardId, second.authId, { freeze: 'on' })).headers.location, '/page?done=reported');
    // Cleared more than 120 days ago: too old, nothing written.
    const before = await written(h);
    const late = await report(h, s, cardId, old.authId);
    assert.equal(late.statusCode, 409);
    assert.match(late.body, /too old to be disputed/);
    assert.deepEqual(await written(h), before);
  });

  it('refuses another holder’s purchase, an unknown or malformed one, a forged form, an ended session and a rolled generation: nothing written', async (t) => {
    let now = Date.now();
    const h = await build(t, dialect, {}, { clock: () => now });
    const alice = await clearedPurchase(h, { amount: 10 });
    // Bob, another cardholder of the same merchant, with his own card and purchase.
    const bobHolder = await h.call('/api/network/holderCreate.html', holderBody({ email: 'bob@example.com' }));
    await h.call('/sandbox/holder/review', { holderId: bobHolder.body.holderId, auditStatus: 2, randomStr: 'b'.repeat(32) });
    const bobCard = await h.call('/api/network/cardApply.html', {
      holderId: bobHolder.body.holderId,
      currency: 'EUR',
      randomStr: 'c'.repeat(32),
    });
    const bobCardId = bobCard.body.model.cardId as string;
    await h.call('/api/network/cardTopUp.html', { cardId: bobCardId, amount: 50, randomStr: 'd'.repeat(32) });
    const bob = await clearedPurchase(h, { amount: 10, cardId: bobCardId });
    const s = await signIn(h);
    const before = await written(h);
    for (const [cardId, purchaseId, status] of [
      [bobCardId, bob.authId, 404],
      [alice.cardId, bob.authId, 404],
      [alice.cardId, alice.tradeId, 404], // the clearing, not the purchase
      [alice.cardId, 'trd_nope', 404],
      [alice.cardId, 'x'.repeat(80), 404],
      [alice.cardId, '%00', 404],
    ] as const) {
      const res = await report(h, s, cardId, purchaseId, { freeze: 'on' });
      assert.equal(res.statusCode, status, `${cardId} ${purchaseId}: ${res.body.slice(0, 200)}`);
    }
    const forged = await report(h, { ...s, form: 'forged' }, alice.cardId, alice.authId, { freeze: 'on' });
    assert.equal(forged.statusCode, 403);
    const crossSite = await h.app.inject({
      method: 'POST',
      url: `/page/cards/${alice.cardId}/purchases/${alice.authId}/dispute`,
      payload: new URLSearchParams({ form: s.form, freeze: 'on' }).toString(),
      headers: { cookie: s.cookie, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'cross-site' },
    });
    assert.equal(crossSite.statusCode, 403);
    assert.deepEqual(await written(h), before, 'nothing written by the refusals');

    // A credential roll moves the merchant's generation on: the session of the earlier one is refused.
    const rolled = await signIn(h);
    await h.db.database.db
      .updateTable('merchants')
      .set((eb) => ({ credential_gen: eb('credential_gen', '+', 1) }))
      .where('id', '=', h.merchant.appId)
      .execute();
    assert.equal((await report(h, rolled, alice.cardId, alice.authId, { freeze: 'on' })).statusCode, 401);
    // An ended session (15 minutes idle).
    now += 16 * 60_000;
    assert.equal((await report(h, s, alice.cardId, alice.authId, { freeze: 'on' })).statusCode, 401);
    assert.deepEqual(await written(h), before, 'nothing written');
  });
});

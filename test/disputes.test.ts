// Disputes (issue 29, decisions §13): the four lifecycles through the real app on both databases,
// with the card's balances, the merchant's funding and the journal entries asserted at every step,
// and `ledger check` clean after each.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { expireDisputes } from '../src/disputes/expire.js';
import { disputeHistory } from '../src/disputes/query.js';
import { checkLedger } from '../src/ledger/check.js';
import { updateMerchant } from '../src/merchants/manage.js';
import { runVerb } from '../src/runner.js';
import { build, type Harness } from './helpers/app.js';
import { balances, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';
import { clearedPurchase, disputeOk, disputeRefused, file, fundingOf, png } from './helpers/disputes.js';

async function clean(h: Harness): Promise<void> {
  assert.deepEqual((await checkLedger(h.db.database)).problems, []);
}

/** The journal entries traced by a dispute: each entry's legs as `account amount`, accounts by kind. */
async function entries(h: Harness, disputeId: string): Promise<string[][]> {
  const rows = await h.db.database.db
    .selectFrom('ledger_postings')
    .select(['entry_id', 'account', 'amount'])
    .where('trade_id', '=', disputeId)
    .orderBy('id')
    .execute();
  const by = new Map<string, string[]>();
  for (const r of rows) {
    const kind = r.account.replace(/^card:[^:]+:/, 'card:').replace(/^merchant:[^:]+:/, 'merchant:');
    by.set(r.entry_id, [...(by.get(r.entry_id) ?? []), `${kind} ${Number(r.amount)}`]);
  }
  return [...by.values()].map((legs) => legs.sort());
}

const provisionalCredit = (h: Harness, on: boolean) =>
  runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, disputeProvisionalCredit: on }, actor: 'test' });

const DAY = 86_400_000;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

eachDialect('disputes: lifecycles', (dialect) => {
  it('create with evidence, submit, won: the network credits the card', async (t) => {
    const h = await build(t, dialect);
    const { cardId, tradeId } = await clearedPurchase(h, { topUp: 100, amount: 40 });
    assert.deepEqual(await balances(h, cardId), { available: 60, ledger: 60, status: 'active' });
    const created = await disputeOk(h, 'create', {
      tradeId,
      reason: 'fraudulent',
      explanation: 'I never made this purchase',
      evidence: [file('statement.png', 'image/png', png(2, 2))],
    });
    assert.equal(created.status, 'unsubmitted');
    assert.equal(created.amount, 40);
    assert.equal(created.evidence.length, 1);
    assert.equal(created.evidence[0].contentType, 'image/png');
    assert.match(created.evidence[0].sha256, /^[0-9a-f]{64}$/);
    // The explanation and the file are sealed at rest.
    const stored = await h.db.database.db.selectFrom('disputes').selectAll().where('id', '=', created.disputeId).executeTakeFirstOrThrow();
    assert.ok(stored.explanation_enc?.startsWith('v1.') && !stored.explanation_enc.includes('purchase'));
    await clean(h);
    const submitted = await disputeOk(h, 'submit', { disputeId: created.disputeId });
    assert.equal(submitted.status, 'submitted');
    assert.equal(submitted.provisionalCredit, 0);
    assert.deepEqual(await balances(h, cardId), { available: 60, ledger: 60, status: 'active' });
    assert.deepEqual(await entries(h, created.disputeId), []);
    await clean(h);
    const before = await fundingOf(h);
    const won = await disputeOk(h, 'decide', { disputeId: created.disputeId, outcome: 'won' });
    assert.equal(won.status, 'won');
    assert.equal(won.outcomeAmount, 40);
    assert.deepEqual(await balances(h, cardId), { available: 100, ledger: 100, status: 'active' });
    assert.equal(await fundingOf(h), before);
    assert.deepEqual(await entries(h, created.disputeId), [['card:available 4000', 'network:disputes -4000']]);
    await clean(h);
    // The same outcome again changes nothing; the other one is refused.
    await disputeOk(h, 'decide', { disputeId: created.disputeId, outcome: 'won' });
    await disputeRefused(h, 'decide', { disputeId: created.disputeId, outcome: 'lost' }, 409, '2742');
    assert.deepEqual(await balances(h, cardId), { available: 100, ledger: 100, status: 'active' });
    await clean(h);
  });

  it('create, submit with provisional credit, lost: the credit is taken back, beyond the balance into debt', async (t) => {
    const h = await build(t, dialect);
    await provisionalCredit(h, true);
    const { cardId, tradeId } = await clearedPurchase(h, { topUp: 100, amount: 40 });
    const funded = await fundingOf(h);
    const d = await disputeOk(h, 'create', { tradeId, reason: 'not_received', amount: 30, explanation: 'never arrived' });
    assert.equal(d.amount, 30);
    const submitted = await disputeOk(h, 'submit', { disputeId: d.disputeId });
    assert.equal(submitted.provisionalCredit, 30);
    assert.deepEqual(await balances(h, cardId), { available: 90, ledger: 90, status: 'active' });
    assert.equal(await fundingOf(h), funded - 3000);
    assert.deepEqual(await entries(h, d.disputeId), [['card:available 3000', 'merchant:funding -3000']]);
    await clean(h);
    // The cardholder spends the credit: the take-back leaves a debt.
    await ok(h, '/sandbox/network/authorize', { cardId, amount: 80 });
    assert.equal((await balances(h, cardId)).available, 10);
    const lost = await disputeOk(h, 'decide', { disputeId: d.disputeId, outcome: 'lost' });
    assert.equal(lost.status, 'lost');
    assert.equal((await balances(h, cardId)).available, 0);
    const card = await h.db.database.db.selectFrom('cards').select('debt').where('id', '=', cardId).executeTakeFirstOrThrow();
    assert.equal(Number(card.debt), 2000);
    assert.equal(await fundingOf(h), funded);
    assert.deepEqual((await entries(h, d.disputeId))[1], ['card:available -1000', 'card:debt -2000', 'merchant:funding 3000']);
    await clean(h);
    // A top-up pays the debt first.
    await ok(h, '/api/network/cardTopUp.html', { cardId, amount: 25 });
    assert.equal((await balances(h, cardId)).available, 5);
    await clean(h);
  });

  it('won with provisional credit: the network pays the merchant’s funding back', async (t) => {
    const h = await build(t, dialect);
    await provisionalCredit(h, true);
    const { cardId, tradeId } = await clearedPurchase(h, { topUp: 100, amount: 40 });
    const funded = await fundingOf(h);
    const d = await disputeOk(h, 'create', { tradeId, reason: 'duplicate', explanation: 'charged twice' });
    await disputeOk(h, 'submit', { disputeId: d.disputeId });
    assert.equal(await fundingOf(h), funded - 4000);
    await disputeOk(h, 'decide', { disputeId: d.disputeId, outcome: 'won' });
    assert.equal(await fundingOf(h), funded);
    assert.deepEqual(await balances(h, cardId), { available: 100, ledger: 100, status: 'active' });
    assert.deepEqual((await entries(h, d.disputeId))[1], ['merchant:funding 4000', 'network:disputes -4000']);
    await clean(h);
  });

  it('expired: not submitted within 120 days of the clearing (lazily on read and submission, and by the sweep)', async (t) => {
    let now = Date.now();
    const h = await build(t, dialect, {}, { clock: () => now });
    const cleared = dayOf(now - 119 * DAY);
    const a = await clearedPurchase(h, { amount: 10, businessDate: cleared });
    const b = await clearedPurchase(h, { amount: 10, businessDate: cleared, cardId: a.cardId });
    const d1 = await disputeOk(h, 'create', { tradeId: a.tradeId, reason: 'canceled', explanation: 'canceled in time' });
    const d2 = await disputeOk(h, 'create', { tradeId: b.tradeId, reason: 'other', explanation: 'other' });
    assert.equal(d1.deadline, dayOf(Date.parse(cleared) + 120 * DAY));
    await clean(h);
    now += 3 * DAY;
    assert.equal((await disputeOk(h, 'query', { disputeId: d1.disputeId })).status, 'expired');
    const msg = await disputeRefused(h, 'submit', { disputeId: d1.disputeId }, 409, '2743');
    assert.match(msg, /^disputeId: the deadline/);
    const row = await h.db.database.db.selectFrom('disputes').select('status').where('id', '=', d1.disputeId).executeTakeFirstOrThrow();
    assert.equal(row.status, 'expired');
    assert.deepEqual(await expireDisputes(h.app.svc, now), { expired: 1, failed: [] });
    assert.equal((await disputeOk(h, 'query', { disputeId: d2.disputeId })).status, 'expired');
    assert.deepEqual(await expireDisputes(h.app.svc, now), { expired: 0, failed: [] });
    // An expired dispute no longer holds the transaction: nothing more to dispute after the deadline.
    await disputeRefused(h, 'create', { tradeId: a.tradeId, reason: 'other' }, 409, '2743');
    assert.equal((await balances(h, a.cardId)).available, 80);
    await clean(h);
  });

  it('withdrawn: unsubmitted simply, submitted as if lost', async (t) => {
    const h = await build(t, dialect);
    const { cardId, tradeId } = await clearedPurchase(h, { topUp: 100, amount: 40 });
    const d1 = await disputeOk(h, 'create', { tradeId, reason: 'other', amount: 10 });
    assert.equal((await disputeOk(h, 'withdraw', { disputeId: d1.disputeId })).status, 'withdrawn');
    await clean(h);
    await provisionalCredit(h, true);
    const funded = await fundingOf(h);
    // A withdrawn dispute does not count against what can be disputed.
    const d2 = await disputeOk(h, 'create', { tradeId, reason: 'other', explanation: 'changed my mind' });
    assert.equal(d2.amount, 40);
    await disputeOk(h, 'submit', { disputeId: d2.disputeId });
    assert.deepEqual(await balances(h, cardId), { available: 100, ledger: 100, status: 'active' });
    const w = await disputeOk(h, 'withdraw', { disputeId: d2.disputeId });
    assert.equal(w.status, 'withdrawn');
    assert.deepEqual(await balances(h, cardId), { available: 60, ledger: 60, status: 'active' });
    assert.equal(await fundingOf(h), funded);
    assert.deepEqual(await entries(h, d2.disputeId), [
      ['card:available 4000', 'merchant:funding -4000'],
      ['card:available -4000', 'merchant:funding 4000'],
    ]);
    await disputeRefused(h, 'withdraw', { disputeId: d2.disputeId }, 409, '2742');
    await clean(h);
  });

  it('dispute.updated on every change of status and every money movement, in the dispute’s own sequence', async (t) => {
    const h = await build(t, dialect);
    await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
    await provisionalCredit(h, true);
    const { tradeId } = await clearedPurchase(h, { topUp: 100, amount: 40 });
    const d = await disputeOk(h, 'create', { tradeId, reason: 'fraudulent', explanation: 'secret story' });
    await disputeOk(h, 'update', { disputeId: d.disputeId, reason: 'other' });
    await disputeOk(h, 'submit', { disputeId: d.disputeId });
    await disputeOk(h, 'decide', { disputeId: d.disputeId, outcome: 'lost' });
    const events = await h.db.database.db
      .selectFrom('callback_events')
      .select(['payload', 'subject', 'sequence'])
      .where('type', '=', 'dispute.updated')
      .orderBy('sequence')
      .execute();
    const bodies = events.map((e) => JSON.parse(e.payload));
    assert.deepEqual(
      bodies.map((b) => [b.sequence, b.status, b.change, b.movement?.amount ?? null, b.provisionalCredit]),
      [
        [1, 'unsubmitted', 'created', null, 0],
        [2, 'submitted', 'provisional_credit', 40, 40],
        [3, 'lost', 'credit_reversed', -40, 40],
      ],
    );
    assert.ok(events.every((e) => e.subject === `dispute:${d.disputeId}`));
    // The explanation is personal data: never in a callback.
    assert.ok(events.every((e) => !e.payload.includes('secret story')));
    const history = await disputeHistory(h.db.database.db, d.disputeId);
    assert.deepEqual(
      history.map((r) => [r.kind, r.status, r.amount, r.note]),
      [
        ['created', 'unsubmitted', 0, ''],
        ['updated', 'unsubmitted', 0, 'reason'],
        ['provisional_credit', 'submitted', 4000, ''],
        ['credit_reversed', 'lost', -4000, ''],
      ],
    );
    assert.ok(history.filter((r) => r.kind.includes('credit')).every((r) => r.entryId?.startsWith('ent_')));
  });

  it('ledger check names a dispute’s money that is not what its records say, and passes again once mended', async (t) => {
    const h = await build(t, dialect);
    await provisionalCredit(h, true);
    const a = await clearedPurchase(h, { topUp: 100, amount: 40 });
    const won = await disputeOk(h, 'create', { tradeId: a.tradeId, reason: 'fraudulent', explanation: 'x' });
    await disputeOk(h, 'submit', { disputeId: won.disputeId });
    await disputeOk(h, 'decide', { disputeId: won.disputeId, outcome: 'won' });
    const b = await clearedPurchase(h, { cardId: a.cardId, amount: 10 });
    const open = await disputeOk(h, 'create', { tradeId: b.tradeId, reason: 'fraudulent', explanation: 'y' });
    await disputeOk(h, 'submit', { disputeId: open.disputeId });
    await clean(h);
    const db = h.db.database.db;
    const damage: Array<[() => Promise<unknown>, () => Promise<unknown>, string]> = [
      [
        () => db.updateTable('disputes').set({ outcome_amount: 3000 }).where('id', '=', won.disputeId).execute(),
        () => db.updateTable('disputes').set({ outcome_amount: 4000 }).where('id', '=', won.disputeId).execute(),
        'network:disputes: won disputes were paid back 3000 EUR, the journal says 4000',
      ],
      [
        () => db.updateTable('disputes').set({ provisional_credit: 500 }).where('id', '=', open.disputeId).execute(),
        () => db.updateTable('disputes').set({ provisional_credit: 1000 }).where('id', '=', open.disputeId).execute(),
        `dispute ${open.disputeId}: provisional credit 500, the funding account advanced 1000`,
      ],
      [
        () => db.updateTable('disputes').set({ provisional_credit: 0 }).where('id', '=', open.disputeId).execute(),
        () => db.updateTable('disputes').set({ provisional_credit: 1000 }).where('id', '=', open.disputeId).execute(),
        `dispute ${open.disputeId}: no provisional credit, the funding account advanced 1000`,
      ],
    ];
    for (const [breakIt, mend, problem] of damage) {
      await breakIt();
      assert.deepEqual((await checkLedger(h.db.database)).problems, [problem]);
      await mend();
      await clean(h);
    }
  });
});

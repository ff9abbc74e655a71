import assert from 'node:assert/strict';
import { it } from 'node:test';
import { withTrades } from '../src/db/trades-table.js';
import { runVerb } from '../src/runner.js';
import { build, randomStr, rowCounts, sign } from './helpers/app.js';
import { balances, fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

const N = '/sandbox/network';

async function trade(h: Awaited<ReturnType<typeof build>>, tradeId: string) {
  return withTrades(h.db.database.db).selectFrom('trades').selectAll().where('id', '=', tradeId).executeTakeFirstOrThrow();
}

async function journalSum(h: Awaited<ReturnType<typeof build>>) {
  const rows = await h.db.database.db.selectFrom('ledger_postings').select(['currency', 'amount']).execute();
  const sums: Record<string, number> = {};
  for (const r of rows) sums[r.currency] = (sums[r.currency] ?? 0) + Number(r.amount);
  return sums;
}

eachDialect('transaction lifecycle and ledger', (dialect) => {
  it('authorization holds funds; clearing settles the cleared part and releases the rest', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const auth = await ok(h, `${N}/authorize`, { cardId, amount: 30, remark: 'Bookshop' });
    assert.deepEqual(
      [auth.tradeType, auth.tradeStatus, auth.amount, auth.fee, auth.currencyTxn, auth.txnAmount],
      [150, 1, 30, 0, 'EUR', 30],
    );
    assert.deepEqual(await balances(h, cardId), { available: 70, ledger: 100, status: 'active' });
    const pay = await ok(h, `${N}/clear`, { tradeId: auth.tradeId, amount: 25.5 });
    assert.deepEqual([pay.tradeType, pay.tradeStatus, pay.amount, pay.authCode, pay.remark], [151, 1, 25.5, auth.authCode, 'Bookshop']);
    assert.deepEqual(await balances(h, cardId), { available: 74.5, ledger: 74.5, status: 'active' });
    assert.equal((await trade(h, auth.tradeId)).held, 0);
    // A cleared authorization holds nothing more: a second clearing, a reversal or a void is 2730.
    for (const op of ['clear', 'reverse', 'void']) {
      const res = await h.call(`${N}/${op}`, { tradeId: auth.tradeId, randomStr: randomStr() });
      assert.equal(res.body.code, '2730', op);
    }
    assert.deepEqual(await journalSum(h), { EUR: 0, USDT: 0 }, 'every test merchant is funded in both currencies');
  });

  it('partial then full reversal: status 2 records, original becomes 3 only when nothing is held, fee returned then', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 50 });
    const auth = await ok(h, `${N}/authorize`, { cardId, amount: 20, currencyTxn: 'USD' });
    assert.equal(auth.fee, 0.3, '1.5 % FX fee');
    assert.equal(auth.txnAmount, 21.6, '20 EUR at 1.08');
    assert.deepEqual(await balances(h, cardId), { available: 29.7, ledger: 49.7, status: 'active' });
    const part = await ok(h, `${N}/reverse`, { tradeId: auth.tradeId, amount: 5 });
    assert.deepEqual([part.tradeType, part.tradeStatus, part.amount, part.fee, part.txnAmount], [150, 2, 5, 0, 5.4]);
    assert.equal((await trade(h, auth.tradeId)).trade_status, 1);
    const over = await h.call(`${N}/reverse`, { tradeId: auth.tradeId, amount: 15.01, randomStr: randomStr() });
    assert.equal(over.body.code, '2723');
    const rest = await ok(h, `${N}/reverse`, { tradeId: auth.tradeId });
    assert.deepEqual([rest.tradeStatus, rest.amount, rest.fee], [2, 15, 0.3]);
    assert.equal((await trade(h, auth.tradeId)).trade_status, 3);
    assert.deepEqual(await balances(h, cardId), { available: 50, ledger: 50, status: 'active' });
    assert.deepEqual(await journalSum(h), { EUR: 0, USDT: 0 }, 'every test merchant is funded in both currencies');
  });

  it('void: an untouched authorization becomes 6 with a 7 record; a payment too; a partly reversed one cannot', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const a1 = await ok(h, `${N}/authorize`, { cardId, amount: 10 });
    const v1 = await ok(h, `${N}/void`, { tradeId: a1.tradeId });
    assert.deepEqual([v1.tradeType, v1.tradeStatus, v1.amount], [150, 7, 10]);
    assert.equal((await trade(h, a1.tradeId)).trade_status, 6);
    const a2 = await ok(h, `${N}/authorize`, { cardId, amount: 10 });
    const p2 = await ok(h, `${N}/clear`, { tradeId: a2.tradeId });
    const v2 = await ok(h, `${N}/void`, { tradeId: p2.tradeId });
    assert.deepEqual([v2.tradeType, v2.tradeStatus], [151, 7]);
    assert.equal((await trade(h, p2.tradeId)).trade_status, 6);
    const a3 = await ok(h, `${N}/authorize`, { cardId, amount: 10 });
    await ok(h, `${N}/reverse`, { tradeId: a3.tradeId, amount: 1 });
    assert.equal((await h.call(`${N}/void`, { tradeId: a3.tradeId, randomStr: randomStr() })).body.code, '2730');
    assert.equal(
      (await h.call(`${N}/void`, { tradeId: v1.tradeId, randomStr: randomStr() })).body.code,
      '2730',
      'a void record is not voidable',
    );
    assert.deepEqual(await balances(h, cardId), { available: 91, ledger: 100, status: 'active' });
  });

  it('refunds credit the card up to the payment amount (status 10)', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const auth = await ok(h, `${N}/authorize`, { cardId, amount: 40 });
    const pay = await ok(h, `${N}/clear`, { tradeId: auth.tradeId });
    const r1 = await ok(h, `${N}/refund`, { tradeId: pay.tradeId, amount: 15 });
    assert.deepEqual([r1.tradeType, r1.tradeStatus, r1.amount], [151, 10, 15]);
    const tooMuch = await h.call(`${N}/refund`, { tradeId: pay.tradeId, amount: 25.01, randomStr: randomStr() });
    assert.equal(tooMuch.body.code, '2723');
    assert.match(tooMuch.body.msg, /at most the 25 EUR/);
    await ok(h, `${N}/refund`, { tradeId: pay.tradeId, amount: 25 });
    assert.deepEqual(await balances(h, cardId), { available: 100, ledger: 100, status: 'active' });
    assert.equal(
      (await h.call(`${N}/refund`, { tradeId: auth.tradeId, amount: 1, randomStr: randomStr() })).body.code,
      '2730',
      'an authorization is not refundable',
    );
    assert.equal(
      (await h.call(`${N}/void`, { tradeId: pay.tradeId, randomStr: randomStr() })).body.code,
      '2730',
      'a refunded payment is not voidable',
    );
  });

  it('insufficient balance declines with 2725: the decline is recorded for audit, not listed, and replayed on retry', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 10 });
    const body = sign({ cardId, amount: 10.01, randomStr: randomStr() }, h.merchant);
    const res = await h.call(`${N}/authorize`, body, { raw: true });
    assert.equal(res.status, 409);
    assert.equal(res.body.code, '2725');
    const declines = await h.db.database.db
      .selectFrom('authorizations')
      .selectAll()
      .where('card_id', '=', cardId)
      .where('approved', '=', 0)
      .execute();
    assert.equal(declines.length, 1);
    assert.equal(declines[0]?.decline_code, '2725');
    assert.equal(declines[0]?.decline_reason, 'insufficient_funds');
    assert.equal(Number(declines[0]?.amount), 1001);
    assert.deepEqual(res.body.detail, { tradeId: declines[0]?.id, declineReason: 'insufficient_funds' });
    const again = await h.call(`${N}/authorize`, body, { raw: true });
    assert.equal(again.body.code, '2725');
    assert.equal(again.headers['x-idempotent-replay'], 'true', 'the stored decline is replayed');
    assert.deepEqual(again.body.detail, res.body.detail, 'with the same declined authorization');
    assert.equal(
      (await h.db.database.db.selectFrom('authorizations').selectAll().where('card_id', '=', cardId).execute()).length,
      1,
      'a retry records nothing more',
    );
    const trades = await withTrades(h.db.database.db).selectFrom('trades').select('trade_type').where('card_id', '=', cardId).execute();
    assert.deepEqual(
      trades.map((x) => x.trade_type),
      [100],
    );
    assert.deepEqual(await balances(h, cardId), { available: 10, ledger: 10, status: 'active' });
  });

  it('a frozen card declines authorizations (2724, recorded); a frozen card can still be topped up', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 10 });
    await h.db.database.db.updateTable('cards').set({ status: 'frozen' }).where('id', '=', cardId).execute();
    const res = await h.call(`${N}/authorize`, { cardId, amount: 1, randomStr: randomStr() });
    assert.equal(res.body.code, '2724');
    assert.match(res.body.msg, /frozen/);
    const declines = await h.db.database.db
      .selectFrom('authorizations')
      .select(['decline_code', 'decline_reason'])
      .where('card_id', '=', cardId)
      .execute();
    assert.deepEqual(declines, [{ decline_code: '2724', decline_reason: 'card_inactive' }]);
    await ok(h, '/api/network/cardTopUp.html', { cardId, amount: 5 });
    assert.deepEqual(await balances(h, cardId), { available: 15, ledger: 15, status: 'frozen' });
  });

  it('withdrawal (110) with its fee, transfer (121/120), adjustments (200), inquiry (300), fee (500)', async (t) => {
    const h = await build(t, dialect);
    const a = await fundedCard(h, { topUp: 100 });
    const b = await fundedCard(h, { topUp: 0 });
    const w = await ok(h, `${N}/withdraw`, { cardId: a.cardId, amount: 20, currencyTxn: 'GBP' });
    assert.deepEqual([w.tradeType, w.amount, w.fee, w.currencyTxn, w.txnAmount], [110, 20, 2, 'GBP', 17]);
    const tr = await ok(h, `${N}/transfer`, { cardId: a.cardId, toCardId: b.cardId, amount: 30 });
    assert.deepEqual([tr.tradeType, tr.amount], [121, 30]);
    const tin = await withTrades(h.db.database.db)
      .selectFrom('trades')
      .selectAll()
      .where('card_id', '=', b.cardId)
      .executeTakeFirstOrThrow();
    assert.deepEqual([tin.trade_type, Number(tin.amount), tin.original_id], [120, 3000, tr.tradeId]);
    const credit = await ok(h, `${N}/adjust`, { cardId: b.cardId, amount: 1.5, direction: 'credit' });
    const debit = await ok(h, `${N}/adjust`, { cardId: a.cardId, amount: 0.5, direction: 'debit' });
    assert.deepEqual([credit.tradeType, credit.amount, debit.amount, debit.txnAmount], [200, 1.5, -0.5, -0.5]);
    const inq = await ok(h, `${N}/balanceInquiry`, { cardId: a.cardId });
    assert.deepEqual([inq.tradeType, inq.amount], [300, 0]);
    const fee = await ok(h, `${N}/fee`, { cardId: a.cardId, amount: 1, remark: 'Card fee' });
    assert.deepEqual([fee.tradeType, fee.amount, fee.remark], [500, 1, 'Card fee']);
    assert.deepEqual(await balances(h, a.cardId), { available: 46.5, ledger: 46.5, status: 'active' });
    assert.deepEqual(await balances(h, b.cardId), { available: 31.5, ledger: 31.5, status: 'active' });
    const self = await h.call(`${N}/transfer`, { cardId: a.cardId, toCardId: a.cardId, amount: 1, randomStr: randomStr() });
    assert.equal(self.body.code, '1002');
    const usdt = await fundedCard(h, { currency: 'USDT' });
    const cross = await h.call(`${N}/transfer`, { cardId: a.cardId, toCardId: usdt.cardId, amount: 1, randomStr: randomStr() });
    assert.equal(cross.body.code, '2720');
    const tooMuch = await h.call(`${N}/withdraw`, { cardId: a.cardId, amount: 45, randomStr: randomStr() });
    assert.equal(tooMuch.body.code, '2725', 'amount plus fee exceeds what is available');
    assert.deepEqual(await journalSum(h), { EUR: 0, USDT: 0 }, 'every test merchant is funded in both currencies');
  });

  it('a card holds at most 10^14 minor units; txnAmount must agree with amount in the card currency; errors name currencyTxn', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h);
    // Just below the cap (set directly: reaching it through top-ups would take a hundred of the largest).
    await h.db.database.db
      .updateTable('cards')
      .set({ available_balance: 99_999_999_999_900, ledger_balance: 99_999_999_999_900 })
      .where('id', '=', cardId)
      .execute();
    const over = await h.call('/api/network/cardTopUp.html', { cardId, amount: 1.01, randomStr: randomStr() });
    assert.equal(over.body.code, '2723');
    assert.match(over.body.msg, /would hold more than the program allows/);
    assert.equal(
      (await h.call('/api/network/cardTopUp.html', { cardId, amount: 1, randomStr: randomStr() })).status,
      200,
      'up to the cap is fine',
    );
    assert.deepEqual(await balances(h, cardId), { available: 1_000_000_000_000, ledger: 1_000_000_000_000, status: 'active' });
    const mismatch = await h.call(`${N}/authorize`, { cardId, amount: 10, currencyTxn: 'EUR', txnAmount: 99, randomStr: randomStr() });
    assert.equal(mismatch.body.code, '1002');
    assert.equal(mismatch.body.msg, 'txnAmount: must equal amount when currencyTxn is the card’s currency');
    const unknown = await h.call(`${N}/authorize`, { cardId, amount: 10, currencyTxn: 'XXX', randomStr: randomStr() });
    assert.deepEqual([unknown.body.code, unknown.body.msg], ['2720', 'currencyTxn: XXX is not supported']);
  });

  it('withdrawing a cardholder’s approval freezes its cards; unfreezing needs an approved holder', async (t) => {
    const h = await build(t, dialect);
    await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
    const { cardId, holderId } = await fundedCard(h, { topUp: 50 });
    await ok(h, '/sandbox/holder/review', { holderId, auditStatus: 3, errMsg: 'Fraud finding' });
    assert.equal((await balances(h, cardId)).status, 'frozen');
    const statusEvents = async () =>
      (
        await h.db.database.db
          .selectFrom('callback_events')
          .select('payload')
          .where('type', '=', 'card.status')
          .orderBy('created_at')
          .orderBy('sequence')
          .execute()
      ).map((e) => JSON.parse(e.payload));
    assert.deepEqual(
      (await statusEvents()).map((e) => [e.cardId, e.status, e.actor]),
      [[cardId, 'frozen', 'review']],
    );
    assert.equal((await h.call(`${N}/authorize`, { cardId, amount: 5, randomStr: randomStr() })).body.code, '2724');
    const { setCardFrozen } = await import('../src/cards/status.js');
    await assert.rejects(
      runVerb(h.app.svc, setCardFrozen, { input: { cardId, frozen: false, source: 'operator' }, actor: 'cli' }),
      /a card is unfrozen only for an approved cardholder/,
    );
    const other = await fundedCard(h, { topUp: 5 });
    const frozen = await runVerb(h.app.svc, setCardFrozen, {
      input: { cardId: other.cardId, frozen: true, source: 'operator' },
      actor: 'cli',
    });
    assert.equal(frozen.status, 'frozen');
    const thawed = await runVerb(h.app.svc, setCardFrozen, {
      input: { cardId: other.cardId, frozen: false, source: 'operator' },
      actor: 'cli',
    });
    assert.equal(thawed.status, 'active');
    assert.deepEqual(
      (await statusEvents()).slice(1).map((e) => [e.cardId, e.status, e.actor]),
      [
        [other.cardId, 'frozen', 'operator'],
        [other.cardId, 'active', 'operator'],
      ],
    );
  });

  it('simulations are idempotent by randomStr: a retried authorization holds once', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const body = sign({ cardId, amount: 10, randomStr: randomStr() }, h.merchant);
    const results = await Promise.all([1, 2, 3].map(() => h.call(`${N}/authorize`, body, { raw: true })));
    assert.equal(new Set(results.map((r) => r.body.model.tradeId)).size, 1);
    assert.deepEqual(await balances(h, cardId), { available: 90, ledger: 100, status: 'active' });
  });

  it('bad simulation input: unknown trade 2730, other merchant’s trade 2730, businessDate rules, unknown currencyTxn 2720', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const auth = await ok(h, `${N}/authorize`, { cardId, amount: 1 });
    const other = await h.newMerchant();
    const before = await rowCounts(h);
    assert.equal((await h.call(`${N}/clear`, { tradeId: 'trd_nope', randomStr: randomStr() })).body.code, '2730');
    assert.equal((await h.call(`${N}/clear`, { tradeId: auth.tradeId, randomStr: randomStr() }, { merchant: other })).body.code, '2730');
    for (const [businessDate, msg] of [
      ['2026-02-30', /businessDate: must be a real date/],
      ['2999-01-01', /businessDate: must not be later than tomorrow/],
      ['26-01-01', /businessDate: must be a date written/],
    ] as const) {
      const res = await h.call(`${N}/authorize`, { cardId, amount: 1, businessDate, randomStr: randomStr() });
      assert.equal(res.body.code, '1002');
      assert.match(res.body.msg, msg);
    }
    assert.equal((await h.call(`${N}/authorize`, { cardId, amount: 1, currencyTxn: 'XYZ', randomStr: randomStr() })).body.code, '2720');
    assert.deepEqual(await rowCounts(h), before);
  });
});

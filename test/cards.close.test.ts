import assert from 'node:assert/strict';
import { it } from 'node:test';
import { withTrades } from '../src/db/trades-table.js';
import { checkLedger } from '../src/ledger/check.js';
import { TradeType } from '../src/trades/types.js';
import { build, type Harness, randomStr } from './helpers/app.js';
import { balances, fundedCard, ok } from './helpers/cards.js';
import { childDatabaseUrl, runCli } from './helpers/cli.js';
import { eachDialect } from './helpers/dialects.js';

const CLOSE = '/api/network/cardClose.html';
const N = '/sandbox/network';

/** Postings on the merchant's funding account, in minor units. */
async function funding(h: Harness): Promise<number[]> {
  const rows = await withTrades(h.db.database.db)
    .selectFrom('ledger_postings')
    .innerJoin('trades', 'trades.id', 'ledger_postings.trade_id')
    .select(['ledger_postings.amount', 'ledger_postings.id'])
    .where('ledger_postings.account', '=', `merchant:${h.merchant.appId}:funding`)
    // What came back to the funding account: not the test merchant's funding nor the top-ups drawn from it.
    .where('trades.trade_type', '!=', TradeType.topUp)
    .orderBy('ledger_postings.id')
    .execute();
  return rows.map((r) => Number(r.amount));
}

async function ledgerClean(h: Harness) {
  const report = await checkLedger(h.db.database);
  assert.deepEqual(report.problems, []);
}

eachDialect('closing a card (cardClose, cardprogram card close)', (dialect) => {
  it('closing moves the whole available balance to the merchant’s funding account as a withdrawal record; closed is final; a second close answers the card as is', async (t) => {
    const h = await build(t, dialect);
    await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
    const { cardId } = await fundedCard(h, { topUp: 30 });
    const other = await fundedCard(h, { topUp: 10 });
    const before = await balances(h, cardId);
    const res = await h.call(CLOSE, { cardId, reason: 'customer left', randomStr: randomStr() });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(
      [res.body.model.status, res.body.model.statusSource, res.body.model.statusReason, res.body.model.availableBalance],
      ['closed', 'merchant', 'customer left', 0],
    );
    assert.deepEqual(await funding(h), [Math.round(before.available * 100)]);
    const [withdrawal] = await withTrades(h.db.database.db)
      .selectFrom('trades')
      .selectAll()
      .where('card_id', '=', cardId)
      .where('trade_type', '=', 110)
      .execute();
    assert.deepEqual(
      [withdrawal?.trade_status, withdrawal?.amount, withdrawal?.fee, withdrawal?.remark],
      [1, Math.round(before.available * 100), 0, 'Card closed'],
    );
    const events = (await h.db.database.db.selectFrom('callback_events').select(['type', 'payload']).orderBy('sequence').execute())
      .map((e) => JSON.parse(e.payload))
      .filter((b) => b.cardId === cardId && b.type === 'card.status');
    assert.deepEqual(
      events.map((e) => [e.status, e.source, e.reason, e.actor]),
      [['closed', 'merchant', 'customer left', 'merchant']],
    );
    await ledgerClean(h);

    // Closed is final: nothing moves money on it or reopens it, and nothing is written.
    const count = async () => (await withTrades(h.db.database.db).selectFrom('trades').select('id').execute()).length;
    const trades = await count();
    const refusals: Array<[string, Record<string, unknown>]> = [
      ['/api/network/cardUnfreeze.html', { cardId }],
      ['/api/network/cardFreeze.html', { cardId }],
      ['/api/network/cardTopUp.html', { cardId, amount: 5 }],
      [`${N}/authorize`, { cardId, amount: 1 }],
      [`${N}/withdraw`, { cardId, amount: 1 }],
      [`${N}/transfer`, { cardId, toCardId: other.cardId, amount: 1 }],
      [`${N}/transfer`, { cardId: other.cardId, toCardId: cardId, amount: 1 }],
    ];
    for (const [path, body] of refusals) {
      const r = await h.call(path, { ...body, randomStr: randomStr() });
      assert.deepEqual([r.status, r.body.code], [409, '2724'], `${path} ${JSON.stringify(body)}`);
      assert.match(r.body.msg, /the card is closed/);
    }
    assert.equal(await count(), trades);
    assert.equal((await balances(h, other.cardId)).available, 10);
    const again = await h.call(CLOSE, { cardId, reason: 'again', randomStr: randomStr() });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body.model, res.body.model, 'answered as is: source and reason unchanged');
    assert.deepEqual(await funding(h), [Math.round(before.available * 100)], 'nothing moved twice');
  });

  it('money held at close stays clearable; what a reversal, void or refund returns reaches the funding account, never the closed card', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const reversed = (await ok(h, `${N}/authorize`, { cardId, amount: 10 })).tradeId;
    const voided = (await ok(h, `${N}/authorize`, { cardId, amount: 5 })).tradeId;
    const cleared = (await ok(h, `${N}/authorize`, { cardId, amount: 20 })).tradeId;
    const closed = await ok(h, CLOSE, { cardId });
    assert.equal(closed.availableBalance, 0);
    const closedWith = (await funding(h))[0] ?? 0;
    assert.ok(closedWith > 0);

    await ok(h, `${N}/reverse`, { tradeId: reversed });
    assert.equal((await balances(h, cardId)).available, 0, 'the reversal did not land on the closed card');
    await ok(h, `${N}/void`, { tradeId: voided });
    const payment = (await ok(h, `${N}/clear`, { tradeId: cleared, amount: 15 })).tradeId;
    await ok(h, `${N}/refund`, { tradeId: payment, amount: 4 });
    const after = await balances(h, cardId);
    assert.deepEqual([after.available, after.ledger, after.status], [0, 0, 'closed']);
    // The funding account got each return, in the same journal entry as the record.
    const postings = await funding(h);
    assert.equal(postings.length, 5, JSON.stringify(postings));
    assert.equal(postings[0], closedWith);
    assert.ok(postings.slice(1).every((p) => p > 0));
    const entries = await withTrades(h.db.database.db)
      .selectFrom('ledger_postings')
      .innerJoin('trades', 'trades.id', 'ledger_postings.trade_id')
      .select(['ledger_postings.entry_id', 'trades.trade_type', 'trades.trade_status'])
      .where('account', '=', `merchant:${h.merchant.appId}:funding`)
      .where('trades.trade_type', 'not in', [TradeType.withdrawal, TradeType.topUp])
      .execute();
    // Reversal (150/2), void (150/7), clearing (151/1: what was held beyond the cleared amount), refund (151/10).
    assert.deepEqual(entries.map((e) => `${e.trade_type}/${e.trade_status}`).sort(), ['150/2', '150/7', '151/1', '151/10']);
    for (const e of entries) {
      const legs = await h.db.database.db.selectFrom('ledger_postings').select('account').where('entry_id', '=', e.entry_id).execute();
      assert.ok(!legs.some((l) => l.account === `card:${cardId}:available`), 'no leg on the closed card’s available account');
    }
    await ledgerClean(h);
    const env = { DATABASE_URL: childDatabaseUrl(h.db), CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex') };
    const check = await runCli(['ledger', 'check'], env);
    assert.equal(check.code, 0, check.stderr);
    assert.match(check.stdout, /the books balance/);
  });

  it('a card the operator froze is the operator’s to close: the merchant gets 2727 and nothing moves; the operator closes it', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 25 });
    const env = { DATABASE_URL: childDatabaseUrl(h.db), CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex') };
    const frozen = await runCli(['card', 'freeze', cardId, '--reason', 'fraud review'], env);
    assert.equal(frozen.code, 0, frozen.stderr);
    const before = await balances(h, cardId);
    const res = await h.call(CLOSE, { cardId, randomStr: randomStr() });
    assert.deepEqual([res.status, res.body.code], [409, '2727'], JSON.stringify(res.body));
    assert.match(res.body.msg, /frozen by the operator; only the operator can close it/);
    assert.deepEqual(await balances(h, cardId), before, 'nothing moved');
    assert.deepEqual(await funding(h), [], 'nothing reached the funding account');
    const closed = await runCli(['card', 'close', cardId, '--json'], env);
    assert.equal(closed.code, 0, closed.stderr);
    assert.equal(JSON.parse(closed.stdout).status, 'closed');
    await ledgerClean(h);
  });

  it('the operator closes any merchant’s card with the CLI, with a reason; a closed card cannot be unfrozen even by the operator', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 12 });
    const env = { DATABASE_URL: childDatabaseUrl(h.db), CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex') };
    const closed = await runCli(['card', 'close', cardId, '--reason', 'fraud confirmed', '--json'], env);
    assert.equal(closed.code, 0, closed.stderr);
    const model = JSON.parse(closed.stdout);
    assert.deepEqual(
      [model.status, model.statusSource, model.statusReason, model.availableBalance],
      ['closed', 'operator', 'fraud confirmed', 0],
    );
    assert.deepEqual(await funding(h), [1200]);
    const unfreeze = await runCli(['card', 'unfreeze', cardId], env);
    assert.equal(unfreeze.code, 1);
    assert.match(unfreeze.stderr, /cardId: the card is closed/);
    const long = await runCli(['card', 'freeze', cardId, '--reason', 'x'.repeat(201)], env);
    assert.match(long.stderr, /--reason must be at most 200 characters/);
  });
});

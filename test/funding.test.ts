import assert from 'node:assert/strict';
import { it } from 'node:test';
import { checkLedger } from '../src/ledger/check.js';
import { fundMerchant } from '../src/ledger/funding.js';
import { runVerb } from '../src/runner.js';
import { build, type Harness, randomStr, rowCounts, TEST_FUNDING, type TestMerchant } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { childDatabaseUrl, runCli } from './helpers/cli.js';
import { eachDialect } from './helpers/dialects.js';

const BALANCE = '/api/network/merchantBalance.html';
const TOPUP = '/api/network/cardTopUp.html';

async function balanceOf(h: Harness, merchant?: TestMerchant, currency?: string) {
  const res = await h.call(BALANCE, { randomStr: randomStr(), ...(currency ? { currency } : {}) }, merchant ? { merchant } : {});
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.model.balances as Array<{ currency: string; available: number; cardDebt: number }>;
}

/** What a rejected request must leave untouched. */
async function moneyRows(h: Harness) {
  const balances = await h.db.database.db.selectFrom('merchant_balances').selectAll().orderBy('merchant_id').orderBy('currency').execute();
  return { ...(await rowCounts(h, ['trades', 'ledger_postings', 'funding_credits', 'idempotency_keys'])), balances };
}

function fund(h: Harness, appId: string, amount: string, currency = 'EUR', reference = 'wire 2026-11-23') {
  return runVerb(h.app.svc, fundMerchant, { input: { appId, currency, amount, reference }, actor: 'alice' });
}

eachDialect('merchant funding accounts', (dialect) => {
  it('a top-up draws from the merchant’s funding account in the card’s currency; merchantBalance reads it', async (t) => {
    const h = await build(t, dialect);
    assert.deepEqual(await balanceOf(h), [
      { currency: 'EUR', available: TEST_FUNDING, cardDebt: 0 },
      { currency: 'USDT', available: TEST_FUNDING, cardDebt: 0 },
    ]);
    await fundedCard(h, { topUp: 100 });
    await fundedCard(h, { topUp: 12.34, currency: 'USDT' });
    assert.deepEqual(await balanceOf(h), [
      { currency: 'EUR', available: TEST_FUNDING - 100, cardDebt: 0 },
      { currency: 'USDT', available: TEST_FUNDING - 12.34, cardDebt: 0 },
    ]);
    assert.deepEqual(await balanceOf(h, undefined, 'USDT'), [{ currency: 'USDT', available: TEST_FUNDING - 12.34, cardDebt: 0 }]);
    const bad = await h.call(BALANCE, { currency: 'GBP', randomStr: randomStr() });
    assert.deepEqual([bad.status, bad.body.code], [400, '2720']);
    // Another merchant's account is its own: untouched by these top-ups.
    const other = await h.newMerchant();
    assert.deepEqual(await balanceOf(h, other, 'EUR'), [{ currency: 'EUR', available: TEST_FUNDING, cardDebt: 0 }]);
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('a top-up beyond the funding balance is 2726 (HTTP 409), names what is available, and writes nothing', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h);
    await fund(h, h.merchant.appId, `-${TEST_FUNDING - 50}`);
    const before = await moneyRows(h);
    const res = await h.call(TOPUP, { cardId, amount: 50.01, randomStr: randomStr() });
    assert.deepEqual(
      [res.status, res.body.code, res.body.msg],
      [409, '2726', "amount: the merchant's EUR funding balance is 50 EUR, 50.01 EUR needed"],
    );
    assert.deepEqual(await moneyRows(h), before);
    const exact = await h.call(TOPUP, { cardId, amount: 50, randomStr: randomStr() });
    assert.equal(exact.status, 200, 'down to zero is fine');
    assert.deepEqual(await balanceOf(h, undefined, 'EUR'), [{ currency: 'EUR', available: 0, cardDebt: 0 }]);
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('the operator’s credit is recorded with who, when and why; a debit stops at zero; bad input writes nothing', async (t) => {
    const h = await build(t, dialect);
    const m = await h.newMerchant();
    const credit = await fund(h, m.appId, '250.5', 'USDT', 'contract 7');
    assert.deepEqual(
      [credit.appId, credit.currency, credit.amount, credit.balance, credit.reference, credit.actor],
      [m.appId, 'USDT', 250.5, TEST_FUNDING + 250.5, 'contract 7', 'alice'],
    );
    const row = await h.db.database.db
      .selectFrom('funding_credits')
      .selectAll()
      .where('id', '=', credit.creditId)
      .executeTakeFirstOrThrow();
    assert.deepEqual([row.amount, row.actor, row.reference], [25_050, 'alice', 'contract 7']);
    const posted = await h.db.database.db
      .selectFrom('ledger_postings')
      .select(['account', 'amount'])
      .where('entry_id', '=', row.entry_id)
      .orderBy('amount')
      .execute();
    assert.deepEqual(posted, [
      { account: 'program:capital', amount: -25_050 },
      { account: `merchant:${m.appId}:funding`, amount: 25_050 },
    ]);
    const before = await moneyRows(h);
    const refusals: Array<[string, string, string, string, RegExp]> = [
      [m.appId, `-${TEST_FUNDING + 250.51}`, 'USDT', 'x', /^amount: the merchant's USDT funding balance is 1000000250.5 USDT/],
      [m.appId, '0', 'EUR', 'x', /^amount: must be greater than 0$/],
      [m.appId, '1.001', 'EUR', 'x', /^amount: EUR has at most 2 decimal places$/],
      [m.appId, 'ten', 'EUR', 'x', /^amount: must be a decimal number/],
      [m.appId, '10', 'GBP', 'x', /^currency: must be EUR or USDT$/],
      [m.appId, '10', 'EUR', ' ', /^reference: must be 1 to 200 characters/],
      [m.appId, '10', 'EUR', 'a\u0000b', /^reference: /],
      ['mch_nope', '10', 'EUR', 'x', /^appId: no merchant mch_nope$/],
    ];
    for (const [appId, amount, currency, reference, msg] of refusals) {
      await assert.rejects(fund(h, appId, amount, currency, reference), (err: Error) => msg.test(err.message), `${amount} ${currency}`);
    }
    assert.deepEqual(await moneyRows(h), before);
    const all = await fund(h, m.appId, `-${TEST_FUNDING + 250.5}`, 'USDT', 'returned to the merchant');
    assert.equal(all.balance, 0);
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('cardprogram merchant fund and merchant balance', async (t) => {
    const h = await build(t, dialect);
    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
      CARDPROGRAM_DATA_DIR: h.db.dataDir,
    };
    const res = await runCli(
      ['merchant', 'fund', h.merchant.appId, '1000.25', '--currency', 'EUR', '--reference', 'wire 42', '--actor', 'bob', '--json'],
      env,
    );
    assert.equal(res.code, 0, res.stderr);
    const credit = JSON.parse(res.stdout);
    assert.deepEqual([credit.amount, credit.balance, credit.reference, credit.actor], [1000.25, TEST_FUNDING + 1000.25, 'wire 42', 'bob']);
    const debit = await runCli(
      ['merchant', 'fund', h.merchant.appId, '--currency', 'EUR', '--reference', 'correction', '--', '-0.25'],
      env,
    );
    assert.equal(debit.code, 0, debit.stderr);
    assert.match(debit.stdout, /: -0.25 EUR \(correction\); funding balance 1000001000 EUR\n$/);
    const who = await h.db.database.db
      .selectFrom('funding_credits')
      .select('actor')
      .where('reference', '=', 'correction')
      .executeTakeFirstOrThrow();
    assert.ok(who.actor.length > 0 && who.actor !== 'bob', 'the operating-system user by default');
    const tooMuch = await runCli(
      ['merchant', 'fund', h.merchant.appId, '--currency', 'USDT', '--reference', 'x', '--json', '--', '-2000000000'],
      env,
    );
    assert.equal(tooMuch.code, 1);
    assert.equal(JSON.parse(tooMuch.stderr).code, '2726');
    const bal = await runCli(['merchant', 'balance', h.merchant.appId, '--json'], env);
    assert.equal(bal.code, 0, bal.stderr);
    assert.deepEqual(JSON.parse(bal.stdout), {
      appId: h.merchant.appId,
      balances: [
        { currency: 'EUR', available: TEST_FUNDING + 1000, cardDebt: 0 },
        { currency: 'USDT', available: TEST_FUNDING, cardDebt: 0 },
      ],
    });
    const human = await runCli(['merchant', 'balance', h.merchant.appId], env);
    assert.equal(human.stdout, `EUR ${TEST_FUNDING + 1000}\nUSDT ${TEST_FUNDING}\n`);
  });
});

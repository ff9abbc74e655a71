import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Actor } from '../src/context.js';
import { DomainError } from '../src/errors.js';
import { message } from '../src/iso8583/codec.js';
import { checkLedger } from '../src/ledger/check.js';
import { fundMerchant } from '../src/ledger/funding.js';
import { settleCardDebt } from '../src/ledger/settle-debt.js';
import { runVerb } from '../src/runner.js';
import { build, type Harness, randomStr, TEST_FUNDING, type TestMerchant } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import { childDatabaseUrl, runCli } from './helpers/cli.js';
import { eachDialect } from './helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer, trace } from './helpers/link.js';
import { noteSecret } from './helpers/log-audit.js';

/**
 * Debt is visible (decisions §12.13, issue 39 point 11): `ledgerBalance` is the card's net position
 * (available + held − debt) in every card model, `merchantBalance` gives the merchant's cards' debt
 * (`cardDebt`), and a closed card's debt is settled by the operator against the merchant's funding,
 * once, as a line of the funding statement.
 */

const ALICE: Actor = { kind: 'operator', via: 'cli', who: 'alice', origin: 'test' };

interface CardAnswer {
  availableBalance: number;
  ledgerBalance: number;
  debtBalance: number;
  status: string;
}

const balancesOf = (m: CardAnswer) => [m.availableBalance, m.ledgerBalance, m.debtBalance];

/** An 0220 clearing with no original (field 2 names the card): a forced post of `amount` minor units. */
const forcedClearing = (pan: string, amount: number) =>
  message('0220', { 2: pan, 3: '000000', 4: String(amount).padStart(12, '0'), ...trace(), 32: '12345678', 49: '978' });

async function setup(t: Parameters<typeof build>[0], dialect: Parameters<typeof build>[1]) {
  const h = await build(t, dialect);
  const peer = await Peer.open(t, (await linkOf(t, h)).port);
  return { h, peer };
}

async function merchantBalance(h: Harness, merchant?: TestMerchant) {
  const res = await h.call('/api/network/merchantBalance.html', { randomStr: randomStr() }, merchant ? { merchant } : {});
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.model.balances as Array<{ currency: string; available: number; cardDebt: number }>;
}

async function statement(h: Harness) {
  const res = await h.call('/api/network/merchantFundingList.html', { currency: 'EUR', maxSize: 100, randomStr: randomStr() });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.model.movements as Array<{
    seq: number;
    kind: string;
    amount: number;
    balance: number;
    reference: string;
    cardId: string | null;
  }>;
}

async function clean(h: Harness): Promise<void> {
  assert.deepEqual((await checkLedger(h.db.database)).problems, []);
}

const settle = (h: Harness, cardId: string) =>
  runVerb(h.app.svc, settleCardDebt, { input: { cardId }, actor: ALICE, audit: { action: 'card.settleDebt', target: cardId } });

eachDialect('card debt is visible (decisions §12.13)', (dialect) => {
  it('ledgerBalance is available + held − debt in cardQuery and in every answer that gives the card; merchantBalance gives the cards’ debt', async (t) => {
    const { h, peer } = await setup(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 5 });
    const card = await cardSecrets(h, cardId);
    const applied = (await ok(h, '/api/network/cardApply.html', {
      holderId: (await ok(h, '/api/network/cardQuery.html', { cardId })).holderId,
      currency: 'EUR',
    })) as CardAnswer;
    assert.deepEqual(balancesOf(applied), [0, 0, 0]);
    // The network stood in for 8.00 on a card holding 5.00: 8.00 held, 3.00 owed.
    assert.equal((await peer.ask(authorizationRequest(card, { amount: 800, mti: '0120' }))).fields.get(39), '00');
    const q = (await ok(h, '/api/network/cardQuery.html', { cardId })) as CardAnswer;
    assert.deepEqual(balancesOf(q), [0, 5, 3], 'a net 5.00: 8.00 held less 3.00 owed');
    // A clearing of 20.00 without an original: 20.00 more owed, the hold still there.
    assert.equal((await peer.ask(forcedClearing(card.pan, 2000))).fields.get(39), '00');
    const deep = (await ok(h, '/api/network/cardQuery.html', { cardId })) as CardAnswer;
    assert.deepEqual(balancesOf(deep), [0, -15, 23], 'negative with the debt');
    // The cardholder's page says so too: the balance with its sign, and what is owed.
    const link = await h.call('/open/merchant/api/v2', { email: 'alice@example.com' });
    assert.equal(link.status, 200, JSON.stringify(link.body));
    const opened = await h.app.inject({
      method: 'GET',
      url: new URL(link.body.model.webUrl).pathname + new URL(link.body.model.webUrl).search,
    });
    const cookie = String(opened.headers['set-cookie']).split(';')[0] ?? '';
    const page = (await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } })).body;
    assert.match(page, /<small>Balance<\/small><br>−15\.00 EUR<br><small>owes 23\.00 EUR<\/small>/);
    const frozen = (await ok(h, '/api/network/cardFreeze.html', { cardId })) as CardAnswer;
    assert.deepEqual(balancesOf(frozen), balancesOf(deep), 'the freeze answers the same card');
    const unfrozen = (await ok(h, '/api/network/cardUnfreeze.html', { cardId })) as CardAnswer;
    assert.deepEqual(balancesOf(unfrozen), balancesOf(deep));
    // merchantBalance: the cards' debt per currency, the merchant's own only.
    const other = await h.newMerchant();
    const theirs = await fundedCard(h, { merchant: other, topUp: 1 });
    const details = await h.call('/sandbox/network/cardDetails', { cardId: theirs.cardId, randomStr: randomStr() }, { merchant: other });
    const theirPan = details.body.model.cardNo as string;
    noteSecret('pan', theirPan);
    assert.equal((await peer.ask(forcedClearing(theirPan, 1100))).fields.get(39), '00');
    assert.deepEqual(await merchantBalance(h), [
      { currency: 'EUR', available: TEST_FUNDING - 5, cardDebt: 23 },
      { currency: 'USDT', available: TEST_FUNDING, cardDebt: 0 },
    ]);
    assert.deepEqual(
      (await merchantBalance(h, other)).map((b) => b.cardDebt),
      [10, 0],
    );
    // A top-up pays the debt first: the net position moves by what came in.
    const topped = await h.call('/api/network/cardTopUp.html', { cardId, amount: 30, randomStr: randomStr() });
    assert.equal(topped.status, 200, JSON.stringify(topped.body));
    assert.deepEqual(balancesOf((await ok(h, '/api/network/cardQuery.html', { cardId })) as CardAnswer), [7, 15, 0]);
    assert.deepEqual(
      (await merchantBalance(h)).map((b) => b.cardDebt),
      [0, 0],
    );
    const closed = (await ok(h, '/api/network/cardClose.html', { cardId })) as CardAnswer;
    assert.deepEqual(balancesOf(closed), [0, 8, 0], 'closed: the available balance went back, the hold stays');
    await clean(h);
  });

  it('cardprogram card settle-debt: a closed card’s debt from its merchant’s funding, one statement line, in the audit trail; only a closed card, only what it owes', async (t) => {
    const { h, peer } = await setup(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 5 });
    const card = await cardSecrets(h, cardId);
    assert.equal((await peer.ask(forcedClearing(card.pan, 1200))).fields.get(39), '00');
    await assert.rejects(
      settle(h, cardId),
      (err: unknown) => err instanceof DomainError && err.code === '2724',
      'an open card pays by top-up',
    );
    const closed = (await ok(h, '/api/network/cardClose.html', { cardId })) as CardAnswer;
    assert.deepEqual(balancesOf(closed), [0, -7, 7]);
    assert.deepEqual((await merchantBalance(h))[0], { currency: 'EUR', available: TEST_FUNDING - 5, cardDebt: 7 });
    const before = (await statement(h)).length;
    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
      CARDPROGRAM_DATA_DIR: h.db.dataDir,
    };
    const res = await runCli(['card', 'settle-debt', cardId, '--json'], env);
    assert.equal(res.code, 0, res.stderr);
    const done = JSON.parse(res.stdout);
    assert.deepEqual(
      [done.cardId, done.merchantId, done.currency, done.amount, done.fundingBalance],
      [cardId, h.merchant.appId, 'EUR', 7, TEST_FUNDING - 12],
    );
    assert.match(done.settlementId, /^sdb_/);
    assert.deepEqual(balancesOf((await ok(h, '/api/network/cardQuery.html', { cardId })) as CardAnswer), [0, 0, 0]);
    assert.deepEqual((await merchantBalance(h))[0], { currency: 'EUR', available: TEST_FUNDING - 12, cardDebt: 0 });
    const lines = await statement(h);
    assert.equal(lines.length, before + 1);
    assert.deepEqual(lines.at(-1), {
      ...lines.at(-1),
      kind: 'debtSettlement',
      amount: -7,
      balance: TEST_FUNDING - 12,
      reference: done.settlementId,
      cardId,
    });
    const trail = await h.db.database.db
      .selectFrom('audit_events')
      .select(['action', 'target', 'source'])
      .where('action', '=', 'card.settleDebt')
      .execute();
    assert.deepEqual(trail, [{ action: 'card.settleDebt', target: cardId, source: 'cli' }]);
    // Nothing owed any more: 2723, nothing moved.
    const again = await runCli(['card', 'settle-debt', cardId], env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /the card owes nothing/);
    assert.equal((await statement(h)).length, before + 1);
    await clean(h);
  });

  it('funding short of the debt: refused with 2726 naming what is available, nothing moved; credited, it settles', async (t) => {
    const { h, peer } = await setup(t, dialect);
    const { cardId } = await fundedCard(h);
    assert.equal((await peer.ask(forcedClearing((await cardSecrets(h, cardId)).pan, 4000))).fields.get(39), '00');
    await ok(h, '/api/network/cardClose.html', { cardId });
    // The merchant's funding down to 25.00: short of the 40.00 owed.
    const fund = (amount: string) =>
      runVerb(h.app.svc, fundMerchant, { input: { appId: h.merchant.appId, currency: 'EUR', amount, reference: 'test' }, actor: 'test' });
    await fund(String(25 - TEST_FUNDING));
    const lines = (await statement(h)).length;
    await assert.rejects(
      settle(h, cardId),
      (err: unknown) => err instanceof DomainError && err.code === '2726' && /funding balance is 25 EUR, 40 EUR needed/.test(err.message),
    );
    assert.equal((await ok(h, '/api/network/cardQuery.html', { cardId })).debtBalance, 40);
    assert.deepEqual((await merchantBalance(h))[0], { currency: 'EUR', available: 25, cardDebt: 40 });
    assert.equal((await statement(h)).length, lines);
    await clean(h);
    await fund('15');
    assert.equal((await settle(h, cardId)).fundingBalance, 0);
    assert.deepEqual((await merchantBalance(h))[0], { currency: 'EUR', available: 0, cardDebt: 0 });
    await clean(h);
  });

  it('settled once under concurrency: of several settlements at once one moves the money, the others find nothing owed', async (t) => {
    const { h, peer } = await setup(t, dialect);
    for (let round = 0; round < 5; round++) {
      const { cardId } = await fundedCard(h);
      assert.equal((await peer.ask(forcedClearing((await cardSecrets(h, cardId)).pan, 1000 + round))).fields.get(39), '00');
      await ok(h, '/api/network/cardClose.html', { cardId });
      const results = await Promise.allSettled([settle(h, cardId), settle(h, cardId), settle(h, cardId)]);
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1, `round ${round}`);
      for (const r of results) {
        if (r.status === 'rejected') assert.ok(r.reason instanceof DomainError && r.reason.code === '2723', String(r.reason));
      }
      await clean(h);
    }
    const settlements = (await statement(h)).filter((l) => l.kind === 'debtSettlement');
    assert.deepEqual(
      settlements.map((l) => l.amount),
      [-10, -10.01, -10.02, -10.03, -10.04],
    );
    assert.equal((await merchantBalance(h))[0]?.cardDebt, 0);
  });
});

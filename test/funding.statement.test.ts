import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { it } from 'node:test';
import { CardProgram, type FundingMovement } from '../client/src/index.js';
import { checkLedger } from '../src/ledger/check.js';
import { fundMerchant } from '../src/ledger/funding.js';
import { runVerb } from '../src/runner.js';
import { build, type Harness, randomStr, TEST_FUNDING, type TestMerchant } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

// Issue 32, point 3: the merchant reads every movement of its funding account, with the balance after it.
const LIST = '/api/network/merchantFundingList.html';
const cents = (major: number) => Math.round(major * 100);

async function statement(h: Harness, currency: string, maxSize = 100, merchant?: TestMerchant): Promise<FundingMovement[]> {
  const lines: FundingMovement[] = [];
  for (let after: number | null = 0; after !== null; ) {
    const res = await h.call(LIST, { currency, after, maxSize, randomStr: randomStr() }, merchant ? { merchant } : {});
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(res.body.model.movements.length <= maxSize);
    lines.push(...res.body.model.movements);
    after = res.body.model.next;
  }
  return lines;
}

async function available(h: Harness, currency: string, merchant?: TestMerchant): Promise<number> {
  const res = await h.call('/api/network/merchantBalance.html', { currency, randomStr: randomStr() }, merchant ? { merchant } : {});
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.model.balances[0].available;
}

/** Numbered 1, 2, 3… without gaps; each balance is the one before plus its amount; the replay is the balance. */
function assertReplays(lines: FundingMovement[], balance: number): void {
  let running = 0;
  for (const [i, l] of lines.entries()) {
    assert.equal(l.seq, i + 1, 'numbered without gaps');
    running += cents(l.amount);
    assert.equal(cents(l.balance), running, `line ${l.seq}: the balance after it`);
  }
  assert.equal(running, cents(balance), 'the replay of the statement is the balance');
}

eachDialect('the merchant’s funding statement (merchantFundingList)', (dialect) => {
  it('every movement, with its reference, card, trade and the balance after it: credit, debit, top-up, card close, release after the close', async (t) => {
    const h = await build(t, dialect);
    const m = await h.newMerchant();
    await runVerb(h.app.svc, fundMerchant, {
      input: { appId: m.appId, currency: 'EUR', amount: '500', reference: 'wire #9' },
      actor: 'alice',
    });
    await runVerb(h.app.svc, fundMerchant, {
      input: { appId: m.appId, currency: 'EUR', amount: '-200', reference: 'correction' },
      actor: 'alice',
    });
    const { cardId } = await fundedCard(h, { topUp: 100, merchant: m });
    const auth = await ok(h, '/sandbox/network/authorize', { cardId, amount: 30 }, m);
    await ok(h, '/api/network/cardClose.html', { cardId }, m);
    const reversal = await ok(h, '/sandbox/network/reverse', { tradeId: auth.tradeId }, m);

    const lines = await statement(h, 'EUR', 2, m);
    assert.deepEqual(
      lines.map((l) => [l.kind, l.amount, l.reference]),
      [
        ['credit', TEST_FUNDING, 'test funding'],
        ['credit', 500, 'wire #9'],
        ['debit', -200, 'correction'],
        ['topUp', -100, 'Top-up'],
        ['cardClose', 70, 'Card closed'],
        ['release', 30, reversal.remark],
      ],
    );
    assert.deepEqual(
      lines.map((l) => l.cardId),
      [null, null, null, cardId, cardId, cardId],
    );
    assert.equal(lines[5]?.tradeId, reversal.tradeId, 'the release names the reversal that brought the money back');
    assert.ok(lines.every((l) => !Number.isNaN(Date.parse(l.createdAt))));
    assertReplays(lines, await available(h, 'EUR', m));
    // The other currency is its own statement; another merchant sees only its own.
    assert.deepEqual(
      (await statement(h, 'USDT', 100, m)).map((l) => l.kind),
      ['credit'],
    );
    assert.equal(
      (await statement(h, 'EUR')).some((l) => l.reference === 'wire #9'),
      false,
    );
    const bad = await h.call(LIST, { currency: 'GBP', randomStr: randomStr() }, { merchant: m });
    assert.deepEqual([bad.status, bad.body.code], [400, '2720']);

    // The SDK's iterator reads the same lines, page by page.
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const sdk = new CardProgram({
      baseUrl: `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`,
      appId: m.appId,
      secret: m.secret,
      webhookSecret: m.webhookSecret,
    });
    const iterated: FundingMovement[] = [];
    for await (const line of sdk.funding.statement({ currency: 'EUR', pageSize: 4 })) iterated.push(line);
    assert.deepEqual(iterated, lines);
    const since: FundingMovement[] = [];
    for await (const line of sdk.funding.statement({ currency: 'EUR', after: 4 })) since.push(line);
    assert.deepEqual(since, lines.slice(4));
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('under concurrent top-ups, closes and credits, the statement has no gap and replays to the balance', async (t) => {
    const h = await build(t, dialect);
    const m = await h.newMerchant();
    const cards = await Promise.all(Array.from({ length: 6 }, () => fundedCard(h, { topUp: 10, merchant: m })));
    const ops: Array<Promise<unknown>> = [];
    for (const [i, c] of cards.entries()) {
      for (let k = 0; k < 4; k++) {
        ops.push(h.call('/api/network/cardTopUp.html', { cardId: c.cardId, amount: 1 + k, randomStr: randomStr() }, { merchant: m }));
      }
      // Half the cards close while their top-ups run; a late top-up is then refused (2724), writing nothing.
      if (i % 2 === 0) ops.push(h.call('/api/network/cardClose.html', { cardId: c.cardId, randomStr: randomStr() }, { merchant: m }));
      ops.push(
        runVerb(h.app.svc, fundMerchant, {
          input: { appId: m.appId, currency: 'EUR', amount: `${i + 1}`, reference: `wire ${i}` },
          actor: 'alice',
        }),
      );
    }
    const results = await Promise.all(ops);
    for (const r of results) {
      const status = (r as { status?: number }).status;
      if (status !== undefined) assert.ok(status === 200 || status === 409, JSON.stringify(r));
    }
    const lines = await statement(h, 'EUR', 7, m);
    assertReplays(lines, await available(h, 'EUR', m));
    const kinds = new Set(lines.map((l) => l.kind));
    assert.deepEqual([...kinds].sort(), ['cardClose', 'credit', 'topUp']);
    const postings = await h.db.database.db
      .selectFrom('ledger_postings')
      .select('amount')
      .where('account', '=', `merchant:${m.appId}:funding`)
      .where('currency', '=', 'EUR')
      .execute();
    assert.equal(lines.length, postings.length, 'one line per posting of the funding account');
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });
});

eachDialect('merchantFundingList: an `after` past what a statement can reach', (dialect) => {
  // After an attack pass: `after` ≥ 2^63 (or 1e308, a whole number to JSON) overflowed PostgreSQL's
  // bigint and answered 500. As the 4.1 list does for `start` (src/trades/list.ts): an empty page,
  // with the randomStr spent as for every answer.
  it('after ≥ 2^63, 1e308 or MAX_SAFE_INTEGER is an empty page, and the same randomStr is then 1008', async (t) => {
    const h = await build(t, dialect);
    await fundedCard(h, { topUp: 1 });
    for (const after of [2 ** 63, 1e308, 2 ** 64, Number.MAX_SAFE_INTEGER]) {
      const key = randomStr();
      const first = await h.call(LIST, { currency: 'EUR', after, randomStr: key });
      assert.equal(first.status, 200, `${after} → ${JSON.stringify(first.body)}`);
      assert.deepEqual(first.body.model, { currency: 'EUR', movements: [], next: null });
      const again = await h.call(LIST, { currency: 'EUR', after, randomStr: key });
      assert.equal(again.body.code, '1008', `${after} again → ${JSON.stringify(again.body)}`);
      assert.equal(again.body.model, null, 'no page with a spent randomStr');
    }
  });
});

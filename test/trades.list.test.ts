import assert from 'node:assert/strict';
import { it } from 'node:test';
import { withTrades } from '../src/db/trades-table.js';
import { build, randomStr } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

const LIST = '/api/network/networkAuthTradeList.html';
const N = '/sandbox/network';

function day(offset: number): string {
  return new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
}

async function list(h: Awaited<ReturnType<typeof build>>, body: Record<string, unknown>) {
  return h.call(LIST, { beginDate: day(-30), endDate: day(0), start: 0, randomStr: randomStr(), ...body });
}

eachDialect('authorized-transaction list (interface 4.1)', (dialect) => {
  it('default statuses 1 and 10, newest first by businessDate then creation, masked cardNo, amounts in major units', async (t) => {
    const h = await build(t, dialect);
    const { cardId, cardNo } = await fundedCard(h, { topUp: 500 });
    const a1 = await ok(h, `${N}/authorize`, { cardId, amount: 12.5, businessDate: day(-3), remark: 'A1' });
    const a2 = await ok(h, `${N}/authorize`, { cardId, amount: 7, businessDate: day(-5), remark: 'A2' });
    await ok(h, `${N}/reverse`, { tradeId: a2.tradeId, businessDate: day(-4) }); // a2 → 3, plus a status 2 record
    const a3 = await ok(h, `${N}/authorize`, { cardId, amount: 3, businessDate: day(-3), remark: 'A3' });
    await ok(h, `${N}/void`, { tradeId: a3.tradeId, businessDate: day(-3) }); // a3 → 6, plus a status 7 record
    const pay = await ok(h, `${N}/clear`, { tradeId: a1.tradeId, businessDate: day(-2) });
    const ref = await ok(h, `${N}/refund`, { tradeId: pay.tradeId, amount: 2.25, businessDate: day(-1) });

    const res = await list(h, { cardId });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(Object.keys(res.body).sort(), ['total', 'tradeList']);
    // Listed: top-up (today), refund, payment, a1 — not the reversed/voided originals, reversal or void records.
    assert.deepEqual(
      res.body.tradeList.map((x: { tradeId: string }) => x.tradeId),
      [res.body.tradeList[0].tradeId, ref.tradeId, pay.tradeId, a1.tradeId],
    );
    assert.equal(res.body.tradeList[0].tradeType, 100);
    assert.equal(res.body.total, 4);
    for (const rec of res.body.tradeList) {
      assert.equal(rec.cardNo, cardNo);
      assert.match(rec.cardNo, /^\d{6}\*{6}\d{4}$/);
      assert.ok([1, 10].includes(rec.tradeStatus));
      assert.deepEqual(Object.keys(rec).sort(), [
        'amount',
        'authCode',
        'businessDate',
        'cardNo',
        'currency',
        'currencyTxn',
        'fee',
        'remark',
        'tradeId',
        'tradeStatus',
        'tradeType',
        'txnAmount',
      ]);
    }
    assert.equal(res.body.tradeList[3].amount, 12.5);
    assert.equal(res.body.tradeList[1].amount, 2.25);

    const others = await list(h, { cardId, tradeStatusList: [2, 3, 6, 7] });
    assert.deepEqual(
      others.body.tradeList.map((x: { tradeStatus: number; businessDate: string }) => [x.tradeStatus, x.businessDate]),
      [
        [7, day(-3)],
        [6, day(-3)],
        [2, day(-4)],
        [3, day(-5)],
      ],
    );
    const all = await list(h, { cardId, tradeStatusList: [1, 2, 3, 6, 7, 10] });
    assert.equal(all.body.total, 8);
  });

  it('paging: start is the index of the first record, maxSize defaults to 10 and caps at 30, total counts the whole range', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 1000 });
    const ids: string[] = [];
    for (let i = 0; i < 44; i++) ids.push((await ok(h, `${N}/authorize`, { cardId, amount: 1, businessDate: day(-(i % 7)) })).tradeId);
    const everything = await list(h, { cardId, maxSize: 30 });
    assert.equal(everything.body.total, 45);
    assert.equal(everything.body.tradeList.length, 30);
    const seen: string[] = [];
    for (let start = 0; start < 45; start += 10) {
      const page = await list(h, { cardId, start });
      assert.equal(page.body.total, 45);
      assert.equal(page.body.tradeList.length, Math.min(10, 45 - start));
      seen.push(...page.body.tradeList.map((x: { tradeId: string }) => x.tradeId));
    }
    assert.equal(new Set(seen).size, 45, 'pages neither overlap nor skip');
    const dates = seen
      .map((id) => everything.body.tradeList.find((x: { tradeId: string }) => x.tradeId === id)?.businessDate)
      .filter(Boolean);
    assert.deepEqual(dates, [...dates].sort().reverse(), 'newest first');
    // Any start, including one inside a day and the last record.
    for (const start of [7, 13, 44]) {
      const page = await list(h, { cardId, start, maxSize: 3 });
      assert.deepEqual(
        page.body.tradeList.map((x: { tradeId: string }) => x.tradeId),
        seen.slice(start, start + 3),
        `start ${start}`,
      );
    }
    const beyond = await list(h, { cardId, start: 45 });
    assert.deepEqual(beyond.body, { total: 45, tradeList: [] });
    const narrow = await list(h, { cardId, beginDate: day(-1), endDate: day(-1) });
    assert.equal(narrow.body.total, 7);
  });

  it('every start and page size agrees with a naive ordering of the whole range (both walking directions)', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 1000 });
    // Uneven days, including one with many records, and some records of other statuses in between.
    const plan = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 2, 2, 2, 3, 5, 5, 5, 5, 5, 5, 5, 9];
    for (const [i, d] of plan.entries()) {
      const a = await ok(h, `${N}/authorize`, { cardId, amount: 1, businessDate: day(-d) });
      if (i % 5 === 4) await ok(h, `${N}/reverse`, { tradeId: a.tradeId, businessDate: day(-d) });
    }
    const expected = (
      await withTrades(h.db.database.db)
        .selectFrom('trades')
        .select('id')
        .where('card_id', '=', cardId)
        .where('trade_status', 'in', [1, 10])
        .orderBy('business_date', 'desc')
        .orderBy('seq', 'desc')
        .execute()
    ).map((r) => r.id);
    for (const maxSize of [1, 4, 30]) {
      for (let start = 0; start <= expected.length; start++) {
        const page = await list(h, { cardId, start, maxSize });
        assert.equal(page.body.total, expected.length);
        assert.deepEqual(
          page.body.tradeList.map((x: { tradeId: string }) => x.tradeId),
          expected.slice(start, start + maxSize),
          `start ${start}, maxSize ${maxSize}`,
        );
      }
    }
  });

  it('by cardNo (full number), by both (same card), currency filter', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 10 });
    const pan = (await h.call(`${N}/cardDetails`, { cardId, randomStr: randomStr() })).body.model.cardNo;
    const byNo = await list(h, { cardNo: pan });
    assert.equal(byNo.status, 200);
    assert.equal(byNo.body.total, 1);
    assert.equal((await list(h, { cardNo: pan, cardId })).body.total, 1);
    assert.equal((await list(h, { cardNo: pan, cardId: '' })).body.total, 1, '"" is "not sent"');
    assert.equal((await list(h, { cardId, tradeStatusList: [1, 1, 1, 1, 1, 1, 1, 10] })).body.total, 1, 'duplicates are harmless');
    assert.equal((await list(h, { cardId, currency: 'EUR' })).body.total, 1);
    assert.deepEqual((await list(h, { cardId, currency: 'USDT' })).body, { total: 0, tradeList: [] });
  });

  it('every bad input: the exact code, and msg naming the field', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 10 });
    const other = await fundedCard(h, { topUp: 10 });
    const otherMerchant = await h.newMerchant();
    const foreign = await fundedCard(h, { merchant: otherMerchant, topUp: 1 });
    const foreignPan = (await h.call(`${N}/cardDetails`, { cardId: foreign.cardId, randomStr: randomStr() }, { merchant: otherMerchant }))
      .body.model.cardNo;
    const otherPan = (await h.call(`${N}/cardDetails`, { cardId: other.cardId, randomStr: randomStr() })).body.model.cardNo;
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{}, '1002', /^cardId: cardId or cardNo is required$/],
      [{ cardId, cardNo: otherPan }, '1002', /^cardNo: names another card than cardId$/],
      [{ cardId, beginDate: day(-31), endDate: day(0) }, '1002', /^endDate: must be at most 30 days after beginDate$/],
      [{ cardId, beginDate: day(-1), endDate: day(-2) }, '1002', /^endDate: must not be before beginDate$/],
      [{ cardId, maxSize: 31 }, '1002', /^maxSize: must be a whole number from 1 to 30$/],
      [{ cardId, maxSize: 0 }, '1002', /^maxSize: /],
      [{ cardId, start: -1 }, '1002', /^start: must be a whole number ≥ 0/],
      [{ cardId, start: 1.5 }, '1002', /^start: /],
      [{ cardId, start: '0' }, '1002', /^start: must be an integer$/],
      [{ cardId, beginDate: '2026-13-01' }, '1002', /^beginDate: must be a real date/],
      [{ cardId, beginDate: '2026/11/01' }, '1002', /^beginDate: must be the first day written yyyy-MM-dd$/],
      [{ cardId, endDate: '2026-02-29' }, '1002', /^endDate: must be a real date/],
      [{ cardId, beginDate: undefined }, '1002', /^beginDate: is required$/],
      [{ cardId, currency: 'GBP' }, '2720', /^currency: must be EUR or USDT$/],
      [{ cardId, tradeStatusList: [4] }, '1002', /^tradeStatusList: must contain only 1, 2, 3, 6, 7, 10$/],
      [{ cardId, tradeStatusList: [] }, '1002', /^tradeStatusList: must be a list of 1 to 20 trade statuses/],
      [{ cardId, cardNo: '4242' }, '1002', /^cardNo: must be the full card number/],
      [{ cardId: foreign.cardId }, '2648', /^Card not found$/],
      [{ cardNo: foreignPan }, '2648', /^Card not found$/],
      [{ cardId: 'card_unknown' }, '2648', /^Card not found$/],
      [{ cardId, extra: 1 }, '1002', /^extra: is not a known field$/],
    ];
    for (const [body, code, msg] of cases) {
      const res = await list(h, body);
      assert.equal(res.body.code, code, `${JSON.stringify(body)} → ${JSON.stringify(res.body)}`);
      assert.match(res.body.msg, msg, JSON.stringify(body));
      assert.equal(res.body.success, false);
    }
    const key = randomStr();
    assert.equal((await list(h, { cardId, randomStr: key })).status, 200);
    assert.equal((await list(h, { cardId, randomStr: key })).body.code, '1008', 'a read randomStr is single-use');
  });
});

eachDialect('a listed card number leaves no trace at rest', (dialect) => {
  it('a 4.1 request by cardNo stores neither the number nor a hash of the body', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 1 });
    const pan = (await h.call(`${N}/cardDetails`, { cardId, randomStr: randomStr() })).body.model.cardNo;
    const key = randomStr();
    assert.equal((await list(h, { cardNo: pan, randomStr: key })).status, 200);
    const row = await h.db.database.db.selectFrom('idempotency_keys').selectAll().where('random_str', '=', key).executeTakeFirstOrThrow();
    assert.equal(row.fingerprint, '-');
    assert.equal(row.response_body, null);
    assert.ok(!JSON.stringify(row).includes(pan));
  });
});

eachDialect('the list spends its randomStr whatever it answers', (dialect) => {
  // On PostgreSQL the nonce is spent in the list's own statement (src/trades/list.ts): the same rule
  // as a nonce spent before the read, for every answer.
  it('after a page, a bad window, an unknown card or another merchant’s card, the same randomStr is 1008, and one row is kept', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 1 });
    const other = await h.newMerchant();
    const foreign = await fundedCard(h, { topUp: 1, merchant: other });
    const day = new Date().toISOString().slice(0, 10);
    // A page has no code; a refusal its code.
    const cases: Array<[Record<string, unknown>, string | undefined]> = [
      [{ cardId }, undefined],
      [{ cardId, beginDate: '2026-02-30' }, '1002'],
      [{ cardId, beginDate: '2026-01-01', endDate: '2026-03-01' }, '1002'],
      [{ cardId, tradeStatusList: [99] }, '1002'],
      [{ cardId, currency: 'GBP' }, '2720'],
      [{ cardId: 'card_unknown' }, '2648'],
      // Past any total, up to what JSON can say: an empty page (PostgreSQL's bigint holds no 1e20).
      [{ cardId, start: 2 ** 63 }, undefined],
      [{ cardId, start: 1e300 }, undefined],
      [{ cardId: foreign.cardId }, '2648'],
    ];
    for (const [body, code] of cases) {
      const key = randomStr();
      const first = await list(h, { beginDate: day, endDate: day, ...body, randomStr: key });
      assert.equal(first.body.code, code, `${JSON.stringify(body)} → ${JSON.stringify(first.body)}`);
      if (code === undefined && (body.start as number) > 0) assert.deepEqual(first.body, { total: 1, tradeList: [] });
      const again = await list(h, { beginDate: day, endDate: day, ...body, randomStr: key });
      assert.equal(again.body.code, '1008', `${JSON.stringify(body)} again → ${JSON.stringify(again.body)}`);
      assert.equal(again.body.total, undefined, 'no page with a spent randomStr');
      const rows = await h.db.database.db.selectFrom('idempotency_keys').selectAll().where('random_str', '=', key).execute();
      assert.deepEqual(
        rows.map((r) => [r.merchant_id, r.kind, r.operation, r.fingerprint, r.response_body]),
        [[h.merchant.appId, 'read', 'tradeList', '-', null]],
      );
    }
    // A write's randomStr is spent for reads too, and a list's for writes.
    const written = randomStr();
    assert.equal((await h.call(`${N}/authorize`, { cardId, amount: 0.01, randomStr: written })).status, 200);
    assert.equal((await list(h, { cardId, beginDate: day, endDate: day, randomStr: written })).body.code, '1008');
    const read = randomStr();
    assert.equal((await list(h, { cardId, beginDate: day, endDate: day, randomStr: read })).status, 200);
    assert.equal((await h.call(`${N}/authorize`, { cardId, amount: 0.01, randomStr: read })).body.code, '1008');
  });
});

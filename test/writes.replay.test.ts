import assert from 'node:assert/strict';
import { it } from 'node:test';
import { build, type Harness, holderBody, randomStr, rowCounts, sign, type TestMerchant } from './helpers/app.js';
import { balances, fundedCard } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

// Issue 31, attack review of the writes in one or two statements (top-up, cardholder creation,
// authorization, with the key claimed in the verb's own statement): a replay answers the stored
// answer exactly with no second effect, concurrent duplicates have one effect, and another
// merchant's card is refused with nothing written.

const TOPUP = '/api/network/cardTopUp.html';
const CREATE = '/api/network/holderCreate.html';
const AUTHORIZE = '/sandbox/network/authorize';

const TABLES = [
  'trades',
  'ledger_postings',
  'authorizations',
  'idempotency_keys',
  'cardholders',
  'merchant_balances',
  'funding_movements',
  'callback_events',
  'trade_auth_codes',
] as const;

const counts = (h: Harness) => rowCounts(h, TABLES);

/** The request as captured on the wire: signed, with its timestamp. */
const captured = (fields: Record<string, unknown>, m: TestMerchant) => sign({ ...fields, timestamp: Date.now() }, m);

async function send(h: Harness, path: string, body: Record<string, unknown>) {
  return h.call(path, body, { raw: true });
}

function delta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of Object.keys(after)) if ((after[k] ?? 0) !== (before[k] ?? 0)) out[k] = (after[k] ?? 0) - (before[k] ?? 0);
  return out;
}

async function merchantFunding(h: Harness, appId: string, currency = 'EUR'): Promise<number> {
  const row = await h.db.database.db
    .selectFrom('merchant_balances')
    .select('available')
    .where('merchant_id', '=', appId)
    .where('currency', '=', currency)
    .executeTakeFirst();
  return Number(row?.available ?? 0);
}

eachDialect('replayed and concurrent writes (issue 31, attack pass)', (dialect) => {
  for (const requireTimestamp of [true, false]) {
    it(`a captured top-up, cardholder and authorization replayed: the stored answer exactly, no second effect (timestamp ${requireTimestamp ? 'required' : 'optional'})`, async (t) => {
      const h = await build(t, dialect, { requireTimestamp });
      const { cardId } = await fundedCard(h, { topUp: 50 });
      for (const [path, fields] of [
        [TOPUP, { cardId, amount: 7 }],
        [CREATE, holderBody()],
        [AUTHORIZE, { cardId, amount: 3 }],
      ] as const) {
        const body = captured({ ...fields, randomStr: randomStr() }, h.merchant);
        const first = await send(h, path, body);
        assert.equal(first.status, 200, `${path} ${JSON.stringify(first.body)}`);
        // (A read's durable nonce, in the sandbox: taken before the counts.)
        const money = await balances(h, cardId);
        const before = await counts(h);
        for (let i = 0; i < 3; i++) {
          const again = await send(h, path, body);
          assert.equal(again.status, 200, JSON.stringify(again.body));
          assert.equal(again.headers['x-idempotent-replay'], 'true');
          const { traceId: _a, ...was } = first.body;
          const { traceId: _b, ...is } = again.body;
          assert.deepEqual(is, was, path);
        }
        assert.deepEqual(delta(before, await counts(h)), {}, `${path}: nothing written by the replays`);
        assert.deepEqual(await balances(h, cardId), money);
      }
    });
  }

  it('a replayed declined authorization answers the same decline with its tradeId, and records nothing more', async (t) => {
    const h = await build(t, dialect, { requireTimestamp: true });
    const { cardId } = await fundedCard(h, { topUp: 5 });
    const body = captured({ cardId, amount: 100, randomStr: randomStr() }, h.merchant);
    const first = await send(h, AUTHORIZE, body);
    assert.equal(first.status, 409, JSON.stringify(first.body));
    assert.equal(first.body.code, '2725');
    assert.match(String(first.body.detail?.tradeId), /^dcl_/);
    const before = await counts(h);
    const again = await send(h, AUTHORIZE, body);
    assert.equal(again.status, 409, JSON.stringify(again.body));
    assert.equal(again.body.code, first.body.code);
    assert.equal(again.body.msg, first.body.msg);
    assert.deepEqual(again.body.detail, first.body.detail);
    assert.deepEqual(delta(before, await counts(h)), {});
    // Funded now, the same captured request still answers its decline: it never holds.
    await h.call(TOPUP, { cardId, amount: 500, randomStr: randomStr() });
    const money = await balances(h, cardId);
    const later = await send(h, AUTHORIZE, body);
    assert.equal(later.body.code, '2725');
    assert.deepEqual(await balances(h, cardId), money);
  });

  it('the same randomStr with another body is 1008 and writes nothing', async (t) => {
    const h = await build(t, dialect, { requireTimestamp: true });
    const { cardId } = await fundedCard(h, { topUp: 50 });
    const r = randomStr();
    assert.equal((await h.call(TOPUP, { cardId, amount: 2, randomStr: r })).status, 200);
    const before = await counts(h);
    for (const [path, fields] of [
      [TOPUP, { cardId, amount: 3 }],
      [AUTHORIZE, { cardId, amount: 1 }],
      [CREATE, holderBody()],
    ] as const) {
      const res = await h.call(path, { ...fields, randomStr: r });
      assert.equal(res.status, 409, `${path} ${JSON.stringify(res.body)}`);
      assert.equal(res.body.code, '1008');
    }
    assert.deepEqual(delta(before, await counts(h)), {});
  });

  it('twenty copies of one top-up, authorization and cardholder at once: one effect, every answer the first', async (t) => {
    const h = await build(t, dialect, { requireTimestamp: true });
    const { cardId } = await fundedCard(h, { topUp: 50 });
    for (const [path, fields, field] of [
      [TOPUP, { cardId, amount: 4 }, 'tradeId'],
      [AUTHORIZE, { cardId, amount: 2 }, 'tradeId'],
      [CREATE, holderBody(), 'holderId'],
    ] as const) {
      const body = captured({ ...fields, randomStr: randomStr() }, h.merchant);
      const before = await counts(h);
      const money = await balances(h, cardId);
      const all = await Promise.all(Array.from({ length: 20 }, () => send(h, path, body)));
      for (const r of all) assert.equal(r.status, 200, `${path} ${JSON.stringify(r.body)}`);
      const ids = new Set(all.map((r) => (r.body.model ?? r.body)[field] ?? r.body[field]));
      assert.equal(ids.size, 1, `${path}: ${[...ids].join(', ')}`);
      const d = delta(before, await counts(h));
      if (path === CREATE) assert.equal(d.cardholders, 1, JSON.stringify(d));
      else assert.equal(d.trades, 1, JSON.stringify(d));
      assert.equal(d.idempotency_keys, 1, JSON.stringify(d));
      const after = await balances(h, cardId);
      if (path === TOPUP) assert.ok(after.available > money.available && after.available <= money.available + 4, JSON.stringify(after));
      if (path === AUTHORIZE) assert.ok(after.available < money.available && after.available >= money.available - 3, JSON.stringify(after));
    }
  });

  it('twenty authorizations at once with their own randomStr cannot hold more than the card has', async (t) => {
    const h = await build(t, dialect, { requireTimestamp: true });
    const { cardId } = await fundedCard(h, { topUp: 10 });
    const all = await Promise.all(Array.from({ length: 20 }, () => h.call(AUTHORIZE, { cardId, amount: 1, randomStr: randomStr() })));
    for (const r of all) assert.ok(r.status === 200 || r.body.code === '2725', JSON.stringify(r.body));
    const approved = all.filter((r) => r.status === 200).length;
    const after = await balances(h, cardId);
    assert.ok(after.available >= 0, JSON.stringify(after));
    assert.ok(approved >= 1 && approved <= 10, String(approved));
  });

  it('another merchant’s card: top-up and authorization refused 2648, nothing written, its randomStr still free', async (t) => {
    const h = await build(t, dialect, { requireTimestamp: true });
    const a = await fundedCard(h, { topUp: 20 });
    const b = await h.newMerchant();
    const own = await fundedCard(h, { topUp: 20, merchant: b });
    const before = await counts(h);
    const fundingA = await merchantFunding(h, h.merchant.appId);
    const fundingB = await merchantFunding(h, b.appId);
    const money = await balances(h, a.cardId);
    for (const [path, fields] of [
      [TOPUP, { amount: 5 }],
      [AUTHORIZE, { amount: 5 }],
    ] as const) {
      const r = randomStr();
      const res = await h.call(path, { ...fields, cardId: a.cardId, randomStr: r }, { merchant: b });
      assert.equal(res.status, 404, `${path} ${JSON.stringify(res.body)}`);
      assert.equal(res.body.code, '2648');
      assert.deepEqual(delta(before, await counts(h)), {}, path);
      // Nothing kept of the refusal: B's randomStr serves its own card.
      const mine = await h.call(path, { ...fields, cardId: own.cardId, randomStr: r }, { merchant: b });
      assert.equal(mine.status, 200, JSON.stringify(mine.body));
      Object.assign(before, await counts(h));
    }
    assert.deepEqual(await balances(h, a.cardId), money);
    assert.equal(await merchantFunding(h, h.merchant.appId), fundingA);
    assert.equal(await merchantFunding(h, b.appId), fundingB - 500);
  });

  it('a disabled merchant’s captured write is 2601 and writes nothing', async (t) => {
    const h = await build(t, dialect, { requireTimestamp: true });
    const { cardId } = await fundedCard(h, { topUp: 20 });
    const body = captured({ cardId, amount: 5, randomStr: randomStr() }, h.merchant);
    await h.db.database.db.updateTable('merchants').set({ status: 'disabled' }).where('id', '=', h.merchant.appId).execute();
    h.app.svc.merchants.forget(h.merchant.appId);
    const before = await counts(h);
    const res = await send(h, TOPUP, body);
    assert.equal(res.status, 401, JSON.stringify(res.body));
    assert.equal(res.body.code, '2601');
    assert.deepEqual(delta(before, await counts(h)), {});
  });
});

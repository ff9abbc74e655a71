import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sql } from 'kysely';
import { bucketOf, MemoryNonces, NONCE_BUCKET_MS } from '../src/idempotency/read-nonces.js';
import { build, type Harness, randomStr, sign, type TestMerchant } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

// Issue 31, attack review: a captured read (its exact bytes) is never served twice, whatever the
// store; a refused request spends nothing and writes nothing durable; another merchant's ids are
// answered as unknown ones.

const CARD_QUERY = '/api/network/cardQuery.html';
const TRADE_QUERY = '/api/network/tradeQuery.html';
const LIST = '/api/network/networkAuthTradeList.html';
const AUTHORIZE = '/sandbox/network/authorize';

type Res = { status: number; body: Record<string, any> };

function refused(res: Res, status: number, code: string, msg?: RegExp) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.code, code, JSON.stringify(res.body));
  if (msg) assert.match(res.body.msg, msg);
}

const day = () => new Date().toISOString().slice(0, 10);

/** A request as a network attacker captured it: signed by the merchant, timestamp and randomStr inside. */
const captured = (fields: Record<string, unknown>, m: TestMerchant, timestamp = Date.now()) =>
  sign({ ...fields, randomStr: randomStr(), timestamp }, m);

/** The card's full number (the sandbox's card details), as the list by cardNo takes it. */
async function fullPan(h: Harness, cardId: string): Promise<string> {
  const res = await h.call('/sandbox/network/cardDetails', { cardId, randomStr: randomStr() });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.model.cardNo as string;
}

async function post(base: string, path: string, body: Record<string, unknown>): Promise<Res> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

async function countOf(h: Harness, table: 'idempotency_keys' | 'cards' | 'authorizations'): Promise<number> {
  const r = await h.db.database.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

it('the memory store: two spends of one nonce at once, the first in a new bucket, are not both accepted', async () => {
  // The first spend of a bucket awaits its maintenance between its look and its add: a second
  // spend of the same nonce that runs in that gap must still find it.
  const now = Date.now();
  const store = new MemoryNonces(now - 1000);
  const key = { merchantId: 'mch_a', randomStr: randomStr(), operation: 'cardQuery', canonical: '{}', timestamp: now };
  const outcomes = await Promise.allSettled([store.spend(key, now, now), store.spend(key, now, now), store.spend(key, now, now)]);
  assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1, JSON.stringify(outcomes.map((o) => o.status)));
});

eachDialect('captured reads replayed where a timestamp is required (issue 31, attack pass)', (dialect) => {
  it('twenty copies of one captured read sent at once, the service’s first reads: one is served, the others 1008', async (t) => {
    const h = await build(t, dialect, { requireTimestamp: true });
    const { cardId } = await fundedCard(h, { topUp: 10 });
    for (const [path, fields] of [
      [CARD_QUERY, { cardId }],
      [LIST, { cardId, beginDate: day(), endDate: day(), start: 0 }],
    ] as const) {
      const body = captured(fields, h.merchant);
      const all = await Promise.all(Array.from({ length: 20 }, () => h.call(path, body, { raw: true })));
      const served = all.filter((r) => r.status === 200).length;
      assert.equal(served, 1, `${path}: ${JSON.stringify(all.map((r) => r.status))}`);
      for (const r of all) if (r.status !== 200) refused(r, 409, '1008');
    }
  });

  it('twenty copies of one captured read at once, each round the first of a new bucket: one served per round', async (t) => {
    let now = Date.now();
    const h = await build(t, dialect, { requireTimestamp: true }, { clock: () => now });
    const { cardId } = await fundedCard(h, { topUp: 10 });
    // Over sockets, as an attacker sends them: each copy its own connection.
    const base = await h.app.listen({ port: 0, host: '127.0.0.1' });
    const served: number[] = [];
    for (let round = 0; round < 20; round++) {
      now = (bucketOf(now) + 1) * NONCE_BUCKET_MS + 10;
      const body = captured({ cardId }, h.merchant, now);
      const all = await Promise.all(Array.from({ length: 20 }, () => post(base, CARD_QUERY, body)));
      for (const r of all) if (r.status !== 200) refused(r, 409, '1008');
      served.push(all.filter((r) => r.status === 200).length);
    }
    assert.deepEqual(served, Array(20).fill(1));
  });

  it('a captured read replayed after its bucket’s neighbours were spent, and after maintenance, is still 1008 within the window', async (t) => {
    let now = Date.now();
    const h = await build(t, dialect, { requireTimestamp: true }, { clock: () => now });
    const { cardId } = await fundedCard(h, { topUp: 10 });
    // Stamped at the end of its bucket: the next request falls in the next one.
    const start = (bucketOf(now) + 1) * NONCE_BUCKET_MS - 1000;
    now = start;
    const first = captured({ cardId }, h.merchant, start);
    assert.equal((await h.call(CARD_QUERY, first, { raw: true })).status, 200);
    // Four minutes on (another bucket), reads of other nonces, the store maintained.
    now = start + 4 * 60_000;
    assert.equal((await h.call(CARD_QUERY, captured({ cardId }, h.merchant, now), { raw: true })).status, 200);
    await h.app.svc.readNonces?.maintain(now);
    refused(await h.call(CARD_QUERY, first, { raw: true }), 409, '1008');
    // Past the window: 1007, whatever the store holds.
    now = start + 5 * 60_000 + 1;
    await h.app.svc.readNonces?.maintain(now);
    refused(await h.call(CARD_QUERY, first, { raw: true }), 401, '1007');
  });

  it('timestamps far ahead, far behind, fractional, huge, negative or not numbers: the documented envelope, and nothing spent', async (t) => {
    const h = await build(t, dialect, { requireTimestamp: true });
    const { cardId } = await fundedCard(h, { topUp: 10 });
    const keys = await countOf(h, 'idempotency_keys');
    const now = Date.now();
    const cases: Array<[unknown, number, string]> = [
      [now + 5 * 60_000 + 5000, 401, '1007'],
      [now - 5 * 60_000 - 5000, 401, '1007'],
      [now + 0.5, 400, '1002'],
      [1e300, 400, '1002'],
      [Number.MAX_SAFE_INTEGER + 2, 400, '1002'],
      [-1, 400, '1002'],
      [String(now), 400, '1002'],
      [Math.floor(now / 1000), 401, '1007'],
    ];
    for (const [timestamp, status, code] of cases) {
      const r = randomStr();
      const res = await h.call(CARD_QUERY, sign({ cardId, randomStr: r, timestamp }, h.merchant), { raw: true });
      assert.equal(res.status, status, `${String(timestamp)}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.code, code, `${String(timestamp)}: ${JSON.stringify(res.body)}`);
      // The refused request spent nothing: the merchant's randomStr, signed now, is served.
      const ok = await h.call(CARD_QUERY, sign({ cardId, randomStr: r, timestamp: Date.now() }, h.merchant), { raw: true });
      assert.equal(ok.status, 200, `${String(timestamp)} then fresh: ${JSON.stringify(ok.body)}`);
    }
    assert.equal(await countOf(h, 'idempotency_keys'), keys, 'nothing durable for reads or refusals');
  });

  it('a read stamped before the watermark is 1007 and spends nothing; the same randomStr signed after it is served once', async (t) => {
    const h = await build(t, dialect, { requireTimestamp: true });
    const { cardId } = await fundedCard(h, { topUp: 10 });
    const before = Date.now() - 1000;
    // The store starts empty now (a new process, or PostgreSQL's crash recovery).
    if (dialect.name === 'postgres') await sql`truncate read_nonces, read_nonce_store`.execute(h.db.database.db);
    else h.app.svc.readNonces = new MemoryNonces(Date.now());
    await new Promise((r) => setTimeout(r, 5));
    const r = randomStr();
    for (const path of [CARD_QUERY, LIST]) {
      const fields = path === LIST ? { cardId, beginDate: day(), endDate: day(), start: 0 } : { cardId };
      const old = sign({ ...fields, randomStr: r, timestamp: before }, h.merchant);
      refused(await h.call(path, old, { raw: true }), 401, '1007', /watermark/);
      refused(await h.call(path, old, { raw: true }), 401, '1007', /watermark/);
    }
    const fresh = sign({ cardId, randomStr: r, timestamp: Date.now() }, h.merchant);
    assert.equal((await h.call(CARD_QUERY, fresh, { raw: true })).status, 200);
    refused(await h.call(CARD_QUERY, fresh, { raw: true }), 409, '1008');
  });

  it('one merchant cannot spend another’s nonce, nor read its card, trades or list', async (t) => {
    const h = await build(t, dialect, { requireTimestamp: true });
    const a = await fundedCard(h, { topUp: 10 });
    const tradeId = (await h.call(AUTHORIZE, { cardId: a.cardId, amount: 1, randomStr: randomStr() })).body.model.tradeId as string;
    const declined = await h.call(AUTHORIZE, { cardId: a.cardId, amount: 1000, randomStr: randomStr() });
    const declinedId = declined.body.detail?.tradeId;
    const pan = await fullPan(h, a.cardId);
    const b = await h.newMerchant();
    const r = randomStr();
    const ts = Date.now();
    // B first, with A's randomStr and timestamp: A's own request is still served.
    const asB = await h.call(CARD_QUERY, sign({ cardId: a.cardId, randomStr: r, timestamp: ts }, b), { raw: true });
    refused(asB, 404, '2648');
    assert.equal(
      (await h.call(CARD_QUERY, sign({ cardId: a.cardId, randomStr: r, timestamp: ts }, h.merchant), { raw: true })).status,
      200,
    );
    refused(await h.call(CARD_QUERY, captured({ cardId: a.cardId }, b), { raw: true }), 404, '2648');
    refused(await h.call(LIST, captured({ cardId: a.cardId, beginDate: day(), endDate: day(), start: 0 }, b), { raw: true }), 404, '2648');
    refused(await h.call(LIST, captured({ cardNo: pan, beginDate: day(), endDate: day(), start: 0 }, b), { raw: true }), 404, '2648');
    for (const id of [tradeId, declinedId]) {
      assert.ok(typeof id === 'string', JSON.stringify(declined.body));
      refused(await h.call(TRADE_QUERY, captured({ tradeId: id }, b), { raw: true }), 409, '2730');
      assert.equal((await h.call(TRADE_QUERY, captured({ tradeId: id }, h.merchant), { raw: true })).status, 200);
    }
  });

  it('a disabled merchant’s captured read is 2601 before its nonce is looked at', async (t) => {
    const h = await build(t, dialect, { requireTimestamp: true });
    const { cardId } = await fundedCard(h, { topUp: 10 });
    const body = captured({ cardId }, h.merchant);
    await h.db.database.db.updateTable('merchants').set({ status: 'disabled' }).where('id', '=', h.merchant.appId).execute();
    h.app.svc.merchants.forget(h.merchant.appId);
    refused(await h.call(CARD_QUERY, body, { raw: true }), 401, '2601');
    await h.db.database.db.updateTable('merchants').set({ status: 'active' }).where('id', '=', h.merchant.appId).execute();
    h.app.svc.merchants.forget(h.merchant.appId);
    // The refusal spent nothing: the request is served once now, then 1008.
    assert.equal((await h.call(CARD_QUERY, body, { raw: true })).status, 200);
    refused(await h.call(CARD_QUERY, body, { raw: true }), 409, '1008');
  });

  it('reads batched with writes and with each other’s failures, fifty at once: every one answered, none hangs', async (t) => {
    const h = await build(t, dialect, { requireTimestamp: true });
    const a = await fundedCard(h, { topUp: 50 });
    const tradeId = (await h.call(AUTHORIZE, { cardId: a.cardId, amount: 1, randomStr: randomStr() })).body.model.tradeId as string;
    const pan = await fullPan(h, a.cardId);
    const b = await h.newMerchant();
    const list = { beginDate: day(), endDate: day(), start: 0 };
    const requests: Array<() => Promise<Res>> = [];
    for (let i = 0; i < 5; i++) {
      requests.push(
        () => h.call(CARD_QUERY, { cardId: a.cardId, randomStr: randomStr() }),
        () => h.call(CARD_QUERY, { cardId: a.cardId, randomStr: randomStr() }, { merchant: b }),
        () => h.call(LIST, { ...list, cardId: a.cardId, randomStr: randomStr() }),
        () => h.call(LIST, { ...list, cardNo: pan, randomStr: randomStr() }),
        () => h.call(LIST, { ...list, cardNo: pan, randomStr: randomStr() }, { merchant: b }),
        () => h.call(LIST, { ...list, cardId: a.cardId, endDate: '2000-01-01', randomStr: randomStr() }),
        () => h.call(TRADE_QUERY, { tradeId, randomStr: randomStr() }),
        () => h.call(TRADE_QUERY, { tradeId, randomStr: randomStr() }, { merchant: b }),
        () => h.call('/api/network/cardTopUp.html', { cardId: a.cardId, amount: 1, randomStr: randomStr() }),
        () => h.call(AUTHORIZE, { cardId: a.cardId, amount: 1, randomStr: randomStr() }),
      );
    }
    let timer: NodeJS.Timeout | undefined;
    const hang = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('a batched read never answered')), 30_000);
    });
    try {
      const all = await Promise.race([Promise.all(requests.map((f) => f())), hang]);
      for (const [i, r] of all.entries()) {
        const expected = [200, 404, 200, 200, 404, 400, 200, 409, 200, 200][i % 10];
        assert.equal(r.status, expected, `${i}: ${JSON.stringify(r.body)}`);
      }
    } finally {
      clearTimeout(timer);
    }
  });
});

import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { it } from 'node:test';
import { sql } from 'kysely';
import { CardProgram, type RetryInfo, WATERMARK_REFUSAL as SDK_WATERMARK_REFUSAL } from '../client/src/client.js';
import { APIError } from '../client/src/errors.js';
import { bucketOf, MemoryNonces, NONCE_KEEP_MS, WATERMARK_REFUSAL } from '../src/idempotency/read-nonces.js';
import { build, type Harness, randomStr, sign } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

// Issue 31, decision 1: where a signed timestamp is required, a read's randomStr is kept in the
// read-nonce store (memory on SQLite, unlogged tables on PostgreSQL), not in idempotency_keys, and a
// watermark refuses every request stamped before the store last started empty.

const BALANCE = '/api/network/merchantBalance.html';
const LIST = '/api/network/networkAuthTradeList.html';

async function readKeys(h: Harness): Promise<number> {
  const r = await h.db.database.db
    .selectFrom('idempotency_keys')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('kind', '=', 'read')
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** What PostgreSQL's crash recovery does to the store: every unlogged table comes back empty. */
async function emptyLikeCrashRecovery(h: Harness): Promise<void> {
  await sql`truncate read_nonces, read_nonce_store`.execute(h.db.database.db);
}

/** The store starts empty now: PostgreSQL's crash recovery, or (memory) a new process. */
async function storeStartsEmpty(h: Harness): Promise<void> {
  if (h.db.database.dialect === 'postgres') await emptyLikeCrashRecovery(h);
  else h.app.svc.readNonces = new MemoryNonces(Date.now());
}

function refused(res: { status: number; body: Record<string, any> }, status: number, code: string, msg?: RegExp) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.code, code, JSON.stringify(res.body));
  if (msg) assert.match(res.body.msg, msg);
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

eachDialect('read nonces where a timestamp is required (issue 31)', (dialect) => {
  it('a replayed read is refused within the window, also re-signed with another timestamp; nothing durable is written for it', async (t) => {
    const h = await build(t, dialect, { requireTimestamp: true });
    assert.equal(h.app.svc.readNonces?.kind, dialect.name === 'postgres' ? 'postgres' : 'memory');
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const keys = await readKeys(h);
    const day = new Date().toISOString().slice(0, 10);
    for (const [path, fields] of [
      [BALANCE, {}],
      // The list: on PostgreSQL its nonce is spent in the list's one statement.
      [LIST, { cardId, beginDate: day, endDate: day, start: 0 }],
    ] as const) {
      const r = randomStr();
      const ts = Date.now();
      const captured = sign({ ...fields, randomStr: r, timestamp: ts }, h.merchant);
      assert.equal((await h.call(path, captured, { raw: true })).status, 200, path);
      refused(await h.call(path, captured, { raw: true }), 409, '1008', /randomStr: already used/);
      // The merchant's own randomStr signed again with another timestamp of the same 5-minute bucket.
      const again = bucketOf(ts + 1) === bucketOf(ts) ? ts + 1 : ts - 1;
      refused(await h.call(path, sign({ ...fields, randomStr: r, timestamp: again }, h.merchant), { raw: true }), 409, '1008');
      // Refused before it spends anything: a list that breaks a rule still spends its randomStr.
      const bad = sign(
        { ...fields, cardId, beginDate: day, endDate: '2000-01-01', start: 0, randomStr: randomStr(), timestamp: Date.now() },
        h.merchant,
      );
      if (path === LIST) {
        refused(await h.call(path, bad, { raw: true }), 400, '1002');
        refused(await h.call(path, bad, { raw: true }), 409, '1008');
      }
    }
    assert.equal(await readKeys(h), keys, 'no read nonce in idempotency_keys');
    if (dialect.name === 'postgres') {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from read_nonces`.execute(h.db.database.db);
      assert.equal(rows[0]?.n, 3, 'the unlogged store holds them');
    }
    // Writes keep their durable keys: a top-up's replay is its first answer.
    const topUp = sign({ cardId, amount: 1, randomStr: randomStr(), timestamp: Date.now() }, h.merchant);
    const first = await h.call('/api/network/cardTopUp.html', topUp, { raw: true });
    const again = await h.call('/api/network/cardTopUp.html', topUp, { raw: true });
    assert.equal(again.headers['x-idempotent-replay'], 'true');
    assert.deepEqual(again.body.model, first.body.model);
  });

  it('without a required timestamp (the sandbox), a read nonce is a durable key, as before', async (t) => {
    const h = await build(t, dialect);
    assert.equal(h.app.svc.readNonces, null);
    const keys = await readKeys(h);
    const body = sign({ randomStr: randomStr(), timestamp: Date.now() }, h.merchant);
    assert.equal((await h.call(BALANCE, body, { raw: true })).status, 200);
    refused(await h.call(BALANCE, body, { raw: true }), 409, '1008');
    assert.equal(await readKeys(h), keys + 1);
  });

  it('the watermark: a read signed before the store last started empty is 1007, one signed after is served', async (t) => {
    const h = await build(t, dialect, { requireTimestamp: true });
    // Signed before the service started: fresh by the clock, but older than the store.
    const early = sign({ randomStr: randomStr(), timestamp: Date.now() - 60_000 }, h.merchant);
    refused(await h.call(BALANCE, early, { raw: true }), 401, '1007', new RegExp(`^${WATERMARK_REFUSAL}.*sign the request again`));
    const used = sign({ randomStr: randomStr(), timestamp: Date.now() }, h.merchant);
    assert.equal((await h.call(BALANCE, used, { raw: true })).status, 200);
    const pending = sign({ randomStr: randomStr(), timestamp: Date.now() }, h.merchant);
    await pause(5); // the store below starts empty at a later millisecond than these were signed
    await storeStartsEmpty(h);
    // The spent one cannot come back because its nonce was lost; nor can one signed before.
    refused(await h.call(BALANCE, used, { raw: true }), 401, '1007', new RegExp(`^${WATERMARK_REFUSAL}`));
    refused(await h.call(BALANCE, pending, { raw: true }), 401, '1007', new RegExp(`^${WATERMARK_REFUSAL}`));
    assert.equal((await h.call(BALANCE, sign({ randomStr: randomStr(), timestamp: Date.now() }, h.merchant), { raw: true })).status, 200);
    if (dialect.name === 'postgres') {
      // The list, in its one statement, finds the store emptied too.
      const { cardId } = await fundedCard(h, { topUp: 100 });
      const day = new Date().toISOString().slice(0, 10);
      const list = sign({ cardId, beginDate: day, endDate: day, start: 0, randomStr: randomStr(), timestamp: Date.now() }, h.merchant);
      await pause(5);
      await emptyLikeCrashRecovery(h);
      refused(await h.call(LIST, list, { raw: true }), 401, '1007', new RegExp(`^${WATERMARK_REFUSAL}`));
      const fresh = sign({ cardId, beginDate: day, endDate: day, start: 0, randomStr: randomStr(), timestamp: Date.now() }, h.merchant);
      assert.equal((await h.call(LIST, fresh, { raw: true })).status, 200);
    }
  });

  it('the SDK signs again with a fresh timestamp on the watermark’s 1007, and is served', async (t) => {
    assert.equal(SDK_WATERMARK_REFUSAL, WATERMARK_REFUSAL, 'the SDK knows the service’s words');
    const h = await build(t, dialect, { requireTimestamp: true });
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
    const retries: RetryInfo[] = [];
    let emptied = false;
    const client = new CardProgram({
      baseUrl: base,
      appId: h.merchant.appId,
      secret: h.merchant.secret,
      onRetry: (r) => retries.push(r),
      // The store starts empty after the first attempt was signed, before it arrives.
      fetch: async (url, init) => {
        if (!emptied) {
          emptied = true;
          await pause(5);
          await storeStartsEmpty(h);
        }
        return fetch(url, init);
      },
    });
    const balances = await client.request<{ balances: unknown[] }>(BALANCE, {}, 'read');
    assert.equal(retries.length, 1);
    assert.ok(Array.isArray(balances.balances), JSON.stringify(balances));
    const error = retries[0]?.error;
    assert.ok(error instanceof APIError && error.code === '1007', String(error));
  });

  it('aged buckets are dropped whole', async (t) => {
    let now = Date.now();
    const h = await build(t, dialect, { requireTimestamp: true }, { clock: () => now });
    const store = h.app.svc.readNonces;
    assert.ok(store);
    const key = { merchantId: h.merchant.appId, randomStr: randomStr(), operation: 'merchantBalance', canonical: '{}' };
    await store.spend(key, now, now);
    await assert.rejects(store.spend(key, now, now), { code: '1008' });
    // Past the window and its margin the bucket is gone, and with it the nonce (no request that old is fresh).
    now += NONCE_KEEP_MS + 6 * 60_000;
    await store.maintain(now);
    if (dialect.name === 'postgres') {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from read_nonces`.execute(h.db.database.db);
      assert.equal(rows[0]?.n, 0, 'its partition truncated');
    }
    await store.spend(key, now, now);
  });
});

import assert from 'node:assert/strict';
import { it } from 'node:test';
import { reapKeys } from '../src/idempotency/keys.js';
import { build, holderBody, randomStr, rowCounts, sign } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';

const CREATE = '/api/network/holderCreate.html';
const QUERY = '/api/network/holderQuery.html';

async function count(h: Awaited<ReturnType<typeof build>>, table: 'cardholders' | 'idempotency_keys'): Promise<number> {
  const r = await h.db.database.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

eachDialect('randomStr idempotency and replay (decisions §4)', (dialect) => {
  it('a write repeated with the same randomStr and body returns the first response and creates nothing', async (t) => {
    const h = await build(t, dialect);
    const body = sign(holderBody(), h.merchant);
    const first = await h.call(CREATE, body, { raw: true });
    assert.equal(first.status, 200);
    assert.equal(first.headers['x-idempotent-replay'], undefined);
    for (let i = 0; i < 3; i++) {
      const again = await h.call(CREATE, body, { raw: true });
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, first.body);
      assert.equal(again.headers['x-idempotent-replay'], 'true');
    }
    assert.equal(await count(h, 'cardholders'), 1);
  });

  it('the same randomStr with a different body is 1008/409 and writes nothing', async (t) => {
    const h = await build(t, dialect);
    const key = randomStr();
    assert.equal((await h.call(CREATE, holderBody({ randomStr: key }))).status, 200);
    const before = await rowCounts(h);
    const res = await h.call(CREATE, holderBody({ randomStr: key, email: 'someone.else@example.com' }));
    assert.equal(res.status, 409);
    assert.equal(res.body.code, '1008');
    assert.match(res.body.msg, /^randomStr: already used for a different request/);
    assert.deepEqual(await rowCounts(h), before);
  });

  it('values that look like signing-string fields do not make two requests the same', async (t) => {
    const h = await build(t, dialect);
    const key = randomStr();
    assert.equal((await h.call(CREATE, holderBody({ randomStr: key, email: 'a&timestamp=1@example.com' }))).status, 200);
    const other = await h.call(CREATE, holderBody({ randomStr: key, email: 'a&timestamp=2@example.com' }));
    assert.equal(other.status, 409);
    assert.equal(other.body.code, '1008');
  });

  it('a retry with a fresh timestamp is still the same request (timestamp is not part of the fingerprint)', async (t) => {
    const h = await build(t, dialect);
    const body = holderBody();
    const first = await h.call(CREATE, { ...body, timestamp: Date.now() - 120_000 });
    const retry = await h.call(CREATE, { ...body, timestamp: Date.now() });
    assert.equal(retry.status, 200);
    assert.deepEqual(retry.body, first.body);
    assert.equal(retry.headers['x-idempotent-replay'], 'true');
  });

  it('concurrent identical requests over real HTTP create one cardholder and all get its record', async (t) => {
    const h = await build(t, dialect);
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = h.app.server.address();
    assert.ok(addr && typeof addr === 'object');
    const body = JSON.stringify(sign(holderBody(), h.merchant));
    const responses = await Promise.all(
      Array.from({ length: 12 }, () =>
        fetch(`http://127.0.0.1:${addr.port}${CREATE}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } }).then(
          async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }),
        ),
      ),
    );
    assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([200]));
    assert.equal(new Set(responses.map((r) => r.body.holderId)).size, 1);
    assert.equal(await count(h, 'cardholders'), 1);
    assert.equal(await count(h, 'idempotency_keys'), 1);
  });

  it('a failed write does not keep its randomStr: the corrected retry succeeds', async (t) => {
    const h = await build(t, dialect);
    const taken = await h.call(CREATE, holderBody({ idno: 'SAME00001' }));
    assert.equal(taken.status, 200);
    const key = randomStr();
    const failed = await h.call(CREATE, holderBody({ idno: 'SAME00001', randomStr: key }));
    assert.equal(failed.body.code, '2611');
    const fixed = await h.call(CREATE, holderBody({ idno: 'OTHER0001', randomStr: key }));
    assert.equal(fixed.status, 200);
  });

  it('a read’s randomStr is single-use: reuse is 1008, for reads and between reads and writes', async (t) => {
    const h = await build(t, dialect);
    const created = await h.call(CREATE, holderBody());
    const holderId = created.body.holderId;
    const key = randomStr();
    assert.equal((await h.call(QUERY, { holderId, randomStr: key })).status, 200);
    const reused = await h.call(QUERY, { holderId, randomStr: key });
    assert.equal(reused.status, 409);
    assert.equal(reused.body.code, '1008');
    const writeAfterRead = await h.call(CREATE, holderBody({ randomStr: key }));
    assert.equal(writeAfterRead.body.code, '1008');
    const writeKey = String((sign(holderBody(), h.merchant) as { randomStr: string }).randomStr);
    await h.call(CREATE, holderBody({ randomStr: writeKey }));
    const readAfterWrite = await h.call(QUERY, { holderId, randomStr: writeKey });
    assert.equal(readAfterWrite.body.code, '1008');
  });

  it('randomStr is per merchant: two merchants may use the same one', async (t) => {
    const h = await build(t, dialect);
    const other = await h.newMerchant();
    const key = randomStr();
    assert.equal((await h.call(CREATE, holderBody({ randomStr: key }))).status, 200);
    assert.equal((await h.call(CREATE, holderBody({ randomStr: key }), { merchant: other })).status, 200);
  });

  it('keys older than the retention period are reaped; younger ones stay', async (t) => {
    const h = await build(t, dialect);
    const key = randomStr();
    await h.call(CREATE, holderBody({ randomStr: key }));
    await h.call(CREATE, holderBody());
    const old = Date.now() - h.config.idempotencyRetentionMs - 1000;
    await h.db.database.db.updateTable('idempotency_keys').set({ created_at: old }).where('random_str', '=', key).execute();
    const reaped = await reapKeys(h.app.svc, Date.now() - h.config.idempotencyRetentionMs);
    assert.equal(reaped, 1);
    assert.equal(await count(h, 'idempotency_keys'), 1);
  });
});

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it } from 'node:test';
import { useAuthenticationValue, verifyAuthenticationValue } from '../../src/three-ds/av.js';
import { randomStr } from '../helpers/app.js';
import { eachDialect } from '../helpers/dialects.js';
import { acs, card } from './helpers/acs.js';

eachDialect('3-D Secure: the authentication value, checked for the authorization (decisions §14.5)', (dialect) => {
  it('good for its card, once, 30 days, up to its amount (other currencies at the program’s rates); anything else is refused with its reason', async (t) => {
    let now = Date.now();
    const { h } = await acs(t, dialect, {}, { clock: () => now });
    const svc = h.app.svc;
    const db = svc.database.db;
    const c = await card(h);
    const other = await card(h);
    const auth = await h.call('/sandbox/3ds/authenticate', { cardId: c.cardId, amount: 25, randomStr: randomStr() });
    const { acsTransID, authenticationValue: value, eci } = auth.body.model.ares;
    assert.equal(typeof value, 'string');
    const verify = (q: Partial<{ value: string; cardId: string; amount: number; currency: string }>) =>
      verifyAuthenticationValue(db, svc, { value, cardId: c.cardId, amount: 2500, currency: 'EUR', now, ...q });

    assert.deepEqual(await verify({}), { ok: true, acsTransId: acsTransID, eci, amount: 2500, currency: 'EUR' });
    assert.deepEqual((await verify({ amount: 1000 })).ok, true, 'a smaller authorization');
    assert.deepEqual(await verify({ amount: 2501 }), { ok: false, reason: 'amount', acsTransId: acsTransID });
    // 27.00 USD is 25.00 EUR at 1.08; 27.01 USD is more.
    assert.equal((await verify({ amount: 2700, currency: 'USD' })).ok, true);
    assert.deepEqual(await verify({ amount: 2701, currency: 'USD' }), { ok: false, reason: 'amount', acsTransId: acsTransID });
    assert.deepEqual(await verify({ amount: 100, currency: 'XXX' }), { ok: false, reason: 'amount', acsTransId: acsTransID });
    assert.deepEqual(await verify({ cardId: other.cardId }), { ok: false, reason: 'other_card' });
    // Forged: random bytes, a changed byte, not Base64 of 20 bytes.
    assert.deepEqual(await verify({ value: randomBytes(20).toString('base64') }), { ok: false, reason: 'unknown' });
    const flipped = Buffer.from(value, 'base64');
    flipped[10] = (flipped[10] ?? 0) ^ 1;
    assert.deepEqual(await verify({ value: flipped.toString('base64') }), { ok: false, reason: 'unknown' });
    for (const bad of ['', 'short', `${value}x`, value.replace('=', 'A'), '!'.repeat(28)]) {
      assert.deepEqual(await verify({ value: bad }), { ok: false, reason: 'malformed' }, bad);
    }
    // More than 30 days after it was issued.
    now += 30 * 86_400_000 + 1;
    assert.deepEqual(await verify({}), { ok: false, reason: 'expired', acsTransId: acsTransID });
    now -= 30 * 86_400_000 + 1;

    // Used by an approved authorization: once. A declined one that carried it is listed too, and takes nothing.
    assert.equal(
      await svc.database.withTx((tx) =>
        useAuthenticationValue({ tx, now, wake: { worker: false } }, { acsTransId: acsTransID, tradeId: 'dcl_test1', approved: false }),
      ),
      true,
    );
    assert.equal((await verify({})).ok, true);
    assert.equal(
      await svc.database.withTx((tx) =>
        useAuthenticationValue({ tx, now, wake: { worker: false } }, { acsTransId: acsTransID, tradeId: 'trd_test1', approved: true }),
      ),
      true,
    );
    assert.deepEqual(await verify({}), { ok: false, reason: 'used', acsTransId: acsTransID });
    assert.equal(
      await svc.database.withTx((tx) =>
        useAuthenticationValue({ tx, now, wake: { worker: false } }, { acsTransId: acsTransID, tradeId: 'trd_test2', approved: true }),
      ),
      false,
    );
    const q = await h.call('/api/network/threeDsQuery.html', { acsTransID, randomStr: randomStr() });
    assert.deepEqual(q.body.model.tradeIds, ['dcl_test1', 'trd_test1']);
  });

  it('a stored fact changed in the database does not verify (the value is a MAC over them); a rotated key keeps old values good', async (t) => {
    const { h } = await acs(t, dialect);
    const svc = h.app.svc;
    const db = svc.database.db;
    const c = await card(h);
    const first = (await h.call('/sandbox/3ds/authenticate', { cardId: c.cardId, amount: 10, randomStr: randomStr() })).body.model.ares;
    await db.updateTable('three_ds_authentications').set({ amount: 1_000_000 }).where('acs_trans_id', '=', first.acsTransID).execute();
    const tampered = await verifyAuthenticationValue(db, svc, {
      value: first.authenticationValue,
      cardId: c.cardId,
      amount: 500_000,
      currency: 'EUR',
      now: Date.now(),
    });
    assert.deepEqual(tampered, { ok: false, reason: 'forged' });

    const before = (await h.call('/sandbox/3ds/authenticate', { cardId: c.cardId, amount: 10, randomStr: randomStr() })).body.model.ares;
    assert.equal(await svc.vault.rotate(db, '3ds'), 'dk_3ds_v2');
    const after = (await h.call('/sandbox/3ds/authenticate', { cardId: c.cardId, amount: 10, randomStr: randomStr() })).body.model.ares;
    assert.equal(Buffer.from(after.authenticationValue, 'base64').readUInt16BE(0), 2, 'made with the new key');
    for (const ares of [before, after]) {
      const check = await verifyAuthenticationValue(db, svc, {
        value: ares.authenticationValue,
        cardId: c.cardId,
        amount: 1000,
        currency: 'EUR',
        now: Date.now(),
      });
      assert.equal(check.ok, true);
    }
  });

  it('two approved authorizations carrying one value at once: one takes it', async (t) => {
    const { h } = await acs(t, dialect);
    const svc = h.app.svc;
    const c = await card(h);
    for (let round = 0; round < 10; round++) {
      const { acsTransID } = (await h.call('/sandbox/3ds/authenticate', { cardId: c.cardId, amount: 1, randomStr: randomStr() })).body.model
        .ares;
      await h.db.database.db.updateTable('three_ds_card_state').set({ exempt_count: 0, exempt_eur: 0 }).execute();
      const taken = await Promise.all(
        ['a', 'b', 'c'].map((x) =>
          svc.database.withTx((tx) =>
            useAuthenticationValue(
              { tx, now: Date.now(), wake: { worker: false } },
              { acsTransId: acsTransID, tradeId: `trd_${x}${round}`, approved: true },
            ),
          ),
        ),
      );
      assert.equal(taken.filter(Boolean).length, 1, `round ${round}`);
    }
  });
});

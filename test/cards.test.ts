import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import { isLuhnValid } from '../src/cards/card-number.js';
import { build, holderBody, randomStr, rowCounts } from './helpers/app.js';
import { balances, fundedCard } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

const APPLY = '/api/network/cardApply.html';
const QUERY = '/api/network/cardQuery.html';
const TOPUP = '/api/network/cardTopUp.html';
const DETAILS = '/sandbox/network/cardDetails';

eachDialect('cards: issuance, query, top-up, PAN vault', (dialect) => {
  it('issues a card to an approved holder: random id, masked Luhn-valid number from the currency’s BIN, zero balances', async (t) => {
    const h = await build(t, dialect);
    const eur = await fundedCard(h, { currency: 'EUR' });
    const usdt = await fundedCard(h, { currency: 'USDT' });
    assert.match(eur.cardId, /^card_[0-9a-z]{24}$/);
    assert.match(eur.cardNo, /^424242\*{6}\d{4}$/);
    assert.match(usdt.cardNo, /^535353\*{6}\d{4}$/);
    assert.deepEqual(await balances(h, eur.cardId), { available: 0, ledger: 0, status: 'active' });
    const details = await h.call(DETAILS, { cardId: eur.cardId, randomStr: randomStr() });
    assert.equal(details.status, 200);
    const { cardNo, expiry, cvv } = details.body.model;
    assert.ok(isLuhnValid(cardNo), cardNo);
    assert.equal(cardNo.slice(0, 6), '424242');
    assert.equal(cardNo.slice(-4), eur.cardNo.slice(-4));
    assert.match(expiry, /^(0[1-9]|1[0-2])\/\d{2}$/);
    assert.match(cvv, /^\d{3}$/);
    // The CVV is derived, not random: the same every time it is shown.
    const again = await h.call(DETAILS, { cardId: eur.cardId, randomStr: randomStr() });
    assert.equal(again.body.model.cvv, cvv);
  });

  it('the PAN is stored only encrypted (with its key id) and as a keyed hash; the CVV is not stored', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h);
    const pan = (await h.call(DETAILS, { cardId, randomStr: randomStr() })).body.model.cardNo as string;
    const row = await h.db.database.db.selectFrom('cards').selectAll().where('id', '=', cardId).executeTakeFirstOrThrow();
    assert.ok(!JSON.stringify(row).includes(pan));
    assert.ok(!JSON.stringify(row).includes(pan.slice(6, 12)), 'not even the middle digits');
    assert.equal(row.pan_key_id, 'dk_pan_v1');
    assert.match(row.pan_hash, /^[0-9a-f]{64}$/);
    if (dialect.name === 'sqlite') {
      // Nothing in the database file (or its WAL) holds the number in plain text.
      const file = h.db.url.slice('file:'.length);
      for (const f of [file, `${file}-wal`]) {
        let bytes: Buffer;
        try {
          bytes = readFileSync(f);
        } catch {
          continue;
        }
        assert.equal(bytes.includes(Buffer.from(pan)), false, `${f} contains the PAN`);
      }
    }
  });

  it('a rotated PAN key encrypts new cards while old cards still decrypt', async (t) => {
    const h = await build(t, dialect);
    const before = await fundedCard(h);
    const newKey = await h.app.svc.vault.rotate(h.db.database.db);
    assert.equal(newKey, 'dk_pan_v2');
    const after = await fundedCard(h);
    const keyOf = async (id: string) =>
      (await h.db.database.db.selectFrom('cards').select('pan_key_id').where('id', '=', id).executeTakeFirstOrThrow()).pan_key_id;
    assert.equal(await keyOf(before.cardId), 'dk_pan_v1');
    assert.equal(await keyOf(after.cardId), 'dk_pan_v2');
    for (const c of [before, after]) {
      const d = await h.call(DETAILS, { cardId: c.cardId, randomStr: randomStr() });
      assert.ok(isLuhnValid(d.body.model.cardNo));
    }
  });

  it('only an approved holder gets a card: 2607 for every other audit status, 2606 for unknown or foreign', async (t) => {
    const h = await build(t, dialect);
    const { holderId } = (await h.call('/api/network/holderCreate.html', holderBody())).body;
    for (const status of [0, 1, 3, 4]) {
      await h.db.database.db.updateTable('cardholders').set({ audit_status: status }).where('id', '=', holderId).execute();
      const res = await h.call(APPLY, { holderId, currency: 'EUR', randomStr: randomStr() });
      assert.equal(res.status, 409, JSON.stringify(res.body));
      assert.equal(res.body.code, '2607');
      assert.match(res.body.msg, new RegExp(`auditStatus is ${status}`));
    }
    await h.db.database.db.updateTable('cardholders').set({ audit_status: 2 }).where('id', '=', holderId).execute();
    const other = await h.newMerchant();
    const foreign = await h.call(APPLY, { holderId, currency: 'EUR', randomStr: randomStr() }, { merchant: other });
    assert.equal(foreign.body.code, '2606');
    assert.equal((await h.call(APPLY, { holderId: 'hld_nope', currency: 'EUR', randomStr: randomStr() })).body.code, '2606');
  });

  it('currency must be EUR or USDT (2720); a missing field is 1002; nothing is written', async (t) => {
    const h = await build(t, dialect);
    const { holderId } = await fundedCard(h);
    const before = await rowCounts(h);
    for (const currency of ['USD', 'eur', 'BTC', 'EURO']) {
      const res = await h.call(APPLY, { holderId, currency, randomStr: randomStr() });
      assert.equal(res.status, 400);
      assert.equal(res.body.code, '2720', currency);
    }
    const missing = await h.call(APPLY, { holderId, randomStr: randomStr() });
    assert.equal(missing.body.msg, 'currency: is required');
    assert.deepEqual(await rowCounts(h), before);
  });

  it('card query: another merchant’s card is indistinguishable from an unknown one (2648)', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h);
    const other = await h.newMerchant();
    const foreign = await h.call(QUERY, { cardId, randomStr: randomStr() }, { merchant: other });
    const unknown = await h.call(QUERY, { cardId: 'card_unknown', randomStr: randomStr() }, { merchant: other });
    assert.equal(foreign.status, 404);
    assert.deepEqual({ ...foreign.body, traceId: '' }, { ...unknown.body, traceId: '' });
    assert.equal(foreign.body.code, '2648');
    const details = await h.call(DETAILS, { cardId, randomStr: randomStr() }, { merchant: other });
    assert.equal(details.body.code, '2648');
  });

  it('top-up credits the card to the cent and returns the 100 record; bad amounts are 2723 or 1002', async (t) => {
    const h = await build(t, dialect);
    const { cardId, cardNo } = await fundedCard(h);
    const res = await h.call(TOPUP, { cardId, amount: 0.1, randomStr: randomStr() });
    assert.equal(res.status, 200);
    assert.equal(res.body.model.tradeType, 100);
    assert.equal(res.body.model.tradeStatus, 1);
    assert.equal(res.body.model.amount, 0.1);
    assert.equal(res.body.model.cardNo, cardNo);
    await h.call(TOPUP, { cardId, amount: 0.2, randomStr: randomStr() });
    // 0.1 + 0.2 in floating point is 0.30000000000000004; in minor units it is 30.
    assert.deepEqual(await balances(h, cardId), { available: 0.3, ledger: 0.3, status: 'active' });
    const before = await rowCounts(h);
    const bad: Array<[unknown, string, RegExp]> = [
      [0, '2723', /amount: must be greater than 0/],
      [-5, '2723', /amount: must be greater than 0/],
      [1.005, '2723', /amount: EUR has at most 2 decimal places/],
      [1e13, '2723', /amount: must be at most/],
      [1e-7, '2723', /amount: /],
      ['10', '1002', /amount: must be a number/],
      [null, '1002', /amount: /],
    ];
    for (const [amount, code, msg] of bad) {
      const r = await h.call(TOPUP, { cardId, amount, randomStr: randomStr() });
      assert.equal(r.body.code, code, `${amount}: ${JSON.stringify(r.body)}`);
      assert.match(r.body.msg, msg);
    }
    assert.equal((await h.call(TOPUP, { cardId: 'card_nope', amount: 1, randomStr: randomStr() })).body.code, '2648');
    assert.deepEqual(await rowCounts(h), before);
  });

  it('in production the sandbox network and card details are 404; the card operations exist', async (t) => {
    const h = await build(t, dialect, { env: 'production' });
    for (const path of ['/sandbox/network/authorize', DETAILS, '/sandbox/network/clear']) {
      const res = await h.call(path, { cardId: 'x', randomStr: randomStr() });
      assert.equal(res.status, 404, path);
      assert.equal(res.body.code, '1004');
    }
    assert.equal((await h.call(QUERY, { cardId: 'card_x', randomStr: randomStr() })).body.code, '2648');
  });
});

// Amounts are prorated once, in integers (issue 39 point 9, decisions §12.13): every conversion the
// link makes between the card's currency and the transaction's is the ledger's integer allocation.
// At 10^12 the floating-point product a·b is inexact (beyond 2^53), and parts of one whole (partial
// reversals, refunds, clearings) sum to the whole to the unit. Through the real link, on both databases.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { IsoMessage } from '../../src/iso8583/codec.js';
import { checkLedger } from '../../src/ledger/check.js';
import { build, fundTestMerchant, type Harness, testConfig } from '../helpers/app.js';
import { balances, fundedCard, todaysTrades } from '../helpers/cards.js';
import { amount12, f95, naming } from '../helpers/clearing.js';
import { eachDialect } from '../helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer } from '../helpers/link.js';

const base = testConfig('');
/** A slow shared machine must not turn a decision into a 91; no FX fee, so that balances show the amounts alone. */
const config = {
  network: { ...base.network, deadlineMs: 15_000 },
  program: { ...base.program, fees: { ...base.program.fees, authorizationFx: { bps: 0, fixed: 0 } } },
};

/** What the card's part of `part` of a whole (a in the card's currency, w in the transaction's) is, exactly: half up, in BigInt. */
const exact = (part: number, a: number, w: number) => Number((BigInt(part) * BigInt(a) * 2n + BigInt(w)) / (BigInt(w) * 2n));
/** The floating-point rounding the link used to make. */
const float = (part: number, a: number, w: number) => Math.round((part * a) / w);

/** The first transaction amount at or below `from` whose float conversion is not the exact one. */
function inexact(from: number, a: number, w: number): number {
  for (let x = from; x > from - 10_000_000; x--) {
    const q = (x * a) / w;
    // Far from a half, the two roundings agree: only near one is the exact one worth computing.
    if (Math.abs(q - Math.floor(q) - 0.5) < 1e-3 && float(x, a, w) !== exact(x, a, w)) return x;
  }
  throw new Error('no inexact case found');
}

async function setup(t: Parameters<typeof build>[0], dialect: Parameters<typeof build>[1], topUp: number) {
  const h = await build(t, dialect, config);
  if (topUp > 1e8) await fundTestMerchant(h.app.svc, h.merchant.appId, topUp);
  const { cardId } = await fundedCard(h, { topUp });
  const card = await cardSecrets(h, cardId);
  const link = await linkOf(t, h);
  const peer = await Peer.open(t, link.port);
  const ask = async (m: IsoMessage) => (await peer.ask(m)).fields.get(39);
  const approved = async (m: IsoMessage) => {
    assert.equal(await ask(m), '00', `${m.mti} ${m.fields.get(4)} ${m.fields.get(95) ?? ''}`);
    return m;
  };
  /** An 0100 of `txn` in the transaction's currency (field 49), the network's conversion `amount` in field 6. */
  const converted = (txn: number, currency: string, amount: number) =>
    authorizationRequest(card, { amount: txn, currency, extra: { 6: amount12(amount), 51: '978' } });
  return { h, cardId, ask, approved, converted };
}

/** The card's balances in minor units (EUR). */
async function cents(h: Harness, cardId: string) {
  const b = await balances(h, cardId);
  return { available: Math.round(b.available * 100), ledger: Math.round(b.ledger * 100) };
}

eachDialect('network link: amounts prorated once, in integers (decisions §12.13)', (dialect) => {
  it('at 10^12: partial reversals, the clearing and refunds in parts are the exact integer shares, and the refunds give back the whole payment', async (t) => {
    const top = 990_000_000_000; // 9.9 billion EUR, in cents
    const { h, cardId, approved, converted } = await setup(t, dialect, top / 100);
    // 999 999 999 989 USD cents presented, 987 654 321 987 EUR cents billed: products near 6·10^23.
    const [a, w] = [987_654_321_987, 999_999_999_989];
    const auth = await approved(converted(w, '840', a));
    assert.deepEqual(await cents(h, cardId), { available: top - a, ledger: top });

    const first = inexact(600_000_000_000, a, w);
    const second = inexact(400_000_000_000, a, w);
    for (const actual of [first, second]) {
      assert.notEqual(float(actual, a, w), exact(actual, a, w), 'a case the floating-point product gets wrong');
      await approved(naming(auth, '0400', w, { extra: { 95: f95(actual) } }));
      assert.deepEqual(
        await cents(h, cardId),
        { available: top - exact(actual, a, w), ledger: top },
        `held after the reversal to ${actual}`,
      );
    }
    // The clearing of what is left: all that is held, exactly.
    const clearing = await approved(naming(auth, '0220', second));
    const paid = exact(second, a, w);
    assert.deepEqual(await cents(h, cardId), { available: top - paid, ledger: top - paid });
    // Refunds in three parts of the payment's transaction amount, each a share of the payment (its own
    // ratio, paid for `second`): the card gets the payment back to the cent.
    const parts = [inexact(150_000_000_000, paid, second), inexact(100_000_000_000, paid, second)];
    parts.push(second - (parts[0] as number) - (parts[1] as number));
    let txnSoFar = 0;
    for (const part of parts) {
      await approved(naming(clearing, '0220', part, { processing: '200000' }));
      txnSoFar += part;
      assert.deepEqual(
        await cents(h, cardId),
        { available: top - paid + exact(txnSoFar, paid, second), ledger: top - paid + exact(txnSoFar, paid, second) },
        `after refunds of ${txnSoFar} of ${second}`,
      );
    }
    assert.deepEqual(await cents(h, cardId), { available: top, ledger: top });
    // The records carry the network's transaction amounts.
    const payment = (await todaysTrades(h, cardId)).find((r) => r.tradeType === 151 && r.tradeStatus === 1);
    assert.equal(payment?.txnAmount, second / 100);
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('refunds in parts of a converted payment sum to it (USD 10.85 billed EUR 10.00: 3.62 + 3.62 + 3.61)', async (t) => {
    const { h, cardId, approved, converted } = await setup(t, dialect, 100);
    const auth = await approved(converted(1085, '840', 1000));
    const clearing = await approved(naming(auth, '0220', 1085));
    assert.deepEqual(await cents(h, cardId), { available: 9000, ledger: 9000 });
    for (const part of [362, 362, 361]) await approved(naming(clearing, '0220', part, { processing: '200000' }));
    assert.deepEqual(await cents(h, cardId), { available: 10_000, ledger: 10_000 }, 'the whole 10.00 back, no cent more or less');
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('many small refunds where the transaction currency is finer than the card’s (KRW 1 500 billed EUR 1.00, 15 × KRW 100)', async (t) => {
    const { h, cardId, approved, converted } = await setup(t, dialect, 100);
    const auth = await approved(converted(1500, '410', 100));
    const clearing = await approved(naming(auth, '0220', 1500));
    for (let i = 1; i <= 15; i++) {
      await approved(naming(clearing, '0220', 100, { processing: '200000' }));
      assert.equal((await cents(h, cardId)).available, 9900 + exact(100 * i, 100, 1500), `after ${i} refunds`);
    }
    assert.deepEqual(await cents(h, cardId), { available: 10_000, ledger: 10_000 });
  });

  it('clearings in parts of one authorization (a split shipment, the later ones forced) take the whole, no cent more', async (t) => {
    const { h, cardId, approved, converted } = await setup(t, dialect, 100);
    const auth = await approved(converted(1085, '840', 1000));
    for (const part of [362, 362, 361]) await approved(naming(auth, '0220', part));
    assert.deepEqual(await cents(h, cardId), { available: 9000, ledger: 9000 });
    // Partial reversals of another down to nothing release its hold whole.
    const other = await approved(converted(1085, '840', 1000));
    for (const actual of [700, 301]) await approved(naming(other, '0400', 1085, { extra: { 95: f95(actual) } }));
    assert.deepEqual(await cents(h, cardId), { available: 9000 - exact(301, 1000, 1085), ledger: 9000 });
    await approved(naming(other, '0400', 1085));
    assert.deepEqual(await cents(h, cardId), { available: 9000, ledger: 9000 });
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });
});

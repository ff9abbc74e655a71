import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { allocatePart, prorate } from '../src/ledger/amounts.js';
import { build, randomStr } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

// Issue 15, item 5: partial reversals, clearings and refunds carry a share of the original's
// transaction-currency amount. Whatever the split, the shares sum to exactly the original's.

/** A whole in the card currency cut into parts (each ≥ 1 minor unit), and a transaction-currency total. */
const split = fc
  .record({
    total: fc.integer({ min: 0, max: 1_000_000_000_000 }),
    cuts: fc.array(fc.integer({ min: 1, max: 1_000_000 }), { minLength: 1, maxLength: 12 }),
  })
  .map(({ total, cuts }) => ({ total, parts: cuts, whole: cuts.reduce((s, c) => s + c, 0) }));

it('for any split, the allocated parts sum to the whole in both currencies and each is within one unit of its share', () => {
  fc.assert(
    fc.property(split, ({ total, parts, whole }) => {
      let before = 0;
      let sum = 0;
      for (const part of parts) {
        const share = allocatePart(total, before, part, whole);
        assert.ok(share >= 0);
        assert.ok(Math.abs(share - (total * part) / whole) <= 1, `share ${share} of ${total} for ${part}/${whole}`);
        before += part;
        sum += share;
      }
      assert.equal(before, whole, 'the card-currency parts sum to the whole');
      assert.equal(sum, total, 'the transaction-currency parts sum to the whole');
    }),
    { numRuns: 2000 },
  );
  // What rounding each part on its own gave (issue 15): 2 + 2 + 2 = 6 of 5 JPY.
  assert.equal(prorate(5, 1, 3) * 3, 6);
  assert.deepEqual(
    [0, 1, 2].map((i) => allocatePart(5, i, 1, 3)),
    [2, 1, 2],
  );
});

eachDialect('partial amounts through the app', (dialect) => {
  it('random partial refunds of a cross-currency payment give back exactly what it paid', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 1000 });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 5 }),
        fc.constantFrom('JPY', 'USD', 'KWD'),
        async (cents, currencyTxn) => {
          const whole = cents.reduce((s, c) => s + c, 0);
          const auth = await ok(h, '/sandbox/network/authorize', { cardId, amount: whole / 100, currencyTxn });
          const payment = await ok(h, '/sandbox/network/clear', { tradeId: auth.tradeId });
          let paid = 0;
          for (const c of cents) {
            const refund = await h.call('/sandbox/network/refund', { tradeId: payment.tradeId, amount: c / 100, randomStr: randomStr() });
            assert.equal(refund.status, 200, JSON.stringify(refund.body));
            paid += refund.body.model.txnAmount;
          }
          const exp = currencyTxn === 'JPY' ? 0 : currencyTxn === 'KWD' ? 3 : 2;
          assert.equal(Math.round(paid * 10 ** exp), Math.round(payment.txnAmount * 10 ** exp));
        },
      ),
      { numRuns: 15 },
    );
  });
});

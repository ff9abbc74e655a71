import { prorate } from '../ledger/amounts.js';

/**
 * The link's conversions between the card's currency and the transaction's (decisions §12.13,
 * "Amounts are prorated once, in integers"), all through the ledger's integer allocation
 * (src/ledger/amounts.ts): never a floating-point product, which is inexact beyond 2^53 (amounts
 * reach 10^12, their products 10^24).
 *
 * A whole (an authorization's hold, a payment) is `amount` in the card's currency and `txn_amount`
 * in the transaction's; what the network sends is in the transaction's currency. A total of the
 * whole (what the transaction came to: a clearing's field 4, field 95's actual amount) is rounded
 * once; a part (a refund of a payment, a second clearing of an authorization) is what it adds to
 * the rounded total of the parts so far, so the parts of one whole sum to the whole exactly.
 */

/** One whole, minor units of the card's currency (`amount`) and of the transaction's (`txn_amount`). */
export interface Whole {
  amount: number;
  txn_amount: number;
}

/** A whole without a conversion: both amounts alike (or no transaction amount recorded). */
const unconverted = (w: Whole) => w.txn_amount === w.amount || w.txn_amount === 0;

/** A total of the whole in the transaction's currency → the card's, rounded half up once. */
export function cardTotal(w: Whole, txnTotal: number): number {
  return unconverted(w) ? txnTotal : prorate(w.amount, txnTotal, w.txn_amount);
}

/**
 * A part of the whole in the card's currency: what it brings the parts' card total to (their
 * transaction total, `before.txn` + `txnPart`, converted once) less what the parts before it took
 * (`before.card`). Parts that all came this way are `allocatePart` of the ledger; the part that
 * brings the transaction total to the whole brings the card total to the whole, to the unit.
 */
export function cardPart(w: Whole, before: { txn: number; card: number }, txnPart: number): number {
  return cardTotal(w, before.txn + txnPart) - before.card;
}

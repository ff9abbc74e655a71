import { DomainError } from '../errors.js';
import { MAX_MINOR, toMajor } from '../money/currency.js';
import { convert, type RateTable } from '../money/fx.js';

/**
 * An amount converted into the transaction's currency, under the same limit as one sent (2723):
 * a converted amount is no more trusted than a typed one.
 */
export function convertedTxnAmount(amount: number, from: string, to: string, rates: RateTable): number {
  const converted = convert(amount, from, to, rates);
  if (converted > MAX_MINOR) {
    throw new DomainError('incorrectAmount', `txnAmount: the converted amount must be at most ${toMajor(MAX_MINOR, to)} ${to}`);
  }
  return converted;
}

/** A part of an amount in another currency, proportionally, rounded half up. */
export function prorate(total: number, part: number, whole: number): number {
  if (whole === 0) return 0;
  return Number((BigInt(total) * BigInt(part) * 2n + BigInt(whole)) / (BigInt(whole) * 2n));
}

/**
 * The other-currency amount of one part of a whole that is consumed in parts (partial reversals
 * and clearings of an authorization, partial refunds of a payment): the rounded share of
 * everything consumed after it, less that of everything consumed before it. Each part is rounded
 * once, cumulatively, so the parts always sum to exactly `total`, never one unit more or less.
 */
export function allocatePart(total: number, before: number, part: number, whole: number): number {
  return prorate(total, before + part, whole) - prorate(total, before, whole);
}

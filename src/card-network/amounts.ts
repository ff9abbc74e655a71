import type { CardRow } from '../cards/model.js';
import { merchantRemark } from '../codes/merchant-remark.js';
import type { NetworkConfig } from '../config.js';
import { ResponseCode } from '../iso8583/response-codes.js';
import { prorate } from '../ledger/amounts.js';
import { exponent, MAX_MINOR } from '../money/currency.js';
import { convert, type RateTable } from '../money/fx.js';
import { currencyAlpha } from '../money/iso4217.js';
import type { ChannelValue } from '../trades/types.js';

/** What an authorization holds, in the card's currency (major units, as the verbs take it), and what the acceptor charged. */
export interface LinkAmounts {
  amount: number;
  currencyTxn: string;
  txnAmount: number;
}

const major = (minor: number, currency: string) => minor / 10 ** exponent(currency);

/**
 * The amounts of an authorization (decisions §12.3): field 4 in the currency of field 49. When 49
 * is the card's currency (as CARDPROGRAM_NETWORK_CURRENCIES presents it), field 4 is what is held.
 * Otherwise the network's conversion (field 6 in the currency of field 51, the card's) when sent,
 * else the program's rates. `12` for a currency the service does not know, `13` for a zero amount or
 * one that converts to more than MAX_MINOR.
 */
export function linkAmounts(
  fields: Map<number, string>,
  card: CardRow,
  network: NetworkConfig,
  rates: RateTable,
): LinkAmounts | { code: '12' | '13' | '30' } {
  const f4 = fields.get(4);
  const f49 = fields.get(49);
  if (f4 === undefined || f49 === undefined) return { code: ResponseCode.formatError };
  const minor = Number(f4);
  if (minor === 0) return { code: ResponseCode.invalidAmount };
  const cardCode = network.currencies[card.currency];
  if (f49 === cardCode) return { amount: major(minor, card.currency), currencyTxn: card.currency, txnAmount: major(minor, card.currency) };
  const currencyTxn = currencyAlpha(f49);
  if (currencyTxn === null) return { code: ResponseCode.invalidTransaction };
  const f6 = fields.get(6);
  if (f6 !== undefined && fields.get(51) === cardCode) {
    if (Number(f6) === 0) return { code: ResponseCode.invalidAmount };
    return { amount: major(Number(f6), card.currency), currencyTxn, txnAmount: major(minor, currencyTxn) };
  }
  let held: number;
  try {
    held = convert(minor, currencyTxn, card.currency, rates);
  } catch {
    return { code: ResponseCode.invalidTransaction };
  }
  // A conversion beyond the largest amount one operation may move is an invalid amount (13), as a
  // typed one is: never a failure further on, nor an amount a double cannot hold exactly.
  if (held <= 0 || held > MAX_MINOR) return { code: ResponseCode.invalidAmount };
  return { amount: major(held, card.currency), currencyTxn, txnAmount: major(minor, currencyTxn) };
}

/** The ISO 4217 numeric code a card's currency is presented as. */
export function currencyCode(card: CardRow, network: NetworkConfig): string {
  return network.currencies[card.currency] ?? '000';
}

/** Field 22's channel (decisions §12.3); processing code 01 (cash) is always an ATM. */
export function channelOf(fields: Map<number, string>): ChannelValue | undefined {
  if (fields.get(3)?.startsWith('01')) return 'atm';
  const mode = fields.get(22)?.slice(0, 2);
  if (mode === '01' || mode === '81' || mode === '10') return 'ecommerce';
  if (mode === '05' || mode === '07' || mode === '90') return 'pos';
  return undefined;
}

/** Field 43: name (1–25), city (26–38), country alpha-2 (39–40), each trimmed; empty ones left out. */
export function acceptorOf(fields: Map<number, string>): { merchantName?: string; merchantCity?: string; merchantCountry?: string } {
  const f43 = fields.get(43);
  if (f43 === undefined) return {};
  const name = f43.slice(0, 25).trim();
  const city = f43.slice(25, 38).trim();
  const country = f43.slice(38, 40).trim();
  return {
    ...(name ? { merchantName: name } : {}),
    ...(city ? { merchantCity: city } : {}),
    ...(country ? { merchantCountry: country } : {}),
  };
}

/**
 * The remark of a record the link makes (interface §2.1: "transaction merchant description"): the
 * acceptor's name and city from field 43, as a statement shows them ("Corner Grocery, Berlin"); empty
 * without field 43. The RRN is not a description: tradeQuery's `network` carries it.
 */
export function acceptorRemark(fields: Map<number, string>): string {
  return merchantRemark(acceptorOf(fields));
}

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

import { DomainError } from '../errors.js';
import { exponent } from './currency.js';

/** Rates as decimal strings: units of each currency per 1 EUR. */
export type RateTable = Readonly<Record<string, string>>;

export const DEFAULT_RATES: RateTable = {
  EUR: '1',
  USDT: '1.08',
  USD: '1.08',
  GBP: '0.85',
  CHF: '0.94',
  PLN: '4.30',
  CZK: '25.10',
  HUF: '395',
  SEK: '11.40',
  DKK: '7.46',
  NOK: '11.70',
  RON: '4.97',
  TRY: '37.50',
  CAD: '1.50',
  AUD: '1.65',
  CNY: '7.80',
  JPY: '165',
  KRW: '1480',
  ISK: '150',
  KWD: '0.332',
  BHD: '0.407',
};

const SCALE = 10n ** 9n;

function scaled(rate: string): bigint {
  const m = /^(\d+)(?:\.(\d{1,9}))?$/.exec(rate);
  if (!m) throw new Error(`bad rate ${rate}`);
  return BigInt(m[1] ?? '0') * SCALE + BigInt((m[2] ?? '').padEnd(9, '0'));
}

/**
 * Converts integer minor units between currencies through the rate table, in integer arithmetic,
 * rounding half up once at the end.
 */
export function convert(minor: number, from: string, to: string, rates: RateTable): number {
  if (from === to) return minor;
  const rf = rates[from];
  const rt = rates[to];
  if (rf === undefined || rt === undefined) {
    throw new DomainError('unsupportedCurrency', `currencyTxn: no exchange rate between ${from} and ${to}`);
  }
  const num = BigInt(minor) * scaled(rt) * 10n ** BigInt(exponent(to));
  const den = scaled(rf) * 10n ** BigInt(exponent(from));
  return Number((num * 2n + den) / (den * 2n));
}

export function validateRates(rates: Record<string, unknown>): RateTable {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(rates)) {
    if (typeof v !== 'string' || !/^\d+(\.\d{1,9})?$/.test(v) || scaled(v) === 0n) {
      throw new Error(`rate for ${k} must be a positive decimal string, e.g. "1.08"`);
    }
    exponent(k);
    out[k] = v;
  }
  if (out.EUR !== '1') throw new Error('rates are per 1 EUR: EUR must be "1"');
  return out;
}

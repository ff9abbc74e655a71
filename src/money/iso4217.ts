import { CURRENCY_EXPONENTS } from './currency.js';

/**
 * ISO 4217 numeric codes of the currencies the service knows (./currency.ts), the one table for
 * every message that names a currency by number: the card network link's fields 49, 50 and 51,
 * 3-D Secure's purchaseCurrency, the acquirer simulator's --currency.
 */
const NUMERIC_TO_ALPHA: Readonly<Record<string, string>> = {
  '978': 'EUR',
  '840': 'USD',
  '826': 'GBP',
  '756': 'CHF',
  '985': 'PLN',
  '203': 'CZK',
  '348': 'HUF',
  '752': 'SEK',
  '208': 'DKK',
  '578': 'NOK',
  '946': 'RON',
  '949': 'TRY',
  '124': 'CAD',
  '036': 'AUD',
  '156': 'CNY',
  '392': 'JPY',
  '410': 'KRW',
  '352': 'ISK',
  '414': 'KWD',
  '048': 'BHD',
};

const ALPHA_TO_NUMERIC: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(NUMERIC_TO_ALPHA).map(([n, a]) => [a, n]));

/** The alphabetic code of a numeric one the service knows, or null. */
export function currencyAlpha(numeric: string): string | null {
  const alpha = NUMERIC_TO_ALPHA[numeric];
  return alpha !== undefined && CURRENCY_EXPONENTS[alpha] !== undefined ? alpha : null;
}

/** The numeric code of an alphabetic one (USDT, which has none, is presented as USD: decisions §12.3), or null. */
export function currencyNumeric(alpha: string): string | null {
  return ALPHA_TO_NUMERIC[alpha === 'USDT' ? 'USD' : alpha] ?? null;
}

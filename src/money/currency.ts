import { DomainError } from '../errors.js';

/**
 * Minor-unit exponents. Money is held as integer minor units everywhere; a JSON number in major
 * units exists only at the edge (requests and responses).
 */
export const CURRENCY_EXPONENTS: Readonly<Record<string, number>> = {
  EUR: 2,
  USDT: 2,
  USD: 2,
  GBP: 2,
  CHF: 2,
  PLN: 2,
  CZK: 2,
  HUF: 2,
  SEK: 2,
  DKK: 2,
  NOK: 2,
  RON: 2,
  TRY: 2,
  CAD: 2,
  AUD: 2,
  CNY: 2,
  JPY: 0,
  KRW: 0,
  ISK: 0,
  KWD: 3,
  BHD: 3,
};

/** The currencies a card can hold (interface 4.1). */
export const CARD_CURRENCIES = ['EUR', 'USDT'] as const;
export type CardCurrency = (typeof CARD_CURRENCIES)[number];

/** The rule a card currency follows, as a bad value's message states it. */
export const CARD_CURRENCY_RULE = `must be ${CARD_CURRENCIES.slice(0, -1).join(', ')} or ${CARD_CURRENCIES.at(-1)}`;

export function isCardCurrency(c: string): c is CardCurrency {
  return (CARD_CURRENCIES as readonly string[]).includes(c);
}

export function exponent(currency: string, field = 'currency'): number {
  const e = CURRENCY_EXPONENTS[currency];
  if (e === undefined) throw new DomainError('unsupportedCurrency', `${field}: ${currency} is not supported`);
  return e;
}

/** Largest amount accepted in one operation: 10^12 minor units (10 billion in a 2-decimal currency). */
export const MAX_MINOR = 1_000_000_000_000;

/**
 * A JSON number in major units → integer minor units, without floating-point arithmetic: the
 * number's shortest decimal text is split at the point. More decimals than the currency has, zero,
 * negative or too large is 2723.
 */
export function toMinor(value: number, currency: string, field = 'amount'): number {
  const exp = exponent(currency);
  if (!Number.isFinite(value) || value <= 0) throw new DomainError('incorrectAmount', `${field}: must be greater than 0`);
  const text = String(value);
  if (/e/i.test(text))
    throw new DomainError('incorrectAmount', `${field}: must be between 0 and ${MAX_MINOR / 10 ** exp} with at most ${exp} decimals`);
  const [int = '0', frac = ''] = text.split('.');
  if (frac.length > exp) {
    throw new DomainError('incorrectAmount', `${field}: ${currency} has at most ${exp} decimal place${exp === 1 ? '' : 's'}`);
  }
  const minor = Number(int) * 10 ** exp + Number(frac.padEnd(exp, '0') || '0');
  if (!Number.isSafeInteger(minor) || minor > MAX_MINOR) {
    throw new DomainError('incorrectAmount', `${field}: must be at most ${MAX_MINOR / 10 ** exp}`);
  }
  return minor;
}

/**
 * Integer minor units → a JSON number in major units. Division by a power of ten is correctly
 * rounded, so the shortest text of the result is exactly the decimal amount (1250 → 12.5).
 */
export function toMajor(minor: number, currency: string): number {
  return minor / 10 ** exponent(currency);
}

/**
 * The inverse of toMajor for an amount the service itself produced (a balance it answered, of any
 * sign and size): its minor units. Not for input, which toMinor checks and never rounds.
 */
export function fromMajor(major: number, currency: string): number {
  return Math.round(major * 10 ** exponent(currency));
}

/** amount × bps / 10 000, rounded half up, in integer arithmetic. */
export function basisPoints(minor: number, bps: number): number {
  return Number((BigInt(minor) * BigInt(bps) + 5000n) / 10000n);
}

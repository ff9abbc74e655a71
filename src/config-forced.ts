import { ConfigError, type Env, type VarName } from './config-vars.js';
import { CARD_CURRENCIES, type CardCurrency, exponent, MAX_MINOR } from './money/currency.js';

/**
 * The ceilings of the card network's forced posts (decisions §12.13, docs/network.md "Forced posts
 * have a ceiling"): an advice whose forced part is above `postMax`, or that would take its card's
 * debt above `debtMax`, is acknowledged but held in suspense for an operator. Minor units per card
 * currency.
 */
export interface ForcedPostsConfig {
  /** CARDPROGRAM_FORCED_POST_MAX (default 5 000.00 in each currency). */
  postMax: Readonly<Record<CardCurrency, number>>;
  /** CARDPROGRAM_CARD_DEBT_MAX (default 10 000.00 in each currency). */
  debtMax: Readonly<Record<CardCurrency, number>>;
}

const every = (major: number): Record<CardCurrency, number> =>
  Object.fromEntries(CARD_CURRENCIES.map((c) => [c, major * 10 ** exponent(c)])) as Record<CardCurrency, number>;

export const DEFAULT_FORCED_POSTS: ForcedPostsConfig = { postMax: every(5000), debtMax: every(10_000) };

/** A decimal amount as written (`5000`, `5000.00`) → minor units of `currency`, exactly: no rounding. */
function minorOf(name: string, currency: CardCurrency, value: unknown): number {
  const text = typeof value === 'number' ? String(value) : value;
  const exp = exponent(currency);
  const m = typeof text === 'string' ? /^(\d{1,13})(?:\.(\d+))?$/.exec(text.trim()) : null;
  const decimals = (m?.[2] ?? '').replace(/0+$/, '');
  if (!m || decimals.length > exp) {
    throw new ConfigError(`${name}: the ${currency} ceiling must be an amount in major units with at most ${exp} decimals, e.g. 5000.00`);
  }
  const minor = Number(m[1]) * 10 ** exp + Number(decimals.padEnd(exp, '0') || '0');
  if (minor <= 0 || minor > MAX_MINOR)
    throw new ConfigError(`${name}: the ${currency} ceiling must be above 0 and at most ${MAX_MINOR / 10 ** exp}`);
  return minor;
}

/**
 * One ceiling variable: an amount for every card currency (`5000`, `5000.00`), or, as
 * CARDPROGRAM_NETWORK_CURRENCIES is written, a JSON object per currency (`{"EUR":"5000","USDT":"2500.50"}`,
 * numbers or strings; a currency left out keeps its default).
 */
export function ceilingVar(env: Env, name: VarName, fallback: Readonly<Record<CardCurrency, number>>): Record<CardCurrency, number> {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return { ...fallback };
  if (!raw.startsWith('{'))
    return Object.fromEntries(CARD_CURRENCIES.map((c) => [c, minorOf(name, c, raw)])) as Record<CardCurrency, number>;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(`${name} must be an amount (5000.00) or a JSON object per currency ({"EUR":"5000","USDT":"5000"})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigError(`${name} must be a JSON object`);
  const out = { ...fallback };
  for (const [currency, value] of Object.entries(parsed)) {
    if (!(CARD_CURRENCIES as readonly string[]).includes(currency)) throw new ConfigError(`${name}: no cards are issued in ${currency}`);
    out[currency as CardCurrency] = minorOf(name, currency as CardCurrency, value);
  }
  return out;
}

/** The forced posts' ceilings, each problem collected by `check` (src/config.ts). */
export function forcedPostsConfig(env: Env, check: <T>(read: () => T, standIn: T) => T = (read) => read()): ForcedPostsConfig {
  return {
    postMax: check(() => ceilingVar(env, 'CARDPROGRAM_FORCED_POST_MAX', DEFAULT_FORCED_POSTS.postMax), DEFAULT_FORCED_POSTS.postMax),
    debtMax: check(() => ceilingVar(env, 'CARDPROGRAM_CARD_DEBT_MAX', DEFAULT_FORCED_POSTS.debtMax), DEFAULT_FORCED_POSTS.debtMax),
  };
}

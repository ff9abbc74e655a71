import { existsSync, readFileSync } from 'node:fs';
import { signature, signingString } from '@cardprogram/client';
import { buildApp } from '../app.js';
import type { Config } from '../config.js';
import { ConfigError } from '../config.js';
import { demoMerchantFile, ensureDemoMerchant } from '../merchants/demo.js';
import { basisPoints, toMajor, toMinor } from '../money/currency.js';
import { convert, DEFAULT_RATES } from '../money/fx.js';

export interface DemoOptions {
  merchant?: string;
  holders: number;
  /** Keep adding cardholders until at least this many transactions exist (a benchmark's fill). */
  trades?: number;
  days: number;
  seed: number;
  /** Progress, e.g. a bar on a terminal. */
  onProgress?: (done: number, total: number) => void;
}

export interface DemoResult {
  appId: string;
  holders: Array<{ holderId: string; email: string; name: string; cards: Array<{ cardId: string; currency: string }> }>;
  trades: number;
  declined: number;
}

const FIRST = [
  'Alice',
  'Bruno',
  'Chiara',
  'Dmitri',
  'Elena',
  'Farid',
  'Greta',
  'Hugo',
  'Ines',
  'Jonas',
  'Katarzyna',
  'Luca',
  'Marta',
  'Niels',
];
const LAST = [
  'Schmidt',
  'Rossi',
  'Dubois',
  'Novak',
  'García',
  'Jensen',
  'Kowalska',
  'Silva',
  'Müller',
  'Lindqvist',
  'Papadopoulos',
  'Byrne',
];
const CITIES: Array<[string, string, string, string]> = [
  ['DE', 'Berlin', 'Invalidenstrasse 117', '10115'],
  ['FR', 'Paris', '12 Rue de Rivoli', '75004'],
  ['IT', 'Milano', 'Via Dante 7', '20121'],
  ['ES', 'Madrid', 'Calle de Alcalá 21', '28014'],
  ['NL', 'Amsterdam', 'Prinsengracht 263', '1016GV'],
  ['PL', 'Kraków', 'ul. Floriańska 15', '31-019'],
  ['IE', 'Dublin', '22 Grafton Street', 'D02 HX65'],
];
const SHOPS: Array<[string, number, number, string?]> = [
  ['Lidl', 8, 90],
  ['Café Central', 2, 12],
  ['SNCF Connect', 25, 140],
  ['Spotify', 10.99, 10.99],
  ['Amazon EU', 9, 180],
  ['Uber', 6, 40],
  ['Booking.com', 80, 420],
  ['Apple App Store', 0.99, 14.99, 'USD'],
  ['Steam', 4.99, 59.99, 'USD'],
  ['Deliveroo', 14, 45, 'GBP'],
  ['IKEA', 15, 260],
  ['Zalando', 25, 150],
];

/** A small seeded generator (mulberry32): the same seed fills the same demo. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    next,
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T,
    /** A whole number of cents between lo and hi (EUR, major units), uniformly. */
    money: (lo: number, hi: number) => {
      const [from, to] = [toMinor(lo, 'EUR'), toMinor(hi, 'EUR')];
      return toMajor(from + Math.floor(next() * (to - from + 1)), 'EUR');
    },
  };
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/**
 * Fills the sandbox with cardholders, cards and a few weeks of transactions, through the service's
 * own HTTP layer (in-process, signed as the merchant): every record is one a merchant could have made.
 */
export async function runDemo(config: Config, opts: DemoOptions): Promise<DemoResult> {
  if (config.env !== 'sandbox') throw new ConfigError('cardprogram demo runs in the sandbox only (CARDPROGRAM_ENV=sandbox)');
  // No worker here: callbacks written by the demo are delivered by the running service's worker. No
  // rate limit either: the demo is the operator filling the sandbox, not a merchant.
  // The service's clock, set back while a card is topped up: the top-up is dated before the history
  // it funds (cardTopUp takes no businessDate; the network simulation does).
  let clockBack = 0;
  const app = await buildApp(
    { ...config, rateLimit: null, callbacks: { ...config.callbacks, worker: false } },
    { logger: false, clock: () => Date.now() - clockBack },
  );
  try {
    const svc = app.svc;
    await ensureDemoMerchant(svc);
    let appId = opts.merchant;
    if (!appId && existsSync(demoMerchantFile(svc))) appId = JSON.parse(readFileSync(demoMerchantFile(svc), 'utf8')).appId as string;
    if (!appId) throw new ConfigError('no demo merchant here: say which merchant to fill with --merchant APPID');
    const merchant = await svc.merchants.get(appId);
    if (!merchant?.active) throw new ConfigError(`no active merchant ${appId}`);
    if (!merchant.secret) throw new ConfigError(`${appId} signs with RSA: the demo needs an HMAC-SHA256 merchant`);
    const credentials = { secret: merchant.secret };
    const r = rng(opts.seed);
    let n = 0;
    // Seeded like the rest of the demo (not the SDK's newRandomStr): the same seed sends the same requests.
    const randomStr = () =>
      `demo${opts.seed.toString(36)}x${(n++).toString(36)}x${Math.floor(r.next() * 1e12).toString(36)}`.padEnd(32, '0').slice(0, 32);
    const call = async (url: string, body: Record<string, unknown>) => {
      // Timestamped, as production requires (CARDPROGRAM_REQUIRE_TIMESTAMP); signed by the SDK's signer.
      const signed: Record<string, unknown> = { ...body, appId, timestamp: svc.clock() };
      signed.sign = signature(credentials, signingString(signed));
      const res = await app.inject({ method: 'POST', url, payload: signed, headers: { 'content-type': 'application/json' } });
      const json = res.json() as Record<string, any>;
      return { ok: res.statusCode === 200, json };
    };
    const must = async (url: string, body: Record<string, unknown>) => {
      const res = await call(url, body);
      if (!res.ok) throw new Error(`${url}: ${res.json.code} ${res.json.msg}`);
      return res.json.model ?? res.json;
    };
    const day = (offset: number) => new Date(svc.clock() - offset * 86_400_000).toISOString().slice(0, 10);
    const result: DemoResult = { appId, holders: [], trades: 0, declined: 0 };
    const target = opts.trades ?? 0;
    const progress = () =>
      target ? opts.onProgress?.(Math.min(result.trades, target), target) : opts.onProgress?.(result.holders.length, opts.holders);
    progress();
    for (let i = 0; i < opts.holders || result.trades < target; i++) {
      const first = r.pick(FIRST);
      const last = r.pick(LAST);
      const [country, town, address, postCode] = r.pick(CITIES);
      const tag = `${opts.seed}${i}`;
      const email = `${first}.${last}.${tag}@example.com`
        .toLowerCase()
        .normalize('NFD')
        .replace(/[^\x20-\x7e]/g, '');
      const holder = await must('/api/network/holderCreate.html', {
        mobile: `+49151${String(r.int(1_000_000, 9_999_999))}`,
        firstName: b64(first),
        lastName: b64(last),
        email,
        dateOfBirth: `${r.int(1960, 2004)}-${String(r.int(1, 12)).padStart(2, '0')}-${String(r.int(1, 28)).padStart(2, '0')}`,
        nationality: country,
        sex: r.int(1, 2),
        countryCode: country,
        town: b64(town),
        address: b64(address),
        postCode,
        idnoType: 2,
        idno: `D${String(opts.seed).padStart(3, '0')}${String(i).padStart(4, '0')}${r.int(100, 999)}`,
        randomStr: randomStr(),
      });
      await must('/sandbox/holder/review', { holderId: holder.holderId, auditStatus: 2, randomStr: randomStr() });
      const cards: Array<{ cardId: string; currency: string }> = [];
      const currencies = r.next() < 0.25 ? ['EUR', 'USDT'] : ['EUR'];
      for (const currency of currencies) {
        const card = await must('/api/network/cardApply.html', { holderId: holder.holderId, currency, randomStr: randomStr() });
        cards.push({ cardId: card.cardId, currency });
        clockBack = (opts.days + 1) * 86_400_000;
        try {
          await must('/api/network/cardTopUp.html', { cardId: card.cardId, amount: r.int(3, 20) * 100, randomStr: randomStr() });
        } finally {
          clockBack = 0;
        }
        result.trades++;
        // Oldest first, so the history reads as it happened.
        for (let d = opts.days; d >= 0; d--) {
          if (r.next() > 0.45) continue;
          const [shop, lo, hi, fx] = r.pick(SHOPS);
          const amount = r.money(lo, hi);
          const auth = await call('/sandbox/network/authorize', {
            cardId: card.cardId,
            amount,
            ...(fx && currency === 'EUR'
              ? { currencyTxn: fx, txnAmount: toMajor(convert(toMinor(amount, 'EUR'), 'EUR', fx, DEFAULT_RATES), fx) }
              : {}),
            remark: shop,
            businessDate: day(d),
            randomStr: randomStr(),
          });
          if (!auth.ok) {
            result.declined++;
            continue;
          }
          result.trades++;
          const tradeId = auth.json.model.tradeId as string;
          const fate = r.next();
          if (fate < 0.08) {
            await must('/sandbox/network/reverse', { tradeId, businessDate: day(d), randomStr: randomStr() });
            result.trades++; // the reversal record (2)
          } else if (d > 0 || fate < 0.7) {
            const payment = await must('/sandbox/network/clear', {
              tradeId,
              businessDate: day(Math.max(0, d - 1)),
              randomStr: randomStr(),
            });
            result.trades++;
            if (r.next() < 0.06) {
              await must('/sandbox/network/refund', {
                tradeId: payment.tradeId,
                amount: toMajor(basisPoints(toMinor(amount, currency), 5000), currency), // half of it
                businessDate: day(Math.max(0, d - 2)),
                randomStr: randomStr(),
              });
              result.trades++;
            }
          }
          // Otherwise it stays a pending authorization (a hold), as the newest ones do.
        }
      }
      result.holders.push({ holderId: holder.holderId, email, name: `${first} ${last}`, cards });
      progress();
    }
    return result;
  } finally {
    await app.close();
  }
}

/** A one-line progress bar for a terminal: `[#######.............] 7/20 cardholders`. */
export function progressBar(stream: NodeJS.WriteStream, unit: string): (done: number, total: number) => void {
  if (!stream.isTTY) return () => undefined;
  return (done, total) => {
    const width = 24;
    const filled = total === 0 ? width : Math.round((done / total) * width);
    stream.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} ${unit}${done === total ? '\n' : ''}`);
  };
}

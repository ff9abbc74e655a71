/**
 * Wallet tokens' provisioning (decisions §15.2–15.3, docs/tokens.md) under load: `POST /tsp/provision`
 * latency (p50, p99, max) at a fixed arrival rate (default 100 requests a second, an open loop: each
 * request is sent at its time whatever the answers before it, and its latency counts from that
 * time), on SQLite and PostgreSQL. Issue 45's target: p99 within 100 ms at 100 requests/s.
 *
 * The built service runs as its own process (`bin/cardprogram.js serve`, as in production) with its
 * TSP endpoint on loopback (plain HTTP, as the sandbox allows); its cards are made through the API
 * (their numbers from the sandbox's card details). Each request is a new token (its own requestId
 * and tokenReferenceId) for one of the cards in turn, Apple Pay or Google Pay on a phone, with a risk
 * score from 0 to 9: the answers mix approve, require_authentication (a risk of 4 to 6, a card's
 * third request within 24 hours) and decline (7 or more; a card's live tokens past
 * CARDPROGRAM_TOKENS_PER_CARD); every answer must be a decision.
 *
 *   npm run bench:tokens                    both databases, 100 requests/s for 20 s
 *   npm run bench:tokens -- --quick         SQLite, 20 requests/s for 1 s (checks that it works)
 *   BENCH_RATE=200 BENCH_SECONDS=10 BENCH_DB=postgres npm run bench:tokens
 *   BENCH_PROFILE=/tmp/prof BENCH_DB=postgres npm run bench:tokens   the service's CPU profile (.cpuprofile) written there
 */
import { randomBytes } from 'node:crypto';
import { benchOutsideParty, type Card, driveOpenLoop } from './outside-party.js';

const quick = process.argv.includes('--quick');
const RATE = quick ? 20 : Number(process.env.BENCH_RATE ?? 100);
const SECONDS = quick ? 1 : Number(process.env.BENCH_SECONDS ?? 20);
/** Enough cards that none passes 20 requests in the run (decisions §15.7: 20 a card a day), warm-up included. */
const CARDS = Math.max(4, Math.ceil((RATE * (SECONDS + 4)) / 12));
const WALLETS = [
  { walletProvider: 'apple_pay', tokenRequestorId: '40010030273', tokenRequestorName: 'Apple Pay' },
  { walletProvider: 'google_pay', tokenRequestorId: '40010075001', tokenRequestorName: 'Google Pay' },
];

/** This run's mark in its requestIds and tokenReferenceIds. */
const RUN = randomBytes(4).toString('hex');

/** `rate` provisioning requests a second for `seconds`, each at its time; latency from that time to the answer. */
function drive(url: string, cards: Card[], rate: number, seconds: number, offset: number) {
  return driveOpenLoop({
    url,
    rate,
    seconds,
    body: (n) => {
      const i = offset + n;
      const card = cards[i % cards.length] as Card;
      const wallet = WALLETS[i % WALLETS.length] as (typeof WALLETS)[number];
      const id = `${RUN}-${i}`;
      return JSON.stringify({
        requestId: `req-${id}`,
        tokenReferenceId: `DNITHE${id}`,
        ...wallet,
        accountNumber: card.pan,
        expiry: card.expiry,
        tokenLast4: String(1000 + (i % 9000)),
        tokenExpiry: card.expiry,
        device: { type: 'phone', name: 'Bench phone', locale: 'de-DE' },
        walletRiskScore: i % 10,
      });
    },
    outcome: (status, answer) => ({
      key: status === 200 ? `${answer.decision}${answer.reason ? ` ${answer.reason}` : ''}` : `${status} ${answer.error}`,
      ok: status === 200 && Boolean(answer.decision),
    }),
  });
}

await benchOutsideParty({
  name: 'tokens',
  quick,
  rate: RATE,
  seconds: SECONDS,
  // Every token's token.updated callback is written (the merchant has a notify URL), as in production.
  listener: { listener: 'tsp', path: '/tsp/provision', cards: CARDS },
  measure: async (url, cards) => {
    // Warm-up: connections, prepared statements, the JIT (a few requests in all, spread over the cards).
    const warm = Math.min(RATE, 50) * (quick ? 0.2 : 2);
    await drive(url, cards, Math.min(RATE, 50), quick ? 0.2 : 2, 0);
    return drive(url, cards, RATE, SECONDS, Math.round(warm));
  },
  answers: 'decisions',
  what: (cards) =>
    `${RATE} provisioning requests/s for ${SECONDS} s (open loop, latency from each request's scheduled time), client and service on the same machine; new Apple Pay and Google Pay tokens, risk scores 0–9, over ${cards} cards.`,
  rateColumn: 'requests/s',
  whenFailed: 'some provisioning requests got no decision',
});

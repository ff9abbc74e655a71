/**
 * The 3-D Secure ACS (decisions §14, docs/3ds.md) under load: AReq → ARes latency (p50, p99, max) at
 * a fixed arrival rate (default 200 AReqs a second, an open loop: each AReq is sent at its time
 * whatever the answers before it, and its latency counts from that time), on SQLite and PostgreSQL.
 *
 * The built service runs as its own process (`bin/cardprogram.js serve`, as in production) with its
 * ACS on loopback (plain HTTP, as the sandbox allows); its cards are made through the API (their
 * numbers from the sandbox's card details), the merchant has a notify URL (so challenges are
 * possible: each writes its callback). The AReqs are EMV 3DS 2.2.0 browser payments of 1.00 to
 * 60.00 EUR spread over the cards (within the 30 an hour each), so the answers mix frictionless
 * (the exemption) and challenges; every answer must be an ARes.
 *
 *   npm run bench:3ds                    both databases, 200 AReqs/s for 20 s
 *   npm run bench:3ds -- --quick         SQLite, 50 AReqs/s for 1 s (CI: checks that it works)
 *   BENCH_RATE=400 BENCH_SECONDS=10 BENCH_DB=postgres npm run bench:3ds
 */
import { buildAReq } from '../src/three-ds/areq-builder.js';
import { benchOutsideParty, type Card, driveOpenLoop } from './outside-party.js';

const quick = process.argv.includes('--quick');
const RATE = quick ? 50 : Number(process.env.BENCH_RATE ?? 200);
const SECONDS = quick ? 1 : Number(process.env.BENCH_SECONDS ?? 20);
/** Enough cards that none passes 30 AReqs in the run (the hourly limit would answer N/04). */
const CARDS = Math.max(4, Math.ceil((RATE * (SECONDS + 4)) / 25));

/** `rate` AReqs a second for `seconds`, each at its time; latency from that time to the answer. */
function drive(url: string, cards: Card[], rate: number, seconds: number) {
  return driveOpenLoop({
    url,
    rate,
    seconds,
    body: (i) => {
      const card = cards[i % cards.length] as Card;
      return JSON.stringify(
        buildAReq({
          pan: card.pan,
          expiry: card.expiry,
          amount: 100 + Math.floor(Math.random() * 5900),
          currency: '978',
          exponent: 2,
          notificationURL: 'https://3dss.bench.invalid/n',
        }),
      );
    },
    outcome: (_status, answer) => ({
      key: answer.messageType === 'ARes' ? `${answer.transStatus}${answer.transStatusReason ?? ''}` : `Erro ${answer.errorCode}`,
      ok: answer.messageType === 'ARes',
    }),
  });
}

await benchOutsideParty({
  name: 'three-ds',
  quick,
  rate: RATE,
  seconds: SECONDS,
  // A challenge needs a notify URL (N/13 without), and writes its callback.
  listener: { listener: 'acs', path: '/3ds/areq', cards: CARDS },
  measure: async (url, cards) => {
    // Warm-up: connections, prepared statements, the JIT (a few AReqs per card, well within its 30).
    await drive(url, cards, Math.min(RATE, 50), quick ? 0.2 : 2);
    return drive(url, cards, RATE, SECONDS);
  },
  answers: 'ARes',
  what: (cards) =>
    `${RATE} AReqs/s for ${SECONDS} s (open loop, latency from each AReq's scheduled time), client and service on the same machine; EMV 3DS 2.2.0 browser payments of 1.00–60.00 EUR over ${cards} cards.`,
  rateColumn: 'AReqs/s',
  whenFailed: 'some AReqs got no ARes',
});

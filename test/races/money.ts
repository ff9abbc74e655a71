import assert from 'node:assert/strict';
import { spendOfHistory } from '../../src/controls/spending.js';
import { adjust } from '../../src/ledger/adjust.js';
import { checkLedger } from '../../src/ledger/check.js';
import { fundMerchant } from '../../src/ledger/funding.js';
import { MAX_CARD_BALANCE } from '../../src/ledger/journal.js';
import { runVerb } from '../../src/runner.js';
import { holderWithCard, type Reply, type Served, tally } from './served.js';

// The races of issue 15, each one round: concurrent requests over HTTP against the real app, then
// the rule checked on what was committed. test/concurrency.test.ts runs each 20 times in `npm test`;
// `npm run stress` runs them for as long as asked (STRESS_SECONDS).

const N = '/sandbox/network';
const all = (n: number, f: (i: number) => Promise<Reply>) => Promise.all(Array.from({ length: n }, (_, i) => f(i)));

/** `ledger check` on what the races committed: every invariant, including caps and frozen cards. */
export async function ledgerIsSound(s: Served): Promise<void> {
  assert.deepEqual((await checkLedger(s.h.db.database)).problems, []);
}

/** n of the same thing, made concurrently (rounds' fixtures, so the rounds themselves stay short). */
export const many = <T>(n: number, make: () => Promise<T>): Promise<T[]> => Promise.all(Array.from({ length: n }, make));

/** 1. Cards issued while the holder is rejected: none stays active. */
export async function applyWhileRejected(s: Served, { holderId }: { holderId: string }): Promise<void> {
  const replies = await all(13, (i) =>
    i === 6
      ? s.post(`/sandbox/holder/review`, { holderId, auditStatus: 3, errMsg: 'rejected' })
      : s.post('/api/network/cardApply.html', { holderId, currency: 'EUR' }),
  );
  assert.equal(replies[6]?.status, 200, JSON.stringify(replies[6]?.body));
  for (const r of replies) assert.ok(r.status === 200 || r.body.code === '2607', JSON.stringify(r.body));
  const active = await s.h.db.database.db
    .selectFrom('cards')
    .select('id')
    .where('holder_id', '=', holderId)
    .where('status', '=', 'active')
    .execute();
  assert.deepEqual(active, [], 'a rejected holder keeps no active card');
}

/** 2. Spending while the card is frozen by a rejection: nothing is booked after the freeze. */
export async function spendWhileFrozen(
  s: Served,
  { holderId, cardId, other }: { holderId: string; cardId: string; other: string },
): Promise<void> {
  const replies = await all(40, (i) => {
    if (i === 20) return s.post('/sandbox/holder/review', { holderId, auditStatus: 3 });
    if (i % 3 === 0) return s.post(`${N}/withdraw`, { cardId, amount: 0.01 });
    if (i % 3 === 1) return s.post(`${N}/transfer`, { cardId, toCardId: other, amount: 0.01 });
    return s.post(`${N}/authorize`, { cardId, amount: 0.01 });
  });
  for (const r of replies) assert.ok(r.status === 200 || r.body.code === '2724', JSON.stringify(r.body));
  const after = await s.post(`${N}/authorize`, { cardId, amount: 0.01 });
  assert.equal(after.body.code, '2724');
}

/** 3. Top-ups racing past the balance cap: exactly those that fit succeed. */
export async function topUpsAtTheCap(s: Served, card: { cardId: string }): Promise<void> {
  const { h } = s;
  const merchantId = h.merchant.appId;
  // Funding for three top-ups, room under the cap for one and a half.
  const big = 10_000_000_000;
  for (let i = 0; i < 3; i++) {
    await runVerb(h.app.svc, fundMerchant, {
      input: { appId: merchantId, currency: 'EUR', amount: String(big), reference: 'race' },
      actor: 'test',
    });
  }
  const row = await h.db.database.db.selectFrom('cards').select('ledger_balance').where('id', '=', card.cardId).executeTakeFirstOrThrow();
  const room = MAX_CARD_BALANCE - row.ledger_balance;
  assert.ok(room >= 100 * big && room < 200 * big, `room ${room}`);
  const replies = await all(20, () => s.post('/api/network/cardTopUp.html', { cardId: card.cardId, amount: big }));
  assert.deepEqual(tally(replies), { '0': 1, '2723': 19 });
  await runVerb(h.app.svc, adjust, { input: { cardId: card.cardId, amount: big, direction: 'debit' }, merchantId, actor: 'test' });
}

/** Sets up a card with room for one and a half top-ups of 10^10 under the cap, through settlement adjustments. */
export async function cardNearTheCap(s: Served): Promise<{ cardId: string }> {
  const { h } = s;
  const { cardId } = await holderWithCard(s);
  const target = MAX_CARD_BALANCE - 150 * 10_000_000_000;
  for (let have = 0; have < target; ) {
    const step = Math.min(1_000_000_000_000, target - have);
    await runVerb(h.app.svc, adjust, {
      input: { cardId, amount: step / 100, direction: 'credit' },
      merchantId: h.merchant.appId,
      actor: 'test',
    });
    have += step;
  }
  return { cardId };
}

/** 4a. Transfers both ways between two cards at once: none fails (no deadlock reaches the client). */
export async function transfersBothWays(s: Served, [a, b]: Array<{ cardId: string }>): Promise<void> {
  assert.ok(a && b);
  const replies = await all(40, (i) =>
    s.post(
      `${N}/transfer`,
      i % 2 ? { cardId: a.cardId, toCardId: b.cardId, amount: 0.5 } : { cardId: b.cardId, toCardId: a.cardId, amount: 0.5 },
    ),
  );
  assert.deepEqual(tally(replies), { '0': 40 });
}

/** 4b. Full reversals of some authorizations and clearings of others on one card, at once: none fails. */
export async function reverseAndClearOneCard(s: Served, { cardId }: { cardId: string }): Promise<void> {
  const auths = await all(40, () => s.post(`${N}/authorize`, { cardId, amount: 1 }));
  const ids = auths.map((r) => r.body.model.tradeId as string);
  const replies = await all(40, (i) => s.post(`${N}/${i % 2 ? 'reverse' : 'clear'}`, { tradeId: ids[i] }));
  assert.deepEqual(tally(replies), { '0': 40 });
}

/** 5. Partial reversals and refunds at once: the parts' transaction-currency amounts sum to the whole. */
export async function partsSumToTheWhole(s: Served, { cardId }: { cardId: string }): Promise<void> {
  const auth = await s.must(`${N}/authorize`, { cardId, amount: 0.03, currencyTxn: 'JPY' });
  const reversals = await all(3, () => s.post(`${N}/reverse`, { tradeId: auth.tradeId, amount: 0.01 }));
  assert.deepEqual(tally(reversals), { '0': 3 });
  assert.equal(
    reversals.reduce((sum, r) => sum + r.body.model.txnAmount, 0),
    auth.txnAmount,
  );
  const auth2 = await s.must(`${N}/authorize`, { cardId, amount: 0.03, currencyTxn: 'USD', txnAmount: 0.04 });
  const payment = await s.must(`${N}/clear`, { tradeId: auth2.tradeId });
  const refunds = await all(3, () => s.post(`${N}/refund`, { tradeId: payment.tradeId, amount: 0.01 }));
  assert.deepEqual(tally(refunds), { '0': 3 });
  const cents = refunds.reduce((sum, r) => sum + Math.round(r.body.model.txnAmount * 100), 0);
  assert.equal(cents, 4, 'the refunds give back exactly the 0.04 USD paid');
  const extra = await s.post(`${N}/refund`, { tradeId: payment.tradeId, amount: 0.01 });
  assert.equal(extra.body.code, '2723');
}

/** 6. One limit for txnAmount, sent or converted, under concurrent requests alike. */
export async function txnAmountLimit(s: Served, { cardId }: { cardId: string }): Promise<void> {
  const replies = await all(20, (i) =>
    s.post(
      `${N}/authorize`,
      i % 2 ? { cardId, amount: 1e10, currencyTxn: 'KRW' } : { cardId, amount: 1, currencyTxn: 'KRW', txnAmount: 14_800_000_000_000 },
    ),
  );
  assert.deepEqual(tally(replies), { '2723': 20 });
  for (const r of replies) assert.match(r.body.msg, /^txnAmount: /);
}

/** 7. A settling record is never dated before what it settles (1002), whatever arrives together. */
export async function noEarlierBusinessDate(s: Served, { cardId }: { cardId: string }): Promise<void> {
  const auth = await s.must(`${N}/authorize`, { cardId, amount: 1 });
  const early = new Date(Date.parse(auth.businessDate) - 40 * 86_400_000).toISOString().slice(0, 10);
  const replies = await all(20, (i) =>
    s.post(`${N}/${['clear', 'reverse', 'void'][i % 3]}`, {
      tradeId: auth.tradeId,
      businessDate: early,
      ...(i % 3 === 2 ? {} : { amount: 0.5 }),
    }),
  );
  assert.deepEqual(tally(replies), { '1002': 20 });
  for (const r of replies)
    assert.match(r.body.msg, /^businessDate: must not be earlier than \d{4}-\d\d-\d\d, the business date of the record it settles$/);
  const same = await s.post(`${N}/clear`, { tradeId: auth.tradeId, businessDate: auth.businessDate });
  assert.equal(same.status, 200, JSON.stringify(same.body));
}

/**
 * 8. A cardholder's daily limit raced by authorizations on both of its cards, with the limit set
 * again in the middle (its counters rebuilt from the records): exactly what fits is approved, and
 * the counter equals what the records say.
 */
export async function limitAcrossCards(s: Served, { holderId, cards }: { holderId: string; cards: string[] }): Promise<void> {
  const controls = { spendingLimits: [{ amount: 10, interval: 'daily' }] };
  await s.must('/api/network/cardControlsUpdate.html', { holderId, controls });
  const replies = await all(41, (i) =>
    i === 20
      ? s.post('/api/network/cardControlsUpdate.html', { holderId, controls })
      : s.post(`${N}/authorize`, { cardId: cards[i % 2] as string, amount: 0.5 }),
  );
  assert.deepEqual(tally(replies), { '0': 21, '2728': 20 }, 'the update and 20 authorizations of 0.50 fit 10.00');
  const counter = await s.h.db.database.db
    .selectFrom('spend_counters')
    .select('used')
    .where('owner_id', '=', holderId)
    .where('currency', '=', 'EUR')
    .executeTakeFirstOrThrow();
  assert.equal(Number(counter.used), 1000);
  assert.equal(await spendOfHistory(s.h.db.database.db, { cardIds: cards, currency: 'EUR', since: 0, mccs: null }), 1000);
  // Release half concurrently: reversals give the room back exactly.
  const approved = replies.filter((r, i) => i !== 20 && r.status === 200).map((r) => r.body.model.tradeId as string);
  const reversals = await all(10, (i) => s.post(`${N}/reverse`, { tradeId: approved[i] as string }));
  assert.deepEqual(tally(reversals), { '0': 10 });
  const after = await all(20, (i) => s.post(`${N}/authorize`, { cardId: cards[i % 2] as string, amount: 0.5 }));
  assert.deepEqual(tally(after), { '0': 10, '2728': 10 });
}

/**
 * Each race with its fixtures: `prepare` makes what `n` rounds need (concurrently, or one shared
 * thing), `round` runs one round on its part. `run` does `rounds` rounds, or, with `until`, batches
 * of rounds until that time; it answers how many it ran. Used by test/concurrency.test.ts and
 * `npm run stress`.
 */
export interface Race {
  name: string;
  run(s: Served, opts: { rounds: number; until?: number }): Promise<number>;
}

export function race<S>(
  name: string,
  prepare: (s: Served, n: number) => Promise<S[]>,
  round: (s: Served, state: S) => Promise<void>,
): Race {
  return {
    name,
    run: async (s, { rounds, until }) => {
      let done = 0;
      do {
        for (const state of await prepare(s, rounds)) {
          await round(s, state);
          done++;
          if (until !== undefined && Date.now() >= until) return done;
        }
      } while (until !== undefined && Date.now() < until);
      return done;
    },
  };
}

const shared = async <T>(n: number, make: () => Promise<T>): Promise<T[]> => {
  const one = await make();
  return Array.from({ length: n }, () => one);
};

export const RACES: Race[] = [
  race(
    '1. cards applied for while the holder is rejected: none stays active',
    (s, n) => many(n, () => holderWithCard(s)),
    applyWhileRejected,
  ),
  race(
    '2. authorizations, withdrawals and transfers racing a freeze: nothing is booked after it',
    async (s, n) => {
      const other = (await holderWithCard(s)).cardId;
      return many(n, async () => ({ ...(await holderWithCard(s, 200)), other }));
    },
    spendWhileFrozen,
  ),
  race('3. top-ups racing at the balance cap: only what fits succeeds', (s, n) => shared(n, () => cardNearTheCap(s)), topUpsAtTheCap),
  race(
    '4a. transfers A→B and B→A together, 40 at once: none fails',
    (s, n) => shared(n, () => Promise.all([holderWithCard(s, 1000), holderWithCard(s, 1000)])),
    transfersBothWays,
  ),
  race(
    '4b. reversals and clearings of one card’s authorizations, 40 at once: none fails',
    (s, n) => shared(n, () => holderWithCard(s, 100_000)),
    reverseAndClearOneCard,
  ),
  race(
    '5. partial reversals and refunds together: the parts sum to the whole in the transaction currency',
    (s, n) => shared(n, () => holderWithCard(s, 1000)),
    partsSumToTheWhole,
  ),
  race('6. txnAmount over the limit, sent or converted: 2723 both ways', (s, n) => shared(n, () => holderWithCard(s, 10)), txnAmountLimit),
  race(
    '7. a settling record dated before what it settles: 1002',
    (s, n) => shared(n, () => holderWithCard(s, 1000)),
    noEarlierBusinessDate,
  ),
  race(
    '8. a cardholder’s spending limit raced on two cards while it is set again: exactly what fits',
    (s, n) =>
      many(n, async () => {
        const { holderId, cardId } = await holderWithCard(s, 100);
        const second = await s.must('/api/network/cardApply.html', { holderId, currency: 'EUR' });
        await s.must('/api/network/cardTopUp.html', { cardId: second.cardId, amount: 100 });
        return { holderId, cards: [cardId, second.cardId as string] };
      }),
    limitAcrossCards,
  ),
];

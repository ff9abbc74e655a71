import assert from 'node:assert/strict';
import { updateMerchant } from '../../src/merchants/manage.js';
import { runVerb } from '../../src/runner.js';
import { many, type Race, race } from './money.js';
import { holderWithCard, type Reply, type Served, tally } from './served.js';

// The races of issue 29 (disputes), one round each: concurrent requests over HTTP against the real
// app, then the rule checked on what was committed (docs/architecture.md, Concurrency).

const N = '/sandbox/network';
const D = '/api/network';
const all = (n: number, f: (i: number) => Promise<Reply>) => Promise.all(Array.from({ length: n }, (_, i) => f(i)));

/** The merchant credits disputes provisionally at submission: a double submission would pay twice. */
async function provisionalCredit(s: Served): Promise<void> {
  await runVerb(s.h.app.svc, updateMerchant, { input: { appId: s.h.merchant.appId, disputeProvisionalCredit: true }, actor: 'test' });
}

/** A card with a cleared purchase of 40 (of 100): the card and the purchase. */
async function purchase(s: Served): Promise<{ cardId: string; tradeId: string }> {
  const { cardId } = await holderWithCard(s, 100);
  const auth = await s.must(`${N}/authorize`, { cardId, amount: 40 });
  const payment = await s.must(`${N}/clear`, { tradeId: auth.tradeId });
  return { cardId, tradeId: payment.tradeId as string };
}

/** Journal entries traced by a dispute's id (its money movements). */
async function entriesOf(s: Served, disputeId: string): Promise<number> {
  const rows = await s.h.db.database.db.selectFrom('ledger_postings').select('entry_id').where('trade_id', '=', disputeId).execute();
  return new Set(rows.map((r) => r.entry_id)).size;
}

async function available(s: Served, cardId: string): Promise<number> {
  return Number(
    (await s.h.db.database.db.selectFrom('cards').select('available_balance').where('id', '=', cardId).executeTakeFirstOrThrow())
      .available_balance,
  );
}

/** 9. Disputes opened on one transaction at once: one dispute, the rest 2741. */
export async function createsOnOneTrade(s: Served, { tradeId }: { tradeId: string }): Promise<void> {
  const replies = await all(6, () => s.post(`${D}/disputeCreate.html`, { tradeId, reason: 'fraudulent', explanation: 'not me' }));
  assert.deepEqual(tally(replies), { '0': 1, '2741': 5 });
  const rows = await s.h.db.database.db.selectFrom('disputes').select('id').where('trade_id', '=', tradeId).execute();
  assert.equal(rows.length, 1);
}

/** 10. One dispute submitted several times at once: one submission, one provisional credit. */
export async function submissionsOfOneDispute(s: Served, { cardId, disputeId }: { cardId: string; disputeId: string }): Promise<void> {
  const replies = await all(6, () => s.post(`${D}/disputeSubmit.html`, { disputeId }));
  assert.deepEqual(tally(replies), { '0': 1, '2742': 5 });
  assert.equal(await entriesOf(s, disputeId), 1);
  assert.equal(await available(s, cardId), 10_000);
}

/** 11. A submitted dispute decided won while it is withdrawn: exactly one applies, its money once. */
export async function decidedWhileWithdrawn(s: Served, { cardId, disputeId }: { cardId: string; disputeId: string }): Promise<void> {
  const replies = await all(4, (i) =>
    i % 2 ? s.post(`${D}/disputeWithdraw.html`, { disputeId }) : s.post('/sandbox/dispute/decide', { disputeId, outcome: 'won' }),
  );
  const status = (await s.h.db.database.db.selectFrom('disputes').select('status').where('id', '=', disputeId).executeTakeFirstOrThrow())
    .status;
  for (const r of replies) assert.ok(r.status === 200 || r.body.code === '2742', JSON.stringify(r.body));
  if (status === 'won') {
    // The network paid the funding back; the card keeps the credit.
    assert.equal(await available(s, cardId), 10_000);
    assert.equal(await entriesOf(s, disputeId), 2);
  } else {
    assert.equal(status, 'withdrawn');
    assert.equal(await available(s, cardId), 6_000);
    assert.equal(await entriesOf(s, disputeId), 2);
  }
}

export const DISPUTE_RACES: Race[] = [
  race('9. disputes opened on one transaction at once: one dispute', (s, n) => many(n, () => purchase(s)), createsOnOneTrade),
  race(
    '10. one dispute submitted six times at once: one submission, one provisional credit',
    async (s, n) => {
      await provisionalCredit(s);
      return many(n, async () => {
        const p = await purchase(s);
        const d = await s.must(`${D}/disputeCreate.html`, { tradeId: p.tradeId, reason: 'fraudulent', explanation: 'not me' });
        return { cardId: p.cardId, disputeId: d.disputeId as string };
      });
    },
    submissionsOfOneDispute,
  ),
  race(
    '11. a submitted dispute decided while it is withdrawn: one of them, its money once',
    async (s, n) => {
      await provisionalCredit(s);
      return many(n, async () => {
        const p = await purchase(s);
        const d = await s.must(`${D}/disputeCreate.html`, { tradeId: p.tradeId, reason: 'fraudulent', explanation: 'not me' });
        await s.must(`${D}/disputeSubmit.html`, { disputeId: d.disputeId });
        return { cardId: p.cardId, disputeId: d.disputeId as string };
      });
    },
    decidedWhileWithdrawn,
  ),
];

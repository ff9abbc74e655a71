import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { withTrades } from '../src/db/trades-table.js';
import { checkLedger } from '../src/ledger/check.js';
import { build, type Harness, randomStr, sign } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

const N = '/sandbox/network';

/** One generated step. Indices pick among the cards and trades that exist when it runs. */
type Op =
  | { kind: 'topUp' | 'authorize' | 'withdraw' | 'fee' | 'adjust'; card: number; amount: number; fx?: boolean; debit?: boolean }
  | { kind: 'clear' | 'reverse' | 'void' | 'refund'; trade: number; amount: number | null }
  | { kind: 'transfer'; card: number; amount: number }
  | { kind: 'retry' };

const amount = fc.integer({ min: 1, max: 20_000 }).map((c) => c / 100);
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('topUp' as const), card: fc.nat(1), amount }),
  fc.record({ kind: fc.constant('authorize' as const), card: fc.nat(1), amount, fx: fc.boolean() }),
  fc.record({ kind: fc.constant('withdraw' as const), card: fc.nat(1), amount }),
  fc.record({ kind: fc.constant('fee' as const), card: fc.nat(1), amount }),
  fc.record({ kind: fc.constant('adjust' as const), card: fc.nat(1), amount, debit: fc.boolean() }),
  fc.record({
    kind: fc.constantFrom('clear' as const, 'reverse' as const, 'void' as const, 'refund' as const),
    trade: fc.nat(50),
    amount: fc.option(amount, { nil: null }),
  }),
  fc.record({ kind: fc.constant('transfer' as const), card: fc.nat(1), amount }),
  fc.constant({ kind: 'retry' as const }),
);

/** The books' invariants (src/ledger/check.ts, also `cardprogram ledger check`) hold. */
async function invariants(h: Harness): Promise<void> {
  const report = await checkLedger(h.db.database);
  assert.deepEqual(report.problems, []);
  assert.ok(report.cards >= 2 && report.entries > 0, 'the check looked at the books');
}

async function snapshot(h: Harness) {
  const db = h.db.database.db;
  const [p, t, c] = await Promise.all([
    db.selectFrom('ledger_postings').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow(),
    withTrades(db).selectFrom('trades').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow(),
    db.selectFrom('cards').select(['id', 'available_balance', 'ledger_balance']).orderBy('id').execute(),
  ]);
  return { postings: Number(p.n), trades: Number(t.n), cards: c };
}

async function runSequence(h: Harness, ops: Op[]): Promise<void> {
  const cards = [(await fundedCard(h, { topUp: 100 })).cardId, (await fundedCard(h, { topUp: 0 })).cardId];
  const trades: string[] = [];
  let last: Record<string, unknown> | null = null;
  let lastPath = '';
  let lastReply: unknown = null;
  for (const o of ops) {
    let path: string;
    let body: Record<string, unknown>;
    if (o.kind === 'retry') {
      if (!last) continue;
      // An idempotent retry: same randomStr and body → same answer, nothing changes.
      const before = await snapshot(h);
      const again = await h.call(lastPath, last, { raw: true });
      assert.deepEqual({ ...again.body, traceId: '' }, { ...(lastReply as object), traceId: '' }, 'a retry answers as the first time');
      assert.deepEqual(await snapshot(h), before, 'a retry changes nothing');
      continue;
    }
    if ('trade' in o) {
      if (trades.length === 0) continue;
      path = `${N}/${o.kind}`;
      body = { tradeId: trades[o.trade % trades.length] };
      if (o.kind !== 'void' && (o.amount !== null || o.kind === 'refund')) body.amount = o.amount ?? 1;
    } else if (o.kind === 'topUp') {
      path = '/api/network/cardTopUp.html';
      body = { cardId: cards[o.card], amount: o.amount };
    } else if (o.kind === 'transfer') {
      path = `${N}/transfer`;
      body = { cardId: cards[o.card], toCardId: cards[1 - o.card], amount: o.amount };
    } else if (o.kind === 'adjust') {
      path = `${N}/adjust`;
      body = { cardId: cards[o.card], amount: o.amount, direction: o.debit ? 'debit' : 'credit' };
    } else {
      path = `${N}/${o.kind}`;
      body = { cardId: cards[o.card], amount: o.amount, ...(o.kind === 'authorize' && o.fx ? { currencyTxn: 'USD' } : {}) };
    }
    const signed = sign({ ...body, randomStr: randomStr() }, h.merchant);
    const res = await h.call(path, signed, { raw: true });
    // Business refusals are fine (insufficient balance, wrong state, too large); anything else is not.
    assert.ok(
      res.status === 200 || ['2723', '2725', '2730'].includes(res.body.code),
      `${path} ${JSON.stringify(body)} → ${JSON.stringify(res.body)}`,
    );
    if (res.status === 200 && res.body.model?.tradeId) trades.push(res.body.model.tradeId);
    last = signed;
    lastPath = path;
    lastReply = res.body;
    await invariants(h);
  }
}

eachDialect('ledger invariants under random operation sequences (property)', (dialect) => {
  it('fixed seed', async (t) => {
    const h = await build(t, dialect);
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 25 }), (ops) => runSequence(h, ops)),
      { seed: 20261122, numRuns: 25, endOnFailure: true },
    );
  });

  it('random seed (fast-check prints the seed to reproduce a failure)', async (t) => {
    const h = await build(t, dialect);
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 25 }), (ops) => runSequence(h, ops)),
      { numRuns: 15, endOnFailure: true },
    );
  });
});

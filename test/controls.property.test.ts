import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { period } from '../src/controls/periods.js';
import { build, randomStr } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

// Issue 16: the running totals of spending limits against a naive recomputation. Random limits,
// then random authorizations, reversals, clearings, voids, refunds and moves of the clock; after
// each step every limit's `spent` (cardQuery) must equal the sum, over the authorizations of its
// current interval and categories, of what each still takes, and every authorization must be
// approved exactly when it fits every limit.

const N = '/sandbox/network';
const MCCS = ['5411', '7995', undefined] as const;
const START = Date.UTC(2026, 10, 27, 20, 0); // a Friday evening: days, a week and a month end soon

type Limit = { amount: number; interval: 'per_authorization' | 'daily' | 'weekly' | 'monthly' | 'all_time'; mccs?: string[] };
type Step =
  | { op: 'authorize'; cents: number; mcc: (typeof MCCS)[number] }
  | { op: 'reverse' | 'clear'; pick: number; part: number }
  | { op: 'void' | 'voidPayment' | 'refund'; pick: number }
  | { op: 'wait'; hours: number };

const limitArb = fc.record(
  {
    amount: fc.integer({ min: 1, max: 400 }),
    interval: fc.constantFrom('per_authorization', 'daily', 'weekly', 'monthly', 'all_time'),
    mccs: fc.constantFrom(['5411'], ['7995', '5411']),
  },
  { requiredKeys: ['amount', 'interval'] },
) as fc.Arbitrary<Limit>;

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('authorize' as const),
      cents: fc.integer({ min: 1, max: 15_000 }),
      mcc: fc.constantFrom(...MCCS),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constantFrom('reverse' as const, 'clear' as const),
      pick: fc.nat(),
      part: fc.integer({ min: 1, max: 100 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constantFrom('void' as const, 'voidPayment' as const, 'refund' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('wait' as const), hours: fc.integer({ min: 1, max: 100 }) }) },
);

/** The model: each approved authorization, what it still takes, and its payment. */
interface Auth {
  id: string;
  at: number;
  amount: number;
  mcc: string | undefined;
  held: number;
  spend: number;
  payment: { id: string; amount: number; voided: boolean; refunded: boolean } | null;
}

const counts = (l: Limit, mcc: string | undefined) => !l.mccs || (mcc !== undefined && l.mccs.includes(mcc));

function naiveSpent(auths: Auth[], l: Limit, now: number): number {
  if (l.interval === 'per_authorization') return 0;
  const start = period(l.interval, now).start;
  return auths.filter((a) => a.at >= start && counts(l, a.mcc)).reduce((s, a) => s + a.spend, 0);
}

eachDialect('spending limits: running totals against a naive recomputation', (dialect) => {
  it('after every step, spent and the decisions agree with the records', async (t) => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(limitArb, { minLength: 1, maxLength: 4, selector: (l) => `${l.interval}|${l.mccs?.join(',') ?? ''}` }),
        fc.array(stepArb, { minLength: 5, maxLength: 25 }),
        async (limits, steps) => {
          let now = START;
          const h = await build(t, dialect, {}, { clock: () => now });
          const { cardId } = await fundedCard(h, { topUp: 1_000_000 });
          const call = (path: string, body: Record<string, unknown>) => h.call(path, { ...body, randomStr: randomStr() });
          const set = await call('/api/network/cardControlsUpdate.html', { cardId, controls: { spendingLimits: limits } });
          assert.equal(set.status, 200, JSON.stringify(set.body));
          const auths: Auth[] = [];
          const pick = (i: number, f: (a: Auth) => boolean) => {
            const open = auths.filter(f);
            return open.length ? open[i % open.length] : undefined;
          };
          for (const step of steps) {
            if (step.op === 'wait') {
              now += step.hours * 3_600_000;
            } else if (step.op === 'authorize') {
              const fits = limits.every((l) => !counts(l, step.mcc) || naiveSpent(auths, l, now) + step.cents <= l.amount * 100);
              const res = await call(`${N}/authorize`, { cardId, amount: step.cents / 100, ...(step.mcc ? { mcc: step.mcc } : {}) });
              assert.equal(res.status === 200, fits, `authorize ${step.cents} ${step.mcc}: ${JSON.stringify(res.body)}`);
              if (res.status === 200) {
                auths.push({
                  id: res.body.model.tradeId,
                  at: now,
                  amount: step.cents,
                  mcc: step.mcc,
                  held: step.cents,
                  spend: step.cents,
                  payment: null,
                });
              } else {
                assert.equal(res.body.detail.declineReason, 'spending_limit');
              }
            } else if (step.op === 'reverse' || step.op === 'clear') {
              const a = pick(step.pick, (x) => x.held > 0);
              if (!a) continue;
              const part = Math.max(1, Math.floor((a.held * step.part) / 100));
              const res = await call(`${N}/${step.op}`, { tradeId: a.id, amount: part / 100 });
              assert.equal(res.status, 200, JSON.stringify(res.body));
              if (step.op === 'reverse') {
                a.held -= part;
                a.spend -= part;
              } else {
                a.spend -= a.held - part;
                a.held = 0;
                a.payment = { id: res.body.model.tradeId, amount: part, voided: false, refunded: false };
              }
            } else if (step.op === 'void') {
              // Only an untouched authorization can be voided.
              const a = pick(step.pick, (x) => x.payment === null && x.held === x.amount);
              if (!a) continue;
              const res = await call(`${N}/void`, { tradeId: a.id });
              assert.equal(res.status, 200, JSON.stringify(res.body));
              a.spend = 0;
              a.held = 0;
            } else {
              const a = pick(step.pick, (x) => x.payment !== null && !x.payment.voided && !x.payment.refunded);
              if (!a?.payment) continue;
              if (step.op === 'voidPayment') {
                const res = await call(`${N}/void`, { tradeId: a.payment.id });
                assert.equal(res.status, 200, JSON.stringify(res.body));
                a.spend -= a.payment.amount;
                a.payment.voided = true;
              } else {
                const res = await call(`${N}/refund`, { tradeId: a.payment.id, amount: 0.01 });
                assert.equal(res.status, 200, JSON.stringify(res.body));
                a.payment.refunded = true; // a refund gives no room back
              }
            }
            const q = await call('/api/network/cardQuery.html', { cardId });
            const spent = (q.body.model.spending as Array<{ spent: number }>).map((x) => Math.round(x.spent * 100));
            assert.deepEqual(
              spent,
              limits.map((l) => naiveSpent(auths, l, now)),
              `after ${JSON.stringify(step)}`,
            );
          }
        },
      ),
      { numRuns: Number(process.env.CONTROLS_RUNS ?? 12), seed: 16 },
    );
  });
});

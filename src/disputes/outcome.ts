import type { VerbCtx } from '../context.js';
import { DomainError } from '../errors.js';
import { bookCreditReversed, bookDisputeWon } from '../ledger/dispute-money.js';
import { toMajor } from '../money/currency.js';
import { lockedDispute, moveDispute, recordChange } from './store.js';

/** A network's decision on a submitted dispute (decisions §13.4). */
export interface DisputeOutcomeInput {
  disputeId: string;
  outcome: 'won' | 'lost';
  /** A won dispute's credit, minor units of the dispute's currency (default: the dispute's amount); at most the amount. */
  amount?: number | undefined;
  /** When the network decided (ms; default: now). */
  decidedAt?: number | undefined;
}

/** What an outcome did: `applied`, or `duplicate` (the same outcome was recorded before: nothing moved). */
export interface DisputeOutcomeResult {
  disputeId: string;
  result: 'applied' | 'duplicate';
  status: 'won' | 'lost';
  currency: string;
  /** Major units: what the network paid back (won), 0 when lost. */
  amount: number;
}

/**
 * Records the network's outcome of a submitted dispute (decisions §13.3, docs/disputes.md "Money"),
 * the one verb behind `cardprogram disputes import`, the sandbox's decisions and the console. Its
 * run's actor (src/context.ts `Actor`: the network, or an operator) is kept as `decided_by` and, when
 * the caller asks, in the audit trail.
 *
 * - won: the network pays `amount` back from its side (`network:disputes`): to the card, or, when the
 *   card had provisional credit, to the merchant's funding account that advanced it; a won amount
 *   below that credit takes the difference back from the card;
 * - lost: provisional credit, if any, taken back from the card (its available balance as far as it
 *   goes, the rest the card's debt, as a forced post) to the merchant's funding account.
 *
 * Idempotent: the same outcome again is `duplicate` and moves nothing; another outcome than the one
 * recorded, or an outcome for a dispute not submitted, is 2742. Without `ctx.merchantId` any
 * merchant's dispute; with it, another merchant's is 2740.
 */
export async function recordDisputeOutcome({ ctx, input }: { ctx: VerbCtx; input: DisputeOutcomeInput }): Promise<DisputeOutcomeResult> {
  const { dispute: d, card, mctx } = await lockedDispute(ctx, input.disputeId);
  const result = (r: 'applied' | 'duplicate', amount: number): DisputeOutcomeResult => ({
    disputeId: d.id,
    result: r,
    status: input.outcome,
    currency: d.currency,
    amount: toMajor(amount, d.currency),
  });
  if (d.status === input.outcome) return result('duplicate', Number(d.outcome_amount ?? 0));
  if (d.status !== 'submitted') {
    throw new DomainError('disputeState', `disputeId: the dispute is ${d.status}; an outcome is recorded only for a submitted dispute`);
  }
  const amount = input.outcome === 'won' ? (input.amount ?? Number(d.amount)) : 0;
  if (!Number.isSafeInteger(amount) || amount < 0 || amount > Number(d.amount)) {
    throw new DomainError(
      'incorrectAmount',
      `amount: a won dispute is credited at most its amount, ${toMajor(Number(d.amount), d.currency)}`,
    );
  }
  const decided = await moveDispute(ctx, d, {
    status: input.outcome,
    outcome_amount: input.outcome === 'won' ? amount : null,
    decided_at: input.decidedAt ?? ctx.now,
    decided_by: ctx.actor.slice(0, 80),
  });
  const credit = Number(d.provisional_credit);
  let changed = false;
  if (amount > 0) {
    const entryId = await bookDisputeWon(mctx, card, decided, amount, credit > 0);
    await recordChange(ctx, decided, { kind: 'won', amount, entryId });
    changed = true;
  }
  const takeBack = credit - Math.min(credit, amount);
  if (takeBack > 0) {
    // The card's balances moved by the credit above are re-read under its lock for the take-back's split.
    const now = await ctx.tx.selectFrom('cards').selectAll().where('id', '=', card.id).executeTakeFirstOrThrow();
    const entryId = await bookCreditReversed(mctx, now, decided, takeBack);
    await recordChange(ctx, decided, { kind: 'credit_reversed', amount: -takeBack, entryId });
    changed = true;
  }
  if (!changed) await recordChange(ctx, decided, { kind: input.outcome });
  return result('applied', amount);
}

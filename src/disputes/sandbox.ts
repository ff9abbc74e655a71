import type { Static } from 'typebox';
import type { MerchantCtx, Services, VerbCtx } from '../context.js';
import { DomainError } from '../errors.js';
import { toMinor } from '../money/currency.js';
import type { OperationInput } from '../operation-input.js';
import { runVerb } from '../runner.js';
import { recordDisputeOutcome } from './outcome.js';
import { type DisputeRecord, queryDispute } from './query.js';
import type { DisputeDecideBody } from './schemas.js';
import { openExplanation } from './store.js';

/** The sandbox's test values (docs/disputes.md): an explanation containing one decides the outcome. */
export const SANDBOX_WIN = 'winning_evidence';
export const SANDBOX_LOSE = 'losing_evidence';

/** The sandbox network's decision by an explanation, or null (left for an import or `/sandbox/dispute/decide`). */
export function sandboxDecision(ctx: Pick<VerbCtx, 'svc'>, explanation: string): 'won' | 'lost' | null {
  if (ctx.svc.config.env !== 'sandbox' || ctx.svc.config.disputes.sandboxMs <= 0) return null;
  if (explanation.includes(SANDBOX_WIN)) return 'won';
  if (explanation.includes(SANDBOX_LOSE)) return 'lost';
  return null;
}

/** The sandbox network as an actor of the audit trail and of `decided_by`. */
const SANDBOX_NETWORK = { kind: 'network', peer: 'sandbox' } as const;

/**
 * The sandbox's dispute system, a job of the callback worker (src/jobs/periodic.ts): each
 * submitted dispute whose time has come (CARDPROGRAM_DISPUTE_SANDBOX_MS after its submission) is
 * decided by its explanation, through the same verb as an import.
 */
export function disputeSandbox(svc: Services): (now: number) => Promise<number> {
  return async (now) => {
    const due = await svc.database.read((db) =>
      db
        .selectFrom('disputes')
        .select(['id', 'merchant_id', 'explanation_enc', 'status'])
        .where('sandbox_decide_at', '<=', now)
        .orderBy('sandbox_decide_at')
        .limit(20)
        .execute(),
    );
    for (const d of due) {
      let next: number | null = null;
      try {
        const outcome = d.status === 'submitted' ? sandboxDecision({ svc }, openExplanation(svc.box, d)) : null;
        if (outcome) await runVerb(svc, recordDisputeOutcome, { input: { disputeId: d.id, outcome }, actor: SANDBOX_NETWORK, now });
      } catch (err) {
        // Withdrawn or decided meanwhile: nothing to do. Any other failure is this dispute's: recorded
        // and put back by a minute, so that it does not hold up every later one (issue 46).
        if (!(err instanceof DomainError && err.kind === 'disputeState')) {
          svc.metrics.sweepFailure('dispute_sandbox');
          svc.log.warn({ err, disputeId: d.id }, 'sandbox dispute decision failed; tried again in a minute');
          next = now + 60_000;
        }
      }
      await runVerb(svc, scheduleSandboxDecision, { input: { disputeId: d.id, at: next }, actor: SANDBOX_NETWORK, now });
    }
    return due.length;
  };
}

/** When the sandbox network looks at a dispute again: null, decided (or nothing to decide); a minute on, failed. */
async function scheduleSandboxDecision({ ctx, input }: { ctx: VerbCtx; input: { disputeId: string; at: number | null } }): Promise<void> {
  await ctx.tx.updateTable('disputes').set({ sandbox_decide_at: input.at }).where('id', '=', input.disputeId).execute();
}

export type DisputeDecideInput = OperationInput<Static<typeof DisputeDecideBody>>;

/** `/sandbox/dispute/decide`: the sandbox network decides one of the merchant's submitted disputes at once. */
export async function decideDisputeNow({ ctx, input }: { ctx: MerchantCtx; input: DisputeDecideInput }): Promise<DisputeRecord> {
  const row = await ctx.tx
    .selectFrom('disputes')
    .select('currency')
    .where('id', '=', input.disputeId)
    .where('merchant_id', '=', ctx.merchantId)
    .executeTakeFirst();
  if (!row) throw new DomainError('disputeNotFound', 'disputeId: dispute not found');
  const amount = input.amount === undefined ? undefined : toMinor(input.amount, row.currency);
  await recordDisputeOutcome({ ctx, input: { disputeId: input.disputeId, outcome: input.outcome, amount } });
  return queryDispute(ctx.tx, ctx.svc.box, ctx.merchantId, input.disputeId, ctx.now);
}

import type { Static } from 'typebox';
import type { MerchantCtx } from '../context.js';
import { invalid } from '../errors.js';
import { bookProvisionalCredit } from '../ledger/dispute-money.js';
import { toMajor } from '../money/currency.js';
import type { OperationInput } from '../operation-input.js';
import { tradeById } from '../trades/by-id.js';
import { disputableLeft, disputedAmount } from './create.js';
import { type DisputeRecord, queryDispute } from './query.js';
import { sandboxDecision } from './sandbox.js';
import type { DisputeRefBody } from './schemas.js';
import { lockedDispute, moveDispute, openExplanation, recordChange } from './store.js';
import { notUnsubmitted, refuseIfPastDeadline } from './update.js';

export type DisputeRefInput = OperationInput<Static<typeof DisputeRefBody>>;

/**
 * Submits an unsubmitted dispute to the network (decisions §13.1): before its deadline (else it
 * expires, 2743), with an explanation. When the merchant's `dispute_provisional_credit` is on, the
 * card is credited the amount at once from the merchant's funding account (2726 when that is short;
 * a closed card gets none). The card is locked, then the dispute, and its status moves only from
 * `unsubmitted`: two submissions at once give one submission and one credit, the other 2742. Its
 * amount is checked again against what is left to dispute (a refund since its creation: 2723).
 */
export async function submitDispute({ ctx, input }: { ctx: MerchantCtx; input: DisputeRefInput }): Promise<DisputeRecord> {
  const { dispute: d, card, mctx } = await lockedDispute(ctx, input.disputeId);
  await refuseIfPastDeadline(ctx, d, 'it can no longer be submitted');
  if (d.status !== 'unsubmitted') throw notUnsubmitted(d, 'submitted');
  const explanation = openExplanation(ctx.svc.box, d);
  if (explanation.trim() === '') throw invalid('explanation', 'is required to submit a dispute: set it with disputeUpdate');
  // The amount rule (§13.2) again: a refund since the dispute was opened may have left less to dispute (2723).
  const trade = await tradeById(ctx.tx, d.merchant_id, d.trade_id);
  if (!trade) throw new Error(`dispute ${d.id}: trade ${d.trade_id} not found`);
  disputedAmount(toMajor(Number(d.amount), d.currency), await disputableLeft(ctx, trade, d.id), d.currency, 'change it with disputeUpdate');
  const merchant = await ctx.tx
    .selectFrom('merchants')
    .select('dispute_provisional_credit')
    .where('id', '=', d.merchant_id)
    .executeTakeFirstOrThrow();
  const credit = merchant.dispute_provisional_credit === 1 && card.status !== 'closed' ? Number(d.amount) : 0;
  const submitted = await moveDispute(ctx, d, {
    status: 'submitted',
    submitted_at: ctx.now,
    provisional_credit: credit,
    sandbox_decide_at: sandboxDecision(ctx, explanation) ? ctx.now + ctx.svc.config.disputes.sandboxMs : null,
  });
  if (credit > 0) {
    const entryId = await bookProvisionalCredit(mctx, card, submitted, credit);
    await recordChange(ctx, submitted, { kind: 'provisional_credit', amount: credit, entryId });
  } else await recordChange(ctx, submitted, { kind: 'submitted' });
  return queryDispute(ctx.tx, ctx.svc.box, ctx.merchantId, d.id, ctx.now);
}

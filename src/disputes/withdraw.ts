import type { MerchantCtx } from '../context.js';
import { DomainError } from '../errors.js';
import { bookCreditReversed } from '../ledger/dispute-money.js';
import { type DisputeRecord, queryDispute } from './query.js';
import { lockedDispute, moveDispute, recordChange } from './store.js';
import type { DisputeRefInput } from './submit.js';
import { refuseIfPastDeadline } from './update.js';

/**
 * Withdraws a dispute (decisions §13.1): an unsubmitted one simply; a submitted one as if lost, its
 * provisional credit, if any, taken back from the card (as far as it goes, the rest the card's debt)
 * to the merchant's funding account. A decided, expired or withdrawn dispute is 2742.
 */
export async function withdrawDispute({ ctx, input }: { ctx: MerchantCtx; input: DisputeRefInput }): Promise<DisputeRecord> {
  const { dispute: d, card, mctx } = await lockedDispute(ctx, input.disputeId);
  await refuseIfPastDeadline(ctx, d, 'it is expired');
  if (d.status !== 'unsubmitted' && d.status !== 'submitted') {
    throw new DomainError(
      'disputeState',
      `disputeId: the dispute is ${d.status}; only an unsubmitted or submitted dispute can be withdrawn`,
    );
  }
  const withdrawn = await moveDispute(ctx, d, { status: 'withdrawn', decided_at: ctx.now, decided_by: ctx.actor.slice(0, 80) });
  const credit = Number(d.provisional_credit);
  if (credit > 0) {
    const entryId = await bookCreditReversed(mctx, card, withdrawn, credit);
    await recordChange(ctx, withdrawn, { kind: 'credit_reversed', amount: -credit, entryId, note: 'withdrawn after submission' });
  } else await recordChange(ctx, withdrawn, { kind: 'withdrawn' });
  return queryDispute(ctx.tx, ctx.svc.box, ctx.merchantId, d.id, ctx.now);
}

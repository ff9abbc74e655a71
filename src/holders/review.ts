import type { Static } from 'typebox';
import { notifyMerchant } from '../callbacks/merchant-event.js';
import { setCardFrozen } from '../cards/status.js';
import { AUDIT_STATUS_NAMES, AUDIT_TRANSITIONS, AuditStatus, type AuditStatusValue, canTransition } from '../codes/audit-status.js';
import type { VerbCtx } from '../context.js';
import { newId } from '../db/ids.js';
import { DomainError, invalid } from '../errors.js';
import type { OperationInput } from '../operation-input.js';
import { holderRecord } from './identity.js';
import type { HolderRecord } from './record.js';
import type { HolderReviewBody } from './schemas.js';

/**
 * The sandbox's review body without the signed envelope, widened for the operator (the CLI, the
 * console), who may send any status: the verb checks it.
 */
export type ReviewHolderInput = Omit<OperationInput<Static<typeof HolderReviewBody>>, 'auditStatus' | 'errMsg'> & {
  auditStatus: number;
  errMsg?: string | undefined;
};

/**
 * A reviewer's decision on a cardholder. `ctx.merchantId` scopes the lookup to one merchant (sandbox
 * operation); without it (the operator's CLI) any merchant's holder may be reviewed. `ctx.actor`
 * (`sandbox:<appId>`, `cli`) is kept in holder_reviews.
 */
export async function reviewHolder({ ctx, input }: { ctx: VerbCtx; input: ReviewHolderInput }): Promise<HolderRecord> {
  let q = ctx.tx.selectFrom('cardholders').selectAll().where('id', '=', input.holderId);
  if (ctx.merchantId !== undefined) q = q.where('merchant_id', '=', ctx.merchantId);
  const holder = await q.executeTakeFirst();
  if (!holder) throw new DomainError('holderNotFound');
  const to = input.auditStatus;
  if (!(to in AUDIT_STATUS_NAMES) || to === 0) throw invalid('auditStatus', 'must be 1, 2, 3 or 4');
  if (!canTransition(holder.audit_status, to)) {
    const allowed = AUDIT_TRANSITIONS[holder.audit_status as AuditStatusValue] ?? [];
    throw new DomainError(
      'auditTransition',
      `auditStatus: cannot change from ${holder.audit_status} (${AUDIT_STATUS_NAMES[holder.audit_status as AuditStatusValue]}) to ${to}; allowed: ${allowed.length ? allowed.join(', ') : 'none'}`,
    );
  }
  const errMsg = (input.errMsg ?? '').trim().slice(0, 500);
  // The row is updated only if it still has the status it was read with, so two reviewers racing
  // cannot both apply a transition that was valid only from the old status.
  const res = await ctx.tx
    .updateTable('cardholders')
    .set({ audit_status: to, err_msg: errMsg, updated_at: ctx.now })
    .where('id', '=', holder.id)
    .where('audit_status', '=', holder.audit_status)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) throw new DomainError('auditTransition', 'auditStatus: changed concurrently, try again');
  await ctx.tx
    .insertInto('holder_reviews')
    .values({
      id: newId('rev'),
      holder_id: holder.id,
      merchant_id: holder.merchant_id,
      from_status: holder.audit_status,
      to_status: to,
      err_msg: errMsg,
      actor: ctx.actor.slice(0, 64),
      created_at: ctx.now,
    })
    .execute();
  // An approval withdrawn (2 → 3) stops spending at once: the holder's cards are frozen by the
  // operator (the sandbox review stands for the program's reviewer), taking over a cardholder's or
  // merchant's own freeze, so neither can lift it.
  if (holder.audit_status === AuditStatus.approved && to === AuditStatus.rejected) {
    const { merchantId: _scope, ...operator } = ctx;
    const open = await ctx.tx
      .selectFrom('cards')
      .select('id')
      .where('holder_id', '=', holder.id)
      .where('status', '<>', 'closed')
      .orderBy('id')
      .execute();
    for (const card of open) {
      await setCardFrozen({
        ctx: operator,
        input: { cardId: card.id, frozen: true, source: 'operator', reason: 'cardholder rejected', actor: 'review' },
      });
    }
  }
  await notifyMerchant(ctx, {
    merchantId: holder.merchant_id,
    type: 'holder.audit',
    subject: `holder:${holder.id}`,
    body: { holderId: holder.id, auditStatus: to, errMsg },
  });
  return holderRecord(ctx.svc.box, { ...holder, audit_status: to, err_msg: errMsg, updated_at: ctx.now });
}

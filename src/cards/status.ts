import { emitEvent, notifyUrlOf } from '../callbacks/outbox.js';
import type { TxCtx } from '../context.js';
import { DomainError } from '../errors.js';
import { AuditStatus } from '../holders/audit-status.js';
import { type CardModel, toCardModel } from './model.js';

/**
 * Freezes or unfreezes a card. A frozen card declines authorizations (2724) but can still be
 * funded and still settles what it authorized before. Unfreezing needs an approved cardholder.
 * `merchantId` null is the operator's CLI. A change (not a repeat) sends the merchant a
 * `card.status` callback, in the same transaction.
 */
export async function setCardFrozen({
  ctx,
  merchantId,
  input,
}: {
  ctx: TxCtx;
  merchantId: string | null;
  input: { cardId: string; frozen: boolean; actor: 'operator' | 'cardholder' | 'review' };
}): Promise<CardModel> {
  let q = ctx.tx.selectFrom('cards').selectAll().where('id', '=', input.cardId);
  if (merchantId !== null) q = q.where('merchant_id', '=', merchantId);
  const card = await q.executeTakeFirst();
  if (!card) throw new DomainError('cardNotFound');
  if (card.status === 'closed') throw new DomainError('cardStatus', 'cardId: the card is closed');
  if (!input.frozen) {
    const holder = await ctx.tx.selectFrom('cardholders').select('audit_status').where('id', '=', card.holder_id).executeTakeFirstOrThrow();
    if (holder.audit_status !== AuditStatus.approved) {
      throw new DomainError(
        'holderNotApproved',
        `cardId: the cardholder's auditStatus is ${holder.audit_status}; a card is unfrozen only for an approved cardholder`,
      );
    }
  }
  const status = input.frozen ? 'frozen' : 'active';
  if (card.status === status) return toCardModel(card);
  await ctx.tx.updateTable('cards').set({ status, updated_at: ctx.now }).where('id', '=', card.id).execute();
  const model = toCardModel({ ...card, status, updated_at: ctx.now });
  const url = await notifyUrlOf(ctx.tx, card.merchant_id);
  if (url) {
    await emitEvent(ctx.tx, {
      merchantId: card.merchant_id,
      type: 'card.status',
      // The card's own sequence: ordered with its trade events.
      subject: `card:${card.id}`,
      url,
      body: { cardId: card.id, cardNo: model.cardNo, currency: model.currency, status, actor: input.actor },
      now: ctx.now,
    });
  }
  return model;
}

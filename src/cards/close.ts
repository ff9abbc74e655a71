import type { VerbCtx } from '../context.js';
import { DomainError } from '../errors.js';
import { payOutClosingCard } from '../ledger/close-card.js';
import { type CardModel, toCardModel } from './model.js';
import { applyStatus, cardChanged, cardForChange, reasonOf, type StatusChangeInput } from './status.js';
import { recordCardStatus } from './status-events.js';

/**
 * Closes a card, for good: no unfreeze, authorization, top-up, withdrawal or transfer afterwards
 * (2724). Its whole available balance goes to its merchant's funding account, as a withdrawal
 * record (110, status 1, "Card closed"), in the same transaction, booked by the ledger
 * (src/ledger/close-card.ts). A closed card is answered as is. Without `ctx.merchantId`, the operator.
 */
export async function closeCard({ ctx, input }: { ctx: VerbCtx; input: StatusChangeInput }): Promise<CardModel> {
  for (let attempt = 1; ; attempt++) {
    const card = await cardForChange(ctx, ctx.merchantId ?? null, input.cardId);
    if (card.status === 'closed') return toCardModel(card);
    // The operator's freeze (a fraud hold, a rejected cardholder) is the operator's to end: closing
    // would end it too, and send the card's balance to the merchant, so only the operator may.
    if (card.status === 'frozen' && (card.status_source ?? 'operator') === 'operator' && input.source !== 'operator') {
      throw new DomainError('statusSource', 'cardId: frozen by the operator; only the operator can close it');
    }
    const next = { status: 'closed' as const, source: input.source, reason: reasonOf(input.reason) };
    // The status first: the update locks the row (PostgreSQL), so the balance read next is final;
    // a concurrent authorization waits and then finds no available balance.
    if (await applyStatus(ctx, card, next)) {
      const locked = await ctx.tx.selectFrom('cards').selectAll().where('id', '=', card.id).executeTakeFirstOrThrow();
      // The money is the ledger's: the balance to the merchant's funding account.
      await payOutClosingCard(ctx, locked);
      // Recorded after the balance left: the withdrawal that empties the card is the close's own.
      await recordCardStatus(ctx.tx, card.id, 'closed', ctx.now);
      const closed = await ctx.tx.selectFrom('cards').selectAll().where('id', '=', card.id).executeTakeFirstOrThrow();
      const model = toCardModel(closed);
      await cardChanged(ctx, model, card.merchant_id, input.actor ?? input.source);
      return model;
    }
    if (attempt === 3) throw new DomainError('cardStatus', 'cardId: the card’s status changed concurrently; try again');
  }
}

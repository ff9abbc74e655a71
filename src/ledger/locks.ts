import type { CardRow } from '../cards/model.js';
import { forUpdate } from '../db/locks.js';
import { precompiled, type Slots } from '../db/prepared.js';
import { DomainError } from '../errors.js';
import type { TradeRow } from '../trades/record.js';
import type { LedgerCtx } from './context.js';
import { loadTrade } from './trade-rows.js';

/** The merchant's card, locked (PostgreSQL). Built once (src/db/prepared.ts): every money verb reads it. */
const lockedCard = precompiled((db, slot: Slots<{ cardId: string; merchantId: string }>) =>
  forUpdate(db, db.selectFrom('cards').selectAll().where('id', '=', slot('cardId')).where('merchant_id', '=', slot('merchantId'))),
);

/**
 * One merchant's card, its row locked (FOR UPDATE on PostgreSQL) before anything about it is read:
 * every money verb decides on the card's status and balances, and every change of them takes this
 * lock first, so what was read is still true at commit. Another merchant's card is 2648.
 */
export async function lockCard(ctx: LedgerCtx, cardId: string): Promise<CardRow> {
  const [card] = (await lockedCard.execute(ctx.tx, { cardId, merchantId: ctx.merchantId })).rows;
  if (!card) throw new DomainError('cardNotFound');
  return card;
}

/** Two cards locked in the one global order (by id ascending), so two transfers cannot deadlock. */
export async function lockTwoCards(ctx: LedgerCtx, a: string, b: string): Promise<[CardRow, CardRow]> {
  if (b < a) {
    const second = await lockCard(ctx, b);
    return [await lockCard(ctx, a), second];
  }
  const first = await lockCard(ctx, a);
  return [first, await lockCard(ctx, b)];
}

/**
 * A transaction record and its card, the card locked first: a record changes only under its card's
 * lock, so the record read after it (held, refunded, status) is the latest.
 */
export async function lockedTrade(ctx: LedgerCtx, tradeId: string): Promise<{ trade: TradeRow; card: CardRow }> {
  const first = await loadTrade(ctx.tx, ctx.merchantId, tradeId);
  const card = await lockCard(ctx, first.card_id);
  return { trade: await loadTrade(ctx.tx, ctx.merchantId, tradeId), card };
}

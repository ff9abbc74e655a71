import { businessDay, type CardRow } from '../cards/model.js';
import type { VerbCtx } from '../context.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { book, tradeRow } from './book.js';
import { Account } from './journal.js';

/**
 * A closing card's money (src/cards/close.ts): its whole available balance goes to its merchant's
 * funding account, as a withdrawal record (110, status 1, "Card closed"), in the close's transaction.
 * `card` is the row read after the close's status update, which locked it (PostgreSQL): its balance
 * is final. What authorizations still hold stays clearable; whatever a later reversal, void or refund
 * returns goes to the funding account too (book() forwards it). Nothing to book: nothing is written.
 */
export async function payOutClosingCard(ctx: VerbCtx, card: CardRow): Promise<void> {
  if (card.available_balance <= 0) return;
  const trade = tradeRow(
    {
      card,
      type: TradeType.withdrawal,
      status: TradeStatus.success,
      amount: card.available_balance,
      businessDate: businessDay(ctx.now),
      remark: 'Card closed',
    },
    ctx.now,
  );
  await book(
    { ...ctx, merchantId: card.merchant_id },
    card.currency,
    [
      { account: Account.available(card.id), amount: -card.available_balance },
      { account: Account.merchantFunding(card.merchant_id), amount: card.available_balance },
    ],
    [trade],
  );
}

import { loadCard, maskedCardNo } from '../cards/model.js';
import { DomainError } from '../errors.js';
import { toMinor } from '../money/currency.js';
import { type TradeRecord, toTradeRecord } from '../trades/store.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { book, tradeRow } from './book.js';
import { type LedgerCtx, resolveBusinessDate } from './common.js';
import { feeFor } from './fees.js';
import { Account } from './journal.js';

/**
 * Top-up (100): program funding → the card's available balance, less the top-up fee. A frozen card
 * can still be funded (freezing stops spending); a closed one cannot (2724).
 */
export async function topUp({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: { cardId: string; amount: number; businessDate?: string | undefined };
}): Promise<TradeRecord> {
  const card = await loadCard(ctx.tx, ctx.merchantId, input.cardId);
  if (card.status === 'closed') throw new DomainError('cardStatus', 'cardId: the card is closed');
  const amount = toMinor(input.amount, card.currency);
  const fee = feeFor(ctx.program.fees, 'topUp', amount);
  if (fee >= amount) throw new DomainError('incorrectAmount', 'amount: must be more than the top-up fee');
  const trade = tradeRow(
    {
      card,
      type: TradeType.topUp,
      status: TradeStatus.success,
      amount,
      fee,
      businessDate: resolveBusinessDate(input.businessDate, ctx.now),
      remark: 'Top-up',
    },
    ctx.now,
  );
  const c = card.id;
  await book(
    ctx,
    card.currency,
    [
      { account: Account.funding, amount: -amount },
      { account: Account.available(c), amount: amount - fee },
      { account: Account.fees, amount: fee },
    ],
    [trade],
  );
  return toTradeRecord(trade, maskedCardNo(card));
}

import type { Static } from 'typebox';
import { DomainError } from '../errors.js';
import { toMinor } from '../money/currency.js';
import type { OperationInput } from '../operation-input.js';
import type { TradeRecord } from '../trades/record.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { bookTransfer, tradeRow } from './book.js';
import { resolveBusinessDate } from './business-date.js';
import type { LedgerCtx } from './context.js';
import { Account } from './journal.js';
import { lockCard } from './locks.js';
import type { FeeBody } from './schemas.js';

/** A standalone fee (500), e.g. a card or service fee: available → program fees. */
export async function chargeFee({ ctx, input }: { ctx: LedgerCtx; input: OperationInput<Static<typeof FeeBody>> }): Promise<TradeRecord> {
  const card = await lockCard(ctx, input.cardId);
  if (card.status === 'closed') throw new DomainError('cardStatus', 'cardId: the card is closed');
  const amount = toMinor(input.amount, card.currency);
  const trade = tradeRow(
    {
      card,
      type: TradeType.fee,
      status: TradeStatus.success,
      amount,
      businessDate: resolveBusinessDate(input.businessDate, ctx.now),
      remark: input.remark ?? 'Fee',
    },
    ctx.now,
  );
  return bookTransfer(ctx, card, trade, { from: Account.available(card.id), to: Account.fees, amount });
}

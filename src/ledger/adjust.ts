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
import type { AdjustBody } from './schemas.js';

/**
 * Settlement adjustment (200): the network corrects a settled amount. A credit moves settlement →
 * card; a debit moves card → settlement and is recorded with a negative amount.
 */
export async function adjust({ ctx, input }: { ctx: LedgerCtx; input: OperationInput<Static<typeof AdjustBody>> }): Promise<TradeRecord> {
  const card = await lockCard(ctx, input.cardId);
  if (card.status === 'closed') throw new DomainError('cardStatus', 'cardId: the card is closed');
  const amount = toMinor(input.amount, card.currency);
  const signed = input.direction === 'credit' ? amount : -amount;
  const trade = tradeRow(
    {
      card,
      type: TradeType.settlementAdjustment,
      status: TradeStatus.success,
      amount: signed,
      txnAmount: signed,
      businessDate: resolveBusinessDate(input.businessDate, ctx.now),
      remark: input.remark ?? 'Settlement adjustment',
    },
    ctx.now,
  );
  return bookTransfer(ctx, card, trade, { from: Account.settlement, to: Account.available(card.id), amount: signed });
}

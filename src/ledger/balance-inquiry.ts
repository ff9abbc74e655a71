import type { Static } from 'typebox';
import { assertActive, maskedCardNo } from '../cards/model.js';
import type { OperationInput } from '../operation-input.js';
import { type TradeRecord, toTradeRecord } from '../trades/record.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { book, tradeRow } from './book.js';
import { resolveBusinessDate } from './business-date.js';
import type { LedgerCtx } from './context.js';
import { lockCard } from './locks.js';
import type { InquiryBody } from './schemas.js';

/** Balance inquiry (300): recorded, moves no money. */
export async function balanceInquiry({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: OperationInput<Static<typeof InquiryBody>>;
}): Promise<TradeRecord> {
  const card = await lockCard(ctx, input.cardId);
  assertActive(card);
  const trade = tradeRow(
    {
      card,
      type: TradeType.balanceInquiry,
      status: TradeStatus.success,
      amount: 0,
      businessDate: resolveBusinessDate(input.businessDate, ctx.now),
      remark: 'Balance inquiry',
    },
    ctx.now,
  );
  await book(ctx, card.currency, [], [trade]);
  return toTradeRecord(trade, maskedCardNo(card));
}

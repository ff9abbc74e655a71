import { assertActive, maskedCardNo } from '../cards/model.js';
import { exponent, toMinor } from '../money/currency.js';
import { feeFor } from '../money/fees.js';
import { type TradeRecord, toTradeRecord } from '../trades/record.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { convertedTxnAmount } from './amounts.js';
import { book, tradeRow } from './book.js';
import { resolveBusinessDate } from './business-date.js';
import type { CardAmount, LedgerCtx } from './context.js';
import { Account } from './journal.js';
import { lockCard } from './locks.js';

/** Withdrawal (110), e.g. at an ATM: available → settlement, plus the withdrawal fee. */
export async function withdraw({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: CardAmount & { currencyTxn?: string | undefined };
}): Promise<TradeRecord> {
  const card = await lockCard(ctx, input.cardId);
  assertActive(card);
  const amount = toMinor(input.amount, card.currency);
  const currencyTxn = input.currencyTxn ?? card.currency;
  exponent(currencyTxn, 'currencyTxn');
  const fee = feeFor(ctx.svc.config.program.fees, 'withdrawal', amount);
  const trade = tradeRow(
    {
      card,
      type: TradeType.withdrawal,
      status: TradeStatus.success,
      amount,
      fee,
      currencyTxn,
      txnAmount: convertedTxnAmount(amount, card.currency, currencyTxn, ctx.svc.config.program.fxRates),
      businessDate: resolveBusinessDate(input.businessDate, ctx.now),
      remark: input.remark ?? 'Cash withdrawal',
    },
    ctx.now,
  );
  await book(
    ctx,
    card.currency,
    [
      { account: Account.available(card.id), amount: -amount - fee },
      { account: Account.settlement, amount },
      { account: Account.fees, amount: fee },
    ],
    [trade],
  );
  return toTradeRecord(trade, maskedCardNo(card));
}

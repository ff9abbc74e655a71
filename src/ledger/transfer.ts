import type { Static } from 'typebox';
import { assertActive, maskedCardNo } from '../cards/model.js';
import { DomainError, invalid } from '../errors.js';
import { toMinor } from '../money/currency.js';
import { feeFor } from '../money/fees.js';
import type { OperationInput } from '../operation-input.js';
import { type TradeRecord, toTradeRecord } from '../trades/record.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { book, tradeRow } from './book.js';
import { resolveBusinessDate } from './business-date.js';
import type { LedgerCtx } from './context.js';
import { Account } from './journal.js';
import { lockTwoCards } from './locks.js';
import type { TransferBody } from './schemas.js';

/**
 * Transfer between two cards of one merchant in one currency: a 121 (Transfer Out, carrying the
 * fee) on the source and a 120 (Transfer In) on the target, in one journal entry. Returns the
 * source's record.
 */
export async function transfer({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: OperationInput<Static<typeof TransferBody>>;
}): Promise<TradeRecord> {
  if (input.toCardId === input.cardId) throw invalid('toCardId', 'must be another card than cardId');
  const [from, to] = await lockTwoCards(ctx, input.cardId, input.toCardId);
  assertActive(from);
  if (to.status === 'closed') throw new DomainError('cardStatus', 'toCardId: the card is closed');
  if (to.currency !== from.currency)
    throw new DomainError('unsupportedCurrency', `toCardId: holds ${to.currency}, cardId holds ${from.currency}`);
  const amount = toMinor(input.amount, from.currency);
  const fee = feeFor(ctx.svc.config.program.fees, 'transferOut', amount);
  const businessDate = resolveBusinessDate(input.businessDate, ctx.now);
  const out = tradeRow(
    {
      card: from,
      type: TradeType.transferOut,
      status: TradeStatus.success,
      amount,
      fee,
      businessDate,
      remark: input.remark ?? `Transfer to ${to.pan_last4}`,
    },
    ctx.now,
  );
  const into = tradeRow(
    {
      card: to,
      type: TradeType.transferIn,
      status: TradeStatus.success,
      amount,
      businessDate,
      remark: input.remark ?? `Transfer from ${from.pan_last4}`,
      originalId: out.id,
    },
    ctx.now,
  );
  await book(
    ctx,
    from.currency,
    [
      { account: Account.available(from.id), amount: -amount - fee },
      { account: Account.fees, amount: fee },
      { account: Account.available(to.id), amount },
    ],
    [out, into],
  );
  return toTradeRecord(out, maskedCardNo(from));
}

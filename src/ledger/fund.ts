import type { Static } from 'typebox';
import { maskedCardNo } from '../cards/model.js';
import type { CardTopUpBody } from '../cards/schemas.js';
import { DomainError } from '../errors.js';
import { claimsItsKey } from '../idempotency/keys.js';
import { toMinor } from '../money/currency.js';
import { feeFor } from '../money/fees.js';
import type { OperationInput } from '../operation-input.js';
import { type TradeRecord, toTradeRecord } from '../trades/record.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { tradeRow } from './book.js';
import { bookAtOnce, lockCardAtOnce } from './book-at-once.js';
import { resolveBusinessDate } from './business-date.js';
import type { LedgerCtx } from './context.js';
import { Account } from './journal.js';

/**
 * Top-up (100): the merchant's funding account in the card's currency → the card's available
 * balance, less the top-up fee. Refused (2726) when the funding account holds less than the amount.
 * A frozen card can still be funded (freezing stops spending); a closed one cannot (2724).
 */
export const topUp = claimsItsKey(async function topUp({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  /** businessDate: the benches' and the demo's records placed on a day; the API does not send it. */
  input: OperationInput<Static<typeof CardTopUpBody>> & { businessDate?: string | undefined };
}): Promise<TradeRecord> {
  // Issue 31: three round trips on PostgreSQL: the key, the card and its codes; the decision; the effects.
  const locked = await lockCardAtOnce(ctx, input.cardId);
  const { card } = locked;
  if (card.status === 'closed') throw new DomainError('cardStatus', 'cardId: the card is closed');
  const amount = toMinor(input.amount, card.currency);
  const fee = feeFor(ctx.svc.config.program.fees, 'topUp', amount);
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
  const legs = [
    { account: Account.merchantFunding(card.merchant_id), amount: -amount },
    { account: Account.available(c), amount: amount - fee },
    { account: Account.fees, amount: fee },
  ];
  await bookAtOnce(ctx, locked, legs, trade, (t) => toTradeRecord(t, maskedCardNo(card)));
  return toTradeRecord(trade, maskedCardNo(card));
});

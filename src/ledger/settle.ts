import type { Static } from 'typebox';
import { type CardRow, maskedCardNo } from '../cards/model.js';
import { releaseSpend } from '../controls/spending.js';
import { DomainError } from '../errors.js';
import { toMajor, toMinor } from '../money/currency.js';
import type { OperationInput } from '../operation-input.js';
import { type TradeRecord, type TradeRow, toTradeRecord } from '../trades/record.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { allocatePart } from './amounts.js';
import { book, tradeRow } from './book.js';
import { settlingBusinessDate } from './business-date.js';
import type { LedgerCtx } from './context.js';
import { type HeldPartInput, heldAuthorization, heldPartRow } from './held-part.js';
import { Account } from './journal.js';
import { lockedTrade } from './locks.js';
import type { RefundBody } from './schemas.js';
import { type NewTrade, updateTrade } from './trade-rows.js';

/**
 * What the card network link gives a clearing or a refund beside the verb's input: the transaction
 * amount as the network sent it (field 4, minor units of the transaction's currency), recorded as
 * given, so that the link's later parts of the same whole are allocated from the network's own
 * figures (src/card-network/amounts.ts). Not part of any request body: only the link passes it.
 */
export interface NetworkTxnAmount {
  txnAmount?: number | undefined;
}

/**
 * Clearing: an authorization becomes a payment (151). The cleared amount (all that is held unless
 * less is given) moves from held to settlement; whatever was held beyond it returns to the
 * available balance: a clearing completes its authorization.
 */
export async function clear({ ctx, input, txnAmount }: { ctx: LedgerCtx; input: HeldPartInput } & NetworkTxnAmount): Promise<TradeRecord> {
  const { auth, card, amount } = await heldAuthorization(ctx, input, 'cleared');
  const payment = heldPartRow(
    ctx,
    { auth, card, amount, businessDate: input.businessDate, txnAmount },
    { type: TradeType.payment, status: TradeStatus.success },
  );
  await updateTrade(ctx, auth, { held: 0 });
  await book(
    ctx,
    card.currency,
    [
      { account: Account.held(card.id), amount: -auth.held },
      { account: Account.settlement, amount },
      { account: Account.available(card.id), amount: auth.held - amount },
    ],
    [payment],
  );
  // What the clearing did not take is no longer spent.
  await releaseSpend(ctx, card, auth.id, auth.held - amount);
  return toTradeRecord(payment, maskedCardNo(card));
}

/** Refund (status 10): credits the card for part or all of a payment not yet refunded. */
export async function refund({
  ctx,
  input,
  txnAmount,
}: { ctx: LedgerCtx; input: OperationInput<Static<typeof RefundBody>> } & NetworkTxnAmount): Promise<TradeRecord> {
  const { trade: payment, card } = await lockedTrade(ctx, input.tradeId);
  if (payment.trade_type !== TradeType.payment || payment.trade_status !== TradeStatus.success) {
    throw new DomainError('tradeState', 'tradeId: only a payment (151) can be refunded');
  }
  const amount = toMinor(input.amount, card.currency);
  const refundable = payment.amount - payment.refunded;
  if (amount > refundable) {
    throw new DomainError('incorrectAmount', `amount: at most the ${toMajor(refundable, card.currency)} ${card.currency} not yet refunded`);
  }
  const record = await bookRefund(
    ctx,
    card,
    payment,
    amount,
    settlingBusinessDate(input.businessDate, ctx.now, payment),
    undefined,
    txnAmount,
  );
  return toTradeRecord(record, maskedCardNo(card));
}

/**
 * A refund of `amount` of a payment, booked: its record (status 10, the payment's code, its
 * transaction amount prorated as earlier refunds were, or the network's `txnAmount`), the payment's refunded total, and the
 * settlement's money back to the card. The caller has locked the payment's card and checked the
 * amount; `extra` marks the callback (a forced post's).
 */
export async function bookRefund(
  ctx: LedgerCtx,
  card: CardRow,
  payment: TradeRow,
  amount: number,
  businessDate: string,
  extra?: Record<string, unknown>,
  txnAmount?: number,
): Promise<NewTrade> {
  const record = tradeRow(
    {
      card,
      type: TradeType.payment,
      status: TradeStatus.refund,
      amount,
      currencyTxn: payment.currency_txn,
      txnAmount: txnAmount ?? allocatePart(payment.txn_amount, payment.refunded, amount, payment.amount),
      businessDate,
      authCode: payment.auth_code,
      remark: payment.remark,
      originalId: payment.id,
    },
    ctx.now,
  );
  await updateTrade(ctx, payment, { refunded: payment.refunded + amount });
  await book(
    ctx,
    card.currency,
    [
      { account: Account.settlement, amount: -amount },
      { account: Account.available(card.id), amount },
    ],
    [record],
    extra,
  );
  return record;
}

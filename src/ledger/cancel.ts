import { loadCard, maskedCardNo } from '../cards/model.js';
import { DomainError } from '../errors.js';
import { loadTrade, type TradeRecord, toTradeRecord, updateTrade } from '../trades/store.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { book, tradeRow } from './book.js';
import { heldAuthorization, type LedgerCtx, prorate, resolveBusinessDate } from './common.js';
import { Account, type Leg } from './journal.js';

/**
 * Reversal: releases part or all of what an authorization holds. A status 2 record carries the
 * reversed amount; once nothing is held any more the authorization becomes 3 (Reversed) and its fee
 * is returned. A partly reversed authorization stays 1 and can still be cleared.
 */
export async function reverse({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: { tradeId: string; amount?: number | undefined; businessDate?: string | undefined };
}): Promise<TradeRecord> {
  const { auth, card, amount } = await heldAuthorization(ctx, input, 'reversed');
  const held = auth.held - amount;
  const feeBack = held === 0 ? auth.fee : 0;
  const record = tradeRow(
    {
      card,
      type: TradeType.authorization,
      status: TradeStatus.reversal,
      amount,
      fee: feeBack,
      currencyTxn: auth.currency_txn,
      txnAmount: prorate(auth.txn_amount, amount, auth.amount),
      businessDate: resolveBusinessDate(input.businessDate, ctx.now),
      authCode: auth.auth_code,
      remark: auth.remark,
      originalId: auth.id,
    },
    ctx.now,
  );
  await updateTrade(ctx, auth, { held, status: held === 0 ? TradeStatus.reversed : TradeStatus.success });
  await book(ctx, card.currency, release(card.id, amount, feeBack), [record]);
  return toTradeRecord(record, maskedCardNo(card));
}

function release(cardId: string, amount: number, feeBack: number): Leg[] {
  return [
    { account: Account.held(cardId), amount: -amount },
    { account: Account.available(cardId), amount: amount + feeBack },
    { account: Account.fees, amount: -feeBack },
  ];
}

/**
 * Void: cancels a whole transaction before it settles. An untouched authorization releases its hold
 * and fee; a payment not yet refunded returns its amount from settlement. The original becomes 6
 * (Voided) and a status 7 (Void) record is added.
 */
export async function voidTrade({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: { tradeId: string; businessDate?: string | undefined };
}): Promise<TradeRecord> {
  const original = await loadTrade(ctx.tx, ctx.merchantId, input.tradeId);
  const card = await loadCard(ctx.tx, ctx.merchantId, original.card_id);
  let legs: Leg[];
  let fee = 0;
  if (
    original.trade_type === TradeType.authorization &&
    original.trade_status === TradeStatus.success &&
    original.held === original.amount
  ) {
    fee = original.fee;
    legs = release(card.id, original.amount, fee);
  } else if (original.trade_type === TradeType.payment && original.trade_status === TradeStatus.success && original.refunded === 0) {
    legs = [
      { account: Account.settlement, amount: -original.amount },
      { account: Account.available(card.id), amount: original.amount },
    ];
  } else {
    throw new DomainError('tradeState', 'tradeId: only an untouched authorization or an unrefunded payment can be voided');
  }
  const record = tradeRow(
    {
      card,
      type: original.trade_type,
      status: TradeStatus.void,
      amount: original.amount,
      fee,
      currencyTxn: original.currency_txn,
      txnAmount: original.txn_amount,
      businessDate: resolveBusinessDate(input.businessDate, ctx.now),
      authCode: original.auth_code,
      remark: original.remark,
      originalId: original.id,
    },
    ctx.now,
  );
  await updateTrade(ctx, original, { status: TradeStatus.voided, held: 0 });
  await book(ctx, card.currency, legs, [record]);
  return toTradeRecord(record, maskedCardNo(card));
}

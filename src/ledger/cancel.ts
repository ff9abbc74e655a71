import type { Static } from 'typebox';
import { maskedCardNo } from '../cards/model.js';
import { releaseSpend } from '../controls/spending.js';
import { DomainError } from '../errors.js';
import type { OperationInput } from '../operation-input.js';
import { type TradeRecord, toTradeRecord } from '../trades/record.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { book, tradeRow } from './book.js';
import { settlingBusinessDate } from './business-date.js';
import type { LedgerCtx } from './context.js';
import { type HeldPartInput, heldAuthorization, heldPartRow } from './held-part.js';
import { Account, type Leg } from './journal.js';
import { lockedTrade } from './locks.js';
import type { VoidBody } from './schemas.js';
import { updateTrade } from './trade-rows.js';

/**
 * Reversal: releases part or all of what an authorization holds. A status 2 record carries the
 * reversed amount; once nothing is held any more the authorization becomes 3 (Reversed) and its fee
 * is returned. A partly reversed authorization stays 1 and can still be cleared.
 */
export async function reverse({ ctx, input }: { ctx: LedgerCtx; input: HeldPartInput }): Promise<TradeRecord> {
  const { auth, card, amount } = await heldAuthorization(ctx, input, 'reversed');
  const held = auth.held - amount;
  const feeBack = held === 0 ? auth.fee : 0;
  const record = heldPartRow(
    ctx,
    { auth, card, amount, businessDate: input.businessDate },
    { type: TradeType.authorization, status: TradeStatus.reversal, fee: feeBack },
  );
  await updateTrade(ctx, auth, { held, status: held === 0 ? TradeStatus.reversed : TradeStatus.success });
  await book(ctx, card.currency, release(card.id, amount, feeBack), [record]);
  await releaseSpend(ctx, card, auth.id, amount);
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
export async function voidTrade({ ctx, input }: { ctx: LedgerCtx; input: OperationInput<Static<typeof VoidBody>> }): Promise<TradeRecord> {
  const { trade: original, card } = await lockedTrade(ctx, input.tradeId);
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
      businessDate: settlingBusinessDate(input.businessDate, ctx.now, original),
      authCode: original.auth_code,
      remark: original.remark,
      originalId: original.id,
    },
    ctx.now,
  );
  await updateTrade(ctx, original, { status: TradeStatus.voided, held: 0 });
  await book(ctx, card.currency, legs, [record]);
  // What a void gives back no longer counts against the spending limits: the authorization's
  // amount, or the payment's, counted under the authorization it cleared.
  const authId = original.trade_type === TradeType.authorization ? original.id : original.original_id;
  if (authId) await releaseSpend(ctx, card, authId, original.amount);
  return toTradeRecord(record, maskedCardNo(card));
}

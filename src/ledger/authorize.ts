import { assertActive, maskedCardNo } from '../cards/model.js';
import { newId } from '../db/ids.js';
import { CommittedFailure, DomainError, invalid } from '../errors.js';
import { exponent, toMinor } from '../money/currency.js';
import { feeFor } from '../money/fees.js';
import { type TradeRecord, toTradeRecord } from '../trades/record.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { convertedTxnAmount } from './amounts.js';
import { book, tradeRow } from './book.js';
import { resolveBusinessDate } from './business-date.js';
import type { LedgerCtx } from './context.js';
import { Account } from './journal.js';
import { lockCard } from './locks.js';

export interface AuthorizeInput {
  cardId: string;
  /** In the card's currency: what the authorization holds. */
  amount: number;
  currencyTxn?: string | undefined;
  txnAmount?: number | undefined;
  remark?: string | undefined;
  businessDate?: string | undefined;
}

/**
 * Authorization (150, status 1): holds `amount` on the card (available → held) and charges the
 * authorization fee (plus the FX fee when the transaction's currency is not the card's). A frozen
 * or closed card (2724) or an insufficient available balance (2725) declines: the decline is
 * recorded for audit, committed with the request's key, and is not a listed trade.
 */
export async function authorize({ ctx, input }: { ctx: LedgerCtx; input: AuthorizeInput }): Promise<TradeRecord> {
  const card = await lockCard(ctx, input.cardId);
  const amount = toMinor(input.amount, card.currency);
  const currencyTxn = input.currencyTxn ?? card.currency;
  exponent(currencyTxn, 'currencyTxn');
  if (currencyTxn === card.currency && input.txnAmount !== undefined && toMinor(input.txnAmount, currencyTxn, 'txnAmount') !== amount) {
    throw invalid('txnAmount', 'must equal amount when currencyTxn is the card’s currency');
  }
  const txnAmount =
    input.txnAmount !== undefined
      ? toMinor(input.txnAmount, currencyTxn, 'txnAmount')
      : convertedTxnAmount(amount, card.currency, currencyTxn, ctx.svc.config.program.fxRates);
  const businessDate = resolveBusinessDate(input.businessDate, ctx.now);
  const fee =
    feeFor(ctx.svc.config.program.fees, 'authorization', amount) +
    (currencyTxn === card.currency ? 0 : feeFor(ctx.svc.config.program.fees, 'authorizationFx', amount));
  const remark = input.remark ?? '';

  const decline = async (error: DomainError): Promise<never> => {
    await ctx.tx
      .insertInto('auth_declines')
      .values({
        id: newId('dcl'),
        merchant_id: ctx.merchantId,
        card_id: card.id,
        currency: card.currency,
        amount,
        currency_txn: currencyTxn,
        txn_amount: txnAmount,
        reason_code: error.code,
        reason: error.message,
        remark,
        created_at: ctx.now,
      })
      .execute();
    throw new CommittedFailure(error);
  };

  try {
    assertActive(card);
  } catch (err) {
    return decline(err as DomainError);
  }
  const trade = tradeRow(
    {
      card,
      type: TradeType.authorization,
      status: TradeStatus.success,
      amount,
      fee,
      currencyTxn,
      txnAmount,
      businessDate,
      remark,
      held: amount,
    },
    ctx.now,
  );
  const c = card.id;
  try {
    await book(
      ctx,
      card.currency,
      [
        { account: Account.available(c), amount: -amount - fee },
        { account: Account.held(c), amount },
        { account: Account.fees, amount: fee },
      ],
      [trade],
    );
  } catch (err) {
    // book() moves the balance first: nothing was written when it refuses.
    if (err instanceof DomainError && err.kind === 'insufficientBalance') return decline(err);
    throw err;
  }
  return toTradeRecord(trade, maskedCardNo(card));
}

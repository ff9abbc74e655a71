import { emitEvent } from '../callbacks/outbox.js';
import { assertActive, type CardRow, maskedCardNo } from '../cards/model.js';
import { newId } from '../db/ids.js';
import type { AuthorizationsTable } from '../db/schema.js';
import { CommittedFailure, DomainError, invalid } from '../errors.js';
import { ISO_COUNTRIES } from '../holders/countries.js';
import { exponent, toMinor } from '../money/currency.js';
import { feeFor } from '../money/fees.js';
import { type TradeRecord, toAuthorization, toTradeRecord } from '../trades/record.js';
import { type ChannelValue, DeclineReason, type DeclineReasonValue, TradeStatus, TradeType } from '../trades/types.js';
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
  /** The acceptor, as the network sends it (decisions §11); each optional. */
  mcc?: string | undefined;
  merchantName?: string | undefined;
  merchantCity?: string | undefined;
  merchantCountry?: string | undefined;
  channel?: ChannelValue | undefined;
}

/**
 * Authorization (150, status 1): holds `amount` on the card (available → held) and charges the
 * authorization fee (plus the FX fee when the transaction's currency is not the card's). A frozen
 * or closed card (2724) or an insufficient available balance (2725) declines: the decline is
 * recorded with its reason (an `authorizations` row, read by tradeQuery; an
 * `authorization.declined` callback), committed with the request's key, and is not a listed trade.
 * An approval records the acceptor and decision beside its trade, under the trade's id.
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
  if (input.merchantCountry !== undefined && !ISO_COUNTRIES.has(input.merchantCountry)) {
    throw invalid('merchantCountry', 'must be an ISO 3166-1 alpha-2 country code, e.g. DE');
  }
  const record = (id: string, decision: Pick<AuthorizationsTable, 'approved' | 'decline_reason' | 'decline_code' | 'message'>) => ({
    id,
    merchant_id: card.merchant_id,
    card_id: card.id,
    currency: card.currency,
    amount,
    currency_txn: currencyTxn,
    txn_amount: txnAmount,
    mcc: input.mcc ?? null,
    merchant_name: input.merchantName ?? null,
    merchant_city: input.merchantCity ?? null,
    merchant_country: input.merchantCountry ?? null,
    channel: input.channel ?? null,
    ...decision,
    remark,
    business_date: businessDate,
    created_at: ctx.now,
  });

  const decline = async (reason: DeclineReasonValue, error: DomainError): Promise<never> => {
    const row = record(newId('dcl'), { approved: 0, decline_reason: reason, decline_code: error.code, message: error.message });
    await ctx.tx.insertInto('authorizations').values(row).execute();
    await declinedEvent(ctx, card, toAuthorization(row, maskedCardNo(card)));
    error.detail = { tradeId: row.id, declineReason: reason };
    throw new CommittedFailure(error);
  };

  try {
    assertActive(card);
  } catch (err) {
    return decline(DeclineReason.cardInactive, err as DomainError);
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
  const approved = record(trade.id, { approved: 1, decline_reason: null, decline_code: null, message: 'Approved' });
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
      // The `trade` callback of an authorization carries the acceptor and the decision.
      { authorization: toAuthorization(approved, maskedCardNo(card)) },
    );
  } catch (err) {
    // book() moves the balance first: nothing was written when it refuses.
    if (err instanceof DomainError && err.kind === 'insufficientBalance') return decline(DeclineReason.insufficientFunds, err);
    throw err;
  }
  await ctx.tx.insertInto('authorizations').values(approved).execute();
  return toTradeRecord(trade, maskedCardNo(card));
}

/**
 * An `authorization.declined` callback, when the merchant has a notify URL (read in the transaction,
 * as for `trade` events): the declined authorization, which is not a listed trade.
 */
async function declinedEvent(ctx: LedgerCtx, card: CardRow, authorization: ReturnType<typeof toAuthorization>): Promise<void> {
  const merchant = await ctx.tx.selectFrom('merchants').select('notify_url').where('id', '=', card.merchant_id).executeTakeFirst();
  if (!merchant?.notify_url) return;
  await emitEvent(
    ctx.tx,
    {
      merchantId: card.merchant_id,
      type: 'authorization.declined',
      subject: `card:${card.id}`,
      url: merchant.notify_url,
      body: { authorization },
      now: ctx.now,
    },
    ctx.wake,
  );
}

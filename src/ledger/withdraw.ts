import type { Static } from 'typebox';
import { assertActive, maskedCardNo } from '../cards/model.js';
import { checkMerchantCountry } from '../codes/countries.js';
import { controlsDecision } from '../controls/decide.js';
import { exponent, toMinor } from '../money/currency.js';
import { feeFor } from '../money/fees.js';
import type { OperationInput } from '../operation-input.js';
import { type TradeRecord, toTradeRecord } from '../trades/record.js';
import { Channel, TradeStatus, TradeType } from '../trades/types.js';
import { convertedTxnAmount } from './amounts.js';
import { book, tradeRow } from './book.js';
import { resolveBusinessDate } from './business-date.js';
import type { LedgerCtx } from './context.js';
import { Account } from './journal.js';
import { lockCard } from './locks.js';
import type { WithdrawBody } from './schemas.js';

/** How a cash withdrawal presents itself to the spending controls: at an ATM, merchant category 6011. */
const ATM = { channel: Channel.atm, mcc: '6011' } as const;

/**
 * Withdrawal (110), cash at an ATM: available → settlement, plus the withdrawal fee. The card's
 * spending controls decide it as an authorization at an ATM (channel `atm`, MCC 6011, the ATM's
 * country when sent), and it counts against the spending limits (`2728` when a rule refuses it). It
 * is recorded as an approved authorization beside its trade, so the limits' history counts it.
 */
export async function withdraw({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: OperationInput<Static<typeof WithdrawBody>>;
}): Promise<TradeRecord> {
  const card = await lockCard(ctx, input.cardId);
  assertActive(card);
  const amount = toMinor(input.amount, card.currency);
  const currencyTxn = input.currencyTxn ?? card.currency;
  exponent(currencyTxn, 'currencyTxn');
  checkMerchantCountry(input.merchantCountry);
  const fee = feeFor(ctx.svc.config.program.fees, 'withdrawal', amount);
  const controls = await controlsDecision(ctx, card, { ...ATM, merchantCountry: input.merchantCountry }, amount);
  if (controls.decline) throw controls.decline.error;
  const at = controls.check.at;
  const trade = tradeRow(
    {
      card,
      type: TradeType.withdrawal,
      status: TradeStatus.success,
      amount,
      fee,
      currencyTxn,
      txnAmount: convertedTxnAmount(amount, card.currency, currencyTxn, ctx.svc.config.program.fxRates),
      businessDate: resolveBusinessDate(input.businessDate, at),
      remark: input.remark ?? 'Cash withdrawal',
    },
    at,
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
  await controls.check.record();
  await ctx.tx
    .insertInto('authorizations')
    .values({
      id: trade.id,
      merchant_id: card.merchant_id,
      card_id: card.id,
      approved: 1,
      currency: card.currency,
      amount,
      currency_txn: trade.currency_txn,
      txn_amount: trade.txn_amount,
      mcc: ATM.mcc,
      merchant_name: null,
      merchant_city: null,
      merchant_country: input.merchantCountry ?? null,
      channel: ATM.channel,
      decline_reason: null,
      decline_code: null,
      message: 'Approved',
      remark: trade.remark,
      business_date: trade.business_date,
      created_at: at,
      endpoint_outcome: null,
      endpoint_ms: null,
    })
    .execute();
  return toTradeRecord(trade, maskedCardNo(card));
}

import { assertActive, loadCard, maskedCardNo } from '../cards/model.js';
import { DomainError, invalid } from '../errors.js';
import { exponent, toMinor } from '../money/currency.js';
import { convert } from '../money/fx.js';
import { type TradeRecord, toTradeRecord } from '../trades/store.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { book, newAuthCode, tradeRow } from './book.js';
import { type LedgerCtx, resolveBusinessDate } from './common.js';
import { feeFor } from './fees.js';
import { Account } from './journal.js';

interface CardAmount {
  cardId: string;
  amount: number;
  remark?: string | undefined;
  businessDate?: string | undefined;
}

/** Withdrawal (110), e.g. at an ATM: available → settlement, plus the withdrawal fee. */
export async function withdraw({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: CardAmount & { currencyTxn?: string | undefined };
}): Promise<TradeRecord> {
  const card = await loadCard(ctx.tx, ctx.merchantId, input.cardId);
  assertActive(card);
  const amount = toMinor(input.amount, card.currency);
  const currencyTxn = input.currencyTxn ?? card.currency;
  exponent(currencyTxn, 'currencyTxn');
  const fee = feeFor(ctx.program.fees, 'withdrawal', amount);
  const trade = tradeRow(
    {
      card,
      type: TradeType.withdrawal,
      status: TradeStatus.success,
      amount,
      fee,
      currencyTxn,
      txnAmount: convert(amount, card.currency, currencyTxn, ctx.program.fxRates),
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

/**
 * Transfer between two cards of one merchant in one currency: a 121 (Transfer Out, carrying the
 * fee) on the source and a 120 (Transfer In) on the target, in one journal entry. Returns the
 * source's record.
 */
export async function transfer({ ctx, input }: { ctx: LedgerCtx; input: CardAmount & { toCardId: string } }): Promise<TradeRecord> {
  if (input.toCardId === input.cardId) throw invalid('toCardId', 'must be another card than cardId');
  const from = await loadCard(ctx.tx, ctx.merchantId, input.cardId);
  const to = await loadCard(ctx.tx, ctx.merchantId, input.toCardId);
  assertActive(from);
  if (to.status === 'closed') throw new DomainError('cardStatus', 'toCardId: the card is closed');
  if (to.currency !== from.currency)
    throw new DomainError('unsupportedCurrency', `toCardId: holds ${to.currency}, cardId holds ${from.currency}`);
  const amount = toMinor(input.amount, from.currency);
  const fee = feeFor(ctx.program.fees, 'transferOut', amount);
  const businessDate = resolveBusinessDate(input.businessDate, ctx.now);
  const authCode = newAuthCode();
  const out = tradeRow(
    {
      card: from,
      type: TradeType.transferOut,
      status: TradeStatus.success,
      amount,
      fee,
      businessDate,
      authCode,
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
      authCode,
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

/**
 * Settlement adjustment (200): the network corrects a settled amount. A credit moves settlement →
 * card; a debit moves card → settlement and is recorded with a negative amount.
 */
export async function adjust({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: CardAmount & { direction: 'credit' | 'debit' };
}): Promise<TradeRecord> {
  const card = await loadCard(ctx.tx, ctx.merchantId, input.cardId);
  if (card.status === 'closed') throw new DomainError('cardStatus', 'cardId: the card is closed');
  const amount = toMinor(input.amount, card.currency);
  const signed = input.direction === 'credit' ? amount : -amount;
  const trade = tradeRow(
    {
      card,
      type: TradeType.settlementAdjustment,
      status: TradeStatus.success,
      amount: signed,
      txnAmount: signed,
      businessDate: resolveBusinessDate(input.businessDate, ctx.now),
      remark: input.remark ?? 'Settlement adjustment',
    },
    ctx.now,
  );
  await book(
    ctx,
    card.currency,
    [
      { account: Account.settlement, amount: -signed },
      { account: Account.available(card.id), amount: signed },
    ],
    [trade],
  );
  return toTradeRecord(trade, maskedCardNo(card));
}

/** Balance inquiry (300): recorded, moves no money. */
export async function balanceInquiry({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: { cardId: string; businessDate?: string | undefined };
}): Promise<TradeRecord> {
  const card = await loadCard(ctx.tx, ctx.merchantId, input.cardId);
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

/** A standalone fee (500), e.g. a card or service fee: available → program fees. */
export async function chargeFee({ ctx, input }: { ctx: LedgerCtx; input: CardAmount }): Promise<TradeRecord> {
  const card = await loadCard(ctx.tx, ctx.merchantId, input.cardId);
  if (card.status === 'closed') throw new DomainError('cardStatus', 'cardId: the card is closed');
  const amount = toMinor(input.amount, card.currency);
  const trade = tradeRow(
    {
      card,
      type: TradeType.fee,
      status: TradeStatus.success,
      amount,
      businessDate: resolveBusinessDate(input.businessDate, ctx.now),
      remark: input.remark ?? 'Fee',
    },
    ctx.now,
  );
  await book(
    ctx,
    card.currency,
    [
      { account: Account.available(card.id), amount: -amount },
      { account: Account.fees, amount },
    ],
    [trade],
  );
  return toTradeRecord(trade, maskedCardNo(card));
}

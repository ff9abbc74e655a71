import type { Insertable, Kysely, Selectable } from 'kysely';
import type { DB, TradesTable } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { tradeEvent } from '../ledger/book.js';
import type { LedgerCtx } from '../ledger/common.js';
import { toMajor } from '../money/currency.js';

export type TradeRow = Selectable<TradesTable>;

/** The transaction record of interface §2.1. */
export interface TradeRecord {
  cardNo: string;
  currency: string;
  amount: number;
  fee: number;
  currencyTxn: string;
  txnAmount: number;
  businessDate: string;
  tradeId: string;
  authCode: string;
  tradeType: number;
  tradeStatus: number;
  remark: string;
}

export function toTradeRecord(row: Omit<TradeRow, 'seq'>, maskedCardNo: string): TradeRecord {
  return {
    cardNo: maskedCardNo,
    currency: row.currency,
    amount: toMajor(row.amount, row.currency),
    fee: toMajor(row.fee, row.currency),
    currencyTxn: row.currency_txn,
    txnAmount: toMajor(row.txn_amount, row.currency_txn),
    businessDate: row.business_date,
    tradeId: row.id,
    authCode: row.auth_code,
    tradeType: row.trade_type,
    tradeStatus: row.trade_status,
    remark: row.remark,
  };
}

async function bumpDayCount(tx: Kysely<DB>, cardId: string, businessDate: string, status: number, by: number): Promise<void> {
  await tx
    .insertInto('trade_day_counts')
    .values({ card_id: cardId, business_date: businessDate, trade_status: status, n: by })
    .onConflict((oc) =>
      oc.columns(['card_id', 'business_date', 'trade_status']).doUpdateSet((eb) => ({ n: eb('trade_day_counts.n', '+', by) })),
    )
    .execute();
}

/** Inserts a listed trade and counts it in its day, in the caller's transaction. */
export async function insertTrade(tx: Kysely<DB>, row: Insertable<TradesTable>): Promise<void> {
  await tx.insertInto('trades').values(row).execute();
  await bumpDayCount(tx, row.card_id, row.business_date, row.trade_status, 1);
}

/**
 * Changes a trade's status (and what it holds or has refunded) only if it is still as it was read:
 * a concurrent change to the same trade makes this one fail with 2730 rather than apply twice.
 */
export async function updateTrade(
  ctx: LedgerCtx,
  trade: TradeRow,
  change: { status?: number; held?: number; refunded?: number },
): Promise<void> {
  const { tx } = ctx;
  const res = await tx
    .updateTable('trades')
    .set({
      trade_status: change.status ?? trade.trade_status,
      held: change.held ?? trade.held,
      refunded: change.refunded ?? trade.refunded,
    })
    .where('id', '=', trade.id)
    .where('trade_status', '=', trade.trade_status)
    .where('held', '=', trade.held)
    .where('refunded', '=', trade.refunded)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) throw new DomainError('tradeState', 'tradeId: the transaction changed concurrently, try again');
  if (change.status !== undefined && change.status !== trade.trade_status) {
    await bumpDayCount(tx, trade.card_id, trade.business_date, trade.trade_status, -1);
    await bumpDayCount(tx, trade.card_id, trade.business_date, change.status, 1);
    const { seq: _seq, ...row } = trade;
    await tradeEvent(ctx, {
      ...row,
      trade_status: change.status,
      held: change.held ?? trade.held,
      refunded: change.refunded ?? trade.refunded,
    });
  }
}

/** One merchant's trade; another merchant's is answered as unknown (2730). */
export async function loadTrade(tx: Kysely<DB>, merchantId: string, tradeId: string): Promise<TradeRow> {
  const row = await tx.selectFrom('trades').selectAll().where('id', '=', tradeId).where('merchant_id', '=', merchantId).executeTakeFirst();
  if (!row) throw new DomainError('tradeState', 'tradeId: transaction not found');
  return row;
}

import type { Selectable } from 'kysely';
import type { Static } from 'typebox';
import type { TradesTable } from '../db/schema.js';
import { toMajor } from '../money/currency.js';
import type { TradeRecordSchema } from './schemas.js';
import type { TradeStatusValue, TradeTypeValue } from './types.js';

export type TradeRow = Selectable<TradesTable>;

/** The transaction record of interface §2.1. */
export type TradeRecord = Static<typeof TradeRecordSchema>;

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
    // The columns hold only the codes of types.ts: the ledger writes them from those tables.
    tradeType: row.trade_type as TradeTypeValue,
    tradeStatus: row.trade_status as TradeStatusValue,
    remark: row.remark,
  };
}

import type { Selectable } from 'kysely';
import type { Static } from 'typebox';
import type { AuthorizationsTable } from '../db/schema.js';
import type { TradesTable } from '../db/trades-table.js';
import { toMajor } from '../money/currency.js';
import type { AuthorizationSchema, TradeRecordSchema } from './schemas.js';
import type { ChannelValue, DeclineReasonValue, TradeStatusValue, TradeTypeValue } from './types.js';

export type TradeRow = Selectable<TradesTable>;

/** The transaction record of interface §2.1. */
export type TradeRecord = Static<typeof TradeRecordSchema>;

/** The columns a record is made of: what the list reads of each of its rows. */
export const RECORD_COLUMNS = [
  'id',
  'trade_type',
  'trade_status',
  'currency',
  'amount',
  'fee',
  'currency_txn',
  'txn_amount',
  'business_date',
  'auth_code',
  'remark',
] as const satisfies ReadonlyArray<keyof TradeRow>;

export function toTradeRecord(row: Pick<TradeRow, (typeof RECORD_COLUMNS)[number]>, maskedCardNo: string): TradeRecord {
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

export type AuthorizationRow = Selectable<AuthorizationsTable>;

/** An authorization, approved or declined, with its acceptor and decision (decisions §11). */
export type Authorization = Static<typeof AuthorizationSchema>;

export function toAuthorization(row: AuthorizationRow, maskedCardNo: string): Authorization {
  return {
    id: row.id,
    cardId: row.card_id,
    cardNo: maskedCardNo,
    currency: row.currency,
    amount: toMajor(row.amount, row.currency),
    currencyTxn: row.currency_txn,
    txnAmount: toMajor(row.txn_amount, row.currency_txn),
    merchant: { mcc: row.mcc, name: row.merchant_name, city: row.merchant_city, country: row.merchant_country },
    // The columns hold only values of the tables in types.ts: authorize writes them from those.
    channel: row.channel as ChannelValue | null,
    decision: {
      approved: row.approved === 1,
      declineReason: row.decline_reason as DeclineReasonValue | null,
      code: row.decline_code,
      message: row.message,
      endpoint: row.endpoint_outcome === null ? null : { outcome: row.endpoint_outcome, latencyMs: Number(row.endpoint_ms ?? 0) },
    },
    remark: row.remark,
    createdAt: new Date(Number(row.created_at)).toISOString(),
  };
}

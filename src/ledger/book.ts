import { randomInt } from 'node:crypto';
import { emitEvent } from '../callbacks/outbox.js';
import { type CardRow, maskedCardNo } from '../cards/model.js';
import { newId } from '../db/ids.js';
import { insertTrade, type TradeRow, toTradeRecord } from '../trades/store.js';
import type { LedgerCtx } from './common.js';
import { type Leg, moveCardBalances, postEntry } from './journal.js';

export interface TradeSpec {
  card: CardRow;
  type: number;
  status: number;
  amount: number;
  fee?: number;
  currencyTxn?: string;
  txnAmount?: number;
  businessDate: string;
  authCode?: string;
  remark?: string;
  originalId?: string;
  held?: number;
}

export function newAuthCode(): string {
  return String(randomInt(1_000_000)).padStart(6, '0');
}

/** A trade row from its essentials; transaction currency and amount default to the card's. */
export function tradeRow(spec: TradeSpec, now: number): NewTrade {
  return {
    id: newId('trd'),
    merchant_id: spec.card.merchant_id,
    card_id: spec.card.id,
    trade_type: spec.type,
    trade_status: spec.status,
    currency: spec.card.currency,
    amount: spec.amount,
    fee: spec.fee ?? 0,
    currency_txn: spec.currencyTxn ?? spec.card.currency,
    txn_amount: spec.txnAmount ?? Math.abs(spec.amount),
    business_date: spec.businessDate,
    auth_code: spec.authCode ?? newAuthCode(),
    remark: spec.remark ?? '',
    original_id: spec.originalId ?? null,
    held: spec.held ?? 0,
    refunded: 0,
    created_at: now,
  };
}

/** A trade about to be inserted: every column but the generated seq. */
export type NewTrade = Omit<TradeRow, 'seq'>;

const CARD_ACCOUNT = /^card:(.+):(available|held)$/;

/**
 * Books one money movement: the card balances first (so an insufficient balance fails before
 * anything is written), then the balanced journal entry, then the listed trades, all in the
 * caller's transaction.
 */
export async function book(ctx: LedgerCtx, currency: string, legs: Leg[], trades: NewTrade[]): Promise<void> {
  const { tx, now } = ctx;
  const deltas = new Map<string, { available: number; held: number }>();
  for (const leg of legs) {
    const m = CARD_ACCOUNT.exec(leg.account);
    if (!m?.[1]) continue;
    const d = deltas.get(m[1]) ?? { available: 0, held: 0 };
    if (m[2] === 'available') d.available += leg.amount;
    else d.held += leg.amount;
    deltas.set(m[1], d);
  }
  for (const [cardId, delta] of deltas) {
    if (delta.available !== 0 || delta.held !== 0) await moveCardBalances(tx, cardId, delta, now);
  }
  await postEntry(tx, { tradeId: trades[0]?.id ?? null, currency, now, legs });
  for (const t of trades) {
    await insertTrade(tx, t);
    await tradeEvent(ctx, t);
  }
}

/**
 * A `trade` callback for a record that was written or changed, when the merchant has a notify URL.
 * The URL is read in the transaction, not from the merchant cache: a URL set a moment ago by the
 * CLI (another process) gets this event, as `holder.audit` and `card.status` events do.
 */
export async function tradeEvent(ctx: LedgerCtx, trade: NewTrade): Promise<void> {
  const row = await ctx.tx
    .selectFrom('cards')
    .innerJoin('merchants', 'merchants.id', 'cards.merchant_id')
    .select(['cards.pan_first6', 'cards.pan_last4', 'cards.pan_length', 'merchants.notify_url'])
    .where('cards.id', '=', trade.card_id)
    .executeTakeFirstOrThrow();
  if (!row.notify_url) return;
  await emitEvent(ctx.tx, {
    merchantId: trade.merchant_id,
    type: 'trade',
    subject: `card:${trade.card_id}`,
    url: row.notify_url,
    body: { cardId: trade.card_id, ...toTradeRecord(trade, maskedCardNo(row)) },
    now: ctx.now,
  });
}

import type { Insertable, Kysely } from 'kysely';
import { notifyMerchant } from '../callbacks/merchant-event.js';
import { maskedCardNo } from '../cards/model.js';
import type { Part } from '../db/one-statement.js';
import { precompiled, type Slots } from '../db/prepared.js';
import type { DB } from '../db/schema.js';
import { type TradesTable, withTrades } from '../db/trades-table.js';
import { DomainError } from '../errors.js';
import { tradeById } from '../trades/by-id.js';
import { RECORD_COLUMNS, type TradeRow, toTradeRecord } from '../trades/record.js';
import type { LedgerCtx } from './context.js';

/** A trade about to be inserted: every column but the generated seq. */
export type NewTrade = Omit<TradeRow, 'seq'>;

/** A day's count of a card's trades in one status, moved by `by`. Built once (src/db/prepared.ts). */
const dayCount = precompiled((db, slot: Slots<{ cardId: string; businessDate: string; status: number; by: number }>) =>
  db
    .insertInto('trade_day_counts')
    .values({ card_id: slot('cardId'), business_date: slot('businessDate'), trade_status: slot('status'), n: slot('by') })
    .onConflict((oc) =>
      oc.columns(['card_id', 'business_date', 'trade_status']).doUpdateSet((eb) => ({ n: eb('trade_day_counts.n', '+', slot('by')) })),
    ),
);

async function bumpDayCount(tx: Kysely<DB>, cardId: string, businessDate: string, status: number, by: number): Promise<void> {
  await dayCount.execute(tx, { cardId, businessDate, status, by });
}

/** Every column of a new trade: a record's (src/trades/record.ts) and the ledger's own. The insert below is built once with a slot for each. */
const NEW_TRADE_COLUMNS = [
  ...RECORD_COLUMNS,
  'merchant_id',
  'card_id',
  'original_id',
  'held',
  'refunded',
  'created_at',
] as const satisfies ReadonlyArray<keyof NewTrade>;
/** A column added to `trades` and not to the list above fails to compile here. */
const allColumns: Exclude<keyof NewTrade, (typeof NEW_TRADE_COLUMNS)[number]> extends never ? true : never = true;
void allColumns;

const tradeInsert = precompiled((db, slot: Slots<NewTrade>) =>
  withTrades(db)
    .insertInto('trades')
    .values(Object.fromEntries(NEW_TRADE_COLUMNS.map((c) => [c, slot(c)])) as unknown as Insertable<TradesTable>),
);

/** Inserts a listed trade and counts it in its day, in the caller's transaction. */
export async function insertTrade(tx: Kysely<DB>, row: NewTrade): Promise<void> {
  await tradeInsert.execute(tx, row);
  await bumpDayCount(tx, row.card_id, row.business_date, row.trade_status, 1);
}

/** A new trade's insert and its day's count, as parts of one statement (src/db/one-statement.ts). */
export function tradeParts(tx: Kysely<DB>, row: NewTrade): Part[] {
  return [
    { name: 'trade', query: withTrades(tx).insertInto('trades').values(row) },
    {
      name: 'day',
      query: tx
        .insertInto('trade_day_counts')
        .values({ card_id: row.card_id, business_date: row.business_date, trade_status: row.trade_status, n: 1 })
        .onConflict((oc) =>
          oc.columns(['card_id', 'business_date', 'trade_status']).doUpdateSet((eb) => ({ n: eb('trade_day_counts.n', '+', 1) })),
        ),
    },
  ];
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
  const res = await withTrades(tx)
    .updateTable('trades')
    .set({
      trade_status: change.status ?? trade.trade_status,
      held: change.held ?? trade.held,
      refunded: change.refunded ?? trade.refunded,
    })
    .where('id', '=', trade.id)
    // The partition it is in (PostgreSQL): the others are not looked at.
    .where('business_date', '=', trade.business_date)
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
  const row = await tradeById(tx, merchantId, tradeId);
  if (!row) throw new DomainError('tradeState', 'tradeId: transaction not found');
  return row;
}

/** A card as its trade's callback needs it, with its merchant's notify URL, read in the same transaction (with the card's lock). */
export interface KnownCard {
  card: { id: string; pan_first6: string; pan_last4: string; pan_length: number };
  notifyUrl: string | null;
}

/** What a trade's callback needs of its card and merchant. Built once (src/db/prepared.ts). */
const cardAndNotifyUrl = precompiled((db, slot: Slots<{ cardId: string }>) =>
  db
    .selectFrom('cards')
    .innerJoin('merchants', 'merchants.id', 'cards.merchant_id')
    .select(['cards.pan_first6', 'cards.pan_last4', 'cards.pan_length', 'merchants.notify_url'])
    .where('cards.id', '=', slot('cardId')),
);

/**
 * A `trade` callback for a record that was written or changed, when the merchant has a notify URL.
 * The URL is read in the transaction, not from the merchant cache: a URL set a moment ago by the
 * CLI (another process) gets this event, as `holder.audit` and `card.status` events do.
 */
export async function tradeEvent(ctx: LedgerCtx, trade: NewTrade, extra?: Record<string, unknown>, known?: KnownCard): Promise<void> {
  const row = known
    ? { ...known.card, notify_url: known.notifyUrl }
    : (await cardAndNotifyUrl.execute(ctx.tx, { cardId: trade.card_id })).rows[0];
  if (!row) throw new Error(`trade event: card ${trade.card_id} not found`);
  if (!row.notify_url) return;
  await notifyMerchant(ctx, {
    merchantId: trade.merchant_id,
    type: 'trade',
    subject: `card:${trade.card_id}`,
    url: row.notify_url,
    body: { cardId: trade.card_id, ...toTradeRecord(trade, maskedCardNo(row)), ...extra },
  });
}

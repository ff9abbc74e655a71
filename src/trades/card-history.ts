import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { withTrades } from '../db/trades-table.js';
import type { TradeRow } from './record.js';
import { TradeType } from './types.js';

/** Where a card's history continues: the last record shown, by business date and order of writing. */
export interface HistoryCursor {
  date: string;
  seq: number;
}

/**
 * A card's records that stand on their own, newest first, after `cursor` (null: the newest), at
 * most `limit`: every record but those that belong to a purchase (its payment, reversal and void
 * records, and its payment's refunds and void), and balance inquiries (no money). The card page's
 * activity (src/page/activity.ts) builds its lines from them.
 */
export function cardRootTrades(db: Kysely<DB>, cardId: string, cursor: HistoryCursor | null, limit: number): Promise<TradeRow[]> {
  let roots = withTrades(db)
    .selectFrom('trades')
    .selectAll()
    .where('card_id', '=', cardId)
    .where('trade_type', '<>', TradeType.balanceInquiry)
    .where((eb) => eb.or([eb('original_id', 'is', null), eb('trade_type', 'not in', [TradeType.authorization, TradeType.payment])]));
  if (cursor)
    roots = roots.where((eb) =>
      eb.or([eb('business_date', '<', cursor.date), eb.and([eb('business_date', '=', cursor.date), eb('seq', '<', cursor.seq)])]),
    );
  return roots.orderBy('business_date', 'desc').orderBy('seq', 'desc').limit(limit).execute();
}

/** The records that follow from these (an authorization's payments, reversals and void; a payment's refunds and void). */
export async function tradesFollowing(db: Kysely<DB>, originalIds: readonly string[]): Promise<TradeRow[]> {
  if (originalIds.length === 0) return [];
  return withTrades(db).selectFrom('trades').selectAll().where('original_id', 'in', originalIds).execute();
}

/** Any merchant's trade by id, where it is (its card and business date): the console's search. */
export function locateTrade(db: Kysely<DB>, tradeId: string): Promise<Pick<TradeRow, 'id' | 'card_id' | 'business_date'> | undefined> {
  return withTrades(db).selectFrom('trades').select(['id', 'card_id', 'business_date']).where('id', '=', tradeId).executeTakeFirst();
}

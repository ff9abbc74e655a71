import type { Kysely } from 'kysely';
import { tradesPartitioned } from '../db/partitions.js';
import type { DB } from '../db/schema.js';
import { withTrades } from '../db/trades-table.js';
import type { TradeRow } from './record.js';

/**
 * One merchant's trade by id, or undefined. On PostgreSQL `trades` is partitioned by month of its
 * business date, which an id does not tell: the id's row in `trade_ids` does, in the same statement,
 * so one partition is read (the others are pruned when the statement runs) instead of every month's.
 */
export function tradeById(db: Kysely<DB>, merchantId: string, tradeId: string): Promise<TradeRow | undefined> {
  let q = withTrades(db).selectFrom('trades').selectAll().where('id', '=', tradeId).where('merchant_id', '=', merchantId);
  if (tradesPartitioned(db as Kysely<unknown>)) {
    q = q.where('business_date', '=', (eb) =>
      eb.selectFrom('trade_ids').select('trade_ids.business_date').where('trade_ids.id', '=', tradeId),
    );
  }
  return q.executeTakeFirst();
}

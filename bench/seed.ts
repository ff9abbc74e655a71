import { sql } from 'kysely';
import type { Database } from '../src/db/index.js';
import { withTrades } from '../src/db/trades-table.js';

/** yyyy-MM-dd, `offset` days before `today` (a Date at UTC midnight). */
export function dayBefore(today: Date, offset: number): string {
  return new Date(today.getTime() - offset * 86_400_000).toISOString().slice(0, 10);
}

/**
 * Writes `count` trades for a card over `days` days (ending `today`) directly, then adds the matching
 * per-day counts: the same rows the verbs keep, at bulk speed (a million acknowledged one-by-one
 * writes would take a benchmark's whole budget).
 */
export async function seedTrades(
  database: Database,
  merchantId: string,
  cardId: string,
  count: number,
  days: number,
  tag: string,
  today: Date,
): Promise<void> {
  const batch = 5000;
  for (let from = 0; from < count; from += batch) {
    const n = Math.min(batch, count - from);
    const rows = Array.from({ length: n }, (_, k) => {
      const i = from + k;
      return {
        id: `trd_${tag}_${i}`,
        merchant_id: merchantId,
        card_id: cardId,
        trade_type: 150,
        trade_status: i % 10 === 9 ? 10 : i % 13 === 0 ? 3 : 1,
        currency: 'EUR',
        amount: 100 + (i % 900),
        fee: 0,
        currency_txn: 'EUR',
        txn_amount: 100 + (i % 900),
        business_date: dayBefore(today, i % days),
        auth_code: String(i % 1_000_000).padStart(6, '0'),
        remark: 'Bench merchant',
        original_id: null,
        held: 0,
        refunded: 0,
        created_at: Date.now(),
      };
    });
    await database.withTx(async (tx) => {
      // 17 columns × 5000 rows exceeds the host-parameter limits (SQLite 32766): 1000 rows a statement.
      for (let c = 0; c < rows.length; c += 1000)
        await withTrades(tx)
          .insertInto('trades')
          .values(rows.slice(c, c + 1000))
          .execute();
    });
  }
  // Added to what the card already has (upsert), so a card can be seeded in several rounds.
  await database.withTx((tx) =>
    sql`insert into trade_day_counts (card_id, business_date, trade_status, n)
        select card_id, business_date, trade_status, count(*) from trades where card_id = ${cardId} and id like ${`trd_${tag}_%`}
        group by card_id, business_date, trade_status
        on conflict (card_id, business_date, trade_status) do update set n = trade_day_counts.n + excluded.n`.execute(tx),
  );
}

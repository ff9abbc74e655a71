import type { Generated, Kysely } from 'kysely';
import type { DB } from './schema.js';

/**
 * The `trades` table, kept out of the general `DB` (src/db/schema.ts) so that only its home can
 * query it: `src/trades` (the reads: the list, a record by id, the card page's activity, the
 * ledger check's sums) and the ledger's writer (`src/ledger/trade-rows.ts`). On PostgreSQL it is
 * partitioned by month of its business date and its reads lean on covering indexes
 * (docs/architecture.md, "Partitions and the replica"): a query written elsewhere would not know
 * either. `npm run lint:imports` (rule `trades-table-home`) refuses this module anywhere else, and
 * without it `selectFrom('trades')` does not compile.
 */
export interface TradesTable {
  seq: Generated<number>;
  id: string;
  merchant_id: string;
  card_id: string;
  trade_type: number;
  trade_status: number;
  currency: string;
  amount: number;
  fee: number;
  currency_txn: string;
  txn_amount: number;
  business_date: string;
  auth_code: string;
  remark: string;
  original_id: string | null;
  held: number;
  refunded: number;
  created_at: number;
}

/** The database with `trades` in view. */
export type TradesDB = DB & { trades: TradesTable };

/** The same connection or transaction, typed to see `trades`: a view, no new object. */
export function withTrades(db: Kysely<DB>): Kysely<TradesDB> {
  return db as unknown as Kysely<TradesDB>;
}

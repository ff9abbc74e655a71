import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { withTrades } from '../db/trades-table.js';

/*
 * The card network link's reads that join its stored messages with their trades: the clearing
 * file's originals (src/network-link/clearing.ts) and the day's settlement (src/network/settlement.ts).
 */

/** The stored messages of a class with this STAN and field 7, each with its trade's state (none if it made no trade). */
export async function messagesWithTrades(db: Kysely<DB>, msgClass: string, stan: string, transmitted: string) {
  return withTrades(db)
    .selectFrom('network_messages as m')
    .leftJoin('trades as t', 't.id', 'm.trade_id')
    .select([
      'm.acquirer',
      'm.response_code',
      'm.request',
      'm.trade_id',
      't.held',
      't.amount',
      't.txn_amount',
      't.trade_status',
      't.trade_type',
    ])
    .where('m.msg_class', '=', msgClass as 'authorization' | 'financial' | 'reversal')
    .where('m.stan', '=', stan)
    .where('m.transmitted', '=', transmitted)
    .execute();
}

/** The approved financial and reversal messages whose trades are of this business day, with those trades. */
export async function settledMessages(db: Kysely<DB>, businessDate: string) {
  return withTrades(db)
    .selectFrom('network_messages as m')
    .innerJoin('trades as t', 't.id', 'm.trade_id')
    .select(['m.msg_class', 'm.request', 't.currency', 't.merchant_id', 't.amount', 't.trade_type', 't.trade_status'])
    .where('m.response_code', '=', '00')
    .where('m.msg_class', 'in', ['financial', 'reversal'])
    .where('t.business_date', '=', businessDate)
    .execute();
}

/**
 * The network messages behind a disputed transaction (the disputes' export, src/disputes/network-file.ts):
 * those that produced it or the authorization it cleared, oldest first. A sandbox transaction has none.
 */
export async function messagesOfTrade(db: Kysely<DB>, tradeId: string) {
  const t = await withTrades(db).selectFrom('trades').select(['id', 'original_id']).where('id', '=', tradeId).executeTakeFirst();
  if (!t) return [];
  const ids = t.original_id ? [t.id, t.original_id] : [t.id];
  return db
    .selectFrom('network_messages')
    .select(['trade_id', 'acquirer', 'mti', 'request'])
    .where('trade_id', 'in', ids)
    .orderBy('created_at')
    .execute();
}

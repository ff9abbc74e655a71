import { type Kysely, sql } from 'kysely';
import { Account } from '../codes/accounts.js';
import type { DB } from '../db/schema.js';
import { withTrades } from '../db/trades-table.js';
import { TradeStatus, TradeType } from './types.js';

/*
 * The card network link's reads that join its stored messages with their trades: the clearing
 * file's originals (src/card-network/clearing-file.ts) and the day's settlement (src/card-network/settlement.ts).
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

/**
 * What a whole's parts took so far, in the card's currency and the transaction's (minor units): a
 * payment's refunds (status 10), or an authorization's payments (its clearings). The link allocates
 * the next part from these (src/card-network/amounts.ts). Read inside the caller's transaction,
 * under the card's lock.
 */
export async function partsOf(db: Kysely<DB>, originalId: string, status: number): Promise<{ card: number; txn: number }> {
  const row = await withTrades(db)
    .selectFrom('trades')
    .select([sql<number>`coalesce(sum(amount), 0)`.as('card'), sql<number>`coalesce(sum(txn_amount), 0)`.as('txn')])
    .where('original_id', '=', originalId)
    .where('trade_type', '=', TradeType.payment)
    .where('trade_status', '=', status)
    .executeTakeFirst();
  return { card: Number(row?.card ?? 0), txn: Number(row?.txn ?? 0) };
}

/** The record a message produced (the clearing file's report says what it posted): its kind, amount and currency. */
export async function postedRecord(db: Kysely<DB>, tradeId: string) {
  return withTrades(db)
    .selectFrom('trades')
    .select(['trade_type', 'trade_status', 'amount', 'currency'])
    .where('id', '=', tradeId)
    .executeTakeFirst();
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
 * The card network's forced posts (decisions §12.7) stored since `since` (ms), per card currency:
 * how many messages, and what the trades they produced moved (minor units). The predicate is the
 * partial index's, word for word (migration 2026_11_25_0024), so only forced posts are read.
 */
export async function forcedPostsSince(db: Kysely<DB>, since: number) {
  const rows = await withTrades(db)
    .selectFrom('network_messages as m')
    .innerJoin('trades as t', 't.id', 'm.trade_id')
    .select(['t.currency', (eb) => eb.fn.countAll<number>().as('n'), (eb) => eb.fn.sum<number>('t.amount').as('amount')])
    .where(sql<boolean>`m.answer like '%"forced":true%'`)
    .where('m.created_at', '>=', since)
    .groupBy('t.currency')
    .execute();
  return rows
    .map((r) => ({ currency: r.currency, n: Number(r.n), amount: Number(r.amount ?? 0) }))
    .sort((a, b) => a.currency.localeCompare(b.currency));
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

/**
 * The card network message behind a transaction (tradeQuery's `network`): the one that produced it,
 * else its original's (a clearing's authorization), else, for an authorization the network cleared
 * at once (0200), the message of its payment. Null for the sandbox's transactions.
 */
export async function networkOrigin(
  db: Kysely<DB>,
  tradeId: string,
  originalId: string | null,
  /** For an authorization (an 0200's, whose message names its payment): its card and business day. */
  authorization: { cardId: string; businessDate: string } | null,
): Promise<{ mti: string; acquirer: string; stan: string; request: string } | null> {
  const first = (ids: string[]) =>
    ids.length === 0
      ? Promise.resolve(undefined)
      : db
          .selectFrom('network_messages')
          .select(['mti', 'acquirer', 'stan', 'request'])
          .where('trade_id', 'in', ids)
          .orderBy('created_at')
          .executeTakeFirst();
  const own = (await first([tradeId])) ?? (originalId ? await first([originalId]) : undefined);
  if (own || !authorization) return own ?? null;
  // An 0200 writes its authorization and its payment in one message, on one business day: the
  // payment is looked for in that day's partition only (by card and day), never across every month.
  const payments = await withTrades(db)
    .selectFrom('trades')
    .select('id')
    .where('card_id', '=', authorization.cardId)
    .where('business_date', '=', authorization.businessDate)
    .where('original_id', '=', tradeId)
    .where('trade_type', '=', TradeType.payment)
    .execute();
  return (await first(payments.map((p) => p.id))) ?? null;
}

/** What a statement line needs beyond the 4.1 record (issue 43): what a hold holds, what a record follows, whether it was forced. */
export interface RecordFacts {
  held: number;
  originalId: string | null;
  /** A forced post of the card network (decisions §12.7): its stored answer says so, or an operator posted its held advice. */
  forced: boolean;
  /** For an authorization: the payments that consumed its hold, oldest first (not a forced post that found nothing held). */
  clearedBy: string[];
  /** For a payment of an authorization: whether it took from the hold (a forced post against a hold already cleared took nothing). */
  tookHold: boolean;
  /** For a payment of an authorization: the payments that consumed that hold, oldest first. */
  holdClearedBy: string[];
}

/**
 * The facts of these records (the console's card page), by id: what a hold still holds, what a
 * record follows, whether it was forced (forcedAmong), an authorization's payments that consumed its
 * hold, and whether a payment took from its hold: a forced post took from it only when the journal
 * has its movement out of the card's held account (nothing held, no such posting, src/ledger/forced.ts).
 */
export async function recordFacts(db: Kysely<DB>, ids: readonly string[]): Promise<Map<string, RecordFacts>> {
  const out = new Map<string, RecordFacts>();
  if (ids.length === 0) return out;
  const rows = await withTrades(db)
    .selectFrom('trades')
    .select(['id', 'held', 'original_id', 'trade_type'])
    .where('id', 'in', ids)
    .execute();
  const holds = [
    ...new Set([...ids, ...rows.flatMap((r) => (r.trade_type === TradeType.payment && r.original_id ? [r.original_id] : []))]),
  ];
  const payments = await withTrades(db)
    .selectFrom('trades')
    .select(['id', 'original_id', 'card_id'])
    .where('original_id', 'in', holds)
    .where('trade_type', '=', TradeType.payment)
    .where('trade_status', 'in', [TradeStatus.success, TradeStatus.voided])
    .orderBy('seq')
    .execute();
  const forced = await forcedAmong(db, [...new Set([...ids, ...payments.map((p) => p.id)])]);
  const forcedPayments = payments.filter((p) => forced.has(p.id));
  const tookHeld = new Set(
    forcedPayments.length === 0
      ? []
      : (
          await db
            .selectFrom('ledger_postings')
            .select('trade_id')
            .where('account', 'in', [...new Set(forcedPayments.map((p) => Account.held(p.card_id)))])
            .where(
              'trade_id',
              'in',
              forcedPayments.map((p) => p.id),
            )
            .where('amount', '<', 0)
            .execute()
        ).map((r) => r.trade_id),
  );
  const took = (id: string) => !forced.has(id) || tookHeld.has(id);
  const consumers = new Map<string, string[]>();
  for (const p of payments) {
    if (!p.original_id || !took(p.id)) continue;
    consumers.set(p.original_id, [...(consumers.get(p.original_id) ?? []), p.id]);
  }
  for (const r of rows) {
    out.set(r.id, {
      held: Number(r.held),
      originalId: r.original_id,
      forced: forced.has(r.id),
      clearedBy: consumers.get(r.id) ?? [],
      tookHold: r.trade_type === TradeType.payment && r.original_id !== null && took(r.id),
      holdClearedBy: r.trade_type === TradeType.payment && r.original_id ? (consumers.get(r.original_id) ?? []) : [],
    });
  }
  return out;
}

/**
 * Which of these records are forced posts of the card network (decisions §12.7): their message's
 * stored answer says so (`"forced":true`, the partial index's predicate of migration
 * 2026_11_25_0024), or an operator posted their held advice (src/ledger/exceptions.ts).
 */
export async function forcedAmong(db: Kysely<DB>, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const [messages, posted] = await Promise.all([
    db
      .selectFrom('network_messages')
      .select('trade_id')
      .where('trade_id', 'in', ids)
      .where(sql<boolean>`answer like '%"forced":true%'`)
      .execute(),
    db.selectFrom('network_exceptions').select('trade_id').where('trade_id', 'in', ids).where('status', '=', 'posted').execute(),
  ]);
  return new Set([...messages, ...posted].flatMap((r) => (r.trade_id ? [r.trade_id] : [])));
}

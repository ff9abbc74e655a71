import { type Kysely, type RawBuilder, sql } from 'kysely';
import { tradesPartitioned } from '../db/partitions.js';
import type { DB } from '../db/schema.js';
import { withTrades } from '../db/trades-table.js';
import type { TradeRow } from './record.js';
import { TradeStatus, TradeType } from './types.js';

/*
 * What the ledger's check (src/ledger/check.ts, funding-check.ts), the spending limits' counters
 * (src/controls/spending.ts) and a card's status log read of the trades: sums and counts over them.
 */

/** How many trades there are. */
export async function countTrades(db: Kysely<DB>): Promise<number> {
  const row = await withTrades(db)
    .selectFrom('trades')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** What each card's trades say they hold, by card id. */
export async function heldByCard(db: Kysely<DB>): Promise<Map<string, number>> {
  const rows = await withTrades(db)
    .selectFrom('trades')
    .select(['card_id', sql<number>`sum(held)`.as('h')])
    .groupBy('card_id')
    .execute();
  return new Map(rows.map((r) => [r.card_id, Number(r.h)]));
}

/** How many trades each card has on each day in each status: what `trade_day_counts` must say. */
export async function tradesPerDay(
  db: Kysely<DB>,
): Promise<Array<{ card_id: string; business_date: string; trade_status: number; n: number }>> {
  const rows = await withTrades(db)
    .selectFrom('trades')
    .select(['card_id', 'business_date', 'trade_status', sql<number>`count(*)`.as('n')])
    .groupBy(['card_id', 'business_date', 'trade_status'])
    .execute();
  return rows.map((r) => ({ ...r, n: Number(r.n) }));
}

/**
 * PostgreSQL, where `trades` is partitioned by month: a trade whose id is not claimed in
 * `trade_ids` with its business date (`claimed` null), or a claim without its trade
 * (`business_date` null). Empty elsewhere.
 */
export async function unmatchedTradeIds(
  db: Kysely<DB>,
): Promise<Array<{ id: string; business_date: string | null; claimed: string | null }>> {
  if (!tradesPartitioned(db as Kysely<unknown>)) return [];
  const { rows } = await sql<{ id: string; business_date: string | null; claimed: string | null }>`
    select coalesce(t.id, i.id) as id, t.business_date, i.business_date as claimed
    from trades t full join trade_ids i on i.id = t.id and i.business_date = t.business_date
    where t.id is null or i.id is null
    order by 1`.execute(db);
  return rows;
}

/** The trades that spent from these cards: first authorizations, withdrawals and transfers out. */
export function spendingTrades(
  db: Kysely<DB>,
  cardIds: readonly string[],
): Promise<Array<Pick<TradeRow, 'id' | 'card_id' | 'seq' | 'trade_type'>>> {
  if (cardIds.length === 0) return Promise.resolve([]);
  return withTrades(db)
    .selectFrom('trades')
    .select(['id', 'card_id', 'seq', 'trade_type'])
    .where('card_id', 'in', cardIds)
    .where((eb) =>
      eb.or([
        eb.and([eb('trade_type', '=', TradeType.authorization), eb('original_id', 'is', null)]),
        eb('trade_type', '=', TradeType.withdrawal),
        eb('trade_type', '=', TradeType.transferOut),
      ]),
    )
    .execute();
}

/** The largest trade seq now (0 before the first trade), as a value of the statement it is put in. */
export function latestTradeSeq(): RawBuilder<number> {
  return sql<number>`(select coalesce(max(seq), 0) from trades)`;
}

/**
 * What a set of cards' approved authorizations (in one currency, from `since` on, optionally of a
 * set of MCCs) spent: a cash withdrawal (110) is final; an authorization takes what it still holds
 * plus what it cleared into payments that were not voided.
 */
export async function spentOnCards(
  db: Kysely<DB>,
  q: { cardIds: string[]; currency: string; since: number; mccs: string[] | null },
): Promise<number> {
  if (q.cardIds.length === 0) return 0;
  let query = withTrades(db)
    .selectFrom('authorizations as a')
    .innerJoin('trades as t', 't.id', 'a.id')
    .select(
      sql<string>`coalesce(sum(case when t.trade_type = ${TradeType.withdrawal} then t.amount else t.held + coalesce((select sum(p.amount) from trades p where p.original_id = t.id and p.trade_type = ${TradeType.payment} and p.trade_status = ${TradeStatus.success}), 0) end), 0)`.as(
        'spent',
      ),
    )
    .where('a.card_id', 'in', q.cardIds)
    .where('a.approved', '=', 1)
    .where('a.currency', '=', q.currency)
    .where('a.created_at', '>=', q.since);
  if (q.mccs) query = query.where('a.mcc', 'in', q.mccs);
  const row = await query.executeTakeFirst();
  return Number(row?.spent ?? 0);
}

/** Approved authorizations still holding money, made at or before `olderThan`, oldest first, with their MCC (hold expiry, src/ledger/expire.ts). */
export async function holdingAuthorizations(
  db: Kysely<DB>,
  olderThan: number,
  /** A page of them: after this one (created_at, id), at most `limit` (hold expiry's pass, src/ledger/expire.ts). */
  page?: { after: { created_at: number; id: string } | null; limit: number },
): Promise<Array<{ id: string; merchant_id: string; created_at: number; mcc: string | null }>> {
  let q = withTrades(db)
    .selectFrom('trades')
    .leftJoin('authorizations', 'authorizations.id', 'trades.id')
    .select(['trades.id', 'trades.merchant_id', 'trades.created_at', 'authorizations.mcc'])
    .where('trades.held', '>', 0)
    .where('trades.trade_type', '=', TradeType.authorization)
    .where('trades.trade_status', '=', TradeStatus.success)
    .where('trades.created_at', '<=', olderThan)
    .orderBy('trades.created_at')
    .orderBy('trades.id');
  const after = page?.after;
  if (after)
    q = q.where((eb) =>
      eb.or([
        eb('trades.created_at', '>', after.created_at),
        eb.and([eb('trades.created_at', '=', after.created_at), eb('trades.id', '>', after.id)]),
      ]),
    );
  const rows = await (page ? q.limit(page.limit) : q).execute();
  return rows.map((r) => ({ ...r, created_at: Number(r.created_at) }));
}

/** An authorization's successful payments (its clearings), oldest first (the link's 0420 after a clearing, src/card-network/reverse.ts). */
export async function paymentsOf(
  db: Kysely<DB>,
  merchantId: string,
  authorizationId: string,
): Promise<Array<{ id: string; amount: number; refunded: number; txn_amount: number }>> {
  return withTrades(db)
    .selectFrom('trades')
    .select(['id', 'amount', 'refunded', 'txn_amount'])
    .where('merchant_id', '=', merchantId)
    .where('original_id', '=', authorizationId)
    .where('trade_type', '=', TradeType.payment)
    .where('trade_status', '=', TradeStatus.success)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** A trade's amounts and code, by id (it must exist). */
export async function tradeAmounts(
  db: Kysely<DB>,
  id: string,
): Promise<{ id: string; amount: number; txn_amount: number; auth_code: string }> {
  return withTrades(db)
    .selectFrom('trades')
    .select(['id', 'amount', 'txn_amount', 'auth_code'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

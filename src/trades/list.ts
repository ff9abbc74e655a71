import { type Kysely, PostgresAdapter, type SelectQueryBuilder, sql } from 'kysely';
import type { Static } from 'typebox';
import type { CardRow } from '../cards/model.js';
import { maskedCardNo } from '../cards/model.js';
import type { PanVault } from '../cards/vault.js';
import { parseDate } from '../dates.js';
import type { DB } from '../db/schema.js';
import { DomainError, invalid } from '../errors.js';
import { isCardCurrency } from '../money/currency.js';
import { toTradeRecord } from './record.js';
import type { TradePageSchema } from './schemas.js';
import { DEFAULT_LIST_STATUSES, TRADE_STATUSES, type TradeStatusValue } from './types.js';

export interface ListTradesInput {
  cardId?: string | undefined;
  cardNo?: string | undefined;
  currency?: string | undefined;
  beginDate: string;
  endDate: string;
  start: number;
  maxSize?: number | undefined;
  tradeStatusList?: number[] | undefined;
}

export type TradePage = Static<typeof TradePageSchema>;

export const MAX_RANGE_DAYS = 30;
export const DEFAULT_PAGE = 10;

async function resolveCard(db: Kysely<DB>, vault: PanVault, merchantId: string, input: ListTradesInput): Promise<CardRow> {
  if (input.cardId === undefined && input.cardNo === undefined) throw invalid('cardId', 'cardId or cardNo is required');
  let byId: CardRow | undefined;
  if (input.cardId !== undefined) {
    byId = await db.selectFrom('cards').selectAll().where('id', '=', input.cardId).where('merchant_id', '=', merchantId).executeTakeFirst();
    if (!byId) throw new DomainError('cardNotFound');
  }
  if (input.cardNo === undefined) return byId as CardRow;
  const hash = await vault.hash(db, input.cardNo);
  const byNo = await db
    .selectFrom('cards')
    .selectAll()
    .where('pan_hash', '=', hash)
    .where('merchant_id', '=', merchantId)
    .executeTakeFirst();
  if (!byNo) throw new DomainError('cardNotFound');
  if (byId && byId.id !== byNo.id) throw invalid('cardNo', 'names another card than cardId');
  return byNo;
}

function daysBetween(a: string, b: string): number {
  return Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / 86_400_000);
}

/**
 * The authorized-transaction list (interface 4.1) at a cost that does not grow with the card's
 * history: `total` is summed from the per-day, per-status counts of the range (at most 31 days × 6
 * statuses), those counts also locate the day holding record number `start`, and only the offset
 * inside that one day is walked, from whichever end of the day is nearer, on the covering index
 * (card, day, seq, status). Newest first.
 */
export async function listTrades({
  db,
  reads = db,
  vault,
  merchantId,
  input,
}: {
  /** Where the card is read: the primary (a card issued a moment ago is found). */
  db: Kysely<DB>;
  /** Where the day counts and records are read: the replica when there is one (src/db/replica.ts). */
  reads?: Kysely<DB>;
  vault: PanVault;
  merchantId: string;
  input: ListTradesInput;
}): Promise<TradePage> {
  const begin = parseDate(input.beginDate);
  if (!begin) throw invalid('beginDate', 'must be a real date written yyyy-MM-dd');
  const end = parseDate(input.endDate);
  if (!end) throw invalid('endDate', 'must be a real date written yyyy-MM-dd');
  if (input.endDate < input.beginDate) throw invalid('endDate', 'must not be before beginDate');
  if (daysBetween(input.beginDate, input.endDate) > MAX_RANGE_DAYS)
    throw invalid('endDate', `must be at most ${MAX_RANGE_DAYS} days after beginDate`);
  if (input.currency !== undefined && !isCardCurrency(input.currency))
    throw new DomainError('unsupportedCurrency', 'currency: must be EUR or USDT');
  const statuses = [...new Set(input.tradeStatusList ?? DEFAULT_LIST_STATUSES)];
  for (const s of statuses) {
    if (!TRADE_STATUSES.includes(s as TradeStatusValue)) throw invalid('tradeStatusList', `must contain only ${TRADE_STATUSES.join(', ')}`);
  }
  const maxSize = input.maxSize ?? DEFAULT_PAGE;

  // One round trip for the card and its window's day counts on PostgreSQL, when both come from one
  // database (no replica: the card is always read on the primary, src/db/replica.ts) and the card is
  // named by id. Not on SQLite: a statement there is a call in the process, and the join repeats the
  // card's row for every day (measured: the list 13 % slower than with two statements).
  const together =
    db.getExecutor().adapter instanceof PostgresAdapter && reads === db && input.cardNo === undefined && input.cardId !== undefined;
  const { card, days } = together
    ? await cardWithDays(db, merchantId, input.cardId as string, input, statuses)
    : await cardThenDays(db, reads, vault, merchantId, input, statuses);
  // A card holds one currency: a filter on another one selects nothing.
  if (input.currency !== undefined && input.currency !== card.currency) return { total: 0, tradeList: [] };
  const total = days.reduce((sum, d) => sum + Number(d.n), 0);
  if (input.start >= total) return { total, tradeList: [] };

  // The day holding record number `start`, how many records come before that day, and how many it has.
  let before = 0;
  let seekDay = input.endDate;
  let inDay = 0;
  for (const d of days) {
    const n = Number(d.n);
    if (before + n > input.start) {
      seekDay = d.business_date;
      inDay = n;
      break;
    }
    before += n;
  }
  const offset = input.start - before;
  const base = () => reads.selectFrom('trades').select('seq').where('card_id', '=', card.id).where('trade_status', 'in', statuses);
  const cardNo = maskedCardNo(card);
  const page = (seqs: Parameters<typeof pageRows>[2]) => pageRows(reads, input, seqs);
  let seqs: number[];
  if (offset <= inDay / 2) {
    // Near the day's newest end: walk down from there (at most half the day), into older days if
    // needed; the walk on the covering index and the rows it finds in one statement.
    const walk = base()
      .where('business_date', '>=', input.beginDate)
      .where('business_date', '<=', seekDay)
      .orderBy('business_date', 'desc')
      .orderBy('seq', 'desc')
      .limit(maxSize)
      .offset(offset);
    // PostgreSQL: the walk as the rows' subquery, one round trip. SQLite: the keys, then the rows by
    // them (a statement there is a call in the process; the subquery's plan is the slower one).
    if (db.getExecutor().adapter instanceof PostgresAdapter) {
      return { total, tradeList: (await page(walk)).map((r) => toTradeRecord(r, cardNo)) };
    }
    seqs = (await walk.execute()).map((r) => r.seq);
  } else {
    // Near the day's oldest end: walk up from there instead (again at most half the day)...
    const take = Math.min(maxSize, inDay - offset);
    const tail = await base()
      .where('business_date', '=', seekDay)
      .orderBy('seq', 'asc')
      .limit(take)
      .offset(inDay - offset - take)
      .execute();
    seqs = tail.map((r) => r.seq).reverse();
    if (take < maxSize) {
      // ...and continue with the newest records of the older days, from their start.
      const older = await base()
        .where('business_date', '>=', input.beginDate)
        .where('business_date', '<', seekDay)
        .orderBy('business_date', 'desc')
        .orderBy('seq', 'desc')
        .limit(maxSize - take)
        .execute();
      seqs.push(...older.map((r) => r.seq));
    }
  }
  if (seqs.length === 0) return { total, tradeList: [] };
  return { total, tradeList: (await page(seqs)).map((r) => toTradeRecord(r, cardNo)) };
}

type DayCount = { business_date: string; n: number };

/** The card, then its window's day counts (on the replica when there is one): two statements. */
async function cardThenDays(
  db: Kysely<DB>,
  reads: Kysely<DB>,
  vault: PanVault,
  merchantId: string,
  input: ListTradesInput,
  statuses: number[],
): Promise<{ card: CardRow; days: DayCount[] }> {
  const card = await resolveCard(db, vault, merchantId, input);
  const days = await reads
    .selectFrom('trade_day_counts')
    .select(['business_date', sql<number>`sum(n)`.as('n')])
    .where('card_id', '=', card.id)
    .where('business_date', '>=', input.beginDate)
    .where('business_date', '<=', input.endDate)
    .where('trade_status', 'in', statuses)
    .groupBy('business_date')
    .orderBy('business_date', 'desc')
    .execute();
  return { card, days };
}

/**
 * The card and its window's day counts in one statement: the card's row joined with the counts,
 * grouped by day (one row per day with records, or one row with no day). The card's columns depend
 * on its key, so PostgreSQL groups by `c.id` alone.
 */
async function cardWithDays(
  db: Kysely<DB>,
  merchantId: string,
  cardId: string,
  input: ListTradesInput,
  statuses: number[],
): Promise<{ card: CardRow; days: DayCount[] }> {
  const rows = await db
    .selectFrom('cards as c')
    .leftJoin('trade_day_counts as d', (join) =>
      join
        .onRef('d.card_id', '=', 'c.id')
        .on('d.business_date', '>=', input.beginDate)
        .on('d.business_date', '<=', input.endDate)
        .on('d.trade_status', 'in', statuses),
    )
    .selectAll('c')
    .select(['d.business_date as list_day', sql<number | null>`sum(d.n)`.as('list_n')])
    .where('c.id', '=', cardId)
    .where('c.merchant_id', '=', merchantId)
    .groupBy(['c.id', 'd.business_date'])
    .orderBy('d.business_date', 'desc')
    .execute();
  const first = rows[0];
  if (!first) throw new DomainError('cardNotFound');
  const { list_day: _day, list_n: _n, ...card } = first;
  const days = rows.flatMap((r) => (r.list_day === null ? [] : [{ business_date: r.list_day, n: Number(r.list_n ?? 0) }]));
  return { card: card as CardRow, days };
}

/**
 * A page's rows, in the page's order: by their keys (a list of them, or the walk that finds them,
 * as a subquery: then the walk and the rows are one statement), within the window's partitions
 * only (PostgreSQL: `seq` alone would be looked up in every month's).
 */
function pageRows(reads: Kysely<DB>, input: ListTradesInput, seqs: number[] | SelectQueryBuilder<DB, 'trades', { seq: number }>) {
  return reads
    .selectFrom('trades')
    .selectAll()
    .where('seq', 'in', seqs)
    .where('business_date', '>=', input.beginDate)
    .where('business_date', '<=', input.endDate)
    .orderBy('business_date', 'desc')
    .orderBy('seq', 'desc')
    .execute();
}

import { CompiledQuery, type Kysely, PostgresAdapter, type SelectQueryBuilder, sql } from 'kysely';
import type { Static } from 'typebox';
import type { CardRow } from '../cards/model.js';
import { maskedCardNo } from '../cards/model.js';
import { parseDate } from '../dates.js';
import type { Database } from '../db/index.js';
import { precompiled, preparedText, type Slots } from '../db/prepared.js';
import type { DB } from '../db/schema.js';
import { type TradesDB, withTrades } from '../db/trades-table.js';
import { DomainError, invalid } from '../errors.js';
import { READ_NONCE_SQL, type RequestKey, readNonceParameters, usedNonce } from '../idempotency/keys.js';
import { type ReadNonceStore, spendReadNonce } from '../idempotency/read-nonces.js';
import { PgNonces, STORE_NONCE_CTES, STORE_NONCE_RESULT, storeNonceParameters } from '../idempotency/read-nonces-pg.js';
import { isCardCurrency } from '../money/currency.js';
import type { PanVault } from '../vault/pan-vault.js';
import { RECORD_COLUMNS, type TradeRow, toTradeRecord } from './record.js';
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

/** A merchant's card by id. Built once (src/db/prepared.ts): the list's first read on SQLite. */
const cardById = precompiled((db, slot: Slots<{ cardId: string; merchantId: string }>) =>
  db.selectFrom('cards').selectAll().where('id', '=', slot('cardId')).where('merchant_id', '=', slot('merchantId')),
);

async function resolveCard(db: Kysely<DB>, vault: PanVault, merchantId: string, input: ListTradesInput): Promise<CardRow> {
  if (input.cardId === undefined && input.cardNo === undefined) throw invalid('cardId', 'cardId or cardNo is required');
  let byId: CardRow | undefined;
  if (input.cardId !== undefined) {
    [byId] = (await cardById.execute(db, { cardId: input.cardId, merchantId })).rows;
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

/** The list's window and filters, checked before any statement: its statuses (no repeats) and page size. */
export function checkListInput(input: ListTradesInput): { statuses: number[]; maxSize: number } {
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
  return { statuses, maxSize };
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
  const { statuses, maxSize } = checkListInput(input);

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
  const base = () =>
    withTrades(reads).selectFrom('trades').select('seq').where('card_id', '=', card.id).where('trade_status', 'in', statuses);
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

/**
 * The list on PostgreSQL in one round trip, the read's nonce included: one statement spends the
 * nonce (a data-modifying `with`), reads the card, sums its window's day counts, finds the day
 * holding record number `start` (a running sum over the days) and walks from there on the covering
 * index to the page's rows, returned as JSON. The walk inside the day is from its newest end (the
 * many-statement form walks from the nearer end: it is kept for the console and the replica).
 * For a card named by id, with no replica in use (the card must come from the primary).
 * Checked input only; a request that fails the check spends its nonce first, as every read does.
 * The nonce is a durable key, or, where a timestamp is required, goes to the read-nonce store
 * (src/idempotency/read-nonces-pg.ts): one statement either way.
 */
export async function listTradesSpendingNonce({
  database,
  nonces,
  merchantId,
  nonce,
  now,
  input,
}: {
  /** The primary (PostgreSQL). */
  database: Database;
  /** The service's read-nonce store (null: a durable key). */
  nonces: ReadNonceStore | null;
  merchantId: string;
  nonce: RequestKey;
  now: number;
  input: ListTradesInput & { cardId: string };
}): Promise<TradePage> {
  const { db } = database;
  let checked: ReturnType<typeof checkListInput>;
  try {
    checked = checkListInput(input);
  } catch (err) {
    // As every read: its randomStr is spent first (1008 if it was), then the check's answer.
    await spendReadNonce(database, nonces, nonce, now);
    throw err;
  }
  const { statuses, maxSize } = checked;
  const timestamp = nonce.timestamp;
  const store = nonces instanceof PgNonces && timestamp !== undefined ? nonces : null;
  type Listed = { fresh: number; watermark: number | null; card: CardListed | null; total: number; page: ListedRow[] };
  const list = async () =>
    (
      await db.executeQuery<Listed>(
        CompiledQuery.raw(store ? LIST_STORED : LIST_DURABLE, [
          ...(store ? storeNonceParameters(nonce, timestamp as number, now) : readNonceParameters(nonce, now)),
          input.cardId,
          input.beginDate,
          input.endDate,
          statuses,
          // Past every total a card can reach, and inside PostgreSQL's bigint: a start beyond it (1e20 is
          // an integer too) is the same empty page, not an overflow that would fail the statement, its
          // nonce with it.
          Math.min(input.start, Number.MAX_SAFE_INTEGER),
          maxSize,
        ]),
      )
    ).rows[0];
  const row = store ? await store.spending(list, timestamp as number, now) : await list();
  if (!row || row.fresh === 0) throw usedNonce();
  if (!row.card) throw new DomainError('cardNotFound');
  // A card holds one currency: a filter on another one selects nothing.
  if (input.currency !== undefined && input.currency !== row.card.currency) return { total: 0, tradeList: [] };
  const cardNo = maskedCardNo(row.card);
  return { total: Number(row.total), tradeList: row.page.map((r) => toTradeRecord(r, cardNo)) };
}

/** What the list reads of a record's row. */
type ListedRow = Pick<TradeRow, 'seq' | (typeof RECORD_COLUMNS)[number]>;

/** What the list needs of its card. */
type CardListed = Pick<CardRow, 'id' | 'currency' | 'pan_first6' | 'pan_last4' | 'pan_length'>;

/**
 * listTradesSpendingNonce's statement: $1–$4 the nonce (READ_NONCE_SQL, or the read-nonce store's
 * STORE_NONCE_CTES), $5 the card, $6 and $7 the window, $8 the statuses, $9 start, $10 the page
 * size. `seek` is the day holding record number `start` and how many records the newer days hold
 * (none when start is past the total: no page). The rows are read within the window's partitions only.
 */
const listInOneStatement = (nonce: string, spent: string) =>
  preparedText(`with ${nonce},
card as (
  select id, currency, pan_first6, pan_last4, pan_length from cards where id = $5 and merchant_id = $1
),
days as (
  select business_date, sum(n)::int8 as n from trade_day_counts
  where card_id = (select id from card) and business_date >= $6 and business_date <= $7 and trade_status = any($8::int[])
  group by business_date
),
seek as (
  select business_date, before from (
    select business_date, n,
      coalesce(sum(n) over (order by business_date desc rows between unbounded preceding and 1 preceding), 0)::int8 as before
    from days
  ) running
  where before <= $9 and before + n > $9
),
page as (
  select ${['seq', ...RECORD_COLUMNS].map((c) => `t.${c}`).join(', ')} from trades t
  where t.business_date >= $6 and t.business_date <= $7 and t.seq in (
    select seq from trades
    where card_id = (select id from card) and trade_status = any($8::int[])
      and business_date >= $6 and business_date <= $7 and business_date <= (select business_date from seek)
    order by business_date desc, seq desc
    limit $10 offset ($9 - (select before from seek))
  )
)
select
  ${spent},
  (select row_to_json(card) from card) as card,
  (select coalesce(sum(n), 0) from days)::int8 as total,
  (select coalesce(json_agg(page order by business_date desc, seq desc), '[]'::json) from page) as page`);
/** The nonce a durable key (no timestamp required). */
const LIST_DURABLE = listInOneStatement(`nonce as (${READ_NONCE_SQL})`, '(select count(*) from nonce)::int as fresh');
/** The nonce in the read-nonce store. */
const LIST_STORED = listInOneStatement(STORE_NONCE_CTES, STORE_NONCE_RESULT);

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
 * only (PostgreSQL: `seq` alone would be looked up in every month's). Only the record's columns.
 * By a list of keys, the rows are put in its order here rather than sorted by the database (SQLite
 * would sort them through a temporary tree).
 */
async function pageRows(
  reads: Kysely<DB>,
  input: ListTradesInput,
  seqs: number[] | SelectQueryBuilder<TradesDB, 'trades', { seq: number }>,
) {
  const rows = withTrades(reads)
    .selectFrom('trades')
    .select(['seq', ...RECORD_COLUMNS])
    .where('seq', 'in', seqs)
    .where('business_date', '>=', input.beginDate)
    .where('business_date', '<=', input.endDate);
  if (!Array.isArray(seqs)) return rows.orderBy('business_date', 'desc').orderBy('seq', 'desc').execute();
  const bySeq = new Map((await rows.execute()).map((r) => [r.seq, r]));
  return seqs.flatMap((seq) => {
    const r = bySeq.get(seq);
    return r ? [r] : [];
  });
}

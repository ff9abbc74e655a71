import { type Kysely, PostgresAdapter, sql } from 'kysely';
import type { Database } from './index.js';
import type { DB } from './schema.js';

/** Months after the current one whose partitions of `trades` exist ahead of their first record. */
export const MONTHS_AHEAD = 3;
/** Months the default partition holds that one pass moves into partitions of their own (the rest: the next pass). */
const ADOPTED_PER_PASS = 24;

/**
 * Whether `trades` is partitioned by month (PostgreSQL, migration 0014), with `trade_ids` beside it:
 * a lookup by id then names the partition to read. SQLite keeps one table.
 */
export function tradesPartitioned(db: Kysely<unknown>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** `yyyy-MM` of a moment (UTC), as business dates are written. */
export function monthOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

/** `yyyy-MM` of the month `by` months after `month`. */
export function addMonths(month: string, by: number): string {
  const [y, m] = month.split('-').map(Number) as [number, number];
  return new Date(Date.UTC(y, m - 1 + by, 1)).toISOString().slice(0, 7);
}

/** The partition of `trades` holding one month: `trades_2026_11`. */
export function partitionName(month: string): string {
  return `trades_${month.replace('-', '_')}`;
}

/**
 * Makes sure the months around `now` have their partition of `trades` (the one before, this one and
 * MONTHS_AHEAD after it), and gives the months found in the default partition one each, moving their
 * rows there. Run at start-up and every hour (src/jobs/periodic.ts); a no-op on SQLite. Returns the
 * months created.
 *
 * A record never waits for this: a month without its partition goes to `trades_default` and is
 * listed from there, so a clock far ahead (or a sandbox record dated years back) is stored as any
 * other. One pass at a time across instances (an advisory lock; a pass that finds another under way
 * returns, leaving the work to it). A pass that finds every month there takes no lock at all. One
 * that makes a month makes its table on its own and attaches it (ATTACH lets reads and inserts of
 * `trades` go on, unlike CREATE TABLE … PARTITION OF), and for those few milliseconds stops writes to
 * `cards` (the new partition's foreign key locks it) and to the default partition (while its rows of
 * that month move). A table lock not had within 1 s gives up, changing nothing (writers queue behind
 * a waiting lock, so the wait is kept short); the next pass tries again.
 */
export async function ensureTradePartitions(database: Database, now: number): Promise<string[]> {
  if (database.dialect !== 'postgres') return [];
  const current = monthOf(now);
  const wanted = Array.from({ length: MONTHS_AHEAD + 2 }, (_, i) => addMonths(current, i - 1));
  const missing = async (db: Kysely<DB>) => {
    const { rows } = await sql<{ month: string; found: boolean }>`
      select m as month, to_regclass('trades_' || replace(m, '-', '_')) is not null as found from (
        select unnest(array[${sql.join(wanted)}]::text[]) as m
        union
        (select distinct substr(business_date, 1, 7) from trades_default limit ${ADOPTED_PER_PASS})
      ) months`.execute(db);
    return rows
      .filter((r) => !r.found && /^\d{4}-\d{2}$/.test(r.month))
      .map((r) => r.month)
      .sort();
  };
  // The usual pass finds every month there: one read, no lock.
  if ((await missing(database.db)).length === 0) return [];
  return database.withTx(async (tx) => {
    // One pass at a time across instances; one that finds another under way leaves the work to it.
    const { rows } = await sql<{ mine: boolean }>`
      select pg_try_advisory_xact_lock(hashtext('cardprogram_trade_partitions:' || current_schema())) as mine`.execute(tx);
    if (!rows[0]?.mine) return [];
    await sql`set local lock_timeout = '1s'`.execute(tx);
    const months = await missing(tx);
    if (months.length === 0) return [];
    // Attaching adds the partition's foreign key to `cards`, which locks `cards` against writes
    // (SHARE ROW EXCLUSIVE) until the commit. Taken first, before the default partition's lock: a
    // money transaction that inserted into the default partition holds `cards` (it moved a balance),
    // so this waits for it to commit rather than deadlock with it, and the next ones wait here.
    await sql`lock table cards in share row exclusive mode`.execute(tx);
    // Nothing is written into the default partition until this commits: a row of a month being
    // attached cannot arrive there between its move and the attach.
    await sql`lock table trades_default in share row exclusive mode`.execute(tx);
    for (const month of months) {
      const name = sql.id(partitionName(month));
      const from = sql.lit(`${month}-01`);
      const to = sql.lit(`${addMonths(month, 1)}-01`);
      await sql`create table ${name} (like trades including defaults including constraints)`.execute(tx);
      await sql`with moved as (
          delete from trades_default where business_date >= ${from} and business_date < ${to} returning *
        ) insert into ${name} select * from moved`.execute(tx);
      // Attaching creates its indexes, its foreign key and its triggers (those of `trades`).
      await sql`alter table trades attach partition ${name} for values from (${from}) to (${to})`.execute(tx);
    }
    return months;
  });
}

import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
// It creates partitions itself rather than through src/db/partitions.ts, which may change later.

/** `yyyy-MM` of the month `by` months after `month`. */
function addMonths(month: string, by: number): string {
  const [y, m] = month.split('-').map(Number) as [number, number];
  const d = new Date(Date.UTC(y, m - 1 + by, 1));
  return d.toISOString().slice(0, 7);
}

/**
 * PostgreSQL: `trades` becomes a table partitioned by month of `business_date` (issue 19), the key
 * the 4.1 list and the card page filter on, so they read only the partitions of their window. Every
 * row is copied over in this migration's transaction. SQLite keeps its one table.
 *
 * What partitioning changes, and how each is kept:
 * - A unique constraint of a partitioned table must contain the partition key: the primary key is
 *   (seq, business_date) and the id is unique per (id, business_date). seq stays unique as before:
 *   it is drawn from the one sequence, which moves to the new table.
 * - The id stays unique across all months through `trade_ids` (id primary key, with its business
 *   date), filled by a trigger on every insert into `trades`: a second row with a known id fails
 *   (23505) whatever its month. It also tells a lookup by id which partition to read.
 * - A row's id and business date never change (a trigger refuses it), so its `trade_ids` row stays right.
 * - Nothing references `trades` by a foreign key (postings, authorizations and requests hold its id
 *   as a value); its own foreign key to `cards` is kept.
 * - `trades_default` takes a row whose month has no partition yet: a row is never refused for that.
 *   The service creates the coming months' partitions at start-up and every hour, and adopts the
 *   months found in the default (src/db/partitions.ts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;

  const serial = await sql<{ name: string }>`select pg_get_serial_sequence('trades', 'seq') as name`.execute(db);
  const sequence = serial.rows[0]?.name;
  if (!sequence) throw new Error('trades.seq has no sequence');

  await sql`alter table trades rename to trades_unpartitioned`.execute(db);
  // Its constraints and indexes give up their names to the new table's.
  await sql`alter table trades_unpartitioned
    drop constraint trades_pkey,
    drop constraint trades_id_key,
    drop constraint trades_card_id_fkey,
    drop constraint trades_held_range,
    drop constraint trades_refunded_range`.execute(db);
  await sql`drop index trades_card_day_seq`.execute(db);
  await sql`drop index trades_original`.execute(db);

  // The same columns and defaults (seq's sequence), and whatever else the table has by then besides
  // what was dropped above: a column or index that another migration before this one added is kept.
  await sql`create table trades (like trades_unpartitioned including all) partition by range (business_date)`.execute(db);
  await sql`alter table trades
    add constraint trades_pkey primary key (seq, business_date),
    add constraint trades_id_day unique (id, business_date),
    add constraint trades_card_id_fkey foreign key (card_id) references cards (id),
    add constraint trades_held_range check (held >= 0 and (held = 0 or held <= amount)),
    add constraint trades_refunded_range check (refunded >= 0 and (refunded = 0 or refunded <= amount))`.execute(db);
  await sql`alter sequence ${sql.raw(sequence)} owned by trades.seq`.execute(db);
  // As before: the list's covering index (card, day, seq, status), and a record's settlements.
  await sql`create index trades_card_day_seq on trades (card_id, business_date, seq, trade_status)`.execute(db);
  await sql`create index trades_original on trades (original_id)`.execute(db);
  await sql`create table trades_default partition of trades default`.execute(db);

  // A partition for every month that holds records, and for the month before this one, this one
  // and the three after it (the window the service keeps at start-up).
  const held = await sql<{ month: string }>`
    select distinct substr(business_date, 1, 7) as month from trades_unpartitioned`.execute(db);
  const thisMonth = new Date().toISOString().slice(0, 7);
  const months = new Set(held.rows.map((r) => r.month).filter((m) => /^\d{4}-\d{2}$/.test(m)));
  for (let i = -1; i <= 3; i++) months.add(addMonths(thisMonth, i));
  for (const month of [...months].sort()) {
    const name = `trades_${month.replace('-', '_')}`;
    await sql`create table ${sql.id(name)} partition of trades
      for values from (${sql.lit(`${month}-01`)}) to (${sql.lit(`${addMonths(month, 1)}-01`)})`.execute(db);
  }

  await sql`insert into trades select * from trades_unpartitioned order by seq`.execute(db);

  await sql`create table trade_ids (
    id varchar(40) primary key,
    business_date varchar(10) not null
  )`.execute(db);
  await sql`insert into trade_ids (id, business_date) select id, business_date from trades`.execute(db);
  // The id's claim, in the statement that inserts the trade: no round trip more, and no writer
  // (a verb, the benchmark's seeding, an operator's SQL) can forget it.
  await sql`create function trades_claim_id() returns trigger language plpgsql as $$
    begin
      insert into trade_ids (id, business_date) values (new.id, new.business_date);
      return null;
    end $$`.execute(db);
  await sql`create trigger trades_claim_id after insert on trades
    for each row execute function trades_claim_id()`.execute(db);
  await sql`create function trades_fixed_id() returns trigger language plpgsql as $$
    begin
      raise exception 'a trade''s id and business date never change';
    end $$`.execute(db);
  await sql`create trigger trades_fixed_id before update of id, business_date on trades
    for each row when (old.id is distinct from new.id or old.business_date is distinct from new.business_date)
    execute function trades_fixed_id()`.execute(db);

  await sql`drop table trades_unpartitioned`.execute(db);
}

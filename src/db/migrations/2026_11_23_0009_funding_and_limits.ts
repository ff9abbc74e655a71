import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
export async function up(db: Kysely<any>): Promise<void> {
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;

  // Each merchant's funding account per currency: the cached balance of the journal account
  // `merchant:<id>:funding`, moved in the same transaction as its postings (like a card's), so a
  // top-up's check is one conditional update. The CHECK is the last guard: never below zero.
  await db.schema
    .createTable('merchant_balances')
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull().references('merchants.id'))
    .addColumn('currency', 'varchar(8)', (c) => c.notNull())
    .addColumn('available', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('merchant_balances_pk', ['merchant_id', 'currency'])
    .addCheckConstraint('merchant_balances_available_nonneg', sql`available >= 0`)
    .execute();

  // Who credited (or debited) a merchant's funding account, when, and why: the operator's record
  // beside the journal entry it made.
  await db.schema
    .createTable('funding_credits')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull().references('merchants.id'))
    .addColumn('currency', 'varchar(8)', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('actor', 'varchar(64)', (c) => c.notNull())
    .addColumn('reference', 'text', (c) => c.notNull())
    .addColumn('entry_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('funding_credits_merchant').on('funding_credits').columns(['merchant_id', 'created_at']).execute();

  // Every change of a card's status, in order. `after_seq` is the largest trades.seq when it was
  // written, under the card's row lock: a trade of that card with a larger seq came after it. This
  // is what lets `ledger check` prove that no money was spent on a frozen card.
  await db.schema
    .createTable('card_status_events')
    .addColumn('id', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('card_id', 'varchar(40)', (c) => c.notNull().references('cards.id'))
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('after_seq', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('card_status_events_card').on('card_status_events').columns(['card_id', 'id']).execute();

  // Constraints on the card and trade rows, as a last guard behind the row locks and conditional
  // updates (docs/architecture.md, Concurrency). PostgreSQL only: SQLite cannot add a CHECK to an
  // existing table without rebuilding it, and runs one writer at a time.
  if (pg) {
    await sql`alter table cards add constraint cards_available_nonneg check (available_balance >= 0)`.execute(db);
    await sql`alter table cards add constraint cards_balance_cap check (ledger_balance <= 100000000000000)`.execute(db);
    await sql`alter table trades add constraint trades_held_range check (held >= 0 and (held = 0 or held <= amount))`.execute(db);
    await sql`alter table trades add constraint trades_refunded_range check (refunded >= 0 and (refunded = 0 or refunded <= amount))`.execute(
      db,
    );
  }
}

import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
// Issue 28 (decisions §12.7, §12.9): forced posts may take a card beyond its balance. The available balance
// stays at or above zero (its CHECK on PostgreSQL, the conditional update on both databases); what a
// forced post takes beyond it is the card's debt, its own column and journal account
// (`card:<id>:debt`, which sums to minus the debt). Money that comes to the card (a top-up, a
// release, a refund) pays the debt first, so a card with a debt has nothing available.
export async function up(db: Kysely<any>): Promise<void> {
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema
    .alterTable('cards')
    .addColumn('debt', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  if (pg) {
    await sql`alter table cards add constraint cards_debt_nonneg check (debt >= 0)`.execute(db);
    await sql`alter table cards add constraint cards_debt_only_when_empty check (debt = 0 or available_balance = 0)`.execute(db);
  }
  // Hold expiry (§12.9) looks for the authorizations still holding, oldest first: few rows of many.
  await sql`create index trades_holding on trades (created_at) where held > 0`.execute(db);
}

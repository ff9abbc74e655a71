import type { Kysely } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
export async function up(db: Kysely<any>): Promise<void> {
  // Per-merchant request budgets (token buckets) shared by every instance on one database. A row
  // holds the tokens left at `refilled_at`; instances take tokens from it in small leases.
  await db.schema
    .createTable('rate_buckets')
    .addColumn('merchant_id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('tokens', 'double precision', (c) => c.notNull())
    .addColumn('refilled_at', 'bigint', (c) => c.notNull())
    .execute();
  // A merchant's own limit in requests per second (null: the service's default).
  await db.schema.alterTable('merchants').addColumn('rate_limit', 'integer').execute();
}

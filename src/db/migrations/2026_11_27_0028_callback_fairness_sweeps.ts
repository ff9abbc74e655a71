import type { Kysely } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
// Issue 46. The circuit breaker counts slow failures (5xx, slow refusals) besides silence, and the
// time they held their slots: `held_ms`. And the periodic passes (hold expiry, dispute expiry) take
// each item as its own unit of work: an item that throws is recorded in `sweep_failures` and skipped,
// and the next pass tries it again without blocking the others (src/db/sweep.ts).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('callback_endpoints')
    .addColumn('held_ms', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable('sweep_failures')
    .addColumn('job', 'varchar(40)', (c) => c.notNull())
    .addColumn('item_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('first_failed_at', 'bigint', (c) => c.notNull())
    .addColumn('last_failed_at', 'bigint', (c) => c.notNull())
    .addColumn('last_error', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('sweep_failures_pk', ['job', 'item_id'])
    .execute();
}

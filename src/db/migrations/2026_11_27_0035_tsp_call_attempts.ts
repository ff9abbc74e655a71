import { type Kysely, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
// Issue 45 (decisions §15.1: "each call recorded"): every attempt of a call to the TSP, one row each
// (when, how long, the HTTP status or the error, and what became of the call), beside the outbox's
// own row (`tsp_calls`: its status, attempts and last error). A token's calls go in the order its
// changes took the token's lock, which is its history's `seq` (`token_seq`), not `created_at` (the
// moment each transaction began: a freeze that waited for a resume's lock began first and committed
// second); the sender's check of an earlier pending call of the same token reads
// `tsp_calls_token_pending`.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('tsp_call_attempts')
    .addColumn('call_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('http_status', 'integer')
    .addColumn('error', 'varchar(200)')
    .addColumn('outcome', 'varchar(8)', (c) => c.notNull())
    .addPrimaryKeyConstraint('tsp_call_attempts_pk', ['call_id', 'attempt'])
    .addCheckConstraint('tsp_call_attempts_outcome', sql`outcome in ('done', 'retry', 'failed')`)
    .execute();
  await db.schema.alterTable('tsp_calls').addColumn('token_seq', 'integer').execute();
  await sql`create index tsp_calls_token_pending on tsp_calls (token_id, token_seq) where status = 'pending'`.execute(db);
}

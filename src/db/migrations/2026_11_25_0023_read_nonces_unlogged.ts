import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
// Issue 31 (decision 1): where a signed timestamp is required, a read's randomStr is an anti-replay
// mark kept for the freshness window only (src/idempotency/read-nonces-pg.ts). On PostgreSQL:
// `read_nonces`, partitioned by slot (the request's 5-minute bucket modulo 8), each partition an
// UNLOGGED table, truncated whole when its bucket has aged; and `read_nonce_store`, unlogged too,
// whose one row (the sentinel) holds the watermark: crash recovery empties both together. SQLite
// keeps read nonces in the process's memory, or a file of their own (src/idempotency/read-nonces-file.ts).
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`create table read_nonces (
    merchant_id text not null,
    random_str text not null,
    slot int2 not null,
    created_at int8 not null,
    primary key (merchant_id, random_str, slot)
  ) partition by list (slot)`.execute(db);
  for (let slot = 0; slot < 8; slot++) {
    await sql`create unlogged table ${sql.table(`read_nonces_${slot}`)} partition of read_nonces for values in (${sql.lit(slot)})`.execute(
      db,
    );
  }
  await sql`create unlogged table read_nonce_store (id int2 primary key check (id = 1), watermark int8 not null)`.execute(db);
}

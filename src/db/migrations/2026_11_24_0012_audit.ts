import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
export async function up(db: Kysely<any>): Promise<void> {
  // The operators' audit trail (issue 17): every change made from the CLI (and the console), who made
  // it, from where, and the state before and after. Append-only: the database itself refuses to
  // change or delete a record, whoever asks.
  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('actor', 'varchar(200)', (c) => c.notNull())
    .addColumn('source', 'varchar(16)', (c) => c.notNull())
    .addColumn('origin', 'varchar(200)', (c) => c.notNull())
    .addColumn('action', 'varchar(64)', (c) => c.notNull())
    .addColumn('target', 'varchar(200)', (c) => c.notNull())
    .addColumn('before_json', 'text')
    .addColumn('after_json', 'text')
    .execute();
  await db.schema.createIndex('audit_events_time').on('audit_events').columns(['created_at', 'id']).execute();
  await db.schema.createIndex('audit_events_target').on('audit_events').columns(['target', 'created_at']).execute();
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`create function audit_events_append_only() returns trigger language plpgsql as $$
      begin raise exception 'audit_events is append-only'; end $$`.execute(db);
    await sql`create trigger audit_events_no_change before update or delete on audit_events
      for each row execute function audit_events_append_only()`.execute(db);
  } else {
    await sql`create trigger audit_events_no_update before update on audit_events
      begin select raise(abort, 'audit_events is append-only'); end`.execute(db);
    await sql`create trigger audit_events_no_delete before delete on audit_events
      begin select raise(abort, 'audit_events is append-only'); end`.execute(db);
  }
}

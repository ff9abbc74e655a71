import type { Kysely } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
export async function up(db: Kysely<any>): Promise<void> {
  // The console's login attempts per client (an IPv4 address, or an IPv6 address's /64) in the
  // current window, shared by every instance on the database (issue 26, finding 6): the count was
  // in each process's memory, so each instance allowed its own 20.
  await db.schema
    .createTable('console_login_throttle')
    .addColumn('client_key', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('window_start', 'bigint', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('console_login_throttle_window').on('console_login_throttle').column('window_start').execute();
}

import type { Kysely } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
export async function up(db: Kysely<any>): Promise<void> {
  // One-time links of the login-free page (interface 4.4): only a hash of the token is stored.
  await db.schema
    .createTable('page_links')
    .addColumn('token_hash', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull().references('merchants.id'))
    .addColumn('email', 'varchar(254)')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('page_links_rate').on('page_links').columns(['merchant_id', 'email', 'created_at']).execute();

  // Server-side page sessions: the cookie holds a random id, the table only its hash.
  await db.schema
    .createTable('page_sessions')
    .addColumn('id_hash', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('email', 'varchar(254)')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .execute();
}
